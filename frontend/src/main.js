/**
 * The playground page: wires the editor, the API, the pipeline
 * document → graph view → layout (worker) → scene → canvas, and the animator.
 *
 * Modes (set by the template): "edit" runs snippets; "share" shows an embedded stored
 * document read-only and never runs anything until the user asks to edit a copy.
 */
import { runSnippet, shareDocument, ApiError } from "./api.js";
import { Player } from "./animate/player.js";
import { Timeline } from "./animate/timeline.js";
import { indexDocument } from "./graph/document.js";
import { defaultCollapsed, moduleTree } from "./graph/modules.js";
import { buildView } from "./graph/view.js";
import { LayoutClient } from "./layout/client.js";
import { GraphCanvas } from "./render/canvas.js";
import { download, toDot, toPng, toSvg } from "./render/export.js";
import { makeScene } from "./render/scene.js";
import { CodeEditor } from "./ui/editor.js";
import { EXAMPLES } from "./ui/examples.js";
import { toStandaloneHtml } from "./export-html.js";
import { renderGallery } from "./ui/gallery.js";
import { Inspector } from "./ui/inspector.js";
import { graphKeyHandler } from "./ui/keys.js";
import { renderLegend, renderModules, renderNodeList, renderResults, renderStatus } from "./ui/panels.js";
import { Transport } from "./ui/transport.js";

const $ = (s) => document.querySelector(s);
const readJson = (id) => { const el = document.getElementById(id); return el && el.textContent.trim() ? JSON.parse(el.textContent) : null; };

class App {
  constructor() {
    this.config = readJson("gt-config") || { mode: "edit" };
    this.mode = this.config.mode === "share" ? "share" : "edit";
    this.direction = "TB";
    this.scene = null;
    this.generation = 0;
    this.selectedV = -1;
    this.layout = new LayoutClient(new URL("./layout-worker.js", import.meta.url));
    this.editor = new CodeEditor($("#editor"), { onRun: () => this.run(), onLineSelect: (line) => this.selectLine(line) });
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
    this.bindControls();
    renderLegend($("#legend-list"));
    renderGallery($("#example-list"), EXAMPLES, (ex) => {
      if (this.mode === "share") this.editCopy();
      this.editor.setCode(ex.code);
      $("#examples").open = false;
      this.editor.focus();
    });
    this.inspector.clear();
    const doc = readJson("gt-document");
    if (this.mode === "share") this.enterShareMode(doc);
    else this.editor.setCode(loadDraft() ?? EXAMPLES[0].code);
    window.addEventListener("pagehide", () => { if (this.mode === "edit") saveDraft(this.editor.code); });
  }

  bindControls() {
    $("#run").addEventListener("click", () => this.run());
    $("#cancel").addEventListener("click", () => this.cancel());
    $("#share").addEventListener("click", () => this.share());
    $("#edit-copy").addEventListener("click", () => this.editCopy());
    $("#fit").addEventListener("click", () => this.canvas.fit());
    $("#zoom-in").addEventListener("click", () => this.canvas.zoomBy(1.25));
    $("#zoom-out").addEventListener("click", () => this.canvas.zoomBy(0.8));
    $("#direction").addEventListener("change", (e) => { this.direction = e.target.value; this.relayout(false); });
    $("#export-svg").addEventListener("click", () => this.exportAs("svg"));
    $("#export-png").addEventListener("click", () => this.exportAs("png"));
    $("#export-json").addEventListener("click", () => this.exportAs("json"));
    $("#export-dot").addEventListener("click", () => this.exportAs("dot"));
    $("#export-html").addEventListener("click", () => this.exportAs("html"));
    $("#share-copy").addEventListener("click", async () => {
      const input = $("#share-url");
      input.select();
      try { await navigator.clipboard.writeText(input.value); $("#share-copied").textContent = "Copied."; }
      catch { $("#share-copied").textContent = "Press Ctrl+C to copy."; }
    });
    $("#share-close").addEventListener("click", () => $("#share-dialog").close());
    const device = $("#device");
    if (!this.config.cuda_available) device.querySelector('option[value="cuda"]').disabled = true;
    $("#graph").addEventListener("keydown", graphKeyHandler(this.player, this.canvas));
  }

  // ---- running -------------------------------------------------------------------------

