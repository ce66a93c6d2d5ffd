/**
 * Moving through the run by what it is made of: the next line, loop iteration or pass (the
 * graph's L, I and P keys), the iteration picker, and revealing a node hidden in folds.
 * Functions of the viewer (app/viewer.js) that read and write the view state (app/state.js).
 */
import { iterationStarts, lineStarts, nextStart, passStarts, prevStart } from "../analysis/steps.js";
import { openAt } from "../graph/groups.js";
import { revealPlan } from "../graph/reveal.js";

/** Jump to the next (or previous) line, loop iteration or pass. */
export function jump(viewer, unit, back = false) {
  const tl = viewer.timeline;
  if (!tl) return;
  const cache = viewer._starts || (viewer._starts = {});
  const levels = viewer.state.get("levels");
  // Iterations: the outermost units of graph/groups.js when it found some (the picker's), else steps.js.
  const units = () => (levels.length ? levels[0].units.map((u) => u.firstStep).filter((x) => x >= 1) : null);
  const make = { line: () => lineStarts(tl, viewer.index), iteration: () => units() || iterationStarts(tl, viewer.index), pass: () => passStarts(tl) };
  const starts = cache[unit] || (cache[unit] = make[unit]());
  const k = back ? prevStart(starts, viewer.player.k) : nextStart(starts, viewer.player.k, tl.N);
  viewer.player.go(k, { fromUser: true });
}

/** The picker chose unit u of the outermost level: the transport goes to the end of its forward. */
export function pickUnit(viewer, u) {
  const lv = viewer.state.get("levels")[0];
  const unit = lv && lv.units[u];
  if (unit) viewer.player.go(unit.forwardEnd || unit.lastStep, { fromUser: true });
}

/** The iterations or calls open at step k follow the step (graph/groups.js); true when they changed. */
export function followUnits(viewer, k) {
  const { levels, openUnits } = viewer.state.state;
  if (!levels.length) return false;
  const open = openAt(levels, k);
  if (viewer.iterPicker) viewer.iterPicker.update(open[0]);
  if (!open.some((u, l) => u !== openUnits[l])) return false;
  viewer._setQuietly({ openUnits: open });
  return true;
}

/**
 * Open the groups that hide document node `ref` and lay the graph out once (NOTE [one layout
 * per reveal] in graph/reveal.js); resolves to its visible node, or −1.
 * A node in a folded iteration or call is shown by going to the step that made it: the open
 * units follow the step, so its unit opens and the others fold.
 */
export async function reveal(viewer, ref) {
  const st = viewer.state.state;
  let moved = null;
  if (!st.levels.every((lv, l) => lv.unitOf[ref] < 0 || lv.unitOf[ref] === st.openUnits[l])) {
    const k = Math.max(1, viewer.timeline.reveal[ref]);
    const open = openAt(st.levels, k);
    if (open.some((u, l) => u !== st.openUnits[l])) {
      viewer._setQuietly({ openUnits: open });  // onStep's followUnits then finds nothing to change
      if (viewer.iterPicker) viewer.iterPicker.update(open[0]);
      moved = k;
    }
  }
  const fields = { collapsed: st.collapsed, expandedRepeats: st.expandedRepeats, open: st.open, levels: st.levels, openUnits: st.openUnits };
  const plan = revealPlan(viewer.index, viewer.tree, fields, ref, moved == null ? viewer.scene.view : null);
  viewer.revealStats = { opened: plan.opened, layouts: 0 };
  if (moved == null && plan.opened === 0) return plan.v;
  viewer._setQuietly({ open: plan.fields.open, collapsed: plan.fields.collapsed, expandedRepeats: plan.fields.expandedRepeats });
  if (moved != null) viewer.player.go(moved, { fromUser: true });
  viewer.revealStats.layouts = 1;
  if (!(await viewer.relayout(true, viewer.player.k, plan.view))) return -1;
  return plan.v;
}
