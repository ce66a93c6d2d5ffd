/**
 * The share/export controller: the Share button and its dialog, and the Export menu
 * (SVG, PNG, JSON, DOT of what the viewer shows at the current step, and a saved HTML file).
 *
 * A share link carries the view it was shared from (app/link.js: the step, the selected node,
 * the open groups, the camera, presentation mode), so it opens where the sharer was looking;
 * a saved HTML file carries the same view inside it.
 */
import { shareDocument } from "../api.js";
import { PNG_SCALE, download, exportDrawing, toDot, toPng, toSvg } from "../render/export.js";
import { toStandaloneHtml } from "../export-html.js";

/** The link to share: the server's share URL with the view's query (app/link.js encodeView). */
export function shareLink(res, query, origin = location.origin) {
  const url = new URL(res.url || `/s/${res.id}`, origin);
  url.search = query ? query.toString() : "";
  return url.href;
}

/** A title for a saved run: its first comment or docstring line, else its id; with the step. */
export function runTitle(doc, step, N) {
  const first = String(doc.code || "").split("\n").map((l) => l.trim().replace(/^(#+|"""|\'\'\')\s*/, "").replace(/("""|\'\'\')$/, "").trim())
    .find((l) => l.length > 2);
  const what = first ? first.slice(0, 80) : `run ${doc.id || ""}`.trim();
  return `gradtrace · ${what}${step != null && step < N ? ` · step ${step} of ${N}` : ""}`;
}

export class ShareController {
  /**
   * @param {{share: HTMLButtonElement, dialog: HTMLDialogElement, url: HTMLInputElement,
   *          copy: HTMLButtonElement, copied: HTMLElement, close: HTMLButtonElement,
   *          menu: HTMLDetailsElement, exports: Record<string, HTMLButtonElement>,
   *          pngScale?: HTMLSelectElement}} els
   * @param {{viewer: import("./viewer.js").Viewer, code: ()=>string,
   *          onStatus: (status:string, text:string)=>void}} cb
   */
  constructor(els, cb) {
    this.els = els;
    this.cb = cb;
    els.share.addEventListener("click", () => this.share());
    for (const [kind, btn] of Object.entries(els.exports)) btn.addEventListener("click", () => this.exportAs(kind));
    els.copy.addEventListener("click", async () => {
      els.url.select();
      try { await navigator.clipboard.writeText(els.url.value); els.copied.textContent = "Copied."; }
      catch { els.copied.textContent = "Press Ctrl+C to copy."; }
    });
    els.close.addEventListener("click", () => els.dialog.close());
  }

  /** The PNG's pixels per screen px: the menu's size choice (render/export.js PNG_SCALE by default). */
  pngScale() {
    const n = Number(this.els.pngScale ? this.els.pngScale.value : PNG_SCALE);
    return n >= 1 && n <= 3 ? n : PNG_SCALE;
  }

  /** A document is shown: sharing and exporting become possible. */
  enable(on = true) {
    this.els.share.disabled = !on;
    for (const b of Object.values(this.els.exports)) b.disabled = !on;
  }

  async share() {
    const viewer = this.cb.viewer;
    if (!viewer.model) return;
    const btn = this.els.share;
    btn.disabled = true;
    try {
      const stored = viewer.model.doc.code != null;  // the server's copy already holds the code
      const doc = stored ? viewer.model.doc : { ...viewer.model.doc, code: this.cb.code() };
      const res = await shareDocument(doc, { stored });
      this.els.url.value = shareLink(res, viewer.viewQuery(this.cb.mode ? this.cb.mode() : null));
      this.els.copied.textContent = "";
      this.els.dialog.showModal();
      this.els.url.select();
    } catch (err) {
      this.cb.onStatus("refused", `Could not share: ${err.message}`);
    } finally {
      btn.disabled = false;
    }
  }

  async exportAs(kind) {
    const viewer = this.cb.viewer;
    if (!viewer.scene) return;
    const base = `gradtrace-${viewer.model.doc.id || "run"}`;
    const pal = viewer.canvas.pal;
    const k = viewer.player.k;
    if (kind === "json") download(`${base}.json`, new Blob([JSON.stringify(viewer.model.doc, null, 1)], { type: "application/json" }));
    if (kind === "dot") download(`${base}.dot`, new Blob([toDot(viewer.model.index, viewer.direction, viewer.model.timeline)], { type: "text/vnd.graphviz" }));
    if (kind === "svg" || kind === "png") {
      // One drawing at the screen's zoom for both (NOTE [exports equal the screen] in render/export.js).
      const scale = kind === "png" ? this.pngScale() : 1;
      const drawing = exportDrawing(viewer.scene, k, pal, viewer.canvas.cam.k, { scale });
      this.lastExport = { kind, placed: drawing.placed, cam: drawing.cam, scale: drawing.scale, W: drawing.W, H: drawing.H };
      if (kind === "svg") download(`${base}.svg`, new Blob([toSvg(viewer.scene, k, pal, drawing.s, drawing)], { type: "image/svg+xml" }));
      else download(`${base}.png`, await toPng(viewer.scene, k, pal, drawing.s, drawing));
    }
    if (kind === "html") {
      const doc = { ...viewer.model.doc, code: viewer.model.doc.code ?? this.cb.code() };
      download(`${base}.html`, await toStandaloneHtml(doc, { view: viewer.viewQuery().toString(), title: runTitle(doc, k, viewer.model.N) }));
    }
    this.els.menu.open = false;
  }
}
