/**
 * Predict mode: a panel of the viewer (NOTE [one panel shape] in ui/registry.js). With the toggle on, a
 * step that asks a question (analysis/predict.js) hides what the node passed on (the inspector's
 * numbers, the step's sentence) until the learner answers or reveals. A wrong answer gets "not
 * quite" and the node's local rule from Explain without its numbers; a right one reveals the
 * step with Explain's worked numbers. Answers stay in this browser (localStorage), per run and
 * per teacher's choice, with a score; nothing needs an account.
 *
 * Keyboard and screen readers: the answer is typed (Enter checks), feedback goes to a polite
 * live region, and "Next question" moves the timeline and the focus to the next question.
 * Everything is built with textContent and classes: no inline style (the page's CSP).
 */
import { checkAnswer, fmt, parseSpec, questionsFor, score, specParam } from "../analysis/predict.js";
import { el } from "./dom.js";

const STORE = "gradtrace.predict";

function load(key) {
  try { return JSON.parse(localStorage.getItem(key) || "{}") || {}; } catch { return {}; }
}
function save(key, value) {
  try { localStorage.setItem(key, JSON.stringify(value)); } catch { /* storage disabled: answers last for the visit */ }
}

export class Predict {
  /** @param ctx  the panels' context (NOTE [one panel shape] in ui/registry.js) */
  constructor(ctx) {
    this.ctx = ctx;
    const p = ctx.part;
    this.els = {
      box: p("predict"), toggle: p("predict-toggle"), score: p("predict-score"), ask: p("predict-ask"),
      prompt: p("predict-prompt"), answer: p("predict-answer"), check: p("predict-check"), reveal: p("predict-reveal"),
      next: p("predict-next"), feedback: p("predict-feedback"), rule: p("predict-rule"),
      scope: p("predict-scope"), shapes: p("predict-shapes"), inspector: p("inspector"), sentence: p("sentence"),
    };
    this.on = false;
    this.spec = null;
    this.questions = new Map();
    this.answers = {};
    if (!this.els.box || !this.els.toggle) return;
    this.els.toggle.addEventListener("click", () => { this.setOn(!this.on); if (this.on) this.els.next.focus(); });
    this.els.check.addEventListener("click", () => this.check());
    this.els.reveal.addEventListener("click", () => this.reveal());
    this.els.next.addEventListener("click", () => this.next());
    this.els.answer.addEventListener("keydown", (ev) => { if (ev.key === "Enter") { ev.preventDefault(); this.check(); } });
    if (this.els.scope) this.els.scope.addEventListener("change", () => this.chooseFromControls());
    if (this.els.shapes) this.els.shapes.addEventListener("change", () => this.chooseFromControls());
  }

  /** The teacher's choice from a link's query (`?predict=all`): turns predict mode on. */
  fromQuery(search) {
    const spec = parseSpec(new URLSearchParams(search || "").get("predict"));
    if (!spec) return;
    this.spec = spec;
    this.setOn(true);
  }

  /** Add the teacher's choice to a share link's query (app/link.js's). */
  addTo(query) {
    if (this.on && this.spec) query.set("predict", specParam(this.spec));
    return query;
  }

  get key() { return `${STORE}.${this.ctx.doc ? this.ctx.doc.id : ""}.${specParam(this.spec) || ""}`; }

  setOn(on) {
    this.on = on;
    this.els.toggle.setAttribute("aria-pressed", String(on));
    this.els.box.hidden = !on;
    if (on && !this.spec) this.spec = { scope: "all", nodes: [], line: null, shapes: false };
    this.syncControls();
    this.rebuild();
  }

  syncControls() {
    if (!this.els.scope || !this.spec) return;
    this.els.scope.value = this.spec.scope || "none";
    this.els.shapes.checked = !!this.spec.shapes;
  }

  /** The teacher picked what to ask: every backward step, the selected node, or its line. */
  chooseFromControls() {
    const v = this.ctx.selectedV;
    const node = v >= 0 && this.ctx.scene ? this.ctx.index.nodes[this.ctx.scene.view.vnodes[v].refs[0]] : null;
    const scope = this.els.scope.value;
    const spec = { scope: scope === "none" ? null : scope, nodes: [], line: null, shapes: this.els.shapes.checked };
    if (scope === "nodes") spec.nodes = node ? [node.id] : [];
    if (scope === "line") spec.line = node && node.line != null ? node.line : null;
    if ((scope === "nodes" && !spec.nodes.length) || (scope === "line" && spec.line == null)) {
      this.say("Select a node on the graph first: the questions are asked at its steps.");
      this.syncControls();
      return;
    }
    this.spec = spec.scope || spec.shapes ? spec : null;
    this.rebuild();
  }

  /** A new document or a new choice: the questions again, the answers from storage. */
  rebuild() {
    const doc = this.ctx.doc;
    this.questions = this.on && doc ? questionsFor(doc, this.spec) : new Map();
    this.answers = this.on ? load(this.key) : {};
    this.onStep(this.ctx.state.get("step"));
  }

  current() { return this.on ? this.questions.get(this.ctx.state.get("step")) || null : null; }

