/**
 * The viewer: one run document shown as graph view + timeline/transport + inspector, wired to
 * a code pane. It runs the pipeline document → graph view → layout (worker) → scene → canvas
 * and follows the view state (app/state.js).
 *
 * NOTE [mountable viewer]
 *   The viewer finds its parts inside its own root by `data-gt` attributes, never by global
 *   ids, so the playground page and a notebook widget can mount it on any element, several
 *   times on one page. A part that is missing is simply not drawn (a widget may leave out the
 *   module menu or the accessible node list). The code pane is anything with
 *   `mark(marks, {scroll})` (ui/editor.js's CodeEditor, or a read-only listing).
 *
 * NOTE [a thin viewer]
 *   Everything the person is looking at lives in the view state (app/state.js): the step, the
 *   selection, the open groups and units, the direction. This file assembles the panels that
 *   read it (the canvas, the transport, the inspector, the search panel of app/search-panel.js,
 *   and any added with `addPanel`) and runs the pipeline document → view → layout → scene.
 *   Moving through the run (jumps, reveal) is app/navigate.js.
 */
import { Player } from "../animate/player.js";
import { errorMarks } from "../analysis/errors.js";
import { segmentLabel, stepSentence, wordsContext } from "../analysis/words.js";
import { backwardLines, isCustomFunction } from "../graph/custom.js";
import { indexDocument } from "../graph/document.js";
import { Timeline } from "../graph/timeline.js";
import { activeVNodes, openAt, runLevels, shownMask } from "../graph/groups.js";
import { defaultCollapsed, moduleTree } from "../graph/modules.js";
import { buildView } from "../graph/view.js";
import { LayoutClient } from "../layout/client.js";
import { GraphCanvas } from "../render/canvas.js";
import { makeScene } from "../render/scene.js";
import { wrapLayout } from "../render/wrap.js";
import { addFindingMarks, markTransport, renderFindings } from "../ui/findings.js";
import { gradOffMarks } from "../ui/definitions.js";
import { foldedMarks } from "../ui/folded.js";
import { GradcheckPanel } from "../ui/gradcheck.js";
import { ExplainPanel } from "../ui/explain.js";
import { goalsPanel } from "../ui/goals.js";
import { predictPanel } from "../ui/predict.js";
import { Inspector } from "../ui/inspector.js";
import { IterationPicker } from "../ui/iterations.js";
import { withCode } from "../ui/dom.js";
import { compactKeyHint, graphKeyHandler } from "../ui/keys.js";
import { renderModules, renderNodeList } from "../ui/panels.js";
import { Transport } from "../ui/transport.js";
import { clickBox, openGroup } from "./folds.js";
import { foldsOf, restoreView, viewQuery } from "./link.js";
import { followUnits, jump, pickUnit, reveal } from "./navigate.js";
import { part } from "./parts.js";
import { searchPanel } from "./search-panel.js";
import { ViewState } from "./state.js";

export { part };

const NO_CODE = { mark() {} };

