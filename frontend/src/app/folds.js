/**
 * Opening and closing groups as functions of the page model and the view state (NOTE [model
 * and state] in app/model.js): each answers a change, which the viewer applies in one place
 * (app/viewer.js `apply`), laying the graph out once.
 *
 * A change is {set?: view state patch, keepSelection?: show the selected document node again
 * after the layout, layout?: "keep" (keep the camera) | "fresh", go?: step, k?: the step to draw,
 * view?: a view already built (graph/reveal.js)}.
 */
import { unitKey, unitsKey } from "../graph/units.js";

/** `set` with `item` in (on true), out (false) or toggled (undefined): a new Set. */
export function toggled(set, item, on = undefined) {
  const next = new Set(set);
  if (on === undefined ? !next.has(item) : on) next.add(item); else next.delete(item);
  return next;
}

/** Open group `v` of `view` one level (NOTE [folds open one level at a time] in graph/units.js): a run of units shows its units, a unit what it holds. */
export function openGroup(st, view, v) {
  const g = view.vnodes[v];
  if (g.fold) {
    // A selected fold stays selected as what now holds its first node (the inspector follows).
    const key = g.single || g.lo === g.hi ? unitKey(g.level, g.lo) : unitsKey(g.level);
    return { keepSelection: st.selection.v === v, set: { open: toggled(st.open, key, true) }, layout: "keep" };
  }
  const set = g.groupKey != null ? { open: toggled(st.open, g.groupKey, true) }
    : g.repeat ? { expandedRepeats: toggled(st.expandedRepeats, g.module, true) }
      : g.module != null ? { collapsed: toggled(st.collapsed, g.module, false) } : null;
  return { keepSelection: true, set, layout: "keep" };
}

/** Fold or unfold module `path`. */
export function toggleModule(st, path) {
  return { keepSelection: true, set: { collapsed: toggled(st.collapsed, path) }, layout: "keep" };
}

/** Show the repeated blocks of module `path` one by one, or merged again. */
export function toggleRepeat(st, path) {
  return { keepSelection: true, set: { expandedRepeats: toggled(st.expandedRepeats, path) }, layout: "keep" };
}

/** A box's title was clicked: an opened unit closes again, a module folds. */
export function clickBox(st, key) {
  if (key.startsWith("unit:")) return { set: { open: toggled(st.open, key, false) }, layout: "keep" };
  return toggleModule(st, key.replace(/@\d+$/, ""));
}