  onStep(k, playing = false) {
    const q = this.on ? this.questions.get(k) : null;
    const a = q ? this.answers[k] || {} : null;
    const pending = !!(q && !a.done);
    if (pending && playing) this.ctx.player.pause();
    // The graph draws the gradients a step passed on: while the question is open it shows the
    // step before (the viewer draws step k before its panels hear of it: app/viewer.js onStep).
    if (pending) queueMicrotask(() => { if (this.current() === q && !(this.answers[k] || {}).done) this.ctx.canvas.setStep(k - 1); });
    if (this.els.inspector) this.els.inspector.classList.toggle("gt-predict-hidden", pending);
    if (this.els.sentence) this.els.sentence.classList.toggle("gt-predict-hidden-text", pending);
    this.els.ask.hidden = !q;
    this.showScore();
    if (!q) return;
    if (this._shown === `${this.key} ${k}`) return;  // keep the feedback of this question
    this._shown = `${this.key} ${k}`;
    this.els.prompt.textContent = `Step ${k}, line ${q.line ?? "?"}: ${q.prompt}`;
    this.els.answer.value = "";
    this.els.answer.disabled = !pending;
    this.els.check.disabled = !pending;
    this.els.reveal.disabled = !pending;
    this.els.rule.replaceChildren();
    this.els.feedback.textContent = a && a.done ? (a.right ? "Answered right." : "Revealed.") : "";
    if (a && a.done) this.showWorked(q, true);
  }

  say(text) { this.els.feedback.textContent = text; }

  check() {
    const k = this.ctx.state.get("step");
    const q = this.current();
    if (!q) return;
    const a = this.answers[k] || { tries: 0 };
    if (a.done) return;
    const result = checkAnswer(q, this.els.answer.value);
    if (result.verdict === "invalid") { this.say(`${result.message} (not counted)`); this.els.answer.focus(); return; }
    a.tries = (a.tries || 0) + 1;
    if (result.verdict === "right") {
      Object.assign(a, { done: true, right: true });
      this.answers[k] = a;
      save(this.key, this.answers);
      this.say(result.message + this.endNote());
      this.finish(q);
      return;
    }
    this.answers[k] = a;
    save(this.key, this.answers);
    this.say(`${result.message} Try again, or reveal.`);
    this.showWorked(q, false);
    this.els.answer.select();
  }

  reveal() {
    const k = this.ctx.state.get("step");
    const q = this.current();
    if (!q) return;
    const a = this.answers[k] || { tries: 0 };
    Object.assign(a, { done: true, revealed: true });
    this.answers[k] = a;
    save(this.key, this.answers);
    this.say(`Revealed: ${this.truthText(q)}.${this.endNote()}`);
    this.finish(q);
  }

  finish(q) {
    this.ctx.canvas.setStep(q.step, { animate: true });  // the reveal
    this.els.answer.disabled = true;
    this.els.check.disabled = true;
    this.els.reveal.disabled = true;
    this.onStep(this.ctx.state.get("step"));
    this.showWorked(q, true);
    this.els.next.focus();
  }

  truthText(q) {
    if (q.kind === "shape") return `[${q.truth.join(", ")}]`;
    if (q.kind === "none") return q.truth.map((k) => `input ${k} (${q.choices[k].label})`).join(", ");
    return fmt(q.truth);
  }

  endNote() {
    const s = score(this.questions, this.answers);
    return s.answered === s.asked ? ` All ${s.asked} questions answered: ${s.right} right at the first try, ${s.revealed} revealed.` : "";
  }

  showScore() {
    if (!this.els.score) return;
    if (!this.on) { this.els.score.textContent = ""; return; }
    const s = score(this.questions, this.answers);
    this.els.score.textContent = s.asked ? `${s.answered}/${s.asked} answered · ${s.right} right first try` : "no question in this run";
  }

  /** Explain's local rule (worked: with its numbers) for the input the question is about. */
  async showWorked(q, worked) {
    const explain = this.ctx.panels.explain;
    const node = this.ctx.doc ? this.ctx.doc.graph.nodes.find((n) => n.id === q.node) : null;
    if (!explain || !node || q.kind === "shape") return;
    const box = this.els.rule;
    const ticket = (this._ticket = (this._ticket || 0) + 1);
    let answer;
    try {
      answer = await explain.request(this.ctx.doc, node, q.index && q.index.length ? q.index : null, new AbortController().signal);
    } catch (err) {
      if (ticket === this._ticket) box.replaceChildren(el("p", { class: "gt-muted" }, `No local rule to show: ${err.message}`));
      return;
    }
    if (ticket !== this._ticket) return;
    const inputs = (answer.inputs || []).filter((i) => q.kind === "none" || i.input_nr === q.input);
    const rows = inputs.filter((i) => i.rule).map((i) => el("div", { class: "gt-predict-rule-row" },
      el("code", {}, i.rule), worked && i.instance ? el("div", { class: "gt-explain-instance" }, `→ ${i.instance}`) : null));
    box.replaceChildren(el("p", { class: "gt-muted" }, worked ? "The local rule, worked out:" : "Hint: the node's local rule"), ...rows);
    if (!rows.length) box.replaceChildren();
  }

  /** The next step that asks a question (after the current one; wraps to the first). */
  next() {
    const k = this.ctx.state.get("step");
    const steps = [...this.questions.keys()].sort((a, b) => a - b);
    const open = steps.filter((s) => !(this.answers[s] && this.answers[s].done));
    const target = open.find((s) => s > k) ?? open[0] ?? steps.find((s) => s > k);
    if (target == null) { this.say(`No more questions.${this.endNote()}`); return; }
    this.ctx.player.go(target, { fromUser: true });
    if (!this.els.answer.disabled) this.els.answer.focus();
  }
}

/** Predict mode as a viewer panel (NOTE [one panel shape] in ui/registry.js): follows the step and the document. */
export const predictPanel = {
  id: "predict",
  mount(ctx) {
    const predict = new Predict(ctx);
    predict.update = (model, st, changed) => {
      if (changed.includes("document")) { predict._shown = null; predict.rebuild(); return; }
      if (changed.includes("step")) predict.onStep(st.step, st.playing);
    };
    return predict;
  },
};
