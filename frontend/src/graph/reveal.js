/**
 * Which groups to open so that a document node is drawn as itself: a pure plan over
 * graph/view.js's buildView, computed before anything is laid out.
 *
 * NOTE [one layout per reveal]
 *   A node hidden three folds deep (a loop iteration, a module call, a collapsed module) used
 *   to be revealed by opening one fold, laying the graph out again in the worker, and looking
 *   where the node landed: up to 16 round trips to the layout worker, each a full layout.
 *   Where a node lands after opening a fold depends only on buildView (no coordinates), and
 *   buildView is a cheap pure function: so the folds are opened here, on the view alone, and
 *   the caller lays the final view out once. Moving buildView itself into the worker would
 *   not remove a round trip more and would copy the whole indexed document to the worker.
 */
import { buildView } from "./view.js";

export const MAX_REVEAL_DEPTH = 16;

/** The fields of `fields` after opening group vnode `g` one level, or null when `g` cannot open. */
export function openOne(fields, g) {
  if (g.fold) return null;  // a folded unit opens by going to its step (the caller's job)
  if (g.groupKey != null) {
    if (fields.open.has(g.groupKey)) return null;
    return { ...fields, open: new Set(fields.open).add(g.groupKey) };
  }
  if (g.repeat) {
    if (fields.expandedRepeats.has(g.module)) return null;
    return { ...fields, expandedRepeats: new Set(fields.expandedRepeats).add(g.module) };
  }
  if (g.module != null && fields.collapsed.has(g.module)) {
    const collapsed = new Set(fields.collapsed);
    collapsed.delete(g.module);
    return { ...fields, collapsed };
  }
  return null;
}

/**
 * Open the groups that hide document node `ref`, one level at a time, on the view alone.
 * @param fields  {collapsed, expandedRepeats, open, levels, openUnits} (app/state.js)
 * @returns {{fields, view, v, opened}}  the fields to set, the view they give, the visible
 *          node drawing `ref` there (−1 when it stays hidden), and how many folds were opened
 */
export function revealPlan(index, tree, fields, ref, view = null) {
  let cur = fields;
  let v = view || buildView(index, tree, cur);
  for (let opened = 0; ; opened++) {
    const vs = v.byRef[ref] || [];
    const own = vs.find((x) => v.vnodes[x].kind !== "group");
    if (own !== undefined || !vs.length || opened >= MAX_REVEAL_DEPTH) return { fields: cur, view: v, v: own ?? -1, opened };
    const next = openOne(cur, v.vnodes[vs[0]]);
    if (!next) return { fields: cur, view: v, v: -1, opened };
    cur = next;
    v = buildView(index, tree, cur);
  }
}
