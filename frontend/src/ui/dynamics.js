/**
 * The dynamics panel (NOTE [one panel shape] in ui/registry.js): the run's series by iteration
 * (`analysis.dynamics`, computed once on the server by gradtrace/analysis/dynamics) as charts:
 * ‖grad‖ per parameter, log10 of the update:data ratio (a band marks 1e-3), the saturated or
 * dead share of each activation layer, the loss, and the gradient-flow bars (mean and max
 * |grad| per parameter, in network order) of the current iteration.
 *
 * Hovering a chart or the timeline's scrubber marks that iteration on every chart; clicking a
 * chart goes to the end of that iteration's backward pass (its graph at that step). A module
 * filter narrows the charts to one module's parameters and layers; the y range comes from all
 * iterations or from the last 50 up to the current one. A module that one backward pass walks
 * many times (an RNN cell unrolled over a sequence) has its ‖grad‖ by call (`dynamics.calls`),
 * drawn for the current iteration with the call on the x axis; a run with one backward pass has
 * that chart alone. Hidden when the run has no series.
 *
 * NOTE [closed, one line]
 *   The panel opens closed, as one line that says what it holds ("Dynamics: 20 steps, update
 *   ratio 1e-3..1e-2, 1 hint"), so the graph keeps its height at 1280×800; a click opens it,
 *   and the choice is the view state's `dynamicsOpen` (app/state.js), kept for the next run.
 */
import { COLOURS, drawFlow, drawSeries, iterAt, num } from "./dynamics-draw.js";

const WINDOW = 50;
const ITERATION_CHARTS = ["grad", "update", "act", "loss", "flow"];
/** The hints read from these series (gradtrace/analysis/hints/dynamics.py and flow.py). */
export const DYNAMICS_HINTS = new Set(["update-ratio-high", "update-ratio-low", "relu-dead", "activation-saturated",
  "gradients-vanish", "gradients-explode"]);

const exp10 = (x) => `1e${Math.round(x)}`;
const short = (v) => (v === 0 ? "0" : Math.abs(Math.log10(Math.abs(v))) < 3 ? String(Number(v.toPrecision(2))) : v.toExponential(0));

/** What the closed panel says (NOTE [closed, one line]): steps, the last update ratios, calls, the dynamics' hints. */
export function summaryOf(dyn, hints = []) {
  const parts = [];
  const n = dyn.iterations.length;
  if (dyn.params.length) {
    parts.push(`${n} steps`);
    let lo = Infinity, hi = -Infinity;
    for (const p of dyn.params) {
      for (let i = p.update.length - 1; i >= 0; i--) {
        const v = num(p.update[i]);
        if (v == null || !Number.isFinite(v)) continue;
        lo = Math.min(lo, v); hi = Math.max(hi, v);
        break;
      }
    }
    if (lo <= hi) parts.push(`update ratio ${exp10(lo)}${Math.round(lo) === Math.round(hi) ? "" : `..${exp10(hi)}`}`);
  }
  for (const c of dyn.calls || []) {
    if (c.pass !== dyn.iterations[n - 1]) continue;  // the last iteration's, as the chart first shows it
    const g = c.grad_norm.map(num).filter((v) => v != null && Number.isFinite(v) && v > 0);
    const range = g.length ? `, ‖grad‖ ${short(Math.min(...g))}..${short(Math.max(...g))}` : "";
    parts.push(`${c.calls.length} calls of ${c.module}${range}`);
  }
  const k = hints.filter((h) => DYNAMICS_HINTS.has(h.code)).length;
  if (k) parts.push(`${k} hint${k === 1 ? "" : "s"}`);
  return `Dynamics: ${parts.join(", ")}`;
}

/** The module paths a filter offers: every parameter's and layer's module and their ancestors, sorted. */
export function modulesOf(dyn) {
  const out = new Set();
  for (const m of [...dyn.params.map((p) => p.module), ...dyn.layers.map((l) => l.module), ...(dyn.calls || []).map((c) => c.module)]) {
    if (!m) continue;
    const parts = m.split(".");
    for (let i = 1; i <= parts.length; i++) out.add(parts.slice(0, i).join("."));
  }
  return [...out].sort();
}

/** Whether module path `m` is `filter` or inside it ("" keeps everything). */
export const within = (m, filter) => !filter || (m != null && (m === filter || m.startsWith(`${filter}.`)));

/** The iteration a step belongs to: the first whose backward pass ends at or after step k. */
export function iterationAt(ends, k) {
  for (let i = 0; i < ends.length; i++) if (k <= ends[i]) return i;
  return ends.length - 1;
}

function el(tag, attrs = {}, text = "") {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text) e.textContent = text;
  return e;
}

