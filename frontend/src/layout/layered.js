/**
 * A layered (Sugiyama-style) layout for autograd DAGs. Pure computation: no DOM, so it runs
 * in a Web Worker (layout/worker.js) and in Node for tests and benchmarks.
 *
 * NOTE [why our own layered layout]
 *   Measured on this kind of machine: ELK, dagre and Graphviz-wasm on autograd-shaped DAGs in a
 *   worker: all take seconds at 2k nodes and overflow the worker's stack at 5k–20k, because
 *   they recurse. d3-dag's longest-path variant finishes 20k in ~2 s. This file does the same
 *   four phases with loops only and O(V+E) work per phase, so 20k nodes take a few hundred ms:
 *     1. break cycles (collapsed module boxes can create them) with an iterative DFS;
 *     2. longest-path layering measured from the sinks (as late as possible): an autograd
 *        graph has many sources (leaves, inputs) and few sinks (the loss), so every side
 *        branch (a parameter, an RNN's input projection) sits right above its consumer
 *        instead of at the top with an edge spanning the whole graph;
 *     3. dummy nodes for edges longer than one layer (within a budget: past it the edge is
 *        drawn straight and the result is flagged `simplified`), then barycentric sweeps;
 *     4. coordinates: a least-squares placement under order and spacing constraints, solved
 *        exactly per layer with pool-adjacent-violators, alternating down and up sweeps.
 *   Every loop is iterative; deep chains (20k nodes in one path) cannot overflow a stack.
 *
 * NOTE [clusters]
 *   `g.cluster[v]` (optional) lists the module boxes node v sits in, outermost first, as small
 *   integers. Ordering then sorts each layer by the clusters' mean positions before the node's
 *   own, so the members of a module stay side by side and module boxes do not overlap.
 */
import { breakCycles, csr } from "./dag.js";

/**
 * @param {{w: ArrayLike<number>, h: ArrayLike<number>, src: ArrayLike<number>, dst: ArrayLike<number>}} g
 *   node sizes, and edges as parallel arrays of node indices (forward data flow, producer → consumer)
 * @param {{direction?: "TB"|"LR", nodeSep?: number, rankSep?: number, maxDummies?: number, sweeps?: number}} opts
 */
