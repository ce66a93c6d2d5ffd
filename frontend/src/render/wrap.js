/**
 * NOTE [wrapped layout]: a layered layout of a deep network is one long strip (a 6-layer
 * transformer is 4,000 px tall and 900 px wide; left to right it is a line). Framed whole in
 * a view of another shape it shrinks to a sliver with most of the view empty. So a long
 * layout is cut across its rank axis into columns (rows, left to right), laid side by side,
 * like a newspaper: as many as make its shape closest to the view's. Cuts fall between ranks,
 * so no node is split; an edge whose ends land in different columns is routed through the
 * gutter after its column and enters the next from the top (from the left, for rows).
 * Small graphs (fewer than WRAP_MIN nodes), which read top to bottom as a lesson draws them,
 * are never cut.
 *
 * Pure (no DOM): unit-tested in test/wrap.test.js; app/viewer.js applies it before
 * render/scene.js builds the scene (module boxes are drawn per column: `layout.colOf`).
 */

/** Fewer visible nodes than this: the layout is left whole. */
export const WRAP_MIN = 40;
/** At most this many columns. */
export const WRAP_MAX = 8;
/** The gutter between two columns, world px (room for the routed edges). */
const GAP = 90;

/** How many columns make a `long` × `cross` strip closest in shape to a view of aspect `viewAspect` (cross / long). */
export function columnsFor(long, cross, viewAspect) {
  if (!(long > 0) || !(cross > 0) || !(viewAspect > 0)) return 1;
  // c columns: cross' = c·cross + (c−1)·GAP, long' = long / c; pick the c whose zoom to fit is largest.
  let best = 1, bestK = Math.min(viewAspect / cross, 1 / long);
  for (let c = 2; c <= WRAP_MAX; c++) {
    const k = Math.min(viewAspect / (c * cross + (c - 1) * GAP), c / (long * 1.08));
    if (k > bestK * 1.15) { best = c; bestK = k; }
  }
  return best;
}

/**
 * Cut `layout` (layout/layered.js's answer, changed in place) into columns for a view of
 * `size` ({w, h}); `sizes` are the visible nodes' {w, h}. Sets `layout.colOf` (Int32Array,
 * node → column) and `layout.columns` (how many; 1 when left whole).
 */
export function wrapLayout(layout, sizes, size) {
  const n = layout.x.length;
  layout.columns = 1;
  layout.colOf = null;
  if (n < WRAP_MIN || !size || !(size.w > 0) || !(size.h > 0)) return layout;
  const tb = layout.direction !== "LR";
  const long = tb ? layout.y : layout.x, cross = tb ? layout.x : layout.y;
  const L = tb ? layout.height : layout.width, W = tb ? layout.width : layout.height;
  const C = columnsFor(L, W, tb ? size.w / size.h : size.h / size.w);
  if (C < 2) return layout;
  const half = (v) => (tb ? sizes[v].h : sizes[v].w) / 2;
  // The ranks' extents along the long axis, in order; cuts go in the gaps between them.
  const ranks = [...new Set(Array.from(long, (c) => Math.round(c)))].sort((p, q) => p - q);
  const extent = new Map(ranks.map((r) => [r, [Infinity, -Infinity]]));
  for (let v = 0; v < n; v++) {
    const e = extent.get(Math.round(long[v]));
    e[0] = Math.min(e[0], long[v] - half(v)); e[1] = Math.max(e[1], long[v] + half(v));
  }
  const cuts = [];
  for (let j = 1; j < C; j++) {
    const target = (L * j) / C;
    let bestAt = null, bd = Infinity;
    for (let i = 0; i + 1 < ranks.length; i++) {
      const at = (extent.get(ranks[i])[1] + extent.get(ranks[i + 1])[0]) / 2;
      if (cuts.length && at <= cuts[cuts.length - 1]) continue;
      if (Math.abs(at - target) < bd) { bd = Math.abs(at - target); bestAt = at; }
    }
    if (bestAt != null) cuts.push(bestAt);
  }
  if (!cuts.length) return layout;
  const cols = cuts.length + 1;
  const colAt = (c) => { let j = 0; while (j < cuts.length && c > cuts[j]) j++; return j; };
  const colOf = new Int32Array(n);
  const start = new Float64Array(cols).fill(Infinity);
  let span = 0;
  for (let v = 0; v < n; v++) {
    colOf[v] = colAt(long[v]);
    start[colOf[v]] = Math.min(start[colOf[v]], long[v] - half(v));
  }
  for (let c = 0; c < cols; c++) if (start[c] === Infinity) start[c] = c ? cuts[c - 1] : 0;
  for (let v = 0; v < n; v++) span = Math.max(span, long[v] + half(v) - start[colOf[v]]);
  const shiftLong = (c) => -start[c];
  const shiftCross = (c) => c * (W + GAP);
  // Edges: both ends in one column move with it; the others go round through the gutters.
  const moved = new Map();
  layout.points = layout.points.map((p, e) => {
    if (!p || p.length < 4) return p;
    if (moved.has(p)) return moved.get(p);
    const at = (i) => (tb ? [p[i], p[i + 1]] : [p[i + 1], p[i]]);  // [cross, long]
    const [c0, l0] = at(0), [c1, l1] = at(p.length - 2);
    const a = colAt(l0), b = colAt(l1);
    const out = [];
    const push = (c, l) => { if (tb) out.push(c, l); else out.push(l, c); };
    if (a === b) {
      for (let i = 0; i < p.length; i += 2) { const [c, l] = at(i); push(c + shiftCross(a), l + shiftLong(a)); }
    } else {
      // Down (or up) out of column a, along the gutter beside it, into column b from its end.
      const down = a < b;
      const exitL = down ? span + GAP / 3 : -GAP / 3, enterL = down ? -GAP / 3 : span + GAP / 3;
      const gutter = Math.max(a, b) * (W + GAP) - GAP / 2;
      push(c0 + shiftCross(a), l0 + shiftLong(a));
      push(c0 + shiftCross(a), exitL);
      push(gutter, exitL);
      push(gutter, enterL);
      push(c1 + shiftCross(b), enterL);
      push(c1 + shiftCross(b), l1 + shiftLong(b));
    }
    moved.set(p, out);
    return out;
  });
  for (let v = 0; v < n; v++) {
    const c = colOf[v];
    long[v] += shiftLong(c);
    cross[v] += shiftCross(c);
  }
  const crossTotal = cols * W + (cols - 1) * GAP;
  if (tb) { layout.width = crossTotal; layout.height = span; } else { layout.width = span; layout.height = crossTotal; }
  layout.columns = cols;
  layout.colOf = colOf;
  // The edges between columns run GAP / 3 past the columns' ends: a frame of the whole graph
  // (render/fit.js) keeps that much more room at both ends.
  layout.overhang = GAP / 3;
  return layout;
}
