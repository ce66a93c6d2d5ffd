/**
 * A scene joins the visible graph, its layout and the timeline into flat arrays the renderer
 * walks every frame, and answers "what does step k look like" cheaply (binary searches over
 * precomputed step lists, no per-step allocation proportional to the graph).
 */
import { lastAtOrBefore } from "../graph/timeline.js";

export function makeScene(index, view, layout, timeline, collapsed) {
  const { vnodes, vedges } = view;
  const n = vnodes.length;
  const x = layout.x, y = layout.y;
  const reveal = new Float64Array(n);
  const bwd = new Array(n);
  vnodes.forEach((v, k) => {
    let r = Infinity;
    const steps = [];
    for (const ref of v.refs) { r = Math.min(r, timeline.reveal[ref]); for (const s of timeline.bwd[ref]) steps.push(s); }
    reveal[k] = r === Infinity ? 0 : r;
    bwd[k] = v.refs.length > 1 ? steps.sort((p, q) => p - q) : steps;
  });
  const flows = vedges.map((e) => {
    const list = [];
    for (const ref of e.refs) for (const f of timeline.flows[ref]) list.push(f);
    if (e.refs.length > 1) list.sort((p, q) => p[0] - q[0]);
    return list;
  });
  const edgeReveal = vedges.map((e) => Math.max(reveal[e.s], reveal[e.t]));
  const boxes = moduleBoxes(view, x, y, reveal, layout.direction, layout.colOf || null);
  const [width, height] = includeBoxes(layout, boxes);
  const scene = { index, view, layout, timeline, x, y, reveal, bwd, flows, edgeReveal, width, height, boxes };
  scene.errorV = index.errorNode >= 0 ? view.byRef[index.errorNode] : [];
  return scene;
}

/**
 * Module boxes stick out of the layout's extent (their title strip sits above the top row):
 * shift everything so that nodes, edges and boxes all start at (0, 0), and answer the size.
 */
function includeBoxes(layout, boxes) {
  let x0 = 0, y0 = 0, x1 = layout.width, y1 = layout.height;
  for (const b of boxes) { x0 = Math.min(x0, b.x0); y0 = Math.min(y0, b.y0); x1 = Math.max(x1, b.x1); y1 = Math.max(y1, b.y1); }
  if (x0 < 0 || y0 < 0) {
    for (let i = 0; i < layout.x.length; i++) { layout.x[i] -= x0; layout.y[i] -= y0; }
    // Parallel edges share one points array: shift each array once.
    for (const p of new Set(layout.points)) for (let i = 0; i < p.length; i += 2) { p[i] -= x0; p[i + 1] -= y0; }
    for (const b of boxes) {
      b.x0 -= x0; b.x1 -= x0; b.y0 -= y0; b.y1 -= y0; b.lx -= x0; b.ly -= y0;
      for (let i = 0; i < b.poly.length; i += 2) { b.poly[i] -= x0; b.poly[i + 1] -= y0; }
    }
  }
  return [x1 - x0, y1 - y0];
}

/**
 * Outlines of expanded modules around their visible members. A plain bounding rectangle of a
 * module's members overlaps its neighbours' (members of two modules interleave across
 * layers), so the outline follows the members layer by layer: one band per layer, joined
 * to the next band, as a polygon. Nested modules get more room (`below`) for their titles.
 */
function moduleBoxes(view, x, y, reveal, dir, colOf) {
  const boxes = new Map();
  const tb = dir !== "LR";
  const parentOfKey = new Map();
  // A wrapped layout (render/wrap.js) draws a module cut by a column end as one box per column.
  const keyOf = (p, k) => (colOf ? `${p}#${colOf[k]}` : p);
  view.vnodes.forEach((v, k) => {
    const path = view.boxPaths ? view.boxPaths[k] : null;
    if (!path) return;
    const rank = tb ? y[k] : x[k], cross = tb ? x[k] : y[k];
    const half = (tb ? v.h : v.w) / 2, span = (tb ? v.w : v.h) / 2;
    path.forEach((p, d) => {
      const key = keyOf(p, k);
      let b = boxes.get(key);
      if (!b) { b = { path: p, key, col: colOf ? colOf[k] : 0, rows: new Map(), reveal: Infinity, depth: d + 1, below: 0 }; boxes.set(key, b); }
      if (d) parentOfKey.set(key, keyOf(path[d - 1], k));
      const rk = Math.round(rank);
      const row = b.rows.get(rk) || { lo: Infinity, hi: -Infinity, t0: Infinity, t1: -Infinity };
      row.lo = Math.min(row.lo, cross - span); row.hi = Math.max(row.hi, cross + span);
      row.t0 = Math.min(row.t0, rank - half); row.t1 = Math.max(row.t1, rank + half);
      b.rows.set(rk, row);
      b.reveal = Math.min(b.reveal, reveal[k]);
    });
  });
  const list = [...boxes.values()].sort((p, q) => q.depth - p.depth);
  for (const b of list) {
    const parent = parentOfKey.get(b.key);
    if (parent && boxes.has(parent)) boxes.get(parent).below = Math.max(boxes.get(parent).below, b.below + 1);
  }
  for (const b of list) {
    if (view.titles && view.titles.has(b.path)) b.title = `▾ ${view.titles.get(b.path)}`;
    outline(b, tb);
  }
  return list.reverse();
}