export class Viewer {
  /**
   * @param {HTMLElement} root  element holding the viewer's parts (data-gt="graph", "timeline", …)
   * @param {{state?: ViewState, code?: {mark: Function}, codeText?: ()=>string, workerUrl?: URL|string,
   *          onLine?: (line:number, scroll:boolean)=>void}} opts
   */
  constructor(root, opts = {}) {
    this.root = root;
    this.state = opts.state || new ViewState();
    this.code = opts.code || NO_CODE;
    this.codeText = opts.codeText || (() => "");
    this.onLineCb = opts.onLine || ((line, scroll) => this.selectLine(line, scroll));
    this.scene = null;
    this.doc = null;
    this.generation = 0;
    const p = (name) => part(root, name);
    this.els = {
      graph: p("graph"), empty: p("graph-empty"), layoutStatus: p("layout-status"), simplified: p("simplified"),
      stats: p("graph-stats"), modules: p("modules"), modulesList: p("modules-list"), nodeList: p("node-list"),
      timeline: p("timeline"), inspector: p("inspector"), sentence: p("sentence"),
      findings: p("findings"),
    };
    compactKeyHint(root.querySelector("#graph-keys"));
    this.layout = new LayoutClient(opts.workerUrl || new URL("./layout-worker.js", import.meta.url));
    this.player = new Player(this.state, (k, o) => this.onStep(k, o));
    this.transport = new Transport(this.els.timeline, this.player);
    // The gradient check (ui/gradcheck.js) asks the service, so only a page with one offers it.
    // opts.checks: true (ask the service) or a function that asks for a check (the widget's).
    this.check = opts.checks && this.els.inspector ? new GradcheckPanel(this.els.inspector, { onSuspect: (id) => this.outlineSuspect(id),
      currentPass: () => { const k = this.player.k; return this.timeline && k > 0 ? this.timeline.evPass[k - 1] : -1; },
      request: typeof opts.checks === "function" ? opts.checks : undefined }) : null;
    // ui/explain.js asks the service too; opts.explain: another request (a saved file's, the widget's)
    const onLine = (line) => this.onLineCb(line, true);
    this.explain = opts.checks === true ? new ExplainPanel({ onLine }) : opts.explain ? new ExplainPanel({ request: opts.explain, onLine }) : null;
    this.inspector = new Inspector(this.els.inspector, { onLine: (line) => this.onLineCb(line, true), onExpand: (v) => this.openGroup(v),
      extra: (node) => extras(this.check ? this.check.button(this.doc, node) : null, this.explain ? this.explain.section(this.doc, node) : null) });
    this.canvas = new GraphCanvas(this.els.graph, {
      onNodeClick: (v) => this.selectNode(v),
      onBoxClick: (path) => this.clickBox(path),
      onGroupOpen: (v) => this.openGroup(v),
      onHover: () => this.player.pause(),
    });
    // Enter on the graph opens the selected fold one level (graph/groups.js).
    this.els.graph.addEventListener("keydown", (ev) => {
      const v = this.selectedV;
      if (ev.key === "Enter" && this.scene && v >= 0 && this.scene.view.vnodes[v].kind === "group") { ev.preventDefault(); this.openGroup(v); }
    });
    // Search (or anything else) may open groups or turn the layout through the view state: draw them.
    this.state.subscribe((_, changed) => {
      if (!this.scene || this._quiet) return;
      if (changed.includes("direction")) this.relayout(false);
      else if (changed.some((c) => c === "open" || c === "collapsed" || c === "expandedRepeats")) this.relayout(true);
    });
    this.els.graph.addEventListener("keydown", graphKeyHandler(this.player, this.canvas, {
      jump: (unit, back) => this.jump(unit, back),
      search: () => this.focusSearch(),
    }));
    const whole = p("whole");
    if (whole) whole.addEventListener("click", () => this.canvas.fit({ whole: true }));
    this.els.graph.addEventListener("focus", () => { if (this.els.sentence) this.els.sentence.setAttribute("aria-live", "polite"); });
    this.focusSearch = () => {};
    this.nextMatch = async () => {};
    this.panels = [];
    this.addPanel(searchPanel);
    this.checksService = opts.checks === true;  // a saved file or a widget cannot re-run a gradient check
    this.addPanel(predictPanel);  // predict mode (ui/predict.js): sets this.predict
    this.addPanel(goalsPanel);  // an exercise's goals beside the code (ui/goals.js)
    const pickerHost = this.els.stats ? this.els.stats.parentElement : null;
    this.iterPicker = pickerHost ? new IterationPicker(pickerHost, { onPick: (u) => pickUnit(this, u) }) : null;
    this.inspector.clear();
  }

  /**
   * Add a panel: `panel(state, root, viewer)` returns its unsubscribe function (NOTE [panels] in
   * app/state.js). Returns a function that removes it.
   */
  addPanel(panel) {
    const off = panel(this.state, this.root, this) || (() => {});
    this.panels.push(off);
    return () => { off(); this.panels = this.panels.filter((f) => f !== off); };
  }

  get selectedV() { return this.state.get("selection").v; }
  // Read-only views of the state, kept for tests, benchmarks and the console.
  get direction() { return this.state.get("direction"); }
  get levels() { return this.state.get("levels"); }
  get openUnits() { return this.state.get("openUnits"); }

