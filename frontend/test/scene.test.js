// Merged edges (src/render/scene.js) and the timeline's gradient flows (src/graph/timeline.js).
import { test } from "node:test";
import assert from "node:assert/strict";
import { indexDocument } from "../src/graph/document.js";
import { Timeline } from "../src/graph/timeline.js";
import { mergedGrad, sumValues } from "../src/render/scene.js";

const tv = (v) => ({ shape: [2], dtype: "float32", values: v, stats: { norm: Math.hypot(...v), mean: (v[0] + v[1]) / 2 } });
const big = (norm) => ({ shape: [2, 5, 32], dtype: "float32", values: null, stats: { norm, mean: 0 } });

/** P feeds C1 and C2 (two edges that one drawn edge stands for, e.g. between two layers). */
function doc(parts, total) {
  return {
    graph: {
      nodes: [{ id: "P", kind: "function", name: "LayerNorm" }, { id: "C1", kind: "function", name: "Mm" }, { id: "C2", kind: "function", name: "Add" }],
      edges: [{ source: "P", target: "C1", input_nr: 0 }, { source: "P", target: "C2", input_nr: 0 }],
    },
    events: [
      { phase: "forward", node: "P" }, { phase: "forward", node: "C1" }, { phase: "forward", node: "C2" },
      { phase: "backward", node: "C2", pass: 0, grad_inputs: [parts[1]] },
      { phase: "backward", node: "C1", pass: 0, grad_inputs: [parts[0]] },
      { phase: "backward", node: "P", pass: 0, grad_outputs: [total] },
    ],
  };
}

function merged(d, k) {
  const index = indexDocument(d);
  const timeline = new Timeline(index);
  const scene = { index, timeline, view: { vedges: [{ s: 0, t: 1, refs: [0, 1] }] } };
  return mergedGrad(scene, 0, k, 0, 5, null);
}

test("the timeline sends each consumer's grad_inputs along its edge", () => {
  const index = indexDocument(doc([tv([1, 2]), tv([3, 4])], tv([4, 6])));
  const tl = new Timeline(index);
  assert.deepEqual(tl.flows.map((f) => f.map((x) => x[0])), [[5], [4]]);
});

test("a merged edge shows what autograd summed at the producer, and every part", () => {
  // Values unknown (too big to keep): the producer's grad_outputs is the only true total.
  const g = merged(doc([big(3.06e-8), big(1.3e-7)], big(1.32e-7)), 6);
  assert.equal(g.total.stats.norm, 1.32e-7);
  assert.equal(g.all.length, 2);
});

test("before the producer's event the total is the sum of the known parts", () => {
  const g = merged(doc([tv([1, 2]), tv([3, 4])], tv([4, 6])), 5);
  assert.deepEqual(g.total.values, [4, 6]);
  assert.ok(Math.abs(g.total.stats.norm - Math.hypot(4, 6)) < 1e-12);
});

test("sumValues refuses unknown values and mismatched shapes", () => {
  assert.equal(sumValues([big(1), big(2)]), null);
  assert.equal(sumValues([tv([1, 2]), { shape: [3], values: [1, 2, 3] }]), null);
  assert.deepEqual(sumValues([tv([1, 2]), tv([0.5, 0.5])]).values, [1.5, 2.5]);
});
