/**
 * A mountable, read-only viewer of one run document: the graph view, the timeline with its
 * transport and keys, the inspector, module collapse and the code pane, built from the page's
 * own modules (graph, layout, render, animate, ui). The notebook widget (src/widget/) and the
 * self-contained HTML file (src/standalone.js) mount it; the playground page can adopt it.
 *
 * NOTE [viewer in a shadow root]
 *     The page's components find their parts by id inside a root (`#tl-play`, `#inspector-body`)
 *     and static/app.css styles them by id and class. The viewer builds the same skeleton
 *     inside a shadow root of the host element, so two viewers in one notebook never share an
 *     id, the notebook's CSS does not leak in, and the page's CSS applies unchanged (its `:root`
 *     variables are rewritten to `:host` by build.mjs). The theme is the host's, not the
 *     system's: the viewer sets `data-theme` on the host and the palette is read from it.
 */
import { Player } from "./animate/player.js";
import { Timeline } from "./animate/timeline.js";
import { indexDocument } from "./graph/document.js";
import { defaultCollapsed, moduleTree } from "./graph/modules.js";
import { buildView } from "./graph/view.js";
import { LayoutClient } from "./layout/client.js";
import { GraphCanvas } from "./render/canvas.js";
import { palette } from "./render/palette.js";
import { makeScene } from "./render/scene.js";
import { CodeEditor } from "./ui/editor.js";
import { Inspector } from "./ui/inspector.js";
import { graphKeyHandler } from "./ui/keys.js";
import { renderLegend, renderModules, renderNodeList, renderResults } from "./ui/panels.js";
import { Transport } from "./ui/transport.js";
import { oneDark } from "@codemirror/theme-one-dark";