  // ---- the pipeline --------------------------------------------------------------------

  /**
   * Show a run document; resolves once its first frame is drawn, with timings in ms.
   * `view` (app/link.js decodeView) restores what a share link's sharer saw: folds, open
   * groups, the selected node and the camera.
   */
  async loadDocument(doc, { step = null, view = null } = {}) {
    const t0 = performance.now();
    this.player.pause();
    this.doc = doc;
    if (this.check) this.check.hide();
    this.index = indexDocument(doc);
    this.tree = moduleTree(this.index);
    this.timeline = new Timeline(this.index);
    // Iterations and module calls (graph/groups.js): the open ones drawn in full, the rest folded.
    const levels = runLevels(this.index, this.timeline, this.tree);
    const N = this.timeline.N;
    const k0 = step == null ? N : Math.max(0, Math.min(N, step));
    const openUnits = openAt(levels, k0);
    const shown = levels.length ? shownMask(levels, openUnits, this.index.nodes.length) : null;
    this.player.N = N;
    this._quiet = true;
    this.defaults = defaultCollapsed(this.index, this.tree, undefined, shown);
    this.state.reset({ collapsed: this.defaults, step: k0, levels, openUnits, ...(view ? foldsOf(view, this.defaults, this.tree) : {}) });
    this.words = wordsContext(this.index, this.timeline, doc.code ?? this.codeText(), levels);
    this.errors = addFindingMarks(errorMarks(this.index), this.index);
    renderFindings(this.els.findings, doc, { onLine: (line) => this.onLineCb(line, true), onNode: (id) => this.showNode(id) });
    this._starts = null;
    this.state.bump("document");
    this._quiet = false;
    if (this.iterPicker) { this.iterPicker.setLevel(levels[0] || null); this.iterPicker.update(openUnits[0] ?? 0); }
    this.inspector.setContext({ words: this.words, errors: this.errors, doc });
    this.code.mark({ error: this.errors.lines.error, cause: this.errors.lines.cause, hint: this.errors.findingLines, current: null, justDone: null, selected: null,
      gradOff: gradOffMarks(doc), folded: foldedMarks(doc) }, { scroll: true });
    if (this.els.empty) {
      this.els.empty.hidden = this.index.nodes.length > 0;
      if (!this.index.nodes.length) this.els.empty.textContent = "This run created no autograd node.";
    }
    const timing = await this.relayout(false, k0);
    if (!timing || this.doc !== doc) return null; // a newer document arrived meanwhile
    this.transport.setSegments(this.timeline.segments, N, (seg) => segmentLabel(this.words, seg));
    markTransport(this.els.timeline, this.timeline, doc, (k) => this.player.go(k, { fromUser: true }));
    this.inspector.clear();
    this.player.reset(N, this.timeline.segments, k0);
    if (view) await this._restoreView(view);
    await new Promise((r) => requestAnimationFrame(() => { this.canvas.drawNow(); r(); }));
    this.lastTiming = { ...timing, total: performance.now() - t0, nodes: this.index.nodes.length };
    this.generation++;
    return this.lastTiming;
  }

  /** The selection and camera of a share link (app/link.js), once the graph is drawn. */
  _restoreView(view) { return restoreView(this, view); }

  /** What a share link carries of this view (app/link.js); `mode` is the page's. */
  viewQuery(mode = null) {
    const q = viewQuery(this, mode);
    return this.predict ? this.predict.addTo(q) : q;
  }

