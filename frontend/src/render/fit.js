/**
 * Fit: the camera that frames a scene at step k in a view of a given size. Pure (no DOM), so
 * it is unit-tested in test/fit.test.js; render/canvas.js applies it.
 */
import { stepState } from "./scene.js";

/** The zoom at which 11 px text stays at least 9 px on screen (labels.js MIN_TEXT_PX). */
export const READ_K = 0.82;  // 11 × 0.82 = 9.02 (9 / 11 itself rounds to just under 9)
/** A graph of at most this many boxes, none of them a fold, is small (NOTE [small graphs whole]). */
export const SMALL_NODES = 40;
/** The least zoom Fit shows a small graph whole at: its boxes stay about 50×15 px or more. */
export const WHOLE_K = 0.4;
/** How far from the view's centre Fit may put the current node, in halves of the view (28–72 %). */
export const BAND = 0.44;

/**
 * NOTE [fit]: show the whole graph when it is legible whole (text ≥ 9 px, READ_K); else
 * frame the part active at the current step (the open units with the folds beside them,
 * else the open units, else the current node) at a legible zoom, showing as much of the
 * graph around it as that zoom allows. The minimap's corner is kept free (`reserve`), so
 * the minimap never covers what Fit framed.
 *
 * Only what is drawn at the step counts (nodes revealed by then, with their module boxes):
 * a part not built yet is an empty band on screen. When the active part is bigger than the
 * view along an axis, the current node sits in the middle band of that axis (28–72 %, BAND),
 * and the view stays on the drawn graph, so no wide empty band faces a side where the graph
 * goes on out of view (test/fit.test.js and tests/browser/test_narrow.py measure both).
 *
 * @param scene    render/scene.js's scene (with `active`, the open units' visible nodes)
 * @param k        the step
 * @param size     {w, h} of the view in CSS px
 * @param reserve  [right, bottom] px the minimap keeps for itself
 * @param readK    the least zoom Fit reads at (READ_K; larger in presentation mode)
 * @returns {{x: number, y: number, k: number}} the camera (world top-left and zoom)
 */