function outline(b, tb) {
  const pad = 8 + 8 * b.below, title = 16 * (b.below + 1);
  const rows = [...b.rows.values()].sort((p, q) => p.t0 - q.t0);
  rows.forEach((r, i) => {
    r.lo -= pad + (tb ? 0 : title); r.hi += pad;
    r.t0 -= pad + (tb && i === 0 ? title : 0); r.t1 += pad;
  });
  // The title strip is as wide as its title (11 px monospace), so the title stays inside.
  const titleW = 6.8 * (b.title || `▾ ${b.path}`).length + 14;
  if (tb && rows.length) rows[0].hi = Math.max(rows[0].hi, rows[0].lo + titleW);
  const pts = [];
  for (const r of rows) pts.push([r.lo, r.t0], [r.lo, r.t1]);
  for (const r of [...rows].reverse()) pts.push([r.hi, r.t1], [r.hi, r.t0]);
  b.poly = pts.flatMap(([c, t]) => (tb ? [c, t] : [t, c]));
  b.rows = null;
  b.x0 = Infinity; b.y0 = Infinity; b.x1 = -Infinity; b.y1 = -Infinity;
  for (let i = 0; i < b.poly.length; i += 2) {
    b.x0 = Math.min(b.x0, b.poly[i]); b.x1 = Math.max(b.x1, b.poly[i]);
    b.y0 = Math.min(b.y0, b.poly[i + 1]); b.y1 = Math.max(b.y1, b.poly[i + 1]);
  }
  b.lx = b.poly[0] + 5; b.ly = b.poly[1] + 3;
  // The room its title has, from lx to the right side of the strip it sits in.
  b.tw = (tb && rows.length ? rows[0].hi : b.x1) - b.lx;
}

/** What step k looks like: current and just-done nodes, the pass, per-node/edge lookups. */
export function stepState(scene, k) {
  const tl = scene.timeline;
  const cur = tl.event(k), prev = tl.event(k - 1);
  const byRef = scene.view.byRef;
  const pass = tl.passAt(k);
  return {
    k, pass, event: cur,
    current: new Set(cur ? byRef[tl.evNode[k - 1]] : []),
    justDone: new Set(prev ? byRef[tl.evNode[k - 2]] : []),
    revealed: (v) => scene.reveal[v] <= k,
    /** 2: reached in the current backward pass, 1: in an earlier pass, 0: not yet. */
    reached: (v) => {
      const list = scene.bwd[v];
      const j = lastAtOrBefore(list, k, (s) => s);
      if (j < 0) return 0;
      return tl.passAt(list[j]) === pass ? 2 : 1;
    },
    /** The gradient an edge carried in the current pass, as of step k, or null. */
    edgeGrad: (e) => {
      const list = scene.flows[e];
      if (!list.length) return null;
      const j = lastAtOrBefore(list, k, (f) => f[0]);
      if (j < 0) return null;
      const [step, g] = list[j];
      if (tl.passAt(step) !== pass) return null;
      const refs = scene.view.vedges[e].refs;
      if (refs.length <= 1) return { step, g, all: [g] };
      return mergedGrad(scene, e, k, pass, step, g);
    },
  };
}

/**
 * NOTE [merged edges]
 *   One drawn edge can stand for several document edges (parallel uses of x in x * x, or
 *   every edge between two module boxes). The gradient it shows is what autograd summed:
 *   per producer node, the gradient that reached the producer (its backward event's
 *   grad_outputs[0]) when all the producer's consumers are behind this edge, else the sum of
 *   the parts' values when they are small enough to be known, else the parts side by side.
 */
export function mergedGrad(scene, e, k, pass, step, g) {
  const tl = scene.timeline, index = scene.index;
  const refs = scene.view.vedges[e].refs;
  const bySource = new Map();
  for (const r of refs) {
    const flows = tl.flows[r];
    const j = lastAtOrBefore(flows, k, (f) => f[0]);
    if (j < 0 || tl.passAt(flows[j][0]) !== pass) continue;
    const s = index.edges[r].s;
    if (!bySource.has(s)) bySource.set(s, []);
    bySource.get(s).push([r, flows[j][1]]);
  }
  const parts = [], totals = [];
  for (const [s, list] of bySource) {
    for (const [, v] of list) parts.push(v);
    const whole = index.outEdges[s].every((r) => refs.includes(r)) && !(index.nodes[s].outputs && index.nodes[s].outputs.length > 1);
    let total = null;
    if (list.length === 1) total = list[0][1];
    else if (whole && index.nodes[s].kind === "function") {
      const at = tl.lastBackward(s, k);
      const ev = at != null && tl.passAt(at) === pass ? tl.event(at) : null;
      total = (ev && ev.grad_outputs && ev.grad_outputs[0]) || null;
    }
    if (!total) total = sumValues(list.map((x) => x[1]));
    totals.push(total);
  }
  if (!parts.length) return { step, g, all: [g] };
  const total = totals.length === 1 && totals[0] ? totals[0] : null;
  return { step, g: total || g, all: parts, total };
}

/** The elementwise sum of tensor values when all their values are known, else null. */
export function sumValues(vals) {
  if (!vals.length || vals.some((v) => !v || v.values == null)) return null;
  const shape = vals[0].shape;
  if (vals.some((v) => v.shape.join() !== shape.join())) return null;
  const add = (a, b) => (Array.isArray(a) ? a.map((x, i) => add(x, b[i])) : Number(a) + Number(b));
  let values = vals[0].values;
  for (const v of vals.slice(1)) values = add(values, v.values);
  const flat = [values].flat(Infinity).map(Number);
  const norm = Math.sqrt(flat.reduce((s, x) => s + x * x, 0));
  const mean = flat.reduce((s, x) => s + x, 0) / Math.max(flat.length, 1);
  return { shape, dtype: vals[0].dtype, values, stats: { min: Math.min(...flat), max: Math.max(...flat), mean, norm } };
}