  async run() {
    if (this.mode === "share" || this.running) return;
    const seedText = $("#seed").value.trim();
    const seed = seedText === "" ? null : Number(seedText);
    if (seed !== null && (!Number.isInteger(seed) || seed < 0)) {
      renderStatus(this.results.badge, "refused", "The seed must be a whole number ≥ 0, or empty.");
      return;
    }
    this.controller = new AbortController();
    this.setRunning(true);
    try {
      const doc = await runSnippet({ code: this.editor.code, device: $("#device").value, seed }, this.controller.signal);
      await this.loadDocument(doc);
    } catch (err) {
      if (err.name === "AbortError") renderStatus(this.results.badge, "cancelled", "Cancelled: the run was abandoned.");
      else if (err instanceof ApiError) renderStatus(this.results.badge, "refused", `Refused (${err.status || "network"}): ${err.message}`);
      else { renderStatus(this.results.badge, "refused", `Could not show the result: ${err.message}`); console.error(err); }
    } finally {
      this.setRunning(false);
    }
  }

  cancel() { if (this.controller) this.controller.abort(); }

  setRunning(on) {
    this.running = on;
    $("#run").disabled = on || this.mode === "share";
    $("#cancel").hidden = !on;
    const prog = $("#progress");
    clearInterval(this._progTimer);
    prog.hidden = !on;
    document.body.classList.toggle("gt-running", on);
    if (on) {
      const t0 = performance.now();
      const tick = () => { prog.textContent = `Running… ${((performance.now() - t0) / 1000).toFixed(1)} s`; };
      tick();
      this._progTimer = setInterval(tick, 100);
    }
  }

  // ---- the pipeline --------------------------------------------------------------------

  /** Show a run document; resolves once its first frame is drawn, with timings in ms. */
  async loadDocument(doc) {
    const t0 = performance.now();
    this.doc = doc;
    this.index = indexDocument(doc);
    this.tree = moduleTree(this.index);
    this.collapsed = defaultCollapsed(this.index, this.tree);
    this.expandedRepeats = new Set();
    this.timeline = new Timeline(this.index);
    this.selectedV = -1;
    renderResults(this.results, doc, (line) => this.selectLine(line, true));
    this.editor.mark({ error: doc.error ? doc.error.line : null, current: null, justDone: null, selected: null }, { scroll: true });
    $("#share").disabled = false;
    for (const b of document.querySelectorAll(".gt-export")) b.disabled = false;
    $("#graph-empty").hidden = this.index.nodes.length > 0;
    if (!this.index.nodes.length) $("#graph-empty").textContent = "This run created no autograd node.";
    const timing = await this.relayout(false, this.timeline.N);
    if (!timing || this.doc !== doc) return null; // a newer document arrived meanwhile
    this.transport.setSegments(this.timeline.segments, this.timeline.N);
    this.inspector.clear();
    this.player.reset(this.timeline.N, this.timeline.segments, this.timeline.N);
    await new Promise((r) => requestAnimationFrame(() => { this.canvas.drawNow(); r(); }));
    this.lastTiming = { ...timing, total: performance.now() - t0, nodes: this.index.nodes.length };
    document.body.dataset.ready = String(++this.generation);
    return this.lastTiming;
  }