export function fitCamera(scene, k, size, reserve = [0, 0], { whole = false, readK = READ_K, pad = 0 } = {}) {
  const s = scene, { vnodes } = s.view;
  // `pad`: screen pixels kept clear on each side (a compare pane's module titles sit above its top row)
  const w = size.w - reserve[0] - 2 * pad, h = size.h - reserve[1] - 2 * pad;
  // 20 world px around the graph, and the edges a wrapped layout runs past its columns' ends.
  const over = (s.layout && s.layout.overhang) || 0;
  const mx = 20 + (s.layout && s.layout.direction === "LR" ? over : 0), my = 20 + (s.layout && s.layout.direction === "LR" ? 0 : over);
  const gw = Math.max(s.width, 1) + 2 * mx, gh = Math.max(s.height, 1) + 2 * my;
  const kw = Math.min(w / gw, h / gh, 1.6);
  // A graph legible whole at the page's own reading zoom is shown whole in presentation mode
  // too (its larger reading zoom is for graphs too big to show whole: NOTE [fit]).
  if (kw >= Math.min(readK, READ_K) || whole || smallWhole(s, size)) {
    return { k: kw, x: -mx - (w / kw - gw) / 2 - pad / kw, y: -my - (h / kw - gh) / 2 - pad / kw };
  }
  const fits = (b) => Math.min(w / (b[2] - b[0] + 60), h / (b[3] - b[1] + 60)) >= readK;
  const withFolds = activeBox(s, k, true);
  const box = withFolds && fits(withFolds) ? withFolds : activeBox(s, k, false);
  let [x0, y0, x1, y1] = box || currentBox(s, k);
  let bw = x1 - x0 + 60, bh = y1 - y0 + 60;
  // Without units the current node alone is no frame: show the most context that is legible.
  const ka = box ? Math.max(readK, Math.min(w / bw, h / bh, 1.2 * readK / READ_K)) : readK;
  const [v] = stepState(s, k).current;
  // A current node outside the active part (a shared parameter) joins it, with room around.
  if (box && v !== undefined) {
    const r = 100;
    x0 = Math.min(x0, s.x[v] - r); y0 = Math.min(y0, s.y[v] - r); x1 = Math.max(x1, s.x[v] + r); y1 = Math.max(y1, s.y[v] + r);
  }
  // An active part too big to show whole: its current node with the nearest fold, when
  // both fit (a fold is where the rest of the run is; it should be in view).
  if (box && (bw * ka > w || bh * ka > h) && v !== undefined) {
    const near = nearestFold(s, k, v);
    if (near) {
      const b2 = [Math.min(s.x[v], near[0]), Math.min(s.y[v], near[1]), Math.max(s.x[v], near[2]), Math.max(s.y[v], near[3])];
      if ((b2[2] - b2[0] + 60) * ka <= w && (b2[3] - b2[1] + 60) * ka <= h) [x0, y0, x1, y1] = b2;
    }
  }
  bw = x1 - x0 + 60; bh = y1 - y0 + 60;
  // In a wrapped layout (render/wrap.js) the graph goes on in the next column, not past the
  // end of this one: the frame keeps to the current node's column.
  const col = s.layout && s.layout.colOf && v !== undefined ? s.layout.colOf[v] : null;
  const [e0x, e0y, e1x, e1y] = drawnBox(s, k, col);
  // One axis at a time: the frame's centre, kept on the drawn graph, with the current node in
  // the middle band when the frame is too big for the view.
  const place = (lo, hi, span, extent, c0, c1, at) => {
    const half = span / 2 / ka;
    const big = extent * ka > span && at !== undefined;
    let c = big ? Math.min(Math.max(at, lo + half - 30), hi - half + 30) : (lo + hi) / 2;
    c = c1 - c0 + 40 <= 2 * half ? (c0 + c1) / 2 : Math.min(Math.max(c, c0 - 20 + half), c1 + 20 - half);
    if (big) c = Math.min(Math.max(c, at - BAND * half), at + BAND * half);
    return c;
  };
  let cx = place(x0, x1, w, bw, e0x, e1x, v === undefined ? undefined : s.x[v]);
  let cy = place(y0, y1, h, bh, e0y, e1y, v === undefined ? undefined : s.y[v]);
  // The current node is always in view (else stepping would jump the camera to it).
  if (v !== undefined) {
    const mx = Math.max(0, w / 2 / ka - vnodes[v].w / 2 - 20), my = Math.max(0, h / 2 / ka - vnodes[v].h / 2 - 20);
    cx = Math.min(Math.max(cx, s.x[v] - mx), s.x[v] + mx);
    cy = Math.min(Math.max(cy, s.y[v] - my), s.y[v] + my);
  }
  const cam = { k: ka, x: cx - w / 2 / ka, y: cy - h / 2 / ka };
  return settle(s, k, cam, size, v, big(bw * ka > w), big(bh * ka > h));
}

/**
 * NOTE [small graphs whole]: a small graph (SMALL_NODES boxes or fewer, no folded units) is
 * read as a whole: framing a part of it at a legible zoom cuts off its loss end (a 16-node MLP
 * is nine rows, taller than the graph's panel at 1280×800). So Fit shows it whole down to
 * WHOLE_K, where each box's label is still set at 9 px (the overview level of render/texts.js:
 * the whole label, a little condensed when it needs, else a short form a reader can decode,
 * the whole name on hover); zooming in reads the rest. Such a graph needs no minimap (the view
 * is its map), so the test uses the whole view. test/fit.test.js and
 * tests/browser/test_visual.py check it.
 */
export function smallWhole(s, size) {
  if (!s || s.units || s.view.vnodes.length > SMALL_NODES || s.view.vnodes.some((n) => n.fold)) return false;
  return Math.min(size.w / (Math.max(s.width, 1) + 40), size.h / (Math.max(s.height, 1) + 40)) >= WHOLE_K;
}

/** The current node's allowed place along an axis, as fractions of the view: BAND when framed big. */
function big(yes) { return yes ? [0.5 - BAND / 2, 0.5 + BAND / 2] : null; }

