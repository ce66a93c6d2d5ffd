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
 * iterations or from the last 50 up to the current one. Hidden when the run has no series.
 */
import { COLOURS, drawFlow, drawSeries, iterAt } from "./dynamics-draw.js";

const WINDOW = 50;

/** The module paths a filter offers: every parameter's and layer's module and their ancestors, sorted. */
export function modulesOf(dyn) {
  const out = new Set();
  for (const m of [...dyn.params.map((p) => p.module), ...dyn.layers.map((l) => l.module)]) {
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
    Object.assign(this, { root, ctx, dyn: null, filter: "", recent: false, hover: null, current: null, ends: [] });
    root.replaceChildren();
    const details = el("details", { class: "gt-dyn", "data-gt-dyn": "" });
    this.details = details;
    this.summary = el("summary", {}, "Training dynamics");
    const bar = el("div", { class: "gt-dyn-bar" });
    this.select = el("select", { "aria-label": "Module filter", "data-gt-dyn": "filter" });
    this.range = el("select", { "aria-label": "Y range", "data-gt-dyn": "range" });
    this.range.append(el("option", { value: "all" }, "y range: all iterations"), el("option", { value: "recent" }, `y range: last ${WINDOW}`));
    this.info = el("span", { class: "gt-muted", "data-gt-dyn": "info", role: "status" });
    bar.append(this.select, this.range, this.info);
    this.charts = {};
    const grid = el("div", { class: "gt-dyn-charts" });
    for (const [id, label] of [["grad", "‖grad‖ per parameter"], ["update", "log10 ‖Δw‖/‖w‖ per step (band: 1e-3)"],
      ["act", "activations: saturated / dead share"], ["loss", "loss"], ["flow", "gradient flow"]]) {
      const c = el("canvas", { "data-gt-dyn": id, role: "img", "aria-label": label, class: id === "flow" ? "gt-dyn-flow" : "" });
      this.charts[id] = c;
      grid.append(c);
      if (id !== "flow") {
        c.addEventListener("mousemove", (e) => this.hoverAt(c, e));
        c.addEventListener("mouseleave", () => this.setHover(null));
        c.addEventListener("click", (e) => this.clickAt(c, e));
      }
    }
    this.legend = el("div", { class: "gt-dyn-legend", "data-gt-dyn": "legend" });
    details.append(this.summary, bar, grid, this.legend);
    root.append(details);
    this.select.addEventListener("change", () => { this.filter = this.select.value; this.draw(); });
    this.range.addEventListener("change", () => { this.recent = this.range.value === "recent"; this.draw(); });
    details.addEventListener("toggle", () => this.draw());
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
    this.summary.textContent = `Training dynamics · ${dyn.iterations.length} iterations, ${dyn.params.length} parameters`;
    this.select.replaceChildren(el("option", { value: "" }, "all modules"), ...modulesOf(dyn).map((m) => el("option", { value: m }, m)));
    this.filter = "";
  }

  hoverAt(c, e) {
    const r = c.getBoundingClientRect();
    this.setHover(iterAt(e.clientX - r.left, this.dyn.iterations.length, r.width));
  }

  setHover(i) {
    if (i === this.hover) return;
    this.hover = i;
    this.draw();
  }

  clickAt(c, e) {
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
    drawSeries(this.charts.grad, params.map((p, k) => ({ series: p.grad_norm, colour: colour(k) })), { ...base, log: true, title: "‖grad‖ (log)" });
    drawSeries(this.charts.update, params.map((p, k) => ({ series: p.update, colour: colour(k) })),
      { ...base, log: false, title: "log10 ‖Δw‖/‖w‖ (band: 1e-3)", band: [-3.5, -2.5] });
    drawSeries(this.charts.act, layers.map((l, k) => ({ series: l.share, colour: colour(k + params.length) })),
      { ...base, log: false, title: `saturated (|y| > ${dyn.threshold}) / dead share` });
    const positive = dyn.loss.every((v) => v == null || typeof v !== "number" || v > 0);
    drawSeries(this.charts.loss, [{ series: dyn.loss, colour: "#333" }], { ...base, log: positive, title: positive ? "loss (log)" : "loss" });
    const at = this.hover ?? cur;
    drawFlow(this.charts.flow, params, at, `gradient flow, iteration ${at + 1}: mean |grad| (dark), max (light)`);
    this.legend.replaceChildren(...params.map((p, k) => legendItem(p.name || p.node, colour(k))),
      ...layers.map((l, k) => legendItem(`${l.kind} ${l.module || `line ${l.line}`}`, colour(k + params.length))));
    this.info.textContent = `${params.length} of ${dyn.params.length} parameters · iteration ${(this.hover ?? cur) + 1} of ${n}`;
    const ms = performance.now() - t0;
    this.root.dataset.drawMs = ms.toFixed(1);
    return ms;
  }

  update(model, st, changed) {
    if (changed.includes("document")) this.setDocument(model);
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
