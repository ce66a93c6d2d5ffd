/**
 * Draw one frame of a scene on a 2D canvas context. Shared by the live view and the PNG
 * export, so both show the same thing.
 *
 * NOTE [Canvas, culled and batched]
 *   Measured here, SVG steps 5k nodes at 22–45 fps and Canvas 2D at ~60. Per frame we
 *   skip everything outside the viewport, batch plain boxes and edges into one path per
 *   style, draw only highlighted items one by one, and drop labels and arrowheads when
 *   zoomed out (they would be a few pixels high anyway).
 */
import { abbreviations } from "../analysis/abbrev.js";
import { fmtTensorShort, gradMagnitude } from "../graph/values.js";
import { strokeNonfinite } from "./nonfinite.js";
import { edgeBoxes, edgePoints, midpoint } from "./geometry.js";
import { MIN_TEXT_PX } from "./labels.js";
import { SMALL_NODES } from "./fit.js";
import { LABEL_PX, SUB_PX, nodeTexts } from "./node-texts.js";
import { drawTexts } from "./texts.js";


const KIND_STYLE = ["function", "acc", "leaf", "output", "retained", "cut", "group"];

function tracePolyline(ctx, p, straight = false) {
  ctx.moveTo(p[0], p[1]);
  if (p.length === 4) { ctx.lineTo(p[2], p[3]); return; }
  if (straight) { for (let i = 2; i < p.length; i += 2) ctx.lineTo(p[i], p[i + 1]); return; }
  for (let i = 2; i < p.length - 2; i += 2) {
    const mx = (p[i] + p[i + 2]) / 2, my = (p[i + 1] + p[i + 3]) / 2;
    ctx.quadraticCurveTo(p[i], p[i + 1], mx, my);
  }
  ctx.lineTo(p[p.length - 2], p[p.length - 1]);
}

function arrowHead(ctx, p, size) {
  const n = p.length;
  const x = p[n - 2], y = p[n - 1];
  const dx = x - p[n - 4], dy = y - p[n - 3];
  const len = Math.hypot(dx, dy) || 1;
  const ux = dx / len, uy = dy / len;
  ctx.moveTo(x, y);
  ctx.lineTo(x - ux * size - uy * size * 0.5, y - uy * size + ux * size * 0.5);
  ctx.lineTo(x - ux * size + uy * size * 0.5, y - uy * size - ux * size * 0.5);
  ctx.closePath();
}

/**
 * @param cam {x, y, k}: world point (cam.x, cam.y) sits at the top-left, k = pixels per unit
 * @param opts {pal, dpr, selected: Set, lineSel: Set}
 */
