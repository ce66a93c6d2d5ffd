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
 */
import { Player } from "../animate/player.js";
import { Timeline } from "../graph/timeline.js";
import { backwardLines, isCustomFunction } from "../graph/custom.js";
import { indexDocument } from "../graph/document.js";
import { activeVNodes, openAt, runLevels, shownMask, unitKey, unitsKey } from "../graph/groups.js";
import { defaultCollapsed, moduleTree } from "../graph/modules.js";
import { buildView } from "../graph/view.js";
import { LayoutClient } from "../layout/client.js";
import { GraphCanvas } from "../render/canvas.js";
import { makeScene } from "../render/scene.js";
import { errorMarks } from "../ui/errors.js";
import { addFindingMarks, markTransport, renderFindings } from "../ui/findings.js";
import { GradcheckPanel } from "../ui/gradcheck.js";
import { ExplainPanel } from "../ui/explain.js";
import { Inspector } from "../ui/inspector.js";
import { IterationPicker } from "../ui/iterations.js";
import { compactKeyHint, graphKeyHandler } from "../ui/keys.js";
import { renderModules, renderNodeList } from "../ui/panels.js";
import { cycle, searchNodes } from "../ui/search.js";
import { iterationStarts, lineStarts, nextStart, passStarts, prevStart } from "../ui/steps.js";
import { Transport } from "../ui/transport.js";
import { segmentLabel, stepSentence, wordsContext } from "../ui/words.js";
import { ViewState } from "./state.js";

