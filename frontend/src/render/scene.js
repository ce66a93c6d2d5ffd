/**
 * A scene joins the visible graph, its layout and the timeline into flat arrays the renderer
 * walks every frame, and answers "what does step k look like" cheaply (binary searches over
 * precomputed step lists, no per-step allocation proportional to the graph).
 */
import { lastAtOrBefore } from "../animate/timeline.js";
import { prefixes } from "../graph/document.js";

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
  const scene = { index, view, layout, timeline, x, y, reveal, bwd, flows, edgeReveal,
    width: layout.width, height: layout.height, boxes: moduleBoxes(index, view, x, y, collapsed, reveal) };
  scene.errorV = index.errorNode >= 0 ? view.byRef[index.errorNode] : [];
  return scene;
}

/** Bounding boxes of expanded modules around their visible members (nested ones padded less). */
function moduleBoxes(index, view, x, y, collapsed, reveal) {
  const boxes = new Map();
  view.vnodes.forEach((v, k) => {
    let path = v.kind === "group" ? parentOf(v.module) : index.module[v.refs[0]];
    if (v.kind === "group" && v.repeat) path = v.module;
    if (!path) return;
    for (const p of prefixes(path)) {
      if (collapsed.has(p)) break;
      let b = boxes.get(p);
      if (!b) { b = { path: p, x0: Infinity, y0: Infinity, x1: -Infinity, y1: -Infinity, reveal: Infinity, depth: p.split(".").length, below: 0 }; boxes.set(p, b); }
      b.x0 = Math.min(b.x0, x[k] - v.w / 2); b.x1 = Math.max(b.x1, x[k] + v.w / 2);
      b.y0 = Math.min(b.y0, y[k] - v.h / 2); b.y1 = Math.max(b.y1, y[k] + v.h / 2);
      b.reveal = Math.min(b.reveal, reveal[k]);
    }
  });
  const list = [...boxes.values()].sort((p, q) => q.depth - p.depth);
  for (const b of list) {
    const parent = parentOf(b.path);
    if (parent && boxes.has(parent)) boxes.get(parent).below = Math.max(boxes.get(parent).below, b.below + 1);
  }
  for (const b of list) {
    const pad = 8 + 8 * b.below;
    b.x0 -= pad; b.x1 += pad; b.y0 -= pad + 16 * (b.below + 1); b.y1 += pad;
  }
  return list.reverse();
}

function parentOf(path) {
  const dot = path ? path.lastIndexOf(".") : -1;
  return dot > 0 ? path.slice(0, dot) : null;
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
      return tl.passAt(step) === pass ? { step, g } : null;
    },
  };
}
