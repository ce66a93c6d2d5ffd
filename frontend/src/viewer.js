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
 */
import { Viewer } from "./app/viewer.js";
import { ViewState } from "./app/state.js";
import { palette } from "./render/palette.js";
import { CodeEditor } from "./ui/editor.js";
import { renderLegend, renderResults } from "./ui/panels.js";
import { oneDark } from "@codemirror/theme-one-dark";

const SKELETON = `
<div class="gt-viewer">
<main class="gt-main">
  <section class="gt-code" aria-label="Code">
    <div id="editor" data-gt="editor" class="gt-editor"></div>
    <section class="gt-results" aria-label="Results">
      <span id="status-badge" data-gt="status-badge" class="gt-badge" role="status" aria-live="polite" hidden></span>
      <div id="error-box" data-gt="error-box" class="gt-error" role="alert" hidden></div>
      <div id="stdout-wrap" data-gt="stdout-wrap" hidden><h2>Output</h2><pre id="stdout" data-gt="stdout" aria-label="Output"></pre></div>
    </section>
  </section>
  <section class="gt-graph-col" aria-label="Graph">
    <div class="gt-toolbar" role="toolbar" aria-label="Graph view">
      <button id="fit" data-gt="fit" type="button" title="Fit to screen (f)">Fit</button>
      <button id="zoom-in" data-gt="zoom-in" type="button" aria-label="Zoom in" title="Zoom in (+)">+</button>
      <button id="zoom-out" data-gt="zoom-out" type="button" aria-label="Zoom out" title="Zoom out (−)">−</button>
      <label>Layout
        <select id="direction" data-gt="direction"><option value="TB">top → bottom</option><option value="LR">left → right</option></select>
      </label>
      <details id="modules" data-gt="modules" class="gt-menu" hidden><summary>Modules</summary><div id="modules-list" data-gt="modules-list" class="gt-menu-body"></div></details>
      <details id="legend" data-gt="legend" class="gt-menu"><summary>Legend</summary><ul id="legend-list" data-gt="legend-list" class="gt-menu-body gt-legend"></ul></details>
      <span id="simplified" data-gt="simplified" class="gt-badge gt-status-simplified" title="Too many long edges for the full layout: some are drawn straight" hidden>simplified layout</span>
      <span id="layout-status" data-gt="layout-status" class="gt-muted" role="status"></span>
      <span id="graph-stats" data-gt="graph-stats" class="gt-muted"></span>
      <a id="run-link" data-gt="run-link" class="gt-muted" target="_blank" rel="noopener" hidden>open the run's page</a>
    </div>
    <div id="graph" data-gt="graph" class="gt-graph" tabindex="0" role="application" aria-label="Autograd graph" aria-describedby="graph-keys">
      <canvas class="gt-base" aria-hidden="true"></canvas>
      <canvas class="gt-overlay" aria-hidden="true"></canvas>
      <canvas class="gt-minimap" aria-label="Minimap" hidden></canvas>
      <div class="gt-tooltip" role="tooltip" hidden></div>
      <p id="graph-empty" data-gt="graph-empty" class="gt-empty">Loading the run…</p>
    </div>
    <p id="graph-keys" data-gt="graph-keys" class="gt-keys">Graph focused: <kbd>Space</kbd> play/pause · <kbd>←</kbd>/<kbd>→</kbd> step · <kbd>Shift</kbd>+arrows phase · <kbd>Home</kbd>/<kbd>End</kbd> · drag to pan, wheel to zoom</p>
    <div id="timeline" data-gt="timeline" class="gt-timeline" role="group" aria-label="Timeline">
      <div class="gt-transport">
        <button id="tl-start" data-gt="tl-start" type="button" aria-label="Start of phase" title="Start of phase (Shift+←)">«</button>
        <button id="tl-back" data-gt="tl-back" type="button" aria-label="Step back" title="Step back (←)">‹</button>
        <button id="tl-play" data-gt="tl-play" type="button" aria-label="Play" title="Play/pause (Space)">▶</button>
        <button id="tl-fwd" data-gt="tl-fwd" type="button" aria-label="Step forward" title="Step forward (→)">›</button>
        <button id="tl-end" data-gt="tl-end" type="button" aria-label="End of phase" title="End of phase (Shift+→)">»</button>
        <span id="tl-label" data-gt="tl-label" class="gt-step-label" aria-live="polite">Step 0/0</span>
        <label class="gt-speed">Speed
          <select id="tl-speed" data-gt="tl-speed"><option value="0.5">0.5×</option><option value="1" selected>1×</option><option value="2">2×</option><option value="4">4×</option></select>
        </label>
      </div>
      <input id="tl-scrub" data-gt="tl-scrub" type="range" min="0" max="0" value="0" step="1" aria-label="Timeline position">
      <div id="tl-segments" data-gt="tl-segments" class="gt-segments"></div>
    </div>
    <ol id="node-list" data-gt="node-list" class="sr-only" aria-label="Graph nodes"></ol>
  </section>
  <aside id="inspector" data-gt="inspector" class="gt-inspector" aria-label="Inspector">
    <h2>Inspector</h2>
    <div id="inspector-body" data-gt="inspector-body"></div>
  </aside>
</main>
</div>`;

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

export class EmbeddedViewer {
  /**
   * @param {HTMLElement} host  the element to draw in (its content is replaced by a shadow root)
   * @param {{css: string, workerUrl: string|URL, onSelect?: (sel: object|null) => void,
   *          onStep?: (k: number) => void, height?: string}} opts
   */
  constructor(host, opts) {
    this.host = host;
    this.opts = opts;
    this.shadow = host.shadowRoot || host.attachShadow({ mode: "open" });
    const style = document.createElement("style");
    style.textContent = opts.css;
    const tpl = document.createElement("template");
    tpl.innerHTML = SKELETON;
    this.shadow.replaceChildren(style, tpl.content.cloneNode(true));
    // Keys typed in the viewer are the viewer's, not the notebook's shortcuts (JupyterLab).
    host.setAttribute("data-lm-suppress-shortcuts", "true");
    if (opts.height) host.style.setProperty("--gt-viewer-height", opts.height);
    const $ = (sel) => this.shadow.querySelector(sel);
    this.$ = $;
    const root = $(".gt-viewer");
    this.state = new ViewState();
    this.editor = new CodeEditor($("#editor"), { onRun: () => {}, onLineSelect: (line) => this.viewer.selectLine(line) });
    this.editor.setReadOnly(true);
    this.viewer = new Viewer(root, { state: this.state, code: this.editor, workerUrl: opts.workerUrl });
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
  get index() { return this.viewer.index; }
  get scene() { return this.viewer.scene; }
  get timeline() { return this.viewer.timeline; }
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
  async load(doc, { step = null, runUrl = null } = {}) {
    this.editor.setCode(doc.code || "# (this run's code was not recorded)\n");
    renderResults(this.results, doc, (line) => this.viewer.selectLine(line, true));
    const link = this.$("#run-link");
    link.hidden = !runUrl;
    if (runUrl) link.href = runUrl;
    const timing = await this.viewer.loadDocument(doc, { step });
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