/** The element marked `data-gt="name"` inside root (or root itself), or null. */
export function part(root, name) {
  if (root.dataset && root.dataset.gt === name) return root;
  return root.querySelector(`[data-gt="${name}"]`);
}

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
    this.direction = "TB";
    this.scene = null;
    this.doc = null;
    this.generation = 0;
    const p = (name) => part(root, name);
    this.els = {
      graph: p("graph"), empty: p("graph-empty"), layoutStatus: p("layout-status"), simplified: p("simplified"),
      stats: p("graph-stats"), modules: p("modules"), modulesList: p("modules-list"), nodeList: p("node-list"),
      timeline: p("timeline"), inspector: p("inspector"), sentence: p("sentence"),
      search: p("search"), searchCount: p("search-count"), findings: p("findings"),
    };
    compactKeyHint(root.querySelector("#graph-keys"));
    this.layout = new LayoutClient(opts.workerUrl || new URL("./layout-worker.js", import.meta.url));
    this.player = new Player((k, o) => this.onStep(k, o));
    this.transport = new Transport(this.els.timeline, this.player);
    // The gradient check (ui/gradcheck.js) asks the service, so only a page with one offers it.
    // opts.checks: true (ask the service) or a function that asks for a check (the widget's).
    this.check = opts.checks && this.els.inspector ? new GradcheckPanel(this.els.inspector, { onSuspect: (id) => this.outlineSuspect(id),
      request: typeof opts.checks === "function" ? opts.checks : undefined }) : null;
    this.explain = opts.checks === true ? new ExplainPanel() : null; // ui/explain.js asks the service too
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
    // Search (or anything else) may open groups through the view state: draw them.
    this.state.subscribe((_, changed) => { if (changed.includes("open") && this.scene && !this._quiet) this.relayout(true); });
    this.els.graph.addEventListener("keydown", graphKeyHandler(this.player, this.canvas, {
      jump: (unit, back) => this.jump(unit, back),
      search: () => this.focusSearch(),
    }));
    this.els.graph.addEventListener("focus", () => { if (this.els.sentence) this.els.sentence.setAttribute("aria-live", "polite"); });
    this._bindSearch();
    const pickerHost = this.els.stats ? this.els.stats.parentElement : null;
    this.iterPicker = pickerHost ? new IterationPicker(pickerHost, { onPick: (u) => this.pickUnit(u) }) : null;
    this.levels = [];
    this.openUnits = [];
    this.inspector.clear();
  }

  get selectedV() { return this.state.get("selection").v; }

  // ---- the pipeline --------------------------------------------------------------------

  /** Show a run document; resolves once its first frame is drawn, with timings in ms. */
  async loadDocument(doc, { step = null } = {}) {
    const t0 = performance.now();
    this.doc = doc;
    if (this.check) this.check.hide();
    this.index = indexDocument(doc);
    this.tree = moduleTree(this.index);
    this.timeline = new Timeline(this.index);
    // Iterations and module calls (graph/groups.js): the open ones drawn in full, the rest folded.
    this.levels = runLevels(this.index, this.timeline, this.tree);
    const k0 = step == null ? this.timeline.N : Math.max(0, Math.min(this.timeline.N, step));
    this.openUnits = openAt(this.levels, k0);
    const shown = this.levels.length ? shownMask(this.levels, this.openUnits, this.index.nodes.length) : null;
    this._quiet = true;
    this.state.reset({ collapsed: defaultCollapsed(this.index, this.tree, undefined, shown), step: this.timeline.N });
    this._quiet = false;
    if (this.iterPicker) { this.iterPicker.setLevel(this.levels[0] || null); this.iterPicker.update(this.openUnits[0] ?? 0); }
    this.words = wordsContext(this.index, this.timeline, doc.code ?? this.codeText(), this.levels);
    this.errors = addFindingMarks(errorMarks(this.index), this.index);
    renderFindings(this.els.findings, doc, { onLine: (line) => this.onLineCb(line, true), onNode: (id) => this.showNode(id) });
    this._starts = null;
    this.inspector.setContext({ words: this.words, errors: this.errors });
    if (this.els.search && this.els.search.value.trim()) this._runSearch(false);
    this.code.mark({ error: this.errors.lines.error, cause: this.errors.lines.cause, hint: this.errors.findingLines, current: null, justDone: null, selected: null }, { scroll: true });
    if (this.els.empty) {
      this.els.empty.hidden = this.index.nodes.length > 0;
      if (!this.index.nodes.length) this.els.empty.textContent = "This run created no autograd node.";
    }
    const timing = await this.relayout(false, k0);
    if (!timing || this.doc !== doc) return null; // a newer document arrived meanwhile
    this.transport.setSegments(this.timeline.segments, this.timeline.N, (seg) => segmentLabel(this.words, seg));
    markTransport(this.els.timeline, this.timeline, doc, (k) => this.player.go(k, { fromUser: true }));
    this.inspector.clear();
    const k = step == null ? this.timeline.N : Math.max(0, Math.min(this.timeline.N, step));
    this.player.reset(this.timeline.N, this.timeline.segments, k);
    await new Promise((r) => requestAnimationFrame(() => { this.canvas.drawNow(); r(); }));
    this.lastTiming = { ...timing, total: performance.now() - t0, nodes: this.index.nodes.length };
    this.generation++;
    return this.lastTiming;
  }

  /** Rebuild the visible graph (after collapse/expand or direction) and lay it out again. */
  async relayout(keepCamera = true, k = this.player.k) {
    const gen = (this._layoutGen = (this._layoutGen || 0) + 1);
    const t0 = performance.now();
    const st = this.state.state;
    const view = buildView(this.index, this.tree, { collapsed: st.collapsed, expandedRepeats: st.expandedRepeats, open: st.open,
      levels: this.levels, openUnits: this.openUnits });
    const t1 = performance.now();
    const input = {
      w: Float64Array.from(view.vnodes, (v) => v.w), h: Float64Array.from(view.vnodes, (v) => v.h),
      src: Int32Array.from(view.vedges, (e) => e.s), dst: Int32Array.from(view.vedges, (e) => e.t),
      cluster: view.cluster,
    };
    this._text("layoutStatus", view.vnodes.length > 500 ? `Laying out ${view.vnodes.length} nodes…` : "");
    const layout = await this.layout.layout(input, { direction: this.direction });
    if (gen !== this._layoutGen) return null;
    this.scene = makeScene(this.index, view, layout, this.timeline, st.collapsed);
    this._markErrors(this.scene);
    this.scene.active = activeVNodes(view, this.levels, this.openUnits);
    this.scene.units = this.levels.length ? { count: this.levels[0].count, open: this.openUnits[0] } : null;
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
    return { view: t1 - t0, layout: layout.ms, vnodes: view.vnodes.length };
  }

  /** Put the error marks (ui/errors.js) on the visible nodes that stand for them. */
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

  setDirection(direction) { this.direction = direction; return this.relayout(false); }

  toggleModule(path) { this._keepSelection(); this.state.toggle("collapsed", path); return this.relayout(true); }

  toggleRepeat(path) { this._keepSelection(); this.state.toggle("expandedRepeats", path); return this.relayout(true); }

  openGroup(v) {
    const g = this.scene.view.vnodes[v];
    if (g.fold) {
      // One level at a time: a run of units shows its units, a unit shows what it holds.
      // A selected fold stays selected as what now holds its first node (the inspector follows).
      if (this.selectedV === v) this._keepSelection();
      const next = new Set(this.state.get("open"));
      next.add(g.single || g.lo === g.hi ? unitKey(g.level, g.lo) : unitsKey(g.level));
      this._setQuietly({ open: next });
      return this.relayout(true);
    }
    this._keepSelection();
    this._open(g);
    return this.relayout(true);
  }

  /** Change the view state without the relayout its subscription would start (the caller does it). */
  _setQuietly(patch) { this._quiet = true; try { this.state.set(patch); } finally { this._quiet = false; } }

  /** A box's title was clicked: an opened unit closes again, a module collapses. */
  clickBox(key) {
    if (key.startsWith("unit:")) {
      const next = new Set(this.state.get("open"));
      next.delete(key);
      this._setQuietly({ open: next });
      return this.relayout(true);
    }
    return this.toggleModule(key.replace(/@\d+$/, ""));
  }

  /** Open one group in the view state: a loop/call group by its key, else a module box. */
  _open(g) {
    if (g.groupKey != null) this.state.toggle("open", g.groupKey, true);
    else if (g.repeat) this.state.toggle("expandedRepeats", g.module, true);
    else if (g.module != null) this.state.toggle("collapsed", g.module, false);
  }

  /** Open the groups that hide document node `ref`, one level at a time; its visible node. */
  async reveal(ref) {
    await this._openUnitsFor(ref);
    for (let depth = 0; depth < 16; depth++) {
      const vs = this.scene.view.byRef[ref] || [];
      const own = vs.find((v) => this.scene.view.vnodes[v].kind !== "group");
      if (own !== undefined || !vs.length) return own ?? -1;
      const g = this.scene.view.vnodes[vs[0]];
      if (g.fold) return -1;
      const before = this.scene;
      this._open(g);
      await this.relayout(true);
      if (this.scene === before) return -1;
    }
    return -1;
  }

  /**
   * A node in a folded iteration or call (graph/groups.js) is shown by going to the step that
   * made it: the open units follow the step, so its unit opens and the others fold.
   */
  async _openUnitsFor(ref) {
    if (this.levels.every((lv, l) => lv.unitOf[ref] < 0 || lv.unitOf[ref] === this.openUnits[l])) return;
    const k = Math.max(1, this.timeline.reveal[ref]);
    const open = openAt(this.levels, k);
    if (open.every((u, l) => u === this.openUnits[l])) return;
    this.openUnits = open;  // onStep's followUnits then finds nothing to change
    if (this.iterPicker) this.iterPicker.update(open[0]);
    this.player.go(k, { fromUser: true });
    await this.relayout(true, k);
  }

  // ---- words, jumps and search ---------------------------------------------------------

  /** The sentence under the timeline; announced (aria-live) only when not playing. */
  _say(k, playing) {
    const el = this.els.sentence;
    if (!el || !this.words) return;
    el.setAttribute("aria-live", playing ? "off" : "polite");
    el.textContent = stepSentence(this.words, k);
  }

  /** Jump to the next (or previous) line, loop iteration or pass. */
  jump(unit, back = false) {
    if (!this.timeline) return;
    if (!this._starts) this._starts = {};
    const tl = this.timeline;
    // Iterations: the outermost units of graph/groups.js when it found some (the picker's), else steps.js.
    const units = () => (this.levels.length ? this.levels[0].units.map((u) => u.firstStep).filter((x) => x >= 1) : null);
    const make = { line: () => lineStarts(tl, this.index), iteration: () => units() || iterationStarts(tl, this.index), pass: () => passStarts(tl) };
    const starts = this._starts[unit] || (this._starts[unit] = make[unit]());
    const k = back ? prevStart(starts, this.player.k) : nextStart(starts, this.player.k, tl.N);
    this.player.go(k, { fromUser: true });
  }

  focusSearch() { if (this.els.search) { this.els.search.focus(); this.els.search.select(); } }

  _bindSearch() {
    const box = this.els.search;
    if (!box) return;
    box.addEventListener("input", () => this._runSearch(false));
    box.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") { ev.preventDefault(); this.nextMatch(ev.shiftKey); }
      else if (ev.key === "Escape") { ev.preventDefault(); box.value = ""; this._runSearch(false); this.els.graph.focus(); }
    });
  }

  _runSearch(go) {
    const query = this.els.search.value;
    const matches = this.index ? searchNodes(this.index, query) : [];
    this.state.set({ search: { query, matches, at: -1 } });
    this._searchStatus();
    if (go) this.nextMatch(false);
  }

  _searchStatus() {
    const { query, matches, at } = this.state.get("search");
    if (!this.els.searchCount) return;
    this.els.searchCount.textContent = !query.trim() ? "" : !matches.length ? "no match"
      : at < 0 ? `${matches.length} match${matches.length > 1 ? "es" : ""}` : `${at + 1} of ${matches.length}`;
  }

  /** Go to the next match (Enter) or the previous one (Shift+Enter): open its groups, select it. */
  async nextMatch(back = false) {
    const s = this.state.get("search");
    if (!this.scene || s.query !== this.els.search.value) this._runSearch(false);
    const { matches, at } = this.state.get("search");
    const next = cycle(at, matches.length, back);
    this.state.set({ search: { ...this.state.get("search"), at: next } });
    if (next < 0) { this._searchStatus(); return; }
    const v = await this.reveal(matches[next].ref);
    if (v < 0) { this._searchStatus(); return; }
    if (this.scene.reveal[v] > this.player.k) this.player.go(this.scene.reveal[v], { fromUser: true });
    this.selectNode(v);
    this.canvas.setLineSelection([v]);
    this.canvas.centerOn(v);
    this._searchStatus();
  }

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

  /** The iterations or calls open at step k follow the step (graph/groups.js). */
  followUnits(k) {
    if (!this.levels.length) return;
    const open = openAt(this.levels, k);
    if (this.iterPicker) this.iterPicker.update(open[0]);
    if (open.some((u, l) => u !== this.openUnits[l])) { this.openUnits = open; this.relayout(false, k); }
  }

  /** The picker chose unit u of the outermost level: the transport goes to the end of its forward. */
  pickUnit(u) {
    const unit = this.levels[0] && this.levels[0].units[u];
    if (unit) this.player.go(unit.forwardEnd || unit.lastStep, { fromUser: true });
  }

  onStep(k, { animate, playing }) {
    if (!this.scene) return;
    this.followUnits(k);
    this.state.set({ step: k });
    this.canvas.setStep(k, { animate, durationMs: this.player.intervalMs });
    const tl = this.timeline;
    const ev = tl.event(k), prev = tl.event(k - 1);
    const lineOf = (e, i) => (e ? e.line ?? this.index.nodes[tl.evNode[i]].line ?? null : null);
    const evNode = ev ? this.index.nodes[tl.evNode[k - 1]] : null;
    const userBackward = ev && ev.phase === "backward" && isCustomFunction(evNode) ? backwardLines(this.doc.code ?? this.codeText(), evNode.name) : null;
    this.code.mark({ current: lineOf(ev, k - 1), justDone: lineOf(prev, k - 2), userBackward }, { scroll: !!ev });
    this.transport.update(k, tl.N, playing, tl.segmentAt(k));
    this._say(k, playing);
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