class DynamicsPanel {
  constructor(root, ctx) {
    Object.assign(this, { root, ctx, dyn: null, filter: "", recent: false, hover: null, callHover: null, current: null, ends: [] });
    root.replaceChildren();
    const details = el("details", { class: "gt-dyn", "data-gt-dyn": "" });
    this.details = details;
    this.summary = el("summary", { "data-gt-dyn": "summary" }, "Dynamics");
    const bar = el("div", { class: "gt-dyn-bar" });
    this.select = el("select", { "aria-label": "Module filter", "data-gt-dyn": "filter" });
    this.range = el("select", { "aria-label": "Y range", "data-gt-dyn": "range" });
    this.range.append(el("option", { value: "all" }, "y range: all iterations"), el("option", { value: "recent" }, `y range: last ${WINDOW}`));
    this.info = el("span", { class: "gt-muted", "data-gt-dyn": "info", role: "status" });
    bar.append(this.select, this.range, this.info);
    this.charts = {};
    const grid = el("div", { class: "gt-dyn-charts" });
    for (const [id, label] of [["grad", "‖grad‖ per parameter"], ["update", "log10 ‖Δw‖/‖w‖ per step (band: 1e-3)"],
      ["act", "activations: saturated / dead share"], ["loss", "loss"], ["flow", "gradient flow"], ["calls", "‖grad‖ by call"]]) {
      const wide = id === "flow" ? "gt-dyn-flow" : id === "calls" ? "gt-dyn-calls" : "";
      const c = el("canvas", { "data-gt-dyn": id, role: "img", "aria-label": label, class: wide });
      this.charts[id] = c;
      grid.append(c);
      if (id !== "flow") {
        c.addEventListener("mousemove", (e) => this.hoverAt(c, e));
        c.addEventListener("mouseleave", () => (id === "calls" ? this.setCallHover(null) : this.setHover(null)));
        c.addEventListener("click", (e) => this.clickAt(c, e));
      }
    }
    this.legend = el("div", { class: "gt-dyn-legend", "data-gt-dyn": "legend" });
    details.append(this.summary, bar, grid, this.legend);
    root.append(details);
    this.select.addEventListener("change", () => { this.filter = this.select.value; this.draw(); });
    this.range.addEventListener("change", () => { this.recent = this.range.value === "recent"; this.draw(); });
    details.addEventListener("toggle", () => {  // the person's choice, kept in the view state (NOTE [closed, one line])
      if (ctx.state) ctx.state.set({ dynamicsOpen: details.open });
      this.draw();
    });
    const scrub = ctx.part("tl-scrub");  // hovering an iteration on the timeline marks it on the charts
    if (scrub) {
      scrub.addEventListener("mousemove", (e) => {
        const m = ctx.model;
        if (!m || !this.dyn) return;
        const r = scrub.getBoundingClientRect();
        this.setHover(iterationAt(this.ends, Math.round(((e.clientX - r.left) / Math.max(1, r.width)) * m.N)));
      });
      scrub.addEventListener("mouseleave", () => this.setHover(null));
    }
  }

  setDocument(model) {
    const dyn = model && model.doc.analysis && model.doc.analysis.dynamics;
    this.dyn = dyn || null;
    this.root.hidden = !dyn;
    if (!dyn) return;
    this.ends = dyn.iterations.map((p) => model.timeline.passEnd(p));
    this.summary.textContent = summaryOf(dyn, (model.doc.analysis && model.doc.analysis.hints) || []);
    const byIteration = dyn.iterations.length > 1;
    for (const id of ITERATION_CHARTS) this.charts[id].hidden = !byIteration;
    this.range.hidden = !byIteration;
    this.charts.calls.hidden = !(dyn.calls && dyn.calls.length);
    this.select.replaceChildren(el("option", { value: "" }, "all modules"), ...modulesOf(dyn).map((m) => el("option", { value: m }, m)));
    this.filter = "";
  }

  hoverAt(c, e) {
    const r = c.getBoundingClientRect();
    if (c === this.charts.calls) { this.setCallHover(iterAt(e.clientX - r.left, this.callsNow().n, r.width)); return; }
    this.setHover(iterAt(e.clientX - r.left, this.dyn.iterations.length, r.width));
  }

  setCallHover(k) {
    if (k === this.callHover) return;
    this.callHover = k;
    this.draw();
  }

  /** The series by call of the current (or hovered) iteration: {series: [...], n}. */
  callsNow() {
    const dyn = this.dyn, at = this.hover ?? this.current ?? dyn.iterations.length - 1;
    const all = (dyn.calls || []).filter((c) => within(c.module, this.filter));
    let series = all.filter((c) => c.pass === dyn.iterations[at]);
    if (!series.length) series = all.filter((c) => c.pass === (all[0] && all[0].pass));
    return { series, n: Math.max(0, ...series.map((c) => c.grad_norm.length)) };
  }

