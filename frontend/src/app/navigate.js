/**
 * Moving through the run by what it is made of: the next line, loop iteration or pass (the
 * graph's L, I and P keys), the iteration picker, and revealing a node hidden in folds.
 * Functions of the page model and the view state that answer a change (app/folds.js says its
 * fields); the viewer applies it (app/viewer.js `apply`).
 */
import { iterationStarts, lineStarts, nextStart, passStarts, prevStart } from "../analysis/steps.js";
import { openAt } from "../graph/units.js";
import { revealPlan } from "../graph/reveal.js";

const STARTS = new WeakMap();  // model → {line, iteration, pass}: the steps each unit starts at

/** Jump to the next (or previous) line, loop iteration or pass. */
export function jump(model, st, unit, back = false) {
  const tl = model.timeline;
  if (!STARTS.has(model)) STARTS.set(model, {});
  const cache = STARTS.get(model);
  // Iterations: the outermost units of graph/groups.js when it found some (the picker's), else steps.js.
  const units = () => (st.levels.length ? st.levels[0].units.map((u) => u.firstStep).filter((x) => x >= 1) : null);
  const make = { line: () => lineStarts(tl, model.index), iteration: () => units() || iterationStarts(tl, model.index), pass: () => passStarts(tl) };
  const starts = cache[unit] || (cache[unit] = make[unit]());
  return { go: back ? prevStart(starts, st.step) : nextStart(starts, st.step, tl.N) };
}

/** The picker chose unit u of the outermost level: the transport goes to the end of its forward. */
export function pickUnit(st, u) {
  const lv = st.levels[0];
  const unit = lv && lv.units[u];
  return unit ? { go: unit.forwardEnd || unit.lastStep } : null;
}

/** The iterations or calls open at step k follow the step (graph/units.js openAt); null when they stay. */
export function followUnits(st, k) {
  if (!st.levels.length) return null;
  const open = openAt(st.levels, k);
  if (!open.some((u, l) => u !== st.openUnits[l])) return null;
  return { set: { openUnits: open }, layout: "fresh", k };
}

/**
 * Open the groups that hide document node `ref` with one layout (NOTE [one layout per reveal]
 * in graph/reveal.js). The change carries `v`, the node's visible index in the view it lays
 * out, and `stats` {opened, layouts}; it sets nothing when the node is already visible.
 * A node in a folded iteration or call is shown by going to the step that made it: the open
 * units follow the step, so its unit opens and the others fold.
 */
export function reveal(model, st, ref, view) {
  let moved = null, openUnits = st.openUnits;
  if (!st.levels.every((lv, l) => lv.unitOf[ref] < 0 || lv.unitOf[ref] === st.openUnits[l])) {
    const k = Math.max(1, model.timeline.reveal[ref]);
    const open = openAt(st.levels, k);
    if (open.some((u, l) => u !== st.openUnits[l])) { openUnits = open; moved = k; }
  }
  const fields = { collapsed: st.collapsed, expandedRepeats: st.expandedRepeats, open: st.open, levels: st.levels, openUnits };
  const plan = revealPlan(model.index, model.tree, fields, ref, moved == null ? view : null);
  if (moved == null && plan.opened === 0) return { v: plan.v, stats: { opened: 0, layouts: 0 } };
  const set = { openUnits, open: plan.fields.open, collapsed: plan.fields.collapsed, expandedRepeats: plan.fields.expandedRepeats };
  return { set, go: moved, layout: "keep", view: plan.view, v: plan.v, stats: { opened: plan.opened, layouts: 1 } };
}