/**
 * NOTE [no cut boxes]: a frame edge that crosses a node box shows half a box, which reads as
 * a broken graph. After framing, Fit moves each edge of the view into a gap between boxes:
 * along the cross axis of the layout's rows (x for top → bottom) it may move either edge, so
 * the zoom may grow (never below READ_K); along the other axis only the whole view shifts.
 * It takes the nearest such frame that keeps the current node where Fit put it (in the band
 * when the frame is big), and keeps the frame as it was when there is none.
 * test/fit.test.js and tests/browser/test_fit_boxes.py check that no box is cut.
 */
function settle(s, k, cam, size, v, bandX, bandY) {
  const { vnodes } = s.view;
  const drawn = [];
  for (let i = 0; i < vnodes.length; i++) if (s.reveal[i] <= k) drawn.push(i);
  const lr = s.layout && s.layout.direction === "LR";
  const ext = (i, axis) => (axis === 0 ? [s.x[i] - vnodes[i].w / 2, s.x[i] + vnodes[i].w / 2] : [s.y[i] - vnodes[i].h / 2, s.y[i] + vnodes[i].h / 2]);
  const span = (c, axis) => (axis === 0 ? [c.x, c.x + size.w / c.k] : [c.y, c.y + size.h / c.k]);
  const cut = (c) => drawn.some((i) => {
    const [x0, x1] = ext(i, 0), [y0, y1] = ext(i, 1), [L, R] = span(c, 0), [T, B] = span(c, 1);
    if (x1 <= L || x0 >= R || y1 <= T || y0 >= B) return false;
    return x0 < L || x1 > R || y0 < T || y1 > B;
  });
  if (!cut(cam)) return cam;
  const cross = lr ? 1 : 0;
  const keeps = (c, axis) => {
    if (v === undefined) return true;
    const [lo, hi] = span(c, axis), [a, b] = ext(v, axis), len = hi - lo;
    const band = axis === 0 ? bandX : bandY;
    const at = ((axis === 0 ? s.x[v] : s.y[v]) - lo) / len;
    return a >= lo + 4 / c.k && b <= hi - 4 / c.k && (!band || (at >= band[0] - 0.02 && at <= band[1] + 0.02));
  };
  // Closer in, fewer rows lie across the view, so more gaps run through all of them.
  const cx = cam.x + size.w / cam.k / 2, cy = cam.y + size.h / cam.k / 2;
  for (const f of [1, 1.1, 1.25, 1.4, 1.6, 1.8]) {
    const kk = cam.k * f;
    if (f > 1 && kk > Math.max(cam.k, 1.6)) break;
    let best = { k: kk, x: cx - size.w / kk / 2, y: cy - size.h / kk / 2 };
    for (let round = 0; round < 3 && cut(best); round++) {
      const c0 = best;
      // The cross axis first (either edge may move), then the other (a shift), each against
      // the boxes that lie across the view's extent along the other axis.
      let c = moveEdges(c0, cross, true);
      c = moveEdges(c, 1 - cross, false);
      if (c === c0) break;
      best = c;
    }
    if (!cut(best) && keeps(best, 0) && keeps(best, 1)) return best;
  }
  return cam;

  function moveEdges(c, axis, zoom) {
    const [P0, P1] = span(c, 1 - axis);
    const m = 4 / c.k;  // a few pixels between a box and the view's edge
    const iv = [];
    for (const i of drawn) {
      const [q0, q1] = ext(i, 1 - axis);
      if (q1 <= P0 - 40 / c.k || q0 >= P1 + 40 / c.k) continue;
      const [a, b] = ext(i, axis);
      iv.push([a - m, b + m]);
    }
    iv.sort((p, q) => p[0] - q[0]);
    const merged = [];
    for (const it of iv) {
      const last = merged[merged.length - 1];
      if (last && it[0] <= last[1]) last[1] = Math.max(last[1], it[1]); else merged.push([...it]);
    }
    const free = (x) => !merged.some(([a, b]) => x > a && x < b);
    const near = (x) => {  // x when free, else the ends of the gap it falls in, and the next ones
      const out = [x];
      const j = merged.findIndex(([a, b]) => x > a && x < b);
      if (j >= 0) for (let d = -3; d <= 3; d++) { const g = merged[j + d]; if (g) out.push(g[0], g[1]); }
      return out.filter(free);
    };
    const [L0, R0] = span(c, axis), W = axis === 0 ? size.w : size.h;
    const make = (L, R) => {
      const kk = R - L === R0 - L0 ? c.k : W / (R - L);  // a shift keeps the zoom as it is
      return axis === 0 ? { k: kk, x: L, y: c.y + (size.h / c.k - size.h / kk) / 2 } : { k: kk, x: c.x + (size.w / c.k - size.w / kk) / 2, y: L };
    };
    const pairs = [];
    for (const L of near(L0)) pairs.push([L, L + R0 - L0]);
    for (const R of near(R0)) pairs.push([R - (R0 - L0), R]);
    if (zoom) for (const L of near(L0)) for (const R of near(R0)) pairs.push([L, R]);
    let pick = null, cost = Infinity;
    for (const [L, R] of pairs) {
      if (!free(L) || !free(R) || R <= L) continue;
      const cand = make(L, R);
      if (cand.k < Math.min(READ_K, c.k) || cand.k > Math.max(c.k, 1.6)) continue;
      if (!keeps(cand, axis)) continue;
      const d = Math.abs(L - L0) + Math.abs(R - R0);
      if (d < cost) { cost = d; pick = cand; }
    }
    return pick || c;
  }
}

