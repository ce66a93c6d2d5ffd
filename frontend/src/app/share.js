/**
 * The share/export controller: the Share button and its dialog, and the Export menu
 * (SVG, PNG, JSON, DOT of what the viewer shows at the current step).
 *
 * A share link carries the step it was shared from (`?step=k`), so it opens where the sharer
 * was looking; the page reads it back with `stepFromUrl()`.
 */
import { shareDocument } from "../api.js";
import { download, toDot, toPng, toSvg } from "../render/export.js";
import { toStandaloneHtml } from "../export-html.js";

/** The `step` query parameter of a share link, or null. */
export function stepFromUrl(href = location.href) {
  const raw = new URL(href).searchParams.get("step");
  if (raw == null || !/^\d+$/.test(raw)) return null;
  return Number(raw);
}

/** The link to share: the server's share URL, with the current step when not at the end. */
export function shareLink(res, step, N, origin = location.origin) {
  const url = new URL(res.url || `/s/${res.id}`, origin);
  if (step != null && step < N) url.searchParams.set("step", String(step));
  return url.href;
}

export class ShareController {
  /**
   * @param {{share: HTMLButtonElement, dialog: HTMLDialogElement, url: HTMLInputElement,
   *          copy: HTMLButtonElement, copied: HTMLElement, close: HTMLButtonElement,
   *          menu: HTMLDetailsElement, exports: Record<string, HTMLButtonElement>}} els
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

  /** A document is shown: sharing and exporting become possible. */
  enable(on = true) {
    this.els.share.disabled = !on;
    for (const b of Object.values(this.els.exports)) b.disabled = !on;
  }

  async share() {
    const viewer = this.cb.viewer;
    if (!viewer.doc) return;
    const btn = this.els.share;
    btn.disabled = true;
    try {
      const stored = viewer.doc.code != null;  // the server's copy already holds the code
      const doc = stored ? viewer.doc : { ...viewer.doc, code: this.cb.code() };
      const res = await shareDocument(doc, { stored });
      this.els.url.value = shareLink(res, viewer.player.k, viewer.timeline.N);
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
    const base = `gradtrace-${viewer.doc.id || "run"}`;
    const pal = viewer.canvas.pal;
    const k = viewer.player.k;
    if (kind === "json") download(`${base}.json`, new Blob([JSON.stringify(viewer.doc, null, 1)], { type: "application/json" }));
    if (kind === "dot") download(`${base}.dot`, new Blob([toDot(viewer.index, viewer.direction)], { type: "text/vnd.graphviz" }));
    if (kind === "svg") download(`${base}.svg`, new Blob([toSvg(viewer.scene, k, pal)], { type: "image/svg+xml" }));
    if (kind === "png") download(`${base}.png`, await toPng(viewer.scene, k, pal));
    if (kind === "html") download(`${base}.html`, await toStandaloneHtml({ ...viewer.doc, code: viewer.doc.code ?? this.cb.code() }));
    this.els.menu.open = false;
  }
}
