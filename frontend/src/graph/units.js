/**
 * The units of graph/groups.js's levels as the view shows them: which unit of each level is
 * open at a step, the keys the view state's `open` set names them by, which fold a node is
 * drawn in, the folds' labels, and which nodes are shown. Pure data; no DOM.
 */

/** The open unit of each level at step k. */
export function openAt(levels, k) {
  return levels.map((lv) => lv.at[Math.max(0, Math.min(k, lv.at.length - 1))]);
}

/**
 * NOTE [folds open one level at a time]
 *   A node is drawn for itself when, at every level it belongs to, its unit is open: the
 *   active one (`active[l]`, follows the step) or one the person (or a search) opened, named
 *   `unit:L:U` in the view state's open set. Otherwise it is drawn in a fold: the run of
 *   closed units around its own, within the same open unit of the level above (so an opened
 *   iteration shows its own calls folded: "GRUCell × 10"). Opening a run (`units:L`) shows
 *   its units one by one, each still folded; opening one of those opens the unit itself.
 */
export function unitKey(l, u) { return `unit:${l}:${u}`; }
export function unitsKey(l) { return `units:${l}`; }

/** Whether unit u of level l is drawn open. (No key is built while nothing is opened by hand:
 * foldOf asks this for every unit of a fold, for every node in it.) */
export function isOpen(active, open, l, u) { return u === active[l] || (open.size > 0 && open.has(unitKey(l, u))); }

/**
 * The fold a node is drawn in, or null when it is drawn itself (its units are open).
 * Answers {key, level, lo, hi, single, n} with lo..hi the folded unit range (inclusive) and n
 * the number of units of that level in its scope (the open unit of the level above).
 */
export function foldOf(levels, active, i, open = new Set()) {
  let scope = "";
  for (let l = 0; l < levels.length; l++) {
    const lv = levels[l], u = lv.unitOf[i];
    if (u < 0) continue;
    if (isOpen(active, open, l, u)) { scope += `${l}.${u}/`; continue; }
    const outer = lv.outer ? lv.outer[u] : -1;
    const same = (x) => x >= 0 && x < lv.count && (!lv.outer || lv.outer[x] === outer);
    let first = u, last = u;
    while (same(first - 1)) first--;
    while (same(last + 1)) last++;
    if (open.has(unitsKey(l))) return { key: `fold:${scope}${l}:${u}-${u}`, level: l, lo: u, hi: u, single: true, n: last - first + 1 };
    let lo = u, hi = u;
    while (same(lo - 1) && !isOpen(active, open, l, lo - 1)) lo--;
    while (same(hi + 1) && !isOpen(active, open, l, hi + 1)) hi++;
    return { key: `fold:${scope}${l}:${lo}-${hi}`, level: l, lo, hi, single: false, n: last - first + 1 };
  }
  return null;
}

/** The text of a unit ("iteration 7 of 20", "GRUCell call 37 of 200") and of a fold. */
export function unitLabel(lv, u) {
  if (lv.names && lv.names[u]) return `${lv.names[u].path} call ${lv.names[u].call + 1} of ${lv.names[u].of}`;
  return lv.kind === "call" ? `${lv.label} call ${u + 1} of ${lv.count}` : `${lv.label} ${u + 1} of ${lv.count}`;
}

/** "GRUCell × 200", "calls 1–36 of GRUCell", "iteration × 20", "iterations 1–6", "iteration 20". */
export function foldLabel(lv, lo, hi, n = lv.count) {
  const k = hi - lo + 1;
  if (k === 1) return unitLabel(lv, lo);
  if (lv.names) {  // NOTE [several models, one picker]: a fold says whose calls it holds
    const a = lv.names[lo], b = lv.names[hi];
    if (a.path === b.path) return a.call === 0 && b.call === a.of - 1 ? `${a.path} × ${a.of}` : `calls ${a.call + 1}–${b.call + 1} of ${a.path}`;
    return `${a.path} call ${a.call + 1} … ${b.path} call ${b.call + 1}`;
  }
  if (k === n && k > 1) return `${lv.label} × ${k}`;
  if (lv.kind === "block") return `${lv.label} ${lo + 1}–${hi + 1} of ${lv.count}`;
  return lv.kind === "call" ? `calls ${lo + 1}–${hi + 1} of ${lv.label}` : `iterations ${lo + 1}–${hi + 1}`;
}

/** 1 for each node drawn for itself or in a module box when `open` units are open, else 0. */
export function shownMask(levels, active, n, open = new Set()) {
  const mask = new Uint8Array(n).fill(1);
  levels.forEach((lv, l) => { for (let i = 0; i < n; i++) if (lv.unitOf[i] >= 0 && !isOpen(active, open, l, lv.unitOf[i])) mask[i] = 0; });
  return mask;
}

/** The visible nodes that belong to the open units (what Fit frames), by visible index. */
export function activeVNodes(view, levels, open) {
  if (!levels.length) return null;
  const out = [];
  view.vnodes.forEach((v, k) => {
    if (v.fold) return;
    if (v.refs.some((r) => levels.some((lv, l) => lv.unitOf[r] === open[l]))) out.push(k);
  });
  return out;
}