/** World box of what is drawn at step k: the revealed nodes and module boxes (of column `col` only, when given). */
export function drawnBox(s, k, col = null) {
  const { vnodes } = s.view;
  const colOf = col == null ? null : s.layout.colOf;
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  vnodes.forEach((n, v) => {
    if (!(s.reveal[v] <= k) || (colOf && colOf[v] !== col)) return;
    x0 = Math.min(x0, s.x[v] - n.w / 2); x1 = Math.max(x1, s.x[v] + n.w / 2);
    y0 = Math.min(y0, s.y[v] - n.h / 2); y1 = Math.max(y1, s.y[v] + n.h / 2);
  });
  if (x0 === Infinity) return [0, 0, s.width, s.height];
  for (const b of s.boxes || []) {
    if (!(b.reveal <= k) || (colOf && b.col !== col)) continue;
    x0 = Math.min(x0, b.x0); x1 = Math.max(x1, b.x1); y0 = Math.min(y0, b.y0); y1 = Math.max(y1, b.y1);
  }
  return [x0, y0, x1, y1];
}

/** The world box of the drawn fold nearest to visible node v, or null. */
function nearestFold(s, k, v) {
  const { vnodes } = s.view;
  let best = null, bd = Infinity;
  vnodes.forEach((n, f) => {
    if (!n.fold || !(s.reveal[f] <= k)) return;
    const d = Math.hypot(s.x[f] - s.x[v], s.y[f] - s.y[v]);
    if (d < bd) { bd = d; best = [s.x[f] - n.w / 2, s.y[f] - n.h / 2, s.x[f] + n.w / 2, s.y[f] + n.h / 2]; }
  });
  return best;
}

function currentBox(s, k) {
  const { vnodes } = s.view;
  let list = [...stepState(s, k).current];
  if (!list.length) list = vnodes.map((_, v) => v).filter((v) => s.reveal[v] <= k).slice(-1);
  if (!list.length) return [0, 0, s.width, s.height];
  return boxOf(s, list);
}

/**
 * World box of the visible nodes of the open units (with the folds when asked) drawn by
 * step k (all of them when none is drawn yet), or null.
 */
function activeBox(s, k, withFolds) {
  const { vnodes } = s.view;
  let active = s.active || null;
  if (!active || !active.length) return null;
  if (withFolds) active = [...active, ...vnodes.map((n, i) => (n.fold ? i : -1)).filter((i) => i >= 0)];
  const drawn = active.filter((v) => s.reveal[v] <= k);
  return boxOf(s, drawn.length ? drawn : active);
}

/** World bounding box of some visible nodes. */
function boxOf(s, list) {
  const { vnodes } = s.view;
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (const v of list) {
    const n = vnodes[v];
    x0 = Math.min(x0, s.x[v] - n.w / 2); x1 = Math.max(x1, s.x[v] + n.w / 2);
    y0 = Math.min(y0, s.y[v] - n.h / 2); y1 = Math.max(y1, s.y[v] + n.h / 2);
  }
  return [x0, y0, x1, y1];
}
