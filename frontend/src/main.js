/**
 * The playground page: the code pane (editor), the viewer (app/viewer.js: graph, timeline,
 * inspector), the run controller (app/run.js) and the share/export controller (app/share.js),
 * around one view state (app/state.js). This file only wires them and handles the page's modes.
 *
 * Modes (set by the template): "edit" runs snippets; "share" shows an embedded stored
 * document read-only and never runs anything until the user asks to edit a copy.
 */
import { RunController } from "./app/run.js";
import { decodeView } from "./app/link.js";
import { ShareController } from "./app/share.js";
import { installCompareButton } from "./compare/entry.js";
import { ViewState } from "./app/state.js";
import { Viewer } from "./app/viewer.js";
import { serviceTensors } from "./tensors/source.js";
import { CodeEditor } from "./ui/editor.js";
import { Exercises } from "./ui/exercises.js";
import { renderGallery } from "./ui/gallery.js";
import { presentationMode } from "./ui/present.js";
import { renderErrorExplain, renderLegend, renderResults, renderStatus } from "./ui/panels.js";

const $ = (s) => document.querySelector(s);
const readJson = (id) => { const el = document.getElementById(id); return el && el.textContent.trim() ? JSON.parse(el.textContent) : null; };

class App {
  constructor() {
    this.config = readJson("gt-config") || { mode: "edit" };
    this.mode = this.config.mode === "share" ? "share" : "edit";
    this.state = new ViewState();
    this.editor = new CodeEditor($("#editor"), { onRun: () => this.runner.run(), onLineSelect: (line) => this.viewer.selectLine(line),
      onLeave: () => $("#graph").focus() });
    bindWrap($("#wrap"), this.editor);
    /** The document's tensor source (NOTE [tensor sources] in tensors/source.js). */
    this.tensors = serviceTensors((doc) => (this.config.share_id && doc.id === this.sharedId ? this.config.share_id : null));
    this.viewer = new Viewer(document.body, { state: this.state, code: this.editor, codeText: () => this.editor.code, checks: true,
      tensors: this.tensors,
      onGoals: () => this.exercises.onReport() });
    this.results = { badge: $("#status-badge"), error: $("#error-box"), stdout: $("#stdout"), stdoutWrap: $("#stdout-wrap") };
    const status = (s, text) => renderStatus(this.results.badge, s, text);
    this.runner = new RunController(
      { run: $("#run"), cancel: $("#cancel"), progress: $("#progress"), device: $("#device"), seed: $("#seed") },
      { code: () => this.editor.code, onDocument: (doc) => this.loadDocument(doc), onStatus: status, enabled: () => this.mode === "edit",
        extra: () => (this.exercises ? this.exercises.requestFields() : {}) },
    );
    this.sharer = new ShareController(
      {
        share: $("#share"), dialog: $("#share-dialog"), url: $("#share-url"), copy: $("#share-copy"), copied: $("#share-copied"),
        close: $("#share-close"), menu: $("#export-menu"), pngScale: $("#export-png-scale"),
        exports: { svg: $("#export-svg"), png: $("#export-png"), json: $("#export-json"), dot: $("#export-dot"), html: $("#export-html") },
      },
      { viewer: this.viewer, code: () => this.editor.code, onStatus: status, mode: () => (this.present && this.present.on() ? "present" : null) },
    );
    this.bindControls();
    this.present = presentationMode({ button: $("#present"), panes: { code: $(".gt-code"), inspector: $("#inspector") }, canvas: this.viewer.canvas });
    installCompareButton($("#compare"), () => this.doc);
    renderLegend($("#legend-list"));
    this.lessons = readJson("gt-lessons") || []; // backend/gradtrace/lessons, embedded by the page
    $("#examples").hidden = false; // the page's own part of the shared viewer markup
    this.exercises = new Exercises(
      { picker: $("#exercises"), body: $("#exercise-body"), panel: $("#exercise"), task: $("#exercise-task"),
        solution: $("#exercise-solution"), solutionText: $("#exercise-solution-text") },
      this.lessons, { setCode: (code) => { if (this.mode === "share") this.editCopy(); this.editor.setCode(code); this.editor.focus(); } });
    this.viewer.panels.predict.fromQuery(location.search);  // a teacher's questions (ui/predict.js)
    renderGallery($("#example-list"), this.lessons, (ex) => {
      this.exercises.close();
      if (this.mode === "share") this.editCopy();
      this.editor.setCode(ex.code);
      $("#examples").open = false;
      this.editor.focus();
    });
    const doc = readJson("gt-document");
    this.sharedId = doc ? doc.id : null;  // its tensors are the share's (tensors/source.js)
    if (this.mode === "share") this.enterShareMode(doc);
    else this.editor.setCode(loadDraft() ?? this.lessons[0]?.code ?? "");
    window.addEventListener("pagehide", () => { if (this.mode === "edit") saveDraft(this.editor.code); });
  }

