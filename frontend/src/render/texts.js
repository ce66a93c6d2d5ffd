/**
 * The graph's texts in screen space: sized for the zoom, fitted to their boxes, placed by
 * labels.js (no overlap, none under 9 px), then drawn. Split from draw.js, which collects them.
 */
import { edgeBoxes, edgePoints, midpoint } from "./geometry.js";
import { MIN_TEXT_PX, ellipsize, placeLabels } from "./labels.js";

export const MONO = "ui-monospace, monospace";
/** Screen px a group's or module box's title keeps from the box's sides. */
const TEXT_PAD = 8;
/** The smallest size a title is set at to fit its box whole, before it is shortened. */
const FIT_PX = 9.5;
/** How much narrower than its text a node's label may be drawn at the overview level. */
const SQUEEZE = 1.15;
/** A title shortened to this many characters or fewer gives way to its short form. */
const SHORT_TITLE = 8;

/** Place every text in screen space (labels.js) and draw the ones that found room. */
export function drawTexts(ctx, scene, texts, cam, vw, vh, dpr, batches, step) {
  const k = cam.k;
  const sx = (wx) => (wx - cam.x) * k, sy = (wy) => (wy - cam.y) * k;
  const { vnodes } = scene.view;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  const items = [];
  for (const t of texts) {
    let size = t.base * k;
    if (t.min) size = Math.max(size, t.min);
    if (size < MIN_TEXT_PX) continue;
    size = Math.round(size * 2) / 2;
    let font = `${t.bold ? "bold " : ""}${size}px ${t.family || MONO}`;
    ctx.font = font;
    let text = t.text;
    let w = ctx.measureText(text).width;
    // NOTE [titles inside their boxes]: a group's title (kept at 11 px when its box is drawn
    // smaller) and a module box's title keep TEXT_PAD px from the box's sides; one that does
    // not fit is set smaller (down to FIT_PX), then shortened (labels.js ellipsize), and its
    // whole text is the tooltip.
    if (t.room !== undefined) {
      const room = t.room * k - (t.pad ?? (t.kind === "title" ? TEXT_PAD : 2 * TEXT_PAD));
      // NOTE [overview labels]: zoomed out, a label that does not fit its box shows its first
      // short form that does (analysis/abbrev.js: "Addmm…", "m.0.w"); a box too small for
      // any of them leaves its text to the module box or group title around it.
      // A title keeps its shortened whole text ("▾ enc.layers.0 · Transfo…") unless that is cut
      // to SHORT_TITLE characters or fewer and the short form says as much ("▾ e.l.0" over "▾ enc…").
      const alt = w > room && t.alts ? t.alts.find((a) => ctx.measureText(a).width <= room) : undefined;
      // A label a little too wide for its box is drawn condensed (fillText's maxWidth) rather
      // than shortened: "AccumulateGrad" reads better squeezed by a tenth than as "Acc…".
      if (t.abbrOnly && w > room && w <= room * SQUEEZE) w = room;
      if (t.abbrOnly && w > room) {
        if (alt === undefined) continue;
        text = alt; w = ctx.measureText(text).width;
      }
      if (w > room && size > FIT_PX) {
        size = Math.max(FIT_PX, Math.floor((2 * size * room) / w) / 2);
        font = `${t.bold ? "bold " : ""}${size}px ${t.family || MONO}`;
        ctx.font = font;
        w = ctx.measureText(text).width;
      }
      if (w > room) {
        text = ellipsize(t.text, room, (s) => ctx.measureText(s).width);
        const fits = alt !== undefined && ctx.measureText(alt).width <= room;
        if (fits && (!text || ([...text].length <= SHORT_TITLE && [...alt].length >= [...text].length))) text = alt;
        if (!text) continue;
        w = ctx.measureText(text).width;
      }
    }
    // A node's sub-label is squeezed to its box when a little too wide (Canvas maxWidth).
    if (t.fitTo && w > t.fitTo * k) w = Math.max(t.fitTo * k, 1);
    const h = size * 1.25;
    const x = sx(t.wx), y = sy(t.wy);
    let candidates;
    if (t.kind === "region") {
      // NOTE [modules as regions] in render/draw.js: only where the box has room for it.
      const [a0, a1, a2, a3] = t.area, bw = (a2 - a0) * k, bh = (a3 - a1) * k;
      if (w + 6 > bw - 8 && size > 10) {  // a narrow region: its name a little smaller
        size = 10; font = `bold ${size}px ${t.family || MONO}`; ctx.font = font; w = ctx.measureText(text).width;
      }
      const h = size * 1.25;
      if (w + 6 > bw - 8 || h * 2 > bh) continue;
      candidates = [[x - w / 2 - 3, y - h / 2], [x - w / 2 - 3, y - bh / 4 - h / 2], [x - w / 2 - 3, y + bh / 4 - h / 2]];
      items.push({ ...t, font, size, w: w + 6, h, px: size, candidates, over: true });
      continue;
    }
    if (t.kind === "node") candidates = [[x - w / 2, y - h / 2]];
    else if (t.kind === "title") candidates = t.room !== undefined && text !== t.text ? [[x, y], [x, y - h]] : [[x, y], [x + 12, y], [x, y - h]];
    else if (t.kind === "error") {
      const n = vnodes[t.node];
      const hw = (n.w / 2) * k + 10, hh = (n.h / 2) * k + 8;
      candidates = [[x + hw, y - h / 2], [x - hw - w, y - h / 2], [x - w / 2, y - hh - h], [x - w / 2, y + hh]];
    } else {
      candidates = [];
      const p = t.pts || [t.wx, t.wy];
      for (const f of [0.5, 0.3, 0.7]) {
        const [px, py] = pointAt(p, f);
        const ex = sx(px), ey = sy(py);
        if (t.centre) candidates.push([ex - w / 2, ey - h / 2]);
        candidates.push([ex + 5, ey - h / 2], [ex - 5 - w - 6, ey - h / 2], [ex - w / 2, ey - h - 4], [ex - w / 2, ey + 4]);
      }
    }
    // NOTE [titles of boxes cut by the edge]: a box that reaches out of the view keeps its
    // title in the part that is in view (its top-left corner, or the middle of a group).
    if (t.clip && (candidates[0][0] < 0 || candidates[0][1] < 0 || candidates[0][0] + w > vw || candidates[0][1] + h > vh)) {
      const [c0, c1, c2, c3] = t.clip;
      // A title keeps 4 px from the box's sides, a group's label TEXT_PAD, a node's short form its `pad`.
      const px = t.kind === "title" ? 4 : t.pad !== undefined ? t.pad / 2 : TEXT_PAD, py = t.kind === "title" ? 3 : 0;
      const vx0 = Math.max(sx(c0), 0) + px, vy0 = Math.max(sy(c1), 0) + py, vx1 = Math.min(sx(c2), vw) - px, vy1 = Math.min(sy(c3), vh) - py;
      // Too narrow a part for the text: its first short form that fits there (labels.js never
      // places a text that sticks out of the view).
      const bgw = t.bg ? 6 : 0;
      if (vx1 - vx0 < w + bgw && t.alts && vy1 - vy0 >= h) {
        const alt = t.alts.find((a) => ctx.measureText(a).width + bgw <= vx1 - vx0);
        if (alt !== undefined) { text = alt; w = ctx.measureText(alt).width; candidates = []; }
      }
      if (vx1 - vx0 >= w + bgw && vy1 - vy0 >= h) {
        candidates.push(t.kind === "title" ? [vx0, vy0] : [(vx0 + vx1 - w - bgw) / 2, (vy0 + vy1 - h) / 2]);
        if (t.kind === "title" && vx0 + w + bgw + 12 <= vx1) candidates.push([vx0, Math.min(vy0 + h, vy1 - h)]);
      }
    }
    // A title's shorter forms, for where its whole text would run into a line (labels.js).
    let shorter;
    if (t.kind === "title") {
      shorter = [];
      for (const f of [0.7, 0.5]) {
        const sh = ellipsize(t.text, w * f, (q) => ctx.measureText(q).width);
        if (sh && sh !== text) shorter.push({ text: sh, w: ctx.measureText(sh).width + (t.bg ? 6 : 0) });
      }
    }
    items.push({ ...t, text, full: text === t.text ? undefined : t.text, font, size, w: t.bg ? w + 6 : w, h, px: size, candidates, owner: t.node,
      lines: t.kind === "title" ? t.box || true : undefined, shorter });
  }
  items.sort((a, b) => a.prio - b.prio);
  // Only the nodes where some text could go are obstacles (NOTE [texts too small to show]:
  // zoomed out, a few group titles among thousands of boxes).
  const obstacles = [];
  if (items.length) {
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (const it of items) {
      for (const [cx, cy] of it.candidates) {
        x0 = Math.min(x0, cx); y0 = Math.min(y0, cy); x1 = Math.max(x1, cx + it.w); y1 = Math.max(y1, cy + it.h);
      }
    }
    for (const list of batches) for (const v of list) {
      const n = vnodes[v];
      const ox = sx(scene.x[v] - n.w / 2), oy = sy(scene.y[v] - n.h / 2), ow = n.w * k, oh = n.h * k;
      if (ox < x1 && ox + ow > x0 && oy < y1 && oy + oh > y0) obstacles.push({ x: ox, y: oy, w: ow, h: oh, owner: v, node: true });
    }
    if (items.some((it) => it.lines)) lineObstacles(scene, step, cam, [x0, y0, x1, y1], obstacles);
  }
  const placed = placeLabels(items, obstacles, vw, vh);
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  for (const it of placed) {
    ctx.font = it.font;
    if (it.bg) { ctx.fillStyle = it.bg; ctx.fillRect(it.x, it.y, it.w, it.h); }
    ctx.fillStyle = it.color;
    const pad = it.bg ? 3 : 0;
    ctx.fillText(it.text, it.x + pad, it.y + it.h / 2, it.w - pad * 2 + 0.5);
  }
  return placed;
}

