/**
 * The page's viewer (app/viewer.js: graph view, timeline with its transport and keys,
 * inspector, module collapse) with a read-only code pane and the run's results, embedded on any
 * host element: the notebook widget (src/widget/) and the self-contained HTML file
 * (src/standalone.js) mount it. Nothing of the page is copied: this file only builds the
 * skeleton the viewer finds its parts in (`data-gt`), and reports the step and the selection.
 *
 * NOTE [viewer in a shadow root]
 *     static/app.css styles the page's parts by id and class. The skeleton below is the
 *     page's (same ids, same `data-gt` parts) inside a shadow root of the host element, so
 *     two viewers in one notebook never share an id, the notebook's CSS does not leak in, and
 *     the page's CSS applies unchanged (its `:root` variables become `:host` in build.mjs). The theme is the host's, not the
 *     system's: the viewer sets `data-theme` on the host and the palette is read from it.
 *     The CSS is adopted by the shadow root as a constructed style sheet, never put in a
 *     `<style>` element: NOTE [styles under the policy] in backend/gradtrace/api/security.py.
 */
import { Viewer } from "./app/viewer.js";
import { ViewState } from "./app/state.js";
import { palette } from "./render/palette.js";
import { CodeEditor } from "./ui/editor.js";
import { renderLegend, renderResults } from "./ui/panels.js";
import { oneDark } from "@codemirror/theme-one-dark";
import VIEWER_HTML from "../templates/viewer.html";

// The page's own markup (templates/viewer.html, which index.html includes), without its
// leading template comment: one source, so the embedded viewer never lags behind the page.
const SKELETON = `<div class="gt-viewer">${VIEWER_HTML.replace(/^\{#-[\s\S]*?-#\}\s*/, "")}</div>`;

/** Whether the page around `el` is dark: the host's own theme marks, else its background. */
export function hostIsDark(el) {
  const body = document.body;
  const jp = body.dataset.jpThemeLight;
  if (jp === "true" || jp === "false") return jp === "false";
  if (body.classList.contains("vscode-dark") || body.classList.contains("vscode-high-contrast")) return true;
  if (body.classList.contains("vscode-light")) return false;
  for (let e = el; e && e.nodeType === 1; e = e.parentElement || e.getRootNode().host) {
    const m = getComputedStyle(e).backgroundColor.match(/rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?/);
    if (m && (m[4] === undefined || Number(m[4]) > 0.5)) return 0.2126 * m[1] + 0.7152 * m[2] + 0.0722 * m[3] < 128;
  }
  return matchMedia("(prefers-color-scheme: dark)").matches;
}

/**
 * Style the shadow root `root` with `css` as a constructed style sheet (NOTE [styles under the
 * policy] in backend/gradtrace/api/security.py): no `<style>` element, so no page policy has
 * to admit one. A browser without constructable style sheets gets a `<style>` element, which
 * works wherever no policy forbids inline styles. Answers the sheet (or the element).
 */
export function adoptCss(root, css) {
  const win = (root.ownerDocument || document).defaultView || window;
  if (!("adoptedStyleSheets" in root) || typeof win.CSSStyleSheet !== "function") {
    const style = document.createElement("style");
    style.textContent = css;
    root.prepend(style);
    return style;
  }
  const sheet = new win.CSSStyleSheet();
  sheet.replaceSync(css);
  // After the sheets already adopted (CodeMirror's own, style-mod's), as the page's app.css
  // comes after CodeMirror's <style> in the document: on equal specificity the viewer's rules win.
  const mine = root.__gtSheet;
  root.adoptedStyleSheets = [...root.adoptedStyleSheets.filter((s) => s !== mine), sheet];
  root.__gtSheet = sheet;
  return sheet;
}

export class EmbeddedViewer {
  /**
   * @param {HTMLElement} host  the element to draw in (its content is replaced by a shadow root)
   * @param {{css: string, workerUrl: string|URL, onSelect?: (sel: object|null) => void,
   *          onStep?: (k: number) => void, height?: string,
   *          checks?: (doc: object, node: object, signal: AbortSignal) => Promise<object>,
   *          explain?: (doc: object, node: object, index: number[]|null, signal: AbortSignal) => Promise<object>,
   *          tensors?: (doc: object) => object|null}} opts  tensors: NOTE [tensor sources] in tensors/source.js
   */
  constructor(host, opts) {
    this.host = host;
    this.opts = opts;
    this.shadow = host.shadowRoot || host.attachShadow({ mode: "open" });
    const tpl = document.createElement("template");
    tpl.innerHTML = SKELETON;
    this.shadow.replaceChildren(tpl.content.cloneNode(true));
    adoptCss(this.shadow, opts.css);
    // Keys typed in the viewer are the viewer's, not the notebook's shortcuts (JupyterLab).
    host.setAttribute("data-lm-suppress-shortcuts", "true");
    if (opts.height) host.style.setProperty("--gt-viewer-height", opts.height);
    const $ = (sel) => this.shadow.querySelector(sel);
    this.$ = $;
    const root = $(".gt-viewer");
    $("#graph-empty").textContent = "Loading the run…";
    this.state = new ViewState();
    this.editor = new CodeEditor($("#editor"), { onRun: () => {}, onLineSelect: (line) => this.viewer.selectLine(line), onLeave: () => $("#graph").focus() });
    $("#wrap").addEventListener("click", () => { this.editor.setWrap(!this.editor.wrapped); $("#wrap").setAttribute("aria-pressed", String(this.editor.wrapped)); });
    this.editor.setReadOnly(true);
    this.viewer = new Viewer(root, { state: this.state, code: this.editor, workerUrl: opts.workerUrl, checks: opts.checks, explain: opts.explain, tensors: opts.tensors });
    this.results = { badge: $("#status-badge"), error: $("#error-box"), stdout: $("#stdout"), stdoutWrap: $("#stdout-wrap") };
    $("#fit").addEventListener("click", () => this.canvas.fit());
    $("#zoom-in").addEventListener("click", () => this.canvas.zoomBy(1.25));
    $("#zoom-out").addEventListener("click", () => this.canvas.zoomBy(0.8));
    $("#direction").addEventListener("change", (e) => this.viewer.setDirection(e.target.value));
    // The graph's keys act on the graph only: the notebook around it never sees them.
    $("#graph").addEventListener("keydown", (ev) => { if (ev.defaultPrevented) ev.stopPropagation(); });
    renderLegend($("#legend-list"));
    this.state.subscribe((st, changed) => this._report(st, changed));
    this.followHostTheme();
  }

