/**
 * Opening and closing groups: a fold of iterations or calls opens one level at a time, a
 * clicked box title closes an opened unit or folds a module. Functions of the viewer
 * (app/viewer.js) over the view state (app/state.js); each lays the graph out once.
 */
import { unitKey, unitsKey } from "../graph/groups.js";

export function openGroup(viewer, v) {
  const g = viewer.scene.view.vnodes[v];
  if (g.fold) {
    // One level at a time: a run of units shows its units, a unit shows what it holds.
    // A selected fold stays selected as what now holds its first node (the inspector follows).
    if (viewer.selectedV === v) viewer._keepSelection();
    const next = new Set(viewer.state.get("open"));
    next.add(g.single || g.lo === g.hi ? unitKey(g.level, g.lo) : unitsKey(g.level));
    viewer._setQuietly({ open: next });
    return viewer.relayout(true);
  }
  viewer._keepSelection();
  viewer._quiet = true;
  if (g.groupKey != null) viewer.state.toggle("open", g.groupKey, true);
  else if (g.repeat) viewer.state.toggle("expandedRepeats", g.module, true);
  else if (g.module != null) viewer.state.toggle("collapsed", g.module, false);
  viewer._quiet = false;
  return viewer.relayout(true);
}

/** A box's title was clicked: an opened unit closes again, a module collapses. */
export function clickBox(viewer, key) {
  if (key.startsWith("unit:")) {
    const next = new Set(viewer.state.get("open"));
    next.delete(key);
    viewer._setQuietly({ open: next });
    return viewer.relayout(true);
  }
  return viewer.toggleModule(key.replace(/@\d+$/, ""));
}
