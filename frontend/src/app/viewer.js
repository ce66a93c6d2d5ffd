/**
 * The viewer: one run document shown as graph view + timeline/transport + inspector, wired to
 * a code pane. It builds the page model (app/model.js), runs the pipeline model → view →
 * layout (worker) → scene → canvas (app/pipeline.js), and follows the view state (app/state.js).
 *
 * NOTE [mountable viewer]
 *   The viewer finds its parts inside its own root by `data-gt` attributes, never by global
 *   ids, so the playground page and a notebook widget can mount it on any element, several
 *   times on one page. A part that is missing is simply not drawn (a widget may leave out the
 *   module menu or the accessible node list). The code pane is anything with
 *   `mark(marks, {scroll})` (ui/editor.js's CodeEditor, or a read-only listing).
 *
 * NOTE [a thin viewer]
 *   Everything the person is looking at lives in the view state; everything derived from the
 *   document lives in the page model. Folds, navigation and links are functions of the two
 *   (app/folds.js, app/navigate.js, app/link.js) that answer a change, and `apply` below is
 *   the one place that makes it: it sets the state quietly and lays the graph out once. The
 *   panels are the registry's (NOTE [one panel shape] in ui/registry.js), mounted by
 *   app/context.js; they hear each change, and the step once it is drawn (`onStep`).
 */
import { Player } from "../animate/player.js";
import { LayoutClient } from "../layout/client.js";
import { GraphCanvas } from "../render/canvas.js";
import { hoverPanels, mountPanels, part, selectPanels, showSelected, updatePanels } from "./context.js";
import { clickBox, openGroup, toggleModule, toggleRepeat } from "./folds.js";
import { foldsOf, linkQuery } from "./link.js";
import { initialState, nodeOfV, pageModel } from "./model.js";
import { followUnits, jump, pickUnit, reveal } from "./navigate.js";
import { layoutInput, lineNodes, sceneOf, viewOf } from "./pipeline.js";
import { ViewState } from "./state.js";

export { part };

const NO_CODE = { mark() {} };
const MOVES = new Set(["step", "playing"]);  // panels hear these from onStep, once the step is drawn

export class Viewer {
  /** @param {HTMLElement} root  holds the viewer's parts (data-gt="graph", "timeline", …); @param opts  app/context.js's and:
   *  {state?: ViewState, code?: {mark}, codeText?: () => string, workerUrl?: URL|string, onLine?: (line, scroll) => void} */
  constructor(root, opts = {}) {
    Object.assign(this, { root, model: null, scene: null, generation: 0, layoutCount: 0, _quiet: null,
      state: opts.state || new ViewState(), code: opts.code || NO_CODE, codeText: opts.codeText || (() => "") });
    this.onLine = opts.onLine || ((line, scroll) => this.selectLine(line, scroll));
    this.els = { graph: part(root, "graph"), layoutStatus: part(root, "layout-status") };
    this.layout = new LayoutClient(opts.workerUrl || new URL("./layout-worker.js", import.meta.url));
    this.player = new Player(this.state, (k, o) => this.onStep(k, o));
    this.canvas = new GraphCanvas(this.els.graph, { onNodeClick: (v) => this.selectNode(v), onBoxClick: (key) => this.apply(clickBox(this.state.state, key)),
      onGroupOpen: (v) => this.openGroup(v), onHover: (v) => { this.player.pause(); hoverPanels(this.panels, this.model, nodeOfV(this.model, this.scene, v)); } });
    this.panels = mountPanels(this, root, { ...opts, codeText: this.codeText });
    // A fold or turn made through the state by anyone but `apply` (search, a panel) is laid out here.
    this.state.subscribe((st, changed) => {
      const heard = changed.filter((c) => !MOVES.has(c));
      if (heard.length && this._quiet !== "all") updatePanels(this.panels, this.model, st, heard);
      if (!this.scene || this._quiet) return;
      if (changed.includes("direction")) this.relayout(false);
      else if (changed.some((c) => c === "open" || c === "collapsed" || c === "expandedRepeats")) this.relayout(true);
    });
  }

  get selectedV() { return this.state.get("selection").v; }  // these four: read-only views of the state
  get direction() { return this.state.get("direction"); }
  get levels() { return this.state.get("levels"); }
  get openUnits() { return this.state.get("openUnits"); }

  /** Show a run document; resolves once its first frame is drawn, with timings in ms (null: a newer document came). `view`
   *  (app/link.js decodeView) restores what a share link's sharer saw: folds, open groups, the selected node, the camera. */
  async loadDocument(doc, { step = null, view = null } = {}) {
    const t0 = performance.now();
    this.player.pause();
    const model = (this.model = pageModel(doc, { code: this.codeText(), step }));
    this.player.N = model.N;
    this._quietly(() => this.state.reset({ ...initialState(model), ...(view ? foldsOf(view, model.defaults, model.tree) : {}) }), "all");
    this._quietly(() => this.state.bump("document"));
    const timing = await this.relayout(false, model.k0);
    if (!timing || this.model !== model) return null;
    this.player.reset(model.N, model.timeline.segments, model.k0);
    if (view) await this._restoreView(view);
    await new Promise((r) => requestAnimationFrame(() => { this.canvas.drawNow(); r(); }));
    this.lastTiming = { ...timing, total: performance.now() - t0, nodes: model.index.nodes.length };
    this.generation++;
    return this.lastTiming;
  }