const SKELETON = `
<div class="gt-viewer">
<main class="gt-main">
  <section class="gt-code" aria-label="Code">
    <div id="editor" class="gt-editor"></div>
    <section class="gt-results" aria-label="Results">
      <span id="status-badge" class="gt-badge" role="status" aria-live="polite" hidden></span>
      <div id="error-box" class="gt-error" role="alert" hidden></div>
      <div id="stdout-wrap" hidden><h2>Output</h2><pre id="stdout" aria-label="Output"></pre></div>
    </section>
  </section>
  <section class="gt-graph-col" aria-label="Graph">
    <div class="gt-toolbar" role="toolbar" aria-label="Graph view">
      <button id="fit" type="button" title="Fit to screen (f)">Fit</button>
      <button id="zoom-in" type="button" aria-label="Zoom in" title="Zoom in (+)">+</button>
      <button id="zoom-out" type="button" aria-label="Zoom out" title="Zoom out (−)">−</button>
      <label>Layout
        <select id="direction"><option value="TB">top → bottom</option><option value="LR">left → right</option></select>
      </label>
      <details id="modules" class="gt-menu" hidden><summary>Modules</summary><div id="modules-list" class="gt-menu-body"></div></details>
      <details id="legend" class="gt-menu"><summary>Legend</summary><ul id="legend-list" class="gt-menu-body gt-legend"></ul></details>
      <span id="simplified" class="gt-badge gt-status-simplified" title="Too many long edges for the full layout: some are drawn straight" hidden>simplified layout</span>
      <span id="layout-status" class="gt-muted" role="status"></span>
      <span id="graph-stats" class="gt-muted"></span>
      <a id="run-link" class="gt-muted" target="_blank" rel="noopener" hidden>open the run's page</a>
    </div>
    <div id="graph" class="gt-graph" tabindex="0" role="application" aria-label="Autograd graph" aria-describedby="graph-keys">
      <canvas class="gt-base" aria-hidden="true"></canvas>
      <canvas class="gt-overlay" aria-hidden="true"></canvas>
      <canvas class="gt-minimap" aria-label="Minimap" hidden></canvas>
      <div class="gt-tooltip" role="tooltip" hidden></div>
      <p id="graph-empty" class="gt-empty">Loading the run…</p>
    </div>
    <p id="graph-keys" class="gt-keys">Graph focused: <kbd>Space</kbd> play/pause · <kbd>←</kbd>/<kbd>→</kbd> step · <kbd>Shift</kbd>+arrows phase · <kbd>Home</kbd>/<kbd>End</kbd> · drag to pan, wheel to zoom</p>
    <div id="timeline" class="gt-timeline" role="group" aria-label="Timeline">
      <div class="gt-transport">
        <button id="tl-start" type="button" aria-label="Start of phase" title="Start of phase (Shift+←)">«</button>
        <button id="tl-back" type="button" aria-label="Step back" title="Step back (←)">‹</button>
        <button id="tl-play" type="button" aria-label="Play" title="Play/pause (Space)">▶</button>
        <button id="tl-fwd" type="button" aria-label="Step forward" title="Step forward (→)">›</button>
        <button id="tl-end" type="button" aria-label="End of phase" title="End of phase (Shift+→)">»</button>
        <span id="tl-label" class="gt-step-label" aria-live="polite">Step 0/0</span>
        <label class="gt-speed">Speed
          <select id="tl-speed"><option value="0.5">0.5×</option><option value="1" selected>1×</option><option value="2">2×</option><option value="4">4×</option></select>
        </label>
      </div>
      <input id="tl-scrub" type="range" min="0" max="0" value="0" step="1" aria-label="Timeline position">
      <div id="tl-segments" class="gt-segments"></div>
    </div>
    <ol id="node-list" class="sr-only" aria-label="Graph nodes"></ol>
  </section>
  <aside id="inspector" class="gt-inspector" aria-label="Inspector">
    <h2>Inspector</h2>
    <div id="inspector-body"></div>
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

export class Viewer {
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
    const $ = (s) => this.shadow.querySelector(s);
    this.$ = $;
    this.direction = "TB";
    this.scene = null;
    this.doc = null;
    this.selectedV = -1;
    this.generation = 0;
    this.layout = new LayoutClient(opts.workerUrl);
    this.editor = new CodeEditor($("#editor"), { onRun: () => {}, onLineSelect: (line) => this.selectLine(line) });
    this.editor.setReadOnly(true);
    this.player = new Player((k, o) => this.onStep(k, o));
    this.transport = new Transport($("#timeline"), this.player);
    this.inspector = new Inspector($("#inspector"), { onLine: (line) => this.selectLine(line, true), onExpand: (v) => this.openGroup(v) });
    this.canvas = new GraphCanvas($("#graph"), {
      onNodeClick: (v) => this.selectNode(v),
      onBoxClick: (path) => this.toggleModule(path),
      onGroupOpen: (v) => this.openGroup(v),
      onHover: () => this.player.pause(),
    });
    this.results = { badge: $("#status-badge"), error: $("#error-box"), stdout: $("#stdout"), stdoutWrap: $("#stdout-wrap") };
    $("#fit").addEventListener("click", () => this.canvas.fit());
    $("#zoom-in").addEventListener("click", () => this.canvas.zoomBy(1.25));
    $("#zoom-out").addEventListener("click", () => this.canvas.zoomBy(0.8));
    $("#direction").addEventListener("change", (e) => { this.direction = e.target.value; this.relayout(false); });
    const keys = graphKeyHandler(this.player, this.canvas);
    $("#graph").addEventListener("keydown", (ev) => { keys(ev); if (ev.defaultPrevented) ev.stopPropagation(); });
    renderLegend($("#legend-list"));
    this.inspector.clear();
    this.followHostTheme();
  }

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
    if (this.layout.worker) this.layout.worker.terminate();
  }

  // ---- the pipeline (as the page's: document → view → layout → scene → canvas) -----------

  /** Show a run document; resolves once its first frame is drawn, with timings in ms. */
  async load(doc, { step = null, runUrl = null } = {}) {
    const t0 = performance.now();
    this.doc = doc;
    this.index = indexDocument(doc);
    this.tree = moduleTree(this.index);
    this.collapsed = defaultCollapsed(this.index, this.tree);
    this.expandedRepeats = new Set();
    this.timeline = new Timeline(this.index);
    this.selectedV = -1;
    this.editor.setCode(doc.code || "# (this run's code was not recorded)\n");
    renderResults(this.results, doc, (line) => this.selectLine(line, true));
    this.editor.mark({ error: doc.error ? doc.error.line : null, current: null, justDone: null, selected: null }, { scroll: true });
    const link = this.$("#run-link");
    link.hidden = !runUrl;
    if (runUrl) link.href = runUrl;
    const empty = this.$("#graph-empty");
    empty.hidden = this.index.nodes.length > 0;
    if (!this.index.nodes.length) empty.textContent = "This run created no autograd node.";
    const N = this.timeline.N;
    const k0 = step == null ? N : Math.max(0, Math.min(N, step));
    const timing = await this.relayout(false, k0);
    if (!timing || this.doc !== doc) return null;
    this.transport.setSegments(this.timeline.segments, N);
    this.inspector.clear();
    this.player.reset(N, this.timeline.segments, k0);
    await new Promise((r) => requestAnimationFrame(() => { this.canvas.drawNow(); r(); }));
    this.lastTiming = { ...timing, total: performance.now() - t0, nodes: this.index.nodes.length };
    this.host.dataset.ready = String(++this.generation);
    return this.lastTiming;
  }

  async relayout(keepCamera = true, k = this.player.k) {
    const gen = (this._layoutGen = (this._layoutGen || 0) + 1);
    const t0 = performance.now();
    const view = buildView(this.index, this.tree, { collapsed: this.collapsed, expandedRepeats: this.expandedRepeats });
    const t1 = performance.now();
    const input = {
      w: Float64Array.from(view.vnodes, (v) => v.w), h: Float64Array.from(view.vnodes, (v) => v.h),
      src: Int32Array.from(view.vedges, (e) => e.s), dst: Int32Array.from(view.vedges, (e) => e.t),
      cluster: view.cluster,
    };
    this.$("#layout-status").textContent = view.vnodes.length > 500 ? `Laying out ${view.vnodes.length} nodes…` : "";
    const layout = await this.layout.layout(input, { direction: this.direction });
    if (gen !== this._layoutGen) return null;
    this.scene = makeScene(this.index, view, layout, this.timeline, this.collapsed);
    this.canvas.setScene(this.scene, k, { keepCamera });
    if (this.selectedV >= 0) this.selectedV = -1;
    this.$("#layout-status").textContent = "";
    this.$("#simplified").hidden = !layout.simplified;
    this.$("#graph-stats").textContent = `${this.index.nodes.length} nodes · ${this.index.edges.length} edges${view.vnodes.length !== this.index.nodes.length ? ` · ${view.vnodes.length} shown` : ""}`;
    renderModules(this.$("#modules-list"), this.tree, this.collapsed, this.expandedRepeats, (p) => this.toggleModule(p), (p) => this.toggleRepeat(p));
    this.$("#modules").hidden = this.tree.mods.size === 0;
    this.refreshNodeList();
    return { view: t1 - t0, layout: layout.ms, vnodes: view.vnodes.length };
  }

  toggleModule(path) {
    if (this.collapsed.has(path)) this.collapsed.delete(path); else this.collapsed.add(path);
    this.relayout(true);
  }

  toggleRepeat(path) {
    if (this.expandedRepeats.has(path)) this.expandedRepeats.delete(path); else this.expandedRepeats.add(path);
    this.relayout(true);
  }

  openGroup(v) {
    const g = this.scene.view.vnodes[v];
    if (g.repeat) this.expandedRepeats.add(g.module); else this.collapsed.delete(g.module);
    this.relayout(true);
  }

  // ---- stepping and selection ----------------------------------------------------------

  /** Go to step k (from outside: Python, a test). */
  go(k) { if (this.scene) this.player.go(k, { fromUser: true }); }

  onStep(k, { animate, playing }) {
    if (!this.scene) return;
    this.canvas.setStep(k, { animate, durationMs: this.player.intervalMs });
    const tl = this.timeline;
    const ev = tl.event(k), prev = tl.event(k - 1);
    const lineOf = (e, i) => (e ? e.line ?? this.index.nodes[tl.evNode[i]].line ?? null : null);
    this.editor.mark({ current: lineOf(ev, k - 1), justDone: lineOf(prev, k - 2) }, { scroll: !!ev });
    this.transport.update(k, tl.N, playing, tl.segmentAt(k));
    if (this.selectedV >= 0 && !playing) this.inspector.show(this.scene, this.selectedV, k);
    clearTimeout(this._listTimer);
    this._listTimer = setTimeout(() => this.refreshNodeList(), playing ? 250 : 0);
    if (this.opts.onStep && k !== this._reportedStep) { this._reportedStep = k; this.opts.onStep(k); }
  }

  refreshNodeList() {
    if (!this.scene) return;
    renderNodeList(this.$("#node-list"), this.scene, this.player.k, (v) => this.selectNode(v), this.canvas.stepState());
  }

  selectNode(v) {
    this.player.pause();
    this.selectedV = v;
    this.canvas.setSelection(v >= 0 ? [v] : []);
    if (v < 0) { this.inspector.clear(); this.editor.mark({ selected: null }); this._report(null); return; }
    this.inspector.show(this.scene, v, this.player.k);
    const vn = this.scene.view.vnodes[v];
    const node = this.index.nodes[vn.refs[0]];
    this.editor.mark({ selected: node.line ?? null }, { scroll: false });
    this._report(vn.kind === "group" ? { id: null, name: vn.label, module: vn.module, line: null, group: true }
      : { id: node.id, name: node.name ?? null, kind: node.kind, line: node.line ?? null, module: this.index.module[vn.refs[0]] ?? null });
  }

  /** Select the visible node drawing the document node `id` (from outside); false when hidden. */
  selectById(id) {
    if (!this.scene) return false;
    if (id == null) { this.selectNode(-1); return true; }
    const i = this.index.nodes.findIndex((n) => n.id === id);
    const vs = i >= 0 ? this.scene.view.byRef[i] : null;
    if (!vs || !vs.length) return false;
    this.selectNode(vs[0]);
    this.canvas.centerOn(vs[0]);
    return true;
  }

  _report(sel) {
    const key = sel ? `${sel.id}|${sel.name}` : "";
    if (key === this._reportedSel) return;
    this._reportedSel = key;
    if (this.opts.onSelect) this.opts.onSelect(sel);
  }

  selectLine(line, scroll = false) {
    if (!this.scene) return;
    const refs = this.index.byLine.get(line) || [];
    const vs = [...new Set(refs.flatMap((r) => this.scene.view.byRef[r]))];
    this.canvas.setLineSelection(vs);
    this.editor.mark({ selected: line }, { scroll });
    this.inspector.showLine(line, vs, vs.map((v) => this.scene.view.vnodes[v].label), (v) => this.selectNode(v));
  }
}

/** Read a gzip-compressed JSON document (bytes) with the browser's own DecompressionStream. */
export async function gunzipJson(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}