  // What tests, benchmarks and the console reach through window.gradtrace.app.
  get doc() { return this.viewer.model ? this.viewer.model.doc : null; }
  get scene() { return this.viewer.scene; }
  get canvas() { return this.viewer.canvas; }
  get player() { return this.viewer.player; }
  get timeline() { return this.viewer.model ? this.viewer.model.timeline : null; }
  get index() { return this.viewer.model ? this.viewer.model.index : null; }
  get lastTiming() { return this.viewer.lastTiming; }

  bindControls() {
    $("#edit-copy").addEventListener("click", () => this.editCopy());
    $("#fit").addEventListener("click", () => this.viewer.canvas.fit());
    $("#zoom-in").addEventListener("click", () => this.viewer.canvas.zoomBy(1.25));
    $("#zoom-out").addEventListener("click", () => this.viewer.canvas.zoomBy(0.8));
    $("#direction").addEventListener("change", (e) => this.viewer.setDirection(e.target.value));
    if (!this.config.cuda_available) $("#device").querySelector('option[value="cuda"]').disabled = true;
    // "/" searches from anywhere but a text field (the editor keeps its own slash).
    document.addEventListener("keydown", (ev) => {
      if (ev.key !== "/" || ev.ctrlKey || ev.metaKey || ev.altKey || ev.defaultPrevented) return;
      const t = ev.target;
      if (t.closest && (t.closest(".cm-editor") || t.closest("input, select, textarea, [contenteditable]"))) return;
      ev.preventDefault();
      if (this.viewer.panels.search) this.viewer.panels.search.focus();
    });
  }

  /** Show a run document; resolves once its first frame is drawn, with timings in ms. */
  async loadDocument(doc, opts = {}) {
    const onLine = (line) => this.viewer.selectLine(line, true);
    renderResults(this.results, doc, onLine);
    this.sharer.enable(true);
    $("#compare").disabled = false;
    const loading = this.viewer.loadDocument(doc, opts);  // indexes the document before its first await
    renderErrorExplain(this.results.error, this.viewer.model.words, this.viewer.model.errors, onLine);
    const timing = await loading;
    if (timing) document.body.dataset.ready = String(this.viewer.generation);
    return timing;
  }

  enterShareMode(doc) {
    document.body.dataset.mode = "share";
    this.editor.setReadOnly(true);
    this.runner.setEnabled(false);
    $("#edit-copy").hidden = false;
    $("#share-banner").hidden = false;
    if (!doc) { renderStatus(this.results.badge, "refused", "This shared run could not be loaded."); return; }
    this.editor.setCode(doc.code || "# (the shared run did not include its code)\n");
    const view = decodeView(location.search);
    this.loadDocument(doc, { step: view.step, view })
      .catch((err) => renderStatus(this.results.badge, "refused", `Could not show the shared run: ${err.message}`));
  }

  editCopy() {
    if (this.mode !== "share") return;
    this.mode = "edit";
    document.body.dataset.mode = "edit";
    this.editor.setReadOnly(false);
    this.runner.setEnabled(true);
    $("#edit-copy").hidden = true;
    $("#share-banner").hidden = true;
    history.pushState(null, "", this.present.on() ? "/?mode=present" : "/");
  }
}

/** The Wrap toggle of the code pane: on by default in narrow windows (NOTE [narrow windows] in app.css). */
function bindWrap(button, editor) {
  const set = (on) => { editor.setWrap(on); button.setAttribute("aria-pressed", String(on)); };
  const narrow = matchMedia("(max-width: 1180px)");
  let chosen = false;  // once the person chose, the window's width no longer decides
  button.addEventListener("click", () => { chosen = true; set(!editor.wrapped); });
  narrow.addEventListener("change", () => { if (!chosen) set(narrow.matches); });
  set(narrow.matches);
}

// The editor's text survives a reload (not a share link: those always show what was shared).
const DRAFT_KEY = "gradtrace.draft";
function loadDraft() { try { return localStorage.getItem(DRAFT_KEY); } catch { return null; } }
function saveDraft(code) { try { localStorage.setItem(DRAFT_KEY, code); } catch { /* storage disabled */ } }

const app = new App();
// For tests and benchmarks: the page's one entry point from outside.
window.gradtrace = { app, loadDocument: (doc) => app.loadDocument(doc) };