export function drawScene(ctx, scene, st, cam, vw, vh, opts) {
  const { pal, dpr = 1 } = opts;
  const k = cam.k;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = pal.bg;
  ctx.fillRect(0, 0, vw, vh);
  if (!scene) return;
  ctx.setTransform(dpr * k, 0, 0, dpr * k, -cam.x * k * dpr, -cam.y * k * dpr);
  const X0 = cam.x, Y0 = cam.y, X1 = cam.x + vw / k, Y1 = cam.y + vh / k;
  const { vnodes, vedges } = scene.view;
  const xs = scene.x, ys = scene.y;
  // NOTE [semantic zoom]: text is drawn in screen space after the shapes, through the label
  // placer (labels.js). A node's text scales with the zoom and is left out below 9 px; group
  // boxes and module titles keep a legible size, so a zoomed-out view reads as its groups.
  const px = 1 / k;
  const texts = [];
  const overview = LABEL_PX * k < MIN_TEXT_PX;

  // Module boxes.
  for (const b of scene.boxes) {
    if (!(b.reveal <= st.k) || b.x1 < X0 || b.x0 > X1 || b.y1 < Y0 || b.y0 > Y1) continue;
    ctx.beginPath();
    ctx.moveTo(b.poly[0], b.poly[1]);
    for (let i = 2; i < b.poly.length; i += 2) ctx.lineTo(b.poly[i], b.poly[i + 1]);
    ctx.closePath();
    ctx.fillStyle = pal.box;
    ctx.fill();
    ctx.setLineDash([4 * px, 3 * px]);
    ctx.lineWidth = px;
    ctx.strokeStyle = pal.boxStroke;
    ctx.stroke();
    ctx.setLineDash([]);
    // At the overview level the title speaks for the boxes inside, too small for their own
    // text: it may use the box's whole width, on a background (NOTE [overview labels]).
    texts.push({ kind: "title", text: b.title || `▾ ${b.path}`, wx: b.lx, wy: b.ly, base: 11, min: 11, color: pal.boxText, prio: 2, box: b, knock: pal.labelBg,
      room: overview ? Math.max(b.tw, b.x1 - b.lx) : b.tw, bg: overview ? pal.labelBg : undefined,
      clip: [b.x0, b.y0, b.x1, b.y1], alts: (b.alts ||= titleAlts(b.title || `▾ ${b.path}`)) });
    // NOTE [modules as regions]: zoomed out, where the nodes are too small for any text, each
    // module box big enough on screen is labelled in its middle with its own name (the tail of
    // its path: "self_attn", "layers.0"), over the nodes it holds and their short forms (which
    // give way), after the titles (never over one); inner modules first.
    // A small graph's boxes keep their own labels at every zoom Fit uses (NOTE [small graphs
    // whole] in render/fit.js): its module titles name the regions, and no name covers a box.
    if (overview && scene.view.vnodes.length > SMALL_NODES) {
      texts.push({ kind: "region", text: regionName(b.path), full: b.title ? b.title.replace(/^▾ /, "") : b.path, wx: (b.x0 + b.x1) / 2, wy: (b.y0 + b.y1) / 2,
        base: 12, min: 12, bold: true, color: pal.boxText, bg: pal.labelBg, prio: 2.1 - b.depth / 1000, area: [b.x0, b.y0, b.x1, b.y1] });
    }
  }

  // Edges: plain ones batched, gradient-carrying ones one by one.
  const ebox = edgeBoxes(scene);
  const active = [];
  ctx.beginPath();
  const cuts = [];
  for (let e = 0; e < vedges.length; e++) {
    if (!(scene.edgeReveal[e] <= st.k)) continue;
    if (ebox[4 * e + 2] < X0 || ebox[4 * e] > X1 || ebox[4 * e + 3] < Y0 || ebox[4 * e + 1] > Y1) continue;
    if (vedges[e].cut) { cuts.push(e); continue; }
    const g = st.pass >= 0 ? st.edgeGrad(e) : null;
    if (g) { active.push([e, g]); continue; }
    tracePolyline(ctx, edgePoints(scene, e), k < 0.25);
  }
  ctx.lineWidth = 1.2 * px;
  ctx.strokeStyle = pal.edge;
  ctx.stroke();
  if (k > 0.3) {
    ctx.beginPath();
    for (let e = 0; e < vedges.length; e++) {
      if (!(scene.edgeReveal[e] <= st.k) || vedges[e].cut) continue;
      if (ebox[4 * e + 2] < X0 || ebox[4 * e] > X1 || ebox[4 * e + 3] < Y0 || ebox[4 * e + 1] > Y1) continue;
      arrowHead(ctx, edgePoints(scene, e), 7);
    }
    ctx.fillStyle = pal.edge;
    ctx.fill();
  }
  for (const e of cuts) {
    ctx.beginPath();
    tracePolyline(ctx, edgePoints(scene, e));
    ctx.setLineDash([5 * px, 4 * px]);
    ctx.lineWidth = 1.5 * px;
    ctx.strokeStyle = pal.cut;
    ctx.stroke();
    ctx.setLineDash([]);
    const [mx, my] = midpoint(edgePoints(scene, e));
    texts.push({ kind: "edge", text: "✂", wx: mx, wy: my, base: 14, color: pal.cut, prio: 3, family: "sans-serif", centre: true });
  }
  // Gradient-carrying edges: colour by sign, width by |grad| (in 10 steps, so that thousands of
  // active edges still cost a handful of strokes).
  const mags = active.map(([, g]) => gradMagnitude(g.g));
  const maxNorm = mags.reduce((mx, m) => Math.max(mx, m.size), 1e-12);
  const strokes = [], nonfinite = [];  // by (sign + 1) * 11 + width step; NaN/inf apart (render/nonfinite.js)
  active.forEach(([e], i) => {
    const { sign, size } = mags[i];
    if (mags[i].nonfinite) { nonfinite.push(e); return; }
    const key = (sign + 1) * 11 + Math.min(10, Math.round(10 * Math.sqrt(size / maxNorm)) || 0);
    (strokes[key] ||= []).push(e);
  });
  for (let key = 0; key < strokes.length; key++) {
    const list = strokes[key];
    if (!list) continue;
    const sign = Math.floor(key / 11) - 1, step = key % 11;
    ctx.beginPath();
    for (const e of list) tracePolyline(ctx, edgePoints(scene, e), k < 0.25);
    ctx.lineWidth = (1.5 + 0.45 * step) * Math.max(px, 0.6);
    ctx.strokeStyle = sign > 0 ? pal.gradPos : sign < 0 ? pal.gradNeg : pal.gradZero;
    ctx.stroke();
  }
  strokeNonfinite(ctx, () => nonfinite.forEach((e) => tracePolyline(ctx, edgePoints(scene, e), k < 0.25)), Math.max(px, 0.6), pal.error);
  for (const [e, g] of active) {
    if (SUB_PX * k < MIN_TEXT_PX) break;  // NOTE [texts too small to show]
    const fresh = g.step === st.k;
    if (!fresh && active.length > 12) continue;
    const [mx, my] = midpoint(edgePoints(scene, e));
    texts.push({ kind: "edge", text: `∇ ${edgeText(g)}`, wx: mx, wy: my, base: 11, color: fresh ? pal.current : pal.text,
      bg: pal.labelBg, prio: fresh ? 1.5 : 3, edge: e, pts: edgePoints(scene, e) });
  }

  // Nodes, batched by kind; highlighted ones get rings afterwards.
  const special = [];
  const batches = KIND_STYLE.map(() => []);
  for (let v = 0; v < vnodes.length; v++) {
    const n = vnodes[v];
    const hw = n.w / 2, hh = n.h / 2;
    if (xs[v] + hw < X0 || xs[v] - hw > X1 || ys[v] + hh < Y0 || ys[v] - hh > Y1) continue;
    if (!(scene.reveal[v] <= st.k)) continue;
    batches[KIND_STYLE.indexOf(n.kind)].push(v);
    if (st.current.has(v) || st.justDone.has(v) || opts.selected.has(v) || opts.lineSel.has(v)) special.push(v);
  }
  const round = k > 0.6;
  batches.forEach((list, b) => {
    if (!list.length) return;
    const kind = KIND_STYLE[b];
    const style = pal.kinds[kind];
    ctx.beginPath();
    for (const v of list) {
      const n = vnodes[v];
      if (round) ctx.roundRect(xs[v] - n.w / 2, ys[v] - n.h / 2, n.w, n.h, kind === "acc" || kind === "output" ? n.h / 2 : 6);
      else ctx.rect(xs[v] - n.w / 2, ys[v] - n.h / 2, n.w, n.h);
    }
    ctx.fillStyle = style.fill;
    ctx.fill();
    if (opts.tint) {  // coloured by a statistic (ui/colour-by.js): the node's own fill, the kind's outline
      for (const v of list) {
        const c = opts.tint.get(v);
        if (!c) continue;
        const n = vnodes[v];
        ctx.fillStyle = c;
        ctx.beginPath();
        if (round) ctx.roundRect(xs[v] - n.w / 2, ys[v] - n.h / 2, n.w, n.h, kind === "acc" || kind === "output" ? n.h / 2 : 6);
        else ctx.rect(xs[v] - n.w / 2, ys[v] - n.h / 2, n.w, n.h);
        ctx.fill();
      }
      ctx.beginPath();
      for (const v of list) {
        const n = vnodes[v];
        if (round) ctx.roundRect(xs[v] - n.w / 2, ys[v] - n.h / 2, n.w, n.h, kind === "acc" || kind === "output" ? n.h / 2 : 6);
        else ctx.rect(xs[v] - n.w / 2, ys[v] - n.h / 2, n.w, n.h);
      }
    }
    if (k > 0.15) {
      ctx.lineWidth = (kind === "group" ? 1.5 : 1.2) * px;
      ctx.strokeStyle = style.stroke;
      if (kind === "cut" || kind === "group") ctx.setLineDash([4 * px, 3 * px]);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    // Reached by the backward pass: a gradient bar along the bottom (one path per shade).
    if (st.pass >= 0 && k > 0.15) {
      const bars = [[], [], []];
      for (const v of list) bars[st.reached(v)].push(v);
      for (const r of [1, 2]) {
        if (!bars[r].length) continue;
        ctx.beginPath();
        for (const v of bars[r]) { const n = vnodes[v]; ctx.rect(xs[v] - n.w / 2 + 4, ys[v] + n.h / 2 - 5, n.w - 8, 3); }
        ctx.fillStyle = r === 2 ? pal.reached : pal.reachedOld;
        ctx.fill();
      }
    }
  });
  // Built during a backward with create_graph=True: an inner outline and one band down the left
  // side per derivative order (graph/orders.js), in that order's colour, so a graph built by
  // backward never reads as forward and d²u never reads as du. The bands sit in the box's
  // margin: the texts of such a box keep clear of them (nodeTexts).
  for (const order of [1, 2]) {
    const bands = [];
    for (const list of batches) for (const v of list) if (vnodes[v].higher && Math.min(vnodes[v].higher, 2) === order) bands.push(v);
    if (!bands.length) continue;
    const color = order === 1 ? pal.higher : pal.higher2;
    ctx.beginPath();
    for (const v of bands) { const n = vnodes[v]; ctx.rect(xs[v] - n.w / 2 + 3, ys[v] - n.h / 2 + 3, n.w - 6, n.h - 6); }
    ctx.lineWidth = 1.5 * Math.max(px, 1);
    ctx.strokeStyle = color;
    ctx.stroke();
    ctx.beginPath();
    for (const v of bands) {
      const n = vnodes[v];
      for (let b = 0; b < order; b++) ctx.rect(xs[v] - n.w / 2 + 2 + 4 * b, ys[v] - n.h / 2 + 3, 3, n.h - 6);
    }
    ctx.fillStyle = color;
    ctx.fill();
  }
  for (const v of scene.errorV) {
    if (!(scene.reveal[v] <= st.k)) continue;
    ring(ctx, scene, v, pal.error, 3 * px, 5);
    const err = scene.index.doc.error;
    // The viewer may say per node what went wrong there (analysis/errors.js: the saver, the
    // changer; ui/findings.js: "✱ first NaN made here", a hint's title), with or without an error.
    const own = scene.errorLabels && scene.errorLabels.get(v);
    if (err || own) {
      const text = own || `⚠ ${err.type}${err.line != null ? ` (line ${err.line})` : ""}`;
      texts.push({ kind: "error", text, wx: xs[v], wy: ys[v],
        base: 11.5, min: 11.5, bold: true, color: pal.error, bg: pal.labelBg, prio: 0, node: v, clamp: true });
    }
  }
  for (const v of scene.suspectV || []) { // the node a gradient check blames (ui/gradcheck.js)
    ring(ctx, scene, v, pal.suspect, 3 * px, 10, [7 * px, 3 * px]);
    texts.push({ kind: "error", text: "✗ suspect: wrong backward", wx: xs[v], wy: ys[v],
      base: 11.5, min: 11.5, bold: true, color: pal.suspect, bg: pal.labelBg, prio: 0, node: v, clamp: true });
  }
  for (const v of special) {
    if (opts.lineSel.has(v)) ring(ctx, scene, v, pal.lineSel, 2.5 * px, 7);
    if (opts.selected.has(v)) ring(ctx, scene, v, pal.selected, 2 * px, 4, [4 * px, 2 * px]);
    if (st.justDone.has(v) && !st.current.has(v)) ring(ctx, scene, v, pal.justDone, 3 * px, 3);
    if (st.current.has(v)) ring(ctx, scene, v, pal.current, 3.5 * px, 3);
  }
  nodeTexts(scene, st, batches, pal, k, texts);
  opts.placed = drawTexts(ctx, scene, texts, cam, vw, vh, dpr, batches, st.k);
}

function ring(ctx, scene, v, color, width, pad, dash) {
  const n = scene.view.vnodes[v];
  ctx.beginPath();
  ctx.roundRect(scene.x[v] - n.w / 2 - pad, scene.y[v] - n.h / 2 - pad, n.w + 2 * pad, n.h + 2 * pad, 8);
  ctx.lineWidth = width;
  ctx.strokeStyle = color;
  if (dash) ctx.setLineDash(dash);
  ctx.stroke();
  ctx.setLineDash([]);
}

/** A module's own name for its region: the last segment of its path, with its parent when a number ("layers.0"). */
export function regionName(path) {
  const parts = String(path).split(".");
  const last = parts[parts.length - 1];
  return /^\d+$/.test(last) && parts.length > 1 ? `${parts[parts.length - 2]}.${last}` : last;
}

/** A module box title's short forms: "▾ encoder.layers.0" → "▾ e.l.0", keeping its marker. */
function titleAlts(title) {
  const m = /^(\W*\s*)(.*)$/u.exec(title);
  return abbreviations(m[2]).map((a) => m[1] + a);
}

/** A merged edge's text: the total (what autograd summed), with the parts when it has several. */
export function edgeText(g) {
  if (g.total) return fmtTensorShort(g.total, 3);
  return g.all.map((t) => fmtTensorShort(t, 3)).join(" + ");
}