/**
 * The edges and module outlines drawn at `step` that pass through the screen region `r`, as
 * short pieces (`line` obstacles of labels.js, NOTE [titles clear of lines]): an edge's are
 * marked "edge", an outline's with its box, so that the box's own title may touch it.
 */
function lineObstacles(scene, step, cam, r, out) {
  const k = cam.k, PIECE = 10;
  const add = (pts, key, closed) => {
    const n = pts.length / 2;
    for (let i = 0; i < (closed ? n : n - 1); i++) {
      const j = (i + 1) % n;
      const ax = (pts[2 * i] - cam.x) * k, ay = (pts[2 * i + 1] - cam.y) * k, bx = (pts[2 * j] - cam.x) * k, by = (pts[2 * j + 1] - cam.y) * k;
      if (Math.max(ax, bx) < r[0] || Math.min(ax, bx) > r[2] || Math.max(ay, by) < r[1] || Math.min(ay, by) > r[3]) continue;
      const m = Math.max(1, Math.ceil(Math.hypot(bx - ax, by - ay) / PIECE));
      for (let t = 0; t < m; t++) {
        const px0 = ax + ((bx - ax) * t) / m, py0 = ay + ((by - ay) * t) / m, px1 = ax + ((bx - ax) * (t + 1)) / m, py1 = ay + ((by - ay) * (t + 1)) / m;
        out.push({ x: Math.min(px0, px1) - 0.5, y: Math.min(py0, py1) - 0.5, w: Math.abs(px1 - px0) + 1, h: Math.abs(py1 - py0) + 1, line: key });
      }
    }
  };
  const { vedges } = scene.view;
  const ebox = edgeBoxes(scene);
  const X0 = r[0] / k + cam.x, Y0 = r[1] / k + cam.y, X1 = r[2] / k + cam.x, Y1 = r[3] / k + cam.y;
  for (let e = 0; e < vedges.length; e++) {
    if (!(scene.edgeReveal[e] <= step) || vedges[e].cut) continue;
    if (ebox[4 * e + 2] < X0 || ebox[4 * e] > X1 || ebox[4 * e + 3] < Y0 || ebox[4 * e + 1] > Y1) continue;
    add(edgePoints(scene, e), "edge", false);
  }
  for (const b of scene.boxes || []) {
    if (b.reveal <= step && b.poly && !(b.x1 < X0 || b.x0 > X1 || b.y1 < Y0 || b.y0 > Y1)) add(b.poly, b, true);
  }
}

/** The point a fraction f of the way along a polyline's points (by vertex count, cheap). */
function pointAt(p, f) {
  if (p.length === 2) return [p[0], p[1]];
  if (f === 0.5) return midpoint(p);
  const segs = p.length / 2 - 1;
  const t = f * segs, i = Math.min(segs - 1, Math.floor(t)), u = t - i;
  return [p[2 * i] + (p[2 * i + 2] - p[2 * i]) * u, p[2 * i + 1] + (p[2 * i + 3] - p[2 * i + 1]) * u];
}
