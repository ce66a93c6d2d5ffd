// Fit (src/render/fit.js): a module call taller than the view is framed around its current
// node, on the drawn graph; a graph legible whole is shown whole.
import { test } from "node:test";
import assert from "node:assert/strict";
import { indexDocument } from "../src/graph/document.js";
import { Timeline } from "../src/graph/timeline.js";
import { makeScene } from "../src/render/scene.js";
import { BAND, READ_K, fitCamera } from "../src/render/fit.js";

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

test("a graph legible whole is shown whole, centred", () => {
  const scene = chainScene(4);
  const cam = fitCamera(scene, 2, VIEW);
  assert.ok(cam.k >= READ_K);
  const s = onScreen(scene, 8, cam);
  assert.ok(s.top >= 0 && s.bottom <= VIEW.h);
  assert.ok(Math.abs(s.top - (VIEW.h - s.bottom)) <= 1);
});
