// Derivative orders (src/graph/orders.js) and a create_graph backward as one segment.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { passStarts, nextStart } from "../src/analysis/steps.js";
import { indexDocument } from "../src/graph/document.js";
import { derivativeOrders } from "../src/graph/orders.js";
import { Timeline } from "../src/graph/timeline.js";

/** u = f(x); du built by backward 0 over u; d2u built by backward 1 over du; backward 2 over all. */
function pinnLike() {
  const n = (id, extra = {}) => ({ id, kind: "function", name: `${id}Backward0`, ...extra });
  const nodes = [{ id: "x", kind: "tensor", name: "x", role: "leaf" }, n("u"), n("du", { created_in_pass: 0 }),
    n("d2u", { created_in_pass: 1 }), n("loss")];
  const edges = [["x", "u"], ["u", "du"], ["du", "d2u"], ["d2u", "loss"], ["u", "loss"]].map(([source, target]) => ({ source, target }));
  const events = [
    { phase: "forward", node: "u" },
    { phase: "backward", node: "u", pass: 0 }, { phase: "forward", node: "du" },
    { phase: "backward", node: "du", pass: 1 }, { phase: "backward", node: "u", pass: 1 }, { phase: "forward", node: "d2u" },
    { phase: "forward", node: "loss" },
    { phase: "backward", node: "loss", pass: 2 }, { phase: "backward", node: "d2u", pass: 2 }, { phase: "backward", node: "du", pass: 2 },
  ];
  return { graph: { nodes, edges }, events, passes: [{ index: 0, create_graph: true }, { index: 1, create_graph: true }, { index: 2 }] };
}

test("each node's derivative order: forward 0, du 1, d²u 2", () => {
  const index = indexDocument(pinnLike());
  const order = derivativeOrders(index);
  const of = (id) => order[index.idx.get(id)];
  assert.deepEqual(["x", "u", "du", "d2u", "loss"].map(of), [0, 0, 1, 2, 0]);
});

test("a create_graph backward is one segment with its built steps inside; P goes pass to pass", () => {
  const index = indexDocument(pinnLike());
  const tl = new Timeline(index);
  assert.deepEqual(tl.segments.map((s) => s.label), ["forward", "backward 1", "backward 2", "forward", "backward 3"]);
  assert.deepEqual(tl.segments[2].parts.map((p) => [p.phase, p.start, p.end]), [["backward", 4, 5], ["forward", 6, 6]]);
  const starts = passStarts(tl);
  let k = 0;
  const visited = [];
  for (let i = 0; i < 5; i++) { k = nextStart(starts, k, tl.N); visited.push(k); }
  assert.deepEqual(visited, [1, 2, 4, 7, 8]);  // each segment's first step, never inside a pass
});