  /** Rebuild the visible graph (after collapse/expand or direction) and lay it out again. */
  async relayout(keepCamera = true, k = this.player.k, prebuilt = null) {
    const gen = (this._layoutGen = (this._layoutGen || 0) + 1);
    const t0 = performance.now();
    const st = this.state.state;
    const view = prebuilt || buildView(this.index, this.tree, st);
    const t1 = performance.now();
    const input = {
      w: Float64Array.from(view.vnodes, (v) => v.w), h: Float64Array.from(view.vnodes, (v) => v.h),
      src: Int32Array.from(view.vedges, (e) => e.s), dst: Int32Array.from(view.vedges, (e) => e.t),
      cluster: view.cluster,
    };
    this._text("layoutStatus", view.vnodes.length > 500 ? `Laying out ${view.vnodes.length} nodes…` : "");
    this.layoutCount = (this.layoutCount || 0) + 1;
    const layout = await this.layout.layout(input, { direction: st.direction });
    if (gen !== this._layoutGen) return null;
    // A long strip is cut into columns shaped like the view (NOTE [wrapped layout] in render/wrap.js).
    if (this.els.graph) wrapLayout(layout, view.vnodes, { w: this.els.graph.clientWidth, h: this.els.graph.clientHeight });
    this.scene = makeScene(this.index, view, layout, this.timeline, st.collapsed);
    this._markErrors(this.scene);
    this.scene.active = activeVNodes(view, st.levels, st.openUnits);
    this.scene.units = st.levels.length ? { count: st.levels[0].count, open: st.openUnits[0] } : null;
    this.canvas.setScene(this.scene, k, { keepCamera });
    this._text("layoutStatus", "");
    if (this.els.simplified) this.els.simplified.hidden = !layout.simplified;
    this._text("stats", `${this.index.nodes.length} nodes · ${this.index.edges.length} edges${view.vnodes.length !== this.index.nodes.length ? ` · ${view.vnodes.length} shown` : ""}`);
    if (this.els.modulesList) {
      renderModules(this.els.modulesList, this.tree, st.collapsed, st.expandedRepeats, (p) => this.toggleModule(p), (p) => this.toggleRepeat(p));
    }
    if (this.els.modules) this.els.modules.hidden = this.tree.mods.size === 0;
    this.refreshNodeList();
    // The selection's vnode index belongs to the old view: show the same document node again.
    if (this._reselect != null) { const r = this._reselect; this._reselect = null; this._selectRef(r); }
    this.state.bump("view");
    return { view: t1 - t0, layout: layout.ms, vnodes: view.vnodes.length };
  }

  /** Put the error marks (analysis/errors.js) on the visible nodes that stand for them. */
  _markErrors(scene) {
    scene.suspectV = this._suspectRef != null ? scene.view.byRef[this._suspectRef] || [] : [];
    const labels = new Map();
    for (const m of this.errors.nodes) {
      for (const v of scene.view.byRef[m.ref] || []) if (!labels.has(v)) labels.set(v, m.text);
    }
    if (!labels.size) return;
    scene.errorV = [...labels.keys()];
    scene.errorLabels = new Map([...labels].filter(([, text]) => text));
  }

  /** Outline the node a gradient check blames (null: none). */
  outlineSuspect(nodeId) {
    const ref = nodeId == null || !this.index ? -1 : this.index.nodes.findIndex((n) => n.id === nodeId);
    this._suspectRef = ref >= 0 ? ref : null;
    if (!this.scene) return;
    this.scene.suspectV = ref >= 0 ? this.scene.view.byRef[ref] || [] : [];
    this.canvas.drawNow();
  }

  _text(name, text) { if (this.els[name]) this.els[name].textContent = text; }

  /** Change the view state without the relayout its subscription would start (the caller does it). */
  _setQuietly(patch) { this._quiet = true; try { this.state.set(patch); } finally { this._quiet = false; } }

  setDirection(direction) { this._setQuietly({ direction }); return this.relayout(false); }

  toggleModule(path) { this._keepSelection(); this._quiet = true; this.state.toggle("collapsed", path); this._quiet = false; return this.relayout(true); }

  toggleRepeat(path) { this._keepSelection(); this._quiet = true; this.state.toggle("expandedRepeats", path); this._quiet = false; return this.relayout(true); }

  /** Open a group one level (app/folds.js). */
  openGroup(v) { return openGroup(this, v); }

  /** A box's title was clicked: an opened unit closes again, a module collapses (app/folds.js). */
  clickBox(key) { return clickBox(this, key); }

  /** Open the groups that hide document node `ref` (app/navigate.js); its visible node, or −1. */
  reveal(ref) { return reveal(this, ref); }

  /** Jump to the next (or previous) line, loop iteration or pass (app/navigate.js). */
  jump(unit, back = false) { jump(this, unit, back); }

  followUnits(k) { if (followUnits(this, k)) this.relayout(false, k); }