  /** Select the shared node (revealing it) and put the camera where the sharer had it (app/link.js). */
  async _restoreView(view) {
    const ref = view.sel != null ? this.model.index.idx.get(view.sel) : undefined;
    const v = ref !== undefined ? await this.reveal(ref) : -1;
    if (v >= 0) this.selectNode(v, { pause: false });
    if (view.cam) this.canvas.lookAt(view.cam.cx, view.cam.cy, view.cam.k);
    else if (this.selectedV >= 0) this.canvas.centerOn(this.selectedV);
  }

  /** What a share link carries of this view (app/link.js); `mode` is the page's. */
  viewQuery(mode = null) {
    const q = linkQuery(this.model, this.state.state, { sel: nodeOfV(this.model, this.scene, this.selectedV), cam: this.canvas.cam, size: this.canvas._size(), mode });
    return this.panels.predict ? this.panels.predict.addTo(q) : q;
  }

  /** Make a change of app/folds.js or app/navigate.js: set the state quietly, move, lay out once. */
  async apply(change) {
    if (!change) return null;
    if (change.keepSelection) this._keepSelection();
    if (change.set) this._quietly(() => this.state.set(change.set));
    if (change.go != null) this.player.go(change.go, { fromUser: true });
    return change.layout ? this.relayout(change.layout === "keep", change.k ?? this.player.k, change.view || null) : null;
  }

  /** Run `fn` without the relayout the state's subscription would start ("all": nor the panels' updates). */
  _quietly(fn, level = "layout") { const was = this._quiet; this._quiet = level; try { fn(); } finally { this._quiet = was; } }

  /** Rebuild the visible graph (after a fold or a turn) and lay it out again; null when a newer layout came. */
  async relayout(keepCamera = true, k = this.player.k, prebuilt = null) {
    const gen = (this._layoutGen = (this._layoutGen || 0) + 1);
    const [t0, st, model] = [performance.now(), this.state.state, this.model];
    const view = prebuilt || viewOf(model, st);
    const t1 = performance.now();
    const status = (text) => { if (this.els.layoutStatus) this.els.layoutStatus.textContent = text; };
    status(view.vnodes.length > 500 ? `Laying out ${view.vnodes.length} nodes…` : "");
    this.layoutCount++;
    const layout = await this.layout.layout(layoutInput(view), { direction: st.direction });
    if (gen !== this._layoutGen) return null;
    const box = this.els.graph ? { w: this.els.graph.clientWidth, h: this.els.graph.clientHeight } : null;
    this.scene = sceneOf(model, st, view, layout, box);
    this.canvas.setScene(this.scene, k, { keepCamera });
    status("");
    // The selection's vnode index belongs to the old view: show the same document node again.
    const ref = this._reselect, vs = ref != null ? this.scene.view.byRef[ref] || [] : null;
    this._reselect = null;
    if (vs) this.selectNode(vs.length ? vs[0] : -1, { pause: !vs.length });
    this.state.bump("view");
    return { view: t1 - t0, layout: layout.ms, vnodes: view.vnodes.length };
  }

  /** Remember the selected document node so the inspector shows it again after the layout. */
  _keepSelection() { const v = this.selectedV; this._reselect = v >= 0 && this.scene ? this.scene.view.vnodes[v].refs[0] : null; }

  setDirection(direction) { return this.apply({ set: { direction }, layout: "fresh" }); }
  toggleModule(path) { return this.apply(toggleModule(this.state.state, path)); }
  toggleRepeat(path) { return this.apply(toggleRepeat(this.state.state, path)); }
  openGroup(v) { return this.apply(openGroup(this.state.state, this.scene.view, v)); }
  jump(unit, back = false) { if (this.model) this.apply(jump(this.model, this.state.state, unit, back)); }
  pickUnit(u) { this.apply(pickUnit(this.state.state, u)); }

  /** Open the groups that hide document node `ref` (app/navigate.js); its visible node, or −1. */
  async reveal(ref) {
    const change = reveal(this.model, this.state.state, ref, this.scene.view);
    this.revealStats = change.stats;
    if (!change.layout) return change.v;
    return (await this.apply(change)) ? change.v : -1;
  }

  /** "Show on graph": open what hides document node `id`, go to the step that made it, select it. */
  async showNode(id) {
    const ref = this.model ? this.model.index.idx.get(id) : undefined;
    const v = ref === undefined || !this.scene ? -1 : await this.reveal(ref);
    if (v < 0) return;
    if (this.scene.reveal[v] > this.player.k) this.player.go(this.scene.reveal[v], { fromUser: true });
    this.selectNode(v);
    this.canvas.centerOn(v);
  }

  /** The player moved (or started or stopped): the units follow, the canvas draws, the panels hear. */
  onStep(k, { animate }) {
    if (!this.scene) return;
    this.apply(followUnits(this.state.state, k));
    this.canvas.setStep(k, { animate, durationMs: this.player.intervalMs });
    updatePanels(this.panels, this.model, this.state.state, ["step"]);
  }

  selectNode(v, { pause = true } = {}) {
    const node = selectPanels(this.panels, this.model, nodeOfV(this.model, this.scene, v));  // first: NOTE [the looked-at tensor first] in ui/tensors.js
    if (pause) this.player.pause();
    this.state.set({ selection: { v, line: null } });
    this.canvas.setSelection(v >= 0 ? [v] : []);
    if (v < 0) { this.code.mark({ selected: null }); return; }
    showSelected(this, v, node);  // app/context.js: brought into view, its code line marked
  }

  /** A code line was clicked (or reached with the keyboard): select the nodes it created. */
  selectLine(line, scroll = false) {
    if (!this.scene) return;
    this.state.set({ selection: { v: -1, line } });
    this.canvas.setLineSelection(lineNodes(this.model.index, this.scene.view, line));
    this.code.mark({ selected: line }, { scroll });
  }
}