  // What the widget, tests and benchmarks reach.
  get index() { return this.viewer.model ? this.viewer.model.index : null; }
  get scene() { return this.viewer.scene; }
  get timeline() { return this.viewer.model ? this.viewer.model.timeline : null; }
  get player() { return this.viewer.player; }
  get canvas() { return this.viewer.canvas; }
  get selectedV() { return this.viewer.selectedV; }

  // ---- theme ---------------------------------------------------------------------------

  setTheme(dark) {
    if (this.dark === dark) return;
    this.dark = dark;
    this.host.dataset.theme = dark ? "dark" : "light";
    this.editor.view.dispatch({ effects: this.editor.theme.reconfigure(dark ? oneDark : []) });
    this.canvas.pal = palette(this.host);
    this.canvas.minimap.invalidate();
    this.canvas.redraw();
  }

  followHostTheme() {
    const apply = () => this.setTheme(hostIsDark(this.host));
    apply();
    this._themeObserver = new MutationObserver(apply);
    this._themeObserver.observe(document.body, { attributes: true, attributeFilter: ["class", "data-jp-theme-light", "data-theme"] });
    // The canvas re-reads the system palette when the system theme changes: read the host's again.
    matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => { this.dark = undefined; apply(); });
  }

  destroy() {
    this.player.pause();
    if (this._themeObserver) this._themeObserver.disconnect();
    if (this.viewer.layout.worker) this.viewer.layout.worker.terminate();
  }

  // ---- documents, step and selection ---------------------------------------------------

  /** Show a run document; resolves once its first frame is drawn, with timings in ms. */
  async load(doc, { step = null, runUrl = null, view = null } = {}) {
    // The host may not have been in the document when the viewer was made (a notebook renders
    // a widget into a detached element): styles, and so the palette, read then are empty.
    this.dark = undefined;
    this.setTheme(hostIsDark(this.host));
    this.editor.setCode(doc.code || "# (this run's code was not recorded)\n");
    renderResults(this.results, doc, (line) => this.viewer.selectLine(line, true));
    const link = this.$("#run-link");
    link.hidden = !runUrl;
    if (runUrl) link.href = runUrl;
    const timing = await this.viewer.loadDocument(doc, { step, view });
    if (timing) this.host.dataset.ready = String(this.viewer.generation);
    return timing;
  }

  /** Go to step k (from outside: Python, a test). */
  go(k) { if (this.scene) this.player.go(k, { fromUser: true }); }

  selectNode(v) { this.viewer.selectNode(v); }

  /** Select the visible node drawing the document node `id` (from outside); false when hidden. */
  selectById(id) {
    if (!this.scene) return false;
    if (id == null) { this.viewer.selectNode(-1); return true; }
    const i = this.index.nodes.findIndex((n) => n.id === id);
    const vs = i >= 0 ? this.scene.view.byRef[i] : null;
    if (!vs || !vs.length) return false;
    this.viewer.selectNode(vs[0]);
    this.canvas.centerOn(vs[0]);
    return true;
  }

  /** The selected node's id, or null. */
  selectedId() {
    const v = this.selectedV;
    return v >= 0 && this.scene ? this.index.nodes[this.scene.view.vnodes[v].refs[0]].id : null;
  }

  _report(st, changed) {
    if (changed.includes("step") && this.opts.onStep && this.scene && st.step !== this._reportedStep) {
      this._reportedStep = st.step;
      this.opts.onStep(st.step);
    }
    if (changed.includes("selection") && this.opts.onSelect && this.scene) {
      const v = st.selection.v;
      let sel = null;
      if (v >= 0) {
        const vn = this.scene.view.vnodes[v];
        const ref = vn.refs[0];
        const node = this.index.nodes[ref];
        sel = vn.kind === "group" ? { id: null, name: vn.label, kind: "group", line: null, module: vn.module ?? null }
          : { id: node.id, name: node.name ?? null, kind: node.kind, line: node.line ?? null, module: this.index.module[ref] ?? null };
      }
      const key = sel ? `${sel.id}|${sel.name}` : "";
      if (key === this._reportedSel) return;
      this._reportedSel = key;
      this.opts.onSelect(sel);
    }
  }
}

/** Read a gzip-compressed JSON document (bytes) with the browser's own DecompressionStream. */
export async function gunzipJson(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}