  pickUnit(u) { pickUnit(this, u); }

  /** "Show on graph": open what hides document node `id`, go to the step that made it, select it. */
  async showNode(id) {
    const ref = this.index ? this.index.idx.get(id) : undefined;
    if (ref === undefined || !this.scene) return;
    const v = await this.reveal(ref);
    if (v < 0) return;
    if (this.scene.reveal[v] > this.player.k) this.player.go(this.scene.reveal[v], { fromUser: true });
    this.selectNode(v);
    this.canvas.centerOn(v);
  }

  /** Remember the selected document node so the inspector shows it again after relayout. */
  _keepSelection() {
    const v = this.selectedV;
    this._reselect = v >= 0 && this.scene ? this.scene.view.vnodes[v].refs[0] : null;
  }

  _selectRef(ref) {
    const vs = this.scene.view.byRef[ref] || [];
    if (vs.length) this.selectNode(vs[0], { pause: false });
    else this.selectNode(-1);
  }

  // ---- stepping and selection ----------------------------------------------------------

  onStep(k, { animate, playing }) {
    if (!this.scene) return;
    this.followUnits(k);
    this.canvas.setStep(k, { animate, durationMs: this.player.intervalMs });
    const tl = this.timeline;
    const ev = tl.event(k), prev = tl.event(k - 1);
    const lineOf = (e, i) => (e ? e.line ?? this.index.nodes[tl.evNode[i]].line ?? null : null);
    const evNode = ev ? this.index.nodes[tl.evNode[k - 1]] : null;
    const userBackward = ev && ev.phase === "backward" && isCustomFunction(evNode, this.doc.code) ? backwardLines(this.doc.code ?? this.codeText(), evNode.name) : null;
    this.code.mark({ current: lineOf(ev, k - 1), justDone: lineOf(prev, k - 2), userBackward }, { scroll: !!ev });
    this.transport.update(k, tl.N, playing, tl.segmentAt(k));
    const el = this.els.sentence;  // announced (aria-live) only when not playing
    if (el && this.words) { el.setAttribute("aria-live", playing ? "off" : "polite"); el.replaceChildren(...withCode(stepSentence(this.words, k))); }
    if (this.selectedV >= 0 && !playing) this.inspector.show(this.scene, this.selectedV, k);
    clearTimeout(this._listTimer);
    this._listTimer = setTimeout(() => this.refreshNodeList(), playing ? 250 : 0);
  }

  refreshNodeList() {
    if (!this.scene || !this.els.nodeList) return;
    renderNodeList(this.els.nodeList, this.scene, this.player.k, (v) => this.selectNode(v), this.canvas.stepState());
  }

  selectNode(v, { pause = true } = {}) {
    if (pause) this.player.pause();
    this.state.set({ selection: { v, line: null } });
    this.canvas.setSelection(v >= 0 ? [v] : []);
    if (v < 0) { this.inspector.clear(); this.code.mark({ selected: null }); return; }
    this.inspector.show(this.scene, v, this.player.k);
    // Selected from anywhere (node list, search, inspector, another panel): brought into view.
    this.canvas.reveal(v);
    const node = this.index.nodes[this.scene.view.vnodes[v].refs[0]];
    this.code.mark({ selected: node.line ?? null }, { scroll: false });
  }

  /** A code line was clicked (or reached with the keyboard): select the nodes it created. */
  selectLine(line, scroll = false) {
    if (!this.scene) return;
    const refs = this.index.byLine.get(line) || [];
    const vs = [...new Set(refs.flatMap((r) => this.scene.view.byRef[r]))];
    this.state.set({ selection: { v: -1, line } });
    this.canvas.setLineSelection(vs);
    this.code.mark({ selected: line }, { scroll });
    this.inspector.showLine(line, vs, vs.map((v) => this.scene.view.vnodes[v].label), (v) => this.selectNode(v));
  }
}

/** The inspector's extras side by side (each may be null). */
function extras(...parts) {
  const kept = parts.filter(Boolean);
  if (kept.length < 2) return kept[0] || null;
  const box = document.createElement("div");
  box.append(...kept);
  return box;
}