  setHover(i) {
    if (i === this.hover) return;
    this.hover = i;
    this.draw();
  }

  clickAt(c, e) {
    if (c === this.charts.calls) return;
    const r = c.getBoundingClientRect();
    const i = iterAt(e.clientX - r.left, this.dyn.iterations.length, r.width);
    this.ctx.go(this.ends[i]);  // that iteration's graph, at the end of its backward pass
  }

  /** Draw every chart; answers the milliseconds it took (bench: a 500-iteration loop within 100 ms). */
  draw() {
    const dyn = this.dyn;
    if (!dyn || !this.details.open) return 0;
    const t0 = performance.now();
    const n = dyn.iterations.length;
    const params = dyn.params.filter((p) => within(p.module, this.filter));
    const layers = dyn.layers.filter((l) => within(l.module, this.filter));
    const cur = this.current ?? n - 1;
    const [from, to] = this.recent ? [Math.max(0, cur - WINDOW + 1), cur] : [0, n - 1];
    const marks = { hover: this.hover, current: this.current };
    const colour = (k) => COLOURS[k % COLOURS.length];
    const base = { n, from, to, marks };
    const calls = this.callsNow();
    if (calls.n) {
      const where = n > 1 ? `, iteration ${(this.hover ?? cur) + 1}` : "";
      drawSeries(this.charts.calls, calls.series.map((c, k) => ({ series: c.grad_norm, colour: colour(k) })),
        { n: calls.n, from: 0, to: calls.n - 1, log: true, word: "call", marks: { hover: this.callHover ?? null, current: null },
          title: `‖grad‖ by call of ${calls.series.map((c) => c.module).join(", ")} (log)${where}` });
    }
    if (n < 2) {  // one backward pass: its calls are the series
      this.legend.replaceChildren(...calls.series.map((c, k) => legendItem(`${c.module}${c.type ? ` (${c.type})` : ""}`, colour(k))));
      this.info.textContent = `${calls.n} calls` + (this.callHover != null ? ` · call ${this.callHover + 1}` : "");
      return this.drawn(t0);
    }
    drawSeries(this.charts.grad, params.map((p, k) => ({ series: p.grad_norm, colour: colour(k) })), { ...base, log: true, title: "‖grad‖ (log)" });
    drawSeries(this.charts.update, params.map((p, k) => ({ series: p.update, colour: colour(k) })),
      { ...base, log: false, exp: true, title: "‖Δw‖/‖w‖ (log; band: 1e-3)", band: [-3.5, -2.5] });
    drawSeries(this.charts.act, layers.map((l, k) => ({ series: l.share, colour: colour(k + params.length) })),
      { ...base, log: false, title: `saturated (|y| > ${dyn.threshold}) / dead share` });
    const positive = dyn.loss.every((v) => v == null || typeof v !== "number" || v > 0);
    drawSeries(this.charts.loss, [{ series: dyn.loss, colour: "#333" }], { ...base, log: positive, title: positive ? "loss (log)" : "loss" });
    const at = this.hover ?? cur;
    drawFlow(this.charts.flow, params, at, `gradient flow, iteration ${at + 1}: mean |grad| (dark), max (light)`);
    this.legend.replaceChildren(...params.map((p, k) => legendItem(p.name || p.node, colour(k))),
      ...layers.map((l, k) => legendItem(`${l.kind} ${l.module || `line ${l.line}`}`, colour(k + params.length))));
    this.info.textContent = `${params.length} of ${dyn.params.length} parameters · iteration ${(this.hover ?? cur) + 1} of ${n}`;
    return this.drawn(t0);
  }

  drawn(t0) {
    const ms = performance.now() - t0;
    this.root.dataset.drawMs = ms.toFixed(1);
    return ms;
  }

  update(model, st, changed) {
    if (changed.includes("document")) this.setDocument(model);
    if ((changed.includes("document") || changed.includes("dynamicsOpen")) && this.details.open !== st.dynamicsOpen) {
      this.details.open = st.dynamicsOpen;  // its toggle event draws
    }
    if (!this.dyn) return;
    if (changed.includes("document") || changed.includes("step")) {
      this.current = iterationAt(this.ends, st.step);
      this.draw();
    }
  }
}

function legendItem(text, colour) {
  const s = el("span", { class: "gt-dyn-key" });
  const sw = el("i");
  sw.style.background = colour;
  s.append(sw, text);
  return s;
}

export const dynamicsPanel = {
  id: "dynamics",
  mount(ctx) {
    const root = ctx.part("dynamics");
    if (!root) return null;
    const panel = new DynamicsPanel(root, ctx);
    return { panel, update: (model, st, changed) => panel.update(model, st, changed) };
  },
};
