/**
 * The graph coloured by a statistic of each node: ‖value‖ (a function node's output, a
 * tensor's value), ‖grad‖ (a tensor's `.grad` at the end, a function node's gradient flowing
 * in at its last backward step) or the share of zeros of that gradient. Read from the
 * document's stats and small inline values only (docs/CONTRACT.md, TensorValue): choosing one
 * fetches nothing. A node without the number keeps its kind's colour (the legend says so).
 * The norms are shown on a log scale, the share of zeros on a linear one.
 */
import { el } from "./dom.js";

export const STATISTICS = [["", "kind (no statistic)"], ["value", "‖value‖"], ["grad", "‖grad‖"], ["zeros", "share of zeros in grad"]];
const LOW = [255, 244, 196], HIGH = [226, 88, 34];

/** The last gradient that flowed into node `i` (its first grad_output at its last backward step), else its `.grad`. */
function gradOf(index, timeline, i) {
  const n = index.nodes[i];
  if (n.kind === "tensor") return n.grad || null;
  const step = timeline.lastBackward(i, timeline.N);
  if (step == null) return null;
  const ev = timeline.event(step);
  return (ev.grad_outputs || []).find(Boolean) || null;
}

function zerosShare(tv) {
  if (!tv) return null;
  if (tv.values != null) {
    const flat = [tv.values].flat(Infinity);
    if (!flat.length) return null;
    return flat.filter((x) => x === 0).length / flat.length;
  }
  const s = tv.stats;
  return s && Number(s.min) === 0 && Number(s.max) === 0 ? 1 : null;
}

/** Node `i`'s statistic `stat` (STATISTICS' ids), or null where the document has no number for it. */
export function nodeStatistic(index, timeline, i, stat) {
  const n = index.nodes[i];
  if (stat === "value") {
    const tv = n.kind === "function" ? (n.output || []).find(Boolean) : n.value;
    const x = tv && tv.stats ? Number(tv.stats.norm) : NaN;
    return Number.isFinite(x) ? x : null;
  }
  const g = gradOf(index, timeline, i);
  if (stat === "grad") {
    const x = g && g.stats ? Number(g.stats.norm) : NaN;
    return Number.isFinite(x) ? x : null;
  }
  if (stat === "zeros") return zerosShare(g);
  return null;
}

/** Fill colours by visible node, and the scale's ends: `{tint: Map v → colour, lo, hi, shown}`. */
export function tintOf(model, scene, stat) {
  const raw = new Map();
  scene.view.vnodes.forEach((vn, v) => {
    if (!vn.refs || vn.refs.length !== 1 || vn.fold) return;
    const x = nodeStatistic(model.index, model.timeline, vn.refs[0], stat);
    if (x != null) raw.set(v, x);
  });
  const log = stat !== "zeros";
  const t = (x) => (log ? Math.log10(Math.max(x, 1e-30)) : x);
  let lo = Infinity, hi = -Infinity;
  for (const x of raw.values()) { lo = Math.min(lo, t(x)); hi = Math.max(hi, t(x)); }
  if (!log) { lo = 0; hi = 1; }
  const tint = new Map();
  for (const [v, x] of raw) {
    const a = hi > lo ? (t(x) - lo) / (hi - lo) : 1;
    tint.set(v, `rgb(${LOW.map((c, j) => Math.round(c + (HIGH[j] - c) * a)).join(", ")})`);
  }
  const end = (y) => (log ? 10 ** y : y);
  return { tint, lo: raw.size ? end(lo) : null, hi: raw.size ? end(hi) : null, shown: raw.size };
}

/**
 * The control and its legend as a viewer panel (NOTE [one panel shape] in ui/registry.js):
 * the `colour-by` part of templates/viewer.html (in the Legend menu).
 */
export const colourByPanel = {
  id: "colour-by",
  mount(ctx) {
    const box = ctx.part("colour-by");
    if (!box) return null;
    const pick = el("select", { "aria-label": "Colour the nodes by", "data-gt": "colour-by-pick" });
    for (const [id, text] of STATISTICS) pick.append(el("option", { value: id }, text));
    const scale = el("div", { class: "gt-colour-scale", "data-gt": "colour-by-scale", hidden: "" });
    box.replaceChildren(el("label", {}, "Colour nodes by ", pick), scale);
    const apply = () => {
      const stat = pick.value;
      if (!stat || !ctx.scene || !ctx.model) { ctx.canvas.setTint(null); scale.hidden = true; return; }
      const { tint, lo, hi, shown } = tintOf(ctx.model, ctx.scene, stat);
      ctx.canvas.setTint(tint);
      const fmt = (x) => (stat === "zeros" ? `${Math.round(x * 100)}%` : +x.toPrecision(3));
      const ramp = el("span", { class: "gt-colour-ramp" });
      ramp.style.background = `linear-gradient(90deg, rgb(${LOW.join(",")}), rgb(${HIGH.join(",")}))`;
      scale.replaceChildren(...(shown ? [fmt(lo), " ", ramp, ` ${fmt(hi)}`, stat === "zeros" ? "" : " (log scale)"] : []),
        el("div", { class: "gt-muted" }, `${shown} nodes coloured; a node without this number keeps its kind's colour`));
      scale.hidden = false;
    };
    pick.addEventListener("change", apply);
    return { update(model, st, changed) { if (changed.includes("view") && pick.value) apply(); }, pick, apply };
  },
};
