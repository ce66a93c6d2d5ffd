// Fit (src/render/fit.js): a module call taller than the view is framed around its current
// node, on the drawn graph; a graph legible whole is shown whole.
import { test } from "node:test";
import assert from "node:assert/strict";
import { indexDocument } from "../src/graph/document.js";
import { Timeline } from "../src/graph/timeline.js";
import { makeScene } from "../src/render/scene.js";
import { BAND, READ_K, WHOLE_K, fitCamera, smallWhole } from "../src/render/fit.js";

const ROW = 70, NW = 120, NH = 36;

/** A chain of n function nodes, one per layer, built forward and then walked backward. */
function chainScene(n) {
  const nodes = Array.from({ length: n }, (_, i) => ({ id: `n${i}`, kind: "function", name: `Op${i}` }));
  const edges = nodes.slice(1).map((_, i) => ({ source: `n${i}`, target: `n${i + 1}`, input_nr: 0 }));
  const events = [
    ...nodes.map((x) => ({ phase: "forward", node: x.id })),
    ...[...nodes].reverse().map((x) => ({ phase: "backward", node: x.id, pass: 0 })),
  ];
  const index = indexDocument({ graph: { nodes, edges }, events });
  const timeline = new Timeline(index);
  const view = {
    vnodes: nodes.map((x, i) => ({ key: x.id, kind: "function", label: x.name, refs: [i], w: NW, h: NH })),
    vedges: edges.map((_, i) => ({ s: i, t: i + 1, refs: [i] })),
    byRef: nodes.map((_, i) => [i]),
  };
  const x = new Float64Array(n).fill(100), y = Float64Array.from({ length: n }, (_, i) => 30 + i * ROW);
  const layout = { x, y, width: 200, height: 60 + (n - 1) * ROW, points: [], direction: "TB" };
  const scene = makeScene(index, view, layout, timeline, new Set());
  scene.active = view.vnodes.map((_, i) => i);  // one open unit holding the whole chain
  return scene;
}

/** Screen facts of a camera: the current node's centre, and the drawn nodes' extent. */
function onScreen(scene, k, cam) {
  const sy = (wy) => (wy - cam.y) * cam.k;
  const drawn = scene.view.vnodes.map((_, v) => v).filter((v) => scene.reveal[v] <= k);
  const ref = scene.timeline.evNode[k - 1];
  return {
    node: sy(scene.y[scene.view.byRef[ref][0]]),
    top: Math.min(...drawn.map((v) => sy(scene.y[v] - NH / 2))),
    bottom: Math.max(...drawn.map((v) => sy(scene.y[v] + NH / 2))),
  };
}

const VIEW = { w: 600, h: 400 };

test("a unit taller than the view, at the end of its forward: the node in the band, no empty half below", () => {
  const scene = chainScene(60);
  const k = 40;  // node 39 is built; 40–59 are not drawn yet
  const cam = fitCamera(scene, k, VIEW);
  assert.ok(cam.k >= READ_K);
  const s = onScreen(scene, k, cam);
  const lo = (0.5 - BAND / 2) * VIEW.h, hi = (0.5 + BAND / 2) * VIEW.h;
  assert.ok(s.node >= lo - 0.5 && s.node <= hi + 0.5, `node at ${s.node} of ${VIEW.h}`);
  assert.ok(s.top < 0, "the drawn graph goes on above the view");
  assert.ok(VIEW.h - s.bottom <= 0.4 * VIEW.h, `${VIEW.h - s.bottom} px empty below`);
});

test("half-way through the backward pass of a tall unit: centred, the view full of graph", () => {
  const scene = chainScene(60);
  const k = 60 + 30;  // the backward event of node 29; every node is drawn
  const cam = fitCamera(scene, k, VIEW);
  const s = onScreen(scene, k, cam);
  assert.ok(Math.abs(s.node - VIEW.h / 2) <= 1, `node at ${s.node}`);
  assert.ok(s.top < 0 && s.bottom > VIEW.h);
});

test("the minimap's reserve is left out of the frame", () => {
  const scene = chainScene(60);
  const cam = fitCamera(scene, 90, VIEW, [0, 120]);
  const s = onScreen(scene, 90, cam);
  assert.ok(Math.abs(s.node - (VIEW.h - 120) / 2) <= 1, `node at ${s.node}`);
});

test("a small graph too tall to be legible whole is still shown whole at the end of its run", () => {
  // Nine rows in a 400 px view: whole only below READ_K, as lesson 4's MLP in the page.
  const scene = chainScene(9);
  const end = 18;
  assert.ok(smallWhole(scene, VIEW));
  const cam = fitCamera(scene, end, VIEW);
  assert.ok(cam.k < READ_K && cam.k >= WHOLE_K, `zoom ${cam.k}`);
  const s = onScreen(scene, end, cam);
  assert.ok(s.top >= 0 && s.bottom <= VIEW.h, `drawn ${s.top}–${s.bottom} of ${VIEW.h}`);
  // Too tall even for WHOLE_K, or not small: framed at a legible zoom as before.
  for (const big of [chainScene(16), chainScene(60)]) {
    assert.ok(!smallWhole(big, VIEW));
    assert.ok(fitCamera(big, 2 * big.view.vnodes.length, VIEW).k >= READ_K);
  }
});