  /** Rebuild the visible graph (after collapse/expand or direction) and lay it out again. */
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
    $("#layout-status").textContent = view.vnodes.length > 500 ? `Laying out ${view.vnodes.length} nodes…` : "";
    const layout = await this.layout.layout(input, { direction: this.direction });
    if (gen !== this._layoutGen) return null;
    this.scene = makeScene(this.index, view, layout, this.timeline, this.collapsed);
    this.canvas.setScene(this.scene, k, { keepCamera });
    $("#layout-status").textContent = "";
    $("#simplified").hidden = !layout.simplified;
    $("#graph-stats").textContent = `${this.index.nodes.length} nodes · ${this.index.edges.length} edges${view.vnodes.length !== this.index.nodes.length ? ` · ${view.vnodes.length} shown` : ""}`;
    renderModules($("#modules-list"), this.tree, this.collapsed, this.expandedRepeats, (p) => this.toggleModule(p), (p) => this.toggleRepeat(p));
    $("#modules").hidden = this.tree.mods.size === 0;
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
  }

  refreshNodeList() {
    if (!this.scene) return;
    renderNodeList($("#node-list"), this.scene, this.player.k, (v) => this.selectNode(v), this.canvas.stepState());
  }

  selectNode(v) {
    this.player.pause();
    this.selectedV = v;
    this.canvas.setSelection(v >= 0 ? [v] : []);
    if (v < 0) { this.inspector.clear(); this.editor.mark({ selected: null }); return; }
    this.inspector.show(this.scene, v, this.player.k);
    const node = this.index.nodes[this.scene.view.vnodes[v].refs[0]];
    this.editor.mark({ selected: node.line ?? null }, { scroll: false });
  }

  /** A code line was clicked (or reached with the keyboard): select the nodes it created. */
  selectLine(line, scroll = false) {
    if (!this.scene) return;
    const refs = this.index.byLine.get(line) || [];
    const vs = [...new Set(refs.flatMap((r) => this.scene.view.byRef[r]))];
    this.canvas.setLineSelection(vs);
    this.editor.mark({ selected: line }, { scroll });
    this.inspector.showLine(line, vs, vs.map((v) => this.scene.view.vnodes[v].label), (v) => this.selectNode(v));
  }

  // ---- share, export, modes ------------------------------------------------------------

  async share() {
    if (!this.doc) return;
    const btn = $("#share");
    btn.disabled = true;
    try {
      const stored = this.doc.code != null;  // the server's copy already holds the code
      const doc = stored ? this.doc : { ...this.doc, code: this.editor.code };
      const res = await shareDocument(doc, { stored });
      $("#share-url").value = new URL(res.url || `/s/${res.id}`, location.origin).href;
      $("#share-copied").textContent = "";
      $("#share-dialog").showModal();
      $("#share-url").select();
    } catch (err) {
      renderStatus(this.results.badge, "refused", `Could not share: ${err.message}`);
    } finally {
      btn.disabled = false;
    }
  }

  async exportAs(kind) {
    if (!this.scene) return;
    const base = `gradtrace-${this.doc.id || "run"}`;
    const pal = this.canvas.pal;
    if (kind === "json") download(`${base}.json`, new Blob([JSON.stringify(this.doc, null, 1)], { type: "application/json" }));
    if (kind === "dot") download(`${base}.dot`, new Blob([toDot(this.index, this.direction)], { type: "text/vnd.graphviz" }));
    if (kind === "svg") download(`${base}.svg`, new Blob([toSvg(this.scene, this.player.k, pal)], { type: "image/svg+xml" }));
    if (kind === "png") download(`${base}.png`, await toPng(this.scene, this.player.k, pal));
    if (kind === "html") download(`${base}.html`, await toStandaloneHtml({ ...this.doc, code: this.doc.code ?? this.editor.code }, { version: this.config.version }));
    $("#export-menu").open = false;
  }

  enterShareMode(doc) {
    document.body.dataset.mode = "share";
    this.editor.setReadOnly(true);
    $("#run").disabled = true;
    $("#edit-copy").hidden = false;
    $("#share-banner").hidden = false;
    if (!doc) { renderStatus(this.results.badge, "refused", "This shared run could not be loaded."); return; }
    this.editor.setCode(doc.code || "# (the shared run did not include its code)\n");
    this.loadDocument(doc).catch((err) => renderStatus(this.results.badge, "refused", `Could not show the shared run: ${err.message}`));
  }

  editCopy() {
    if (this.mode !== "share") return;
    this.mode = "edit";
    document.body.dataset.mode = "edit";
    this.editor.setReadOnly(false);
    $("#run").disabled = false;
    $("#edit-copy").hidden = true;
    $("#share-banner").hidden = true;
    history.pushState(null, "", "/");
  }
}

// The editor's text survives a reload (not a share link: those always show what was shared).
const DRAFT_KEY = "gradtrace.draft";
function loadDraft() { try { return localStorage.getItem(DRAFT_KEY); } catch { return null; } }
function saveDraft(code) { try { localStorage.setItem(DRAFT_KEY, code); } catch { /* storage disabled */ } }

const app = new App();
// For tests and benchmarks: the page's one entry point from outside.
window.gradtrace = { app, loadDocument: (doc) => app.loadDocument(doc) };
