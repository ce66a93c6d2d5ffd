/**
 * Fit: the camera that frames a scene at step k in a view of a given size. Pure (no DOM), so
 * it is unit-tested in test/fit.test.js; render/canvas.js applies it.
 */
import { stepState } from "./scene.js";

/** The zoom at which 11 px text stays at least 9 px on screen (labels.js MIN_TEXT_PX). */
export const READ_K = 0.82;  // 11 × 0.82 = 9.02 (9 / 11 itself rounds to just under 9)
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
 * @returns {{x: number, y: number, k: number}} the camera (world top-left and zoom)
 */
export function fitCamera(scene, k, size, reserve = [0, 0], { whole = false } = {}) {
  const s = scene, { vnodes } = s.view;
  const w = size.w - reserve[0], h = size.h - reserve[1];
  const gw = Math.max(s.width, 1) + 40, gh = Math.max(s.height, 1) + 40;
  const kw = Math.min(w / gw, h / gh, 1.6);
  if (kw >= READ_K || whole) return { k: kw, x: -20 - (w / kw - gw) / 2, y: -20 - (h / kw - gh) / 2 };
  const fits = (b) => Math.min(w / (b[2] - b[0] + 60), h / (b[3] - b[1] + 60)) >= READ_K;
  const withFolds = activeBox(s, k, true);
  const box = withFolds && fits(withFolds) ? withFolds : activeBox(s, k, false);
  let [x0, y0, x1, y1] = box || currentBox(s, k);
  let bw = x1 - x0 + 60, bh = y1 - y0 + 60;
  // Without units the current node alone is no frame: show the most context that is legible.
  const ka = box ? Math.max(READ_K, Math.min(w / bw, h / bh, 1.2)) : READ_K;
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
  const [e0x, e0y, e1x, e1y] = drawnBox(s, k);
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
  return { k: ka, x: cx - w / 2 / ka, y: cy - h / 2 / ka };
}

/** World box of what is drawn at step k: the revealed nodes and module boxes. */
export function drawnBox(s, k) {
  const { vnodes } = s.view;
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  vnodes.forEach((n, v) => {
    if (!(s.reveal[v] <= k)) return;
    x0 = Math.min(x0, s.x[v] - n.w / 2); x1 = Math.max(x1, s.x[v] + n.w / 2);
    y0 = Math.min(y0, s.y[v] - n.h / 2); y1 = Math.max(y1, s.y[v] + n.h / 2);
  });
  if (x0 === Infinity) return [0, 0, s.width, s.height];
  for (const b of s.boxes || []) {
    if (!(b.reveal <= k)) continue;
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