export function layered(g, opts = {}) {
  const n = g.w.length;
  const dir = opts.direction === "LR" ? "LR" : "TB";
  const nodeSep = opts.nodeSep ?? 28;
  const rankSep = opts.rankSep ?? 46;
  const maxDummies = opts.maxDummies ?? Math.max(4000, 2 * n);
  const cross = new Float64Array(n);
  const thick = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    cross[i] = dir === "TB" ? g.w[i] : g.h[i];
    thick[i] = dir === "TB" ? g.h[i] : g.w[i];
  }

  // Unique edges without self loops; every input edge maps to one of them (or -1).
  const edgeOf = new Int32Array(g.src.length).fill(-1);
  const us = [], vs = [];
  const seen = new Map();
  for (let e = 0; e < g.src.length; e++) {
    const s = g.src[e], t = g.dst[e];
    if (s === t || s < 0 || t < 0 || s >= n || t >= n) continue;
    const key = s * n + t;
    let id = seen.get(key);
    if (id === undefined) { id = us.length; seen.set(key, id); us.push(s); vs.push(t); }
    edgeOf[e] = id;
  }
  const m = us.length;
  const reversed = breakCycles(n, us, vs);
  const a = new Int32Array(m), b = new Int32Array(m);
  for (let e = 0; e < m; e++) { a[e] = reversed[e] ? vs[e] : us[e]; b[e] = reversed[e] ? us[e] : vs[e]; }

  const layer = assignLayers(n, a, b);
  const L = layer.length ? Math.max(0, ...maxChunks(layer)) + 1 : 0;

  // Dummy chains, shortest edges first, within the budget.
  const order = Array.from({ length: m }, (_, e) => e).sort((x, y) => (layer[b[x]] - layer[a[x]]) - (layer[b[y]] - layer[a[y]]));
  const segFrom = [], segTo = [];
  const chain = new Array(m);
  let total = n;
  const lay = Array.from(layer);
  let simplified = false;
  for (const e of order) {
    const span = layer[b[e]] - layer[a[e]];
    if (span <= 1) { segFrom.push(a[e]); segTo.push(b[e]); chain[e] = []; continue; }
    if (total - n + span - 1 > maxDummies) { chain[e] = null; simplified = true; continue; }
    const ids = [];
    let prev = a[e];
    for (let k = 1; k < span; k++) {
      const d = total++;
      lay.push(layer[a[e]] + k);
      ids.push(d);
      segFrom.push(prev); segTo.push(d);
      prev = d;
    }
    segFrom.push(prev); segTo.push(b[e]);
    chain[e] = ids;
  }
  const N = total;
  const size = new Float64Array(N);
  for (let i = 0; i < N; i++) size[i] = i < n ? cross[i] : 2;

  const preds = csr(N, segTo, segFrom);
  const succs = csr(N, segFrom, segTo);
  const layers = Array.from({ length: L }, () => []);
  for (let v = 0; v < N; v++) layers[lay[v]].push(v);
  const pos = new Float64Array(N);
  const sweeps = opts.sweeps ?? (N < 3000 ? 8 : N < 12000 ? 4 : 2);
  const clusters = g.cluster ? Array.from({ length: N }, (_, v) => (v < n ? g.cluster[v] || null : null)) : null;
  orderLayers(layers, pos, preds, succs, sweeps, clusters);

  const x = placeCoordinates(layers, size, preds, succs, n, nodeSep, N < 6000 ? 8 : 4);

  // Rank coordinate: each layer is as thick as its thickest node.
  const rankPos = new Float64Array(L);
  const rankThick = new Float64Array(L);
  for (let v = 0; v < n; v++) rankThick[layer[v]] = Math.max(rankThick[layer[v]], thick[v]);
  let acc = 0;
  for (let l = 0; l < L; l++) { rankPos[l] = acc + rankThick[l] / 2; acc += rankThick[l] + rankSep; }

  let minX = Infinity, maxX = -Infinity;
  for (let v = 0; v < N; v++) { minX = Math.min(minX, x[v] - size[v] / 2); maxX = Math.max(maxX, x[v] + size[v] / 2); }
  if (!isFinite(minX)) { minX = 0; maxX = 0; }
  const cx = new Float64Array(n), cy = new Float64Array(n);
  const place = (v) => {
    const c = x[v] - minX, r = rankPos[lay[v]];
    return dir === "TB" ? [c, r] : [r, c];
  };
  for (let v = 0; v < n; v++) { const [px, py] = place(v); cx[v] = px; cy[v] = py; }

  // Polylines per input edge, from the producer's outgoing side to the consumer's incoming side.
  const half = (v) => thick[v] / 2;
  const uniquePoints = new Array(m);
  for (let e = 0; e < m; e++) {
    const pts = [];
    const [sx, sy] = place(a[e]);
    const [tx, ty] = place(b[e]);
    if (dir === "TB") pts.push(sx, sy + half(a[e])); else pts.push(sx + half(a[e]), sy);
    for (const d of chain[e] || []) { const [px, py] = place(d); pts.push(px, py); }
    if (dir === "TB") pts.push(tx, ty - half(b[e])); else pts.push(tx - half(b[e]), ty);
    if (reversed[e]) reversePairs(pts);
    uniquePoints[e] = pts;
  }
  const points = Array.from(edgeOf, (id) => (id >= 0 ? uniquePoints[id] : []));
  const width = dir === "TB" ? maxX - minX : acc - rankSep;
  const height = dir === "TB" ? acc - rankSep : maxX - minX;
  return { x: cx, y: cy, width: Math.max(0, width), height: Math.max(0, height), points, simplified,
    layers: L, dummies: N - n, direction: dir };
}

function maxChunks(arr) {
  // Math.max(...arr) overflows the argument limit on big arrays: reduce in chunks.
  const out = [];
  for (let i = 0; i < arr.length; i += 8192) out.push(Math.max(...arr.subarray(i, i + 8192)));
  return out;
}

function reversePairs(pts) {
  const k = pts.length / 2;
  for (let i = 0; i < k / 2; i++) {
    const j = k - 1 - i;
    [pts[2 * i], pts[2 * j]] = [pts[2 * j], pts[2 * i]];
    [pts[2 * i + 1], pts[2 * j + 1]] = [pts[2 * j + 1], pts[2 * i + 1]];
  }
}

/** Layers as late as possible: layer = depth − (longest path to a sink), in Kahn order. */
function assignLayers(n, a, b) {
  const m = a.length;
  const indeg = new Int32Array(n);
  for (let e = 0; e < m; e++) indeg[b[e]]++;
  const succ = csr(n, a, b);
  const topo = new Int32Array(n);
  let head = 0, tail = 0;
  for (let v = 0; v < n; v++) if (indeg[v] === 0) topo[tail++] = v;
  while (head < tail) {
    const v = topo[head++];
    for (let k = succ.start[v]; k < succ.start[v + 1]; k++) if (--indeg[succ.adj[k]] === 0) topo[tail++] = succ.adj[k];
  }
  const dist = new Int32Array(n);
  let depth = 0;
  for (let i = tail - 1; i >= 0; i--) {
    const v = topo[i];
    for (let k = succ.start[v]; k < succ.start[v + 1]; k++) dist[v] = Math.max(dist[v], dist[succ.adj[k]] + 1);
    depth = Math.max(depth, dist[v]);
  }
  const layer = new Int32Array(n);
  for (let v = 0; v < n; v++) layer[v] = depth - dist[v];
  return layer;
}