test("a graph legible whole is shown whole, centred", () => {
  const scene = chainScene(4);
  const cam = fitCamera(scene, 2, VIEW);
  assert.ok(cam.k >= READ_K);
  const s = onScreen(scene, 8, cam);
  assert.ok(s.top >= 0 && s.bottom <= VIEW.h);
  assert.ok(Math.abs(s.top - (VIEW.h - s.bottom)) <= 1);
});

/**
 * A layered graph wider and taller than the view: a chain down the middle (the open unit)
 * and rows of 1–4 side boxes of assorted widths at assorted places, as a real layout has.
 */
function layeredScene(rows) {
  let seed = 7;
  const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  const nodes = [], xs = [], ws = [], ys = [];
  for (let r = 0; r < rows; r++) {
    const y = 30 + r * 80;
    nodes.push({ id: `c${r}`, kind: "function", name: `Op${r}` }); xs.push(600); ws.push(130); ys.push(y);
    let x = 40 + rnd() * 120;
    const side = 1 + Math.floor(rnd() * 4);
    for (let j = 0; j < side; j++) {
      const w = 90 + Math.floor(rnd() * 140);
      if (Math.abs(x + w / 2 - 600) < (w + 130) / 2 + 30) x = 700 + rnd() * 80;
      nodes.push({ id: `p${r}_${j}`, kind: "leaf", name: `w${r}_${j}` }); xs.push(x + w / 2); ws.push(w); ys.push(y);
      x += w + 30 + rnd() * 160;
    }
  }
  const chain = nodes.map((n, i) => (n.id.startsWith("c") ? i : -1)).filter((i) => i >= 0);
  const edges = chain.slice(1).map((t, i) => ({ source: nodes[chain[i]].id, target: nodes[t].id, input_nr: 0 }));
  const events = [
    ...nodes.map((x) => ({ phase: "forward", node: x.id })),
    ...chain.map((i) => nodes[i]).reverse().map((x) => ({ phase: "backward", node: x.id, pass: 0 })),
  ];
  const index = indexDocument({ graph: { nodes, edges }, events });
  const timeline = new Timeline(index);
  const view = {
    vnodes: nodes.map((x, i) => ({ key: x.id, kind: x.kind, label: x.name, refs: [i], w: ws[i], h: NH })),
    vedges: edges.map((_, i) => ({ s: chain[i], t: chain[i + 1], refs: [i] })),
    byRef: nodes.map((_, i) => [i]),
  };
  const width = Math.max(...xs.map((x, i) => x + ws[i] / 2)) + 40;
  const layout = { x: Float64Array.from(xs), y: Float64Array.from(ys), width, height: 60 + (rows - 1) * 80, points: [], direction: "TB" };
  const scene = makeScene(index, view, layout, timeline, new Set());
  scene.active = chain;
  return scene;
}

/** The drawn boxes that the view's edges cut (partly inside, partly outside). */
function cutBoxes(scene, k, cam, view) {
  const L = cam.x, R = cam.x + view.w / cam.k, T = cam.y, B = cam.y + view.h / cam.k;
  return scene.view.vnodes.map((n, v) => v).filter((v) => {
    if (!(scene.reveal[v] <= k)) return false;
    const n = scene.view.vnodes[v];
    const x0 = scene.x[v] - n.w / 2, x1 = scene.x[v] + n.w / 2, y0 = scene.y[v] - n.h / 2, y1 = scene.y[v] + n.h / 2;
    if (x1 <= L || x0 >= R || y1 <= T || y0 >= B) return false;
    return x0 < L || x1 > R || y0 < T || y1 > B;
  });
}

test("Fit never cuts a box at the view's edges: each lies wholly inside or wholly outside", () => {
  const scene = layeredScene(30);
  const N = scene.timeline.N;
  let checked = 0;
  for (const view of [{ w: 600, h: 400 }, { w: 570, h: 450 }, { w: 900, h: 520 }]) {
    for (const k of [Math.floor(N / 4), Math.floor(N / 2), N - 20, N]) {
      const cam = fitCamera(scene, k, view, [0, 0]);
      assert.ok(cam.k >= READ_K, `zoom ${cam.k}`);
      assert.deepEqual(cutBoxes(scene, k, cam, view), [], `step ${k} in ${view.w}×${view.h}`);
      const [v] = [...scene.view.byRef[scene.timeline.evNode[k - 1]]];
      const sx = (scene.x[v] - cam.x) * cam.k, sy = (scene.y[v] - cam.y) * cam.k;
      assert.ok(sx > 0 && sx < view.w && sy > 0 && sy < view.h, "the current node stays in view");
      checked++;
    }
  }
  assert.equal(checked, 12);
});