/** Barycentric sweeps: each node moves to the mean position of its neighbours in the last layer. */
function orderLayers(layers, pos, preds, succs, sweeps, clusters) {
  for (const ly of layers) ly.forEach((v, i) => { pos[v] = i; });
  const key = new Float64Array(pos.length);
  const sweep = (ly, adj) => {
    for (const v of ly) {
      let s = 0, c = 0;
      for (let k = adj.start[v]; k < adj.start[v + 1]; k++) { s += pos[adj.adj[k]]; c++; }
      key[v] = c ? s / c : pos[v];
    }
    if (clusters && ly.some((v) => clusters[v])) sortClustered(ly, key, pos, clusters);
    else ly.sort((p, q) => key[p] - key[q] || pos[p] - pos[q]);
    ly.forEach((v, i) => { pos[v] = i; });
  };
  for (let it = 0; it < sweeps; it++) {
    for (let l = 1; l < layers.length; l++) sweep(layers[l], preds);
    for (let l = layers.length - 2; l >= 0; l--) sweep(layers[l], succs);
  }
}

/** Sort one layer by (cluster means, outermost first; then the node's own key). */
function sortClustered(ly, key, pos, clusters) {
  const sum = new Map(), cnt = new Map();
  for (const v of ly) {
    for (const c of clusters[v] || []) { sum.set(c, (sum.get(c) || 0) + key[v]); cnt.set(c, (cnt.get(c) || 0) + 1); }
  }
  const depth = Math.max(...ly.map((v) => (clusters[v] ? clusters[v].length : 0)));
  const tuple = new Map();
  for (const v of ly) {
    const path = clusters[v] || [];
    const t = [];
    for (let i = 0; i < depth; i++) t.push(i < path.length ? [sum.get(path[i]) / cnt.get(path[i]), path[i]] : [key[v], -1 - v]);
    tuple.set(v, t);
  }
  ly.sort((p, q) => {
    const tp = tuple.get(p), tq = tuple.get(q);
    for (let i = 0; i < depth; i++) {
      if (tp[i][1] === tq[i][1]) continue;
      return tp[i][0] - tq[i][0] || tp[i][1] - tq[i][1];
    }
    return key[p] - key[q] || pos[p] - pos[q];
  });
}

/**
 * Positions along each layer: minimise Σ (x_v − mean of neighbours)² subject to the order and
 * the spacing, exactly, by isotonic regression (pool adjacent violators) on x_i − offset_i.
 */
const ANCHOR = 0.15;

function placeCoordinates(layers, size, preds, succs, nReal, nodeSep, iterations) {
  const x = new Float64Array(size.length);
  const gapAfter = (p, q) => (size[p] + size[q]) / 2 + (p < nReal && q < nReal ? nodeSep : nodeSep / 3);
  // Each layer starts packed and centred on 0; `anchor` keeps that centre as a weak pull.
  const anchor = new Float64Array(size.length);
  for (const ly of layers) {
    let c = 0;
    ly.forEach((v, i) => { if (i) c += gapAfter(ly[i - 1], v); x[v] = c; });
    for (const v of ly) { x[v] -= c / 2; anchor[v] = x[v]; }
  }
  const solve = (ly, adjs) => {
    const k = ly.length;
    if (!k) return;
    const target = new Float64Array(k), weight = new Float64Array(k), off = new Float64Array(k);
    for (let i = 0; i < k; i++) {
      const v = ly[i];
      let s = 0, c = 0;
      for (const adj of adjs) for (let j = adj.start[v]; j < adj.start[v + 1]; j++) { s += x[adj.adj[j]]; c++; }
      // NOTE [drift]: following neighbours alone lets a long chain with side branches on one
      // side slide sideways a little per layer (200 RNN steps drifted 50,000 px). A weak pull
      // towards the layer's packed centre bounds the drift and barely moves anything else.
      target[i] = c ? (s + ANCHOR * anchor[v]) / (c + ANCHOR) : x[v];
      weight[i] = c ? (v >= nReal ? 2 * c : c) + ANCHOR : 0.05;
      if (i) off[i] = off[i - 1] + gapAfter(ly[i - 1], v);
    }
    // Pool adjacent violators on y_i = target_i − off_i (must be non-decreasing).
    const bs = new Float64Array(k), bw = new Float64Array(k), bn = new Int32Array(k);
    let nb = 0;
    for (let i = 0; i < k; i++) {
      bs[nb] = (target[i] - off[i]) * weight[i]; bw[nb] = weight[i]; bn[nb] = 1; nb++;
      while (nb > 1 && bs[nb - 2] / bw[nb - 2] >= bs[nb - 1] / bw[nb - 1]) {
        bs[nb - 2] += bs[nb - 1]; bw[nb - 2] += bw[nb - 1]; bn[nb - 2] += bn[nb - 1]; nb--;
      }
    }
    let i = 0;
    for (let j = 0; j < nb; j++) {
      const val = bs[j] / bw[j];
      for (let t = 0; t < bn[j]; t++, i++) x[ly[i]] = val + off[i];
    }
  };
  for (let it = 0; it < iterations; it++) {
    if (it % 2 === 0) for (let l = 1; l < layers.length; l++) solve(layers[l], [preds]);
    else for (let l = layers.length - 2; l >= 0; l--) solve(layers[l], [succs]);
  }
  for (const ly of layers) solve(ly, [preds, succs]);
  return x;
}
