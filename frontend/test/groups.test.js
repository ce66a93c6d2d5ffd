// Grouping by how the program ran (src/graph/groups.js), on small hand-made documents.
import { test } from "node:test";
import assert from "node:assert/strict";
import { indexDocument } from "../src/graph/document.js";
import { Timeline } from "../src/graph/timeline.js";
import { runLevels } from "../src/graph/groups.js";
import { foldLabel, foldOf, openAt, unitLabel } from "../src/graph/units.js";
import { buildView } from "../src/graph/view.js";
import { moduleTree } from "../src/graph/modules.js";

/** An RNN-like run: a cell called `calls` times (3 ops a call), its weight shared, one backward. */
function rnnDoc(calls, { stacks = true } = {}) {
  const nodes = [{ id: "w", kind: "tensor", name: "cell.weight", role: "leaf" },
    { id: "a", kind: "function", name: "AccumulateGrad", module: "cell" }];
  const edges = [{ source: "w", target: "a" }];
  const events = [{ phase: "forward", node: "a", line: 3 }];
  let prev = null;
  for (let c = 0; c < calls; c++) {
    for (const [j, op] of ["MmBackward0", "AddBackward0", "TanhBackward0"].entries()) {
      const id = `c${c}o${j}`;
      const n = { id, kind: "function", name: op, module: "cell", line: 3 };
      if (stacks) n.module_stack = [{ path: "cell", call: c }];
      nodes.push(n);
      events.push({ phase: "forward", node: id, line: 3 });
      if (j === 0) edges.push({ source: "a", target: id, input_nr: 0 });
      if (prev) edges.push({ source: prev, target: id, input_nr: 1 });
      prev = id;
    }
  }
  const back = [...nodes].reverse().filter((n) => n.kind === "function");
  for (const n of back) events.push({ phase: "backward", node: n.id, pass: 0, grad_outputs: [], grad_inputs: [] });
  return { graph: { nodes, edges }, events, passes: [{ index: 0, api: "Tensor.backward" }] };
}

function prepare(doc) {
  const index = indexDocument(doc);
  const tl = new Timeline(index);
  return { index, tl, levels: runLevels(index, tl) };
}

test("module calls come from module_stack; nodes without it make no call level", () => {
  for (const stacks of [false, true]) {
    const { index, levels } = prepare(rnnDoc(5, { stacks }));
    if (!stacks) { assert.equal(levels.filter((l) => l.kind === "call").length, 0); continue; }
    assert.equal(levels.length, 1);
    assert.equal(levels[0].kind, "call");
    assert.equal(levels[0].count, 5);
    const id = (i) => index.nodes[i].id;
    for (let i = 0; i < index.nodes.length; i++) {
      const m = /^c(\d+)/.exec(id(i));
      assert.equal(levels[0].unitOf[i], m ? Number(m[1]) : -1, id(i));
    }
  }
});

test("the open call follows the step, forward then backward", () => {
  const { tl, levels } = prepare(rnnDoc(4));
  assert.deepEqual(openAt(levels, 2), [0]);   // first op of call 0
  assert.deepEqual(openAt(levels, 13), [3]);  // last forward op
  assert.deepEqual(openAt(levels, tl.N), [0]); // backward ends in call 0
  assert.equal(levels[0].units[2].forwardEnd, 1 + 3 * 3);
});

test("folds: calls before and after the open one become two boxes, shared nodes stay", () => {
  const { index, levels } = prepare(rnnDoc(6));
  const tree = moduleTree(index);
  const view = buildView(index, tree, { collapsed: new Set(), expandedRepeats: new Set(), levels, openUnits: [2] });
  const labels = view.vnodes.map((v) => v.label);
  assert.ok(labels.includes("calls 1–2 of cell"));
  assert.ok(labels.includes("calls 4–6 of cell"));
  assert.ok(labels.includes("cell.weight") && labels.includes("AccumulateGrad"));
  assert.equal(labels.filter((l) => l === "MmBackward0").length, 1);
  assert.equal(view.titles.get("cell@2"), "cell call 3 of 6");
  const fold = foldOf(levels, [2], index.idx.get("c5o1"));
  assert.deepEqual([fold.lo, fold.hi], [3, 5]);
});

test("labels of units and folds", () => {
  const lv = { kind: "iteration", label: "iteration", count: 20 };
  assert.equal(unitLabel(lv, 6), "iteration 7 of 20");
  assert.equal(foldLabel(lv, 0, 19), "iteration × 20");
  assert.equal(foldLabel(lv, 0, 5), "iterations 1–6");
  assert.equal(foldLabel(lv, 7, 7), "iteration 8 of 20");
  const call = { kind: "call", label: "GRUCell", count: 200 };
  assert.equal(unitLabel(call, 36), "GRUCell call 37 of 200");
  assert.equal(foldLabel(call, 0, 199), "GRUCell × 200");
  assert.equal(foldLabel(call, 0, 35), "calls 1–36 of GRUCell");
  assert.equal(foldLabel(call, 30, 39, 10), "GRUCell × 10");
});

test("a training loop: one iteration per backward pass, parameters in none", () => {
  const nodes = [{ id: "w", kind: "tensor", name: "w", role: "leaf" }, { id: "a", kind: "function", name: "AccumulateGrad" }];
  const edges = [{ source: "w", target: "a" }];
  const events = [];
  for (let it = 0; it < 3; it++) {
    nodes.push({ id: `m${it}`, kind: "function", name: "MulBackward0", line: 5 });
    edges.push({ source: "a", target: `m${it}`, input_nr: 0 });
    if (it === 0) events.push({ phase: "forward", node: "a", line: 5 });
    events.push({ phase: "forward", node: `m${it}`, line: 5 });
    events.push({ phase: "backward", node: `m${it}`, pass: it }, { phase: "backward", node: "a", pass: it });
  }
  const { index, levels } = prepare({ graph: { nodes, edges }, events });
  assert.equal(levels[0].kind, "iteration");
  assert.equal(levels[0].count, 3);
  assert.equal(levels[0].unitOf[index.idx.get("m1")], 1);
  assert.equal(levels[0].unitOf[index.idx.get("w")], -1);
  // AccumulateGrad's backward event in pass 2 belongs to iteration 3.
  assert.deepEqual(openAt(levels, events.length), [2]);
});

test("no levels for a straight-line program", () => {
  const doc = { graph: { nodes: [{ id: "x", kind: "tensor", role: "leaf" }, { id: "f", kind: "function", name: "MulBackward0", line: 2 }],
    edges: [{ source: "x", target: "f" }] }, events: [{ phase: "forward", node: "f", line: 2 }] };
  assert.deepEqual(prepare(doc).levels, []);
});

/** Forward events on lines that jump back: a loop body when `same`, recursion-like when not. */
function revisitDoc(same) {
  const nodes = [], events = [], edges = [];
  const ops = ["MulBackward0", "AddBackward0", "SliceBackward0", "MaximumBackward0"];
  for (let u = 0; u < 6; u++) {
    const body = same ? ops.slice(0, 2) : ops.slice(0, 1 + (u % 4));
    body.forEach((op, j) => {
      const id = `u${u}o${j}`;
      if (nodes.length) edges.push({ source: nodes[nodes.length - 1].id, target: id, input_nr: 0 });
      nodes.push({ id, kind: "function", name: op, line: 4 + j });
      events.push({ phase: "forward", node: id, line: 4 + j });
    });
  }
  return { graph: { nodes, edges }, events, passes: [] };
}

test("lines revisited with the same ops are a loop; recursion's irregular revisits are not", () => {
  const loop = prepare(revisitDoc(true)).levels;
  assert.equal(loop.length, 1);
  assert.equal(loop[0].kind, "iteration");
  assert.equal(loop[0].count, 6);
  assert.deepEqual(prepare(revisitDoc(false)).levels, []);
});

test("folds open one level at a time: a run shows its units, a unit shows its nodes", () => {
  const { index, levels } = prepare(rnnDoc(6, { stacks: true }));
  const tree = moduleTree(index);
  const view = (open) => buildView(index, tree, { collapsed: new Set(), expandedRepeats: new Set(), levels, openUnits: [2], open });
  const labels = (v) => v.vnodes.map((n) => n.label);
  const one = view(new Set(["units:0"]));
  for (const u of [1, 2, 4, 5, 6]) assert.ok(labels(one).includes(`cell call ${u} of 6`), `call ${u}`);
  assert.equal(labels(one).filter((l) => l === "MmBackward0").length, 1);
  const c5 = one.vnodes.find((n) => n.label === "cell call 5 of 6");
  assert.ok(c5.fold && c5.single && c5.lo === 4);
  const two = view(new Set(["units:0", "unit:0:4"]));
  assert.equal(labels(two).filter((l) => l === "MmBackward0").length, 2);
  assert.ok(!labels(two).includes("cell call 5 of 6"));
  // Each open call has its own outline, titled by its call; shared nodes are in none.
  assert.equal(two.titles.get("cell@4"), "cell call 5 of 6");
  const w = two.vnodes.findIndex((n) => n.label === "cell.weight");
  assert.equal(two.boxPaths[w], null);
  const boxes = new Set(two.boxPaths.filter(Boolean).map((p) => p.join("/")));
  assert.deepEqual([...boxes].sort(), ["cell@2", "cell@4"]);
  // What search opens to show a node of call 6.
});

test("two backward passes that do different things (a double backward) are no loop", () => {
  const nodes = [{ id: "x", kind: "tensor", name: "x", role: "leaf" }, { id: "a", kind: "function", name: "AccumulateGrad" },
    { id: "p", kind: "function", name: "PowBackward0", line: 2 },
    { id: "q", kind: "function", name: "PowBackward0Backward0", line: 3, created_in_pass: 0 },
    { id: "m", kind: "function", name: "MulBackward0", line: 3, created_in_pass: 0 }];
  const edges = [{ source: "x", target: "a" }, { source: "a", target: "p" }, { source: "a", target: "q" }, { source: "q", target: "m" }];
  const events = [{ phase: "forward", node: "a", line: 2 }, { phase: "forward", node: "p", line: 2 },
    { phase: "backward", node: "p", pass: 0 }, { phase: "forward", node: "q", line: 3 }, { phase: "forward", node: "m", line: 3 },
    { phase: "backward", node: "a", pass: 0 }, { phase: "backward", node: "m", pass: 1 }, { phase: "backward", node: "q", pass: 1 },
    { phase: "backward", node: "a", pass: 1 }];
  assert.deepEqual(prepare({ graph: { nodes, edges }, events }).levels, []);
});

test("a module's calls are named by its path, the snippet's name, not by its type", () => {
  const doc = rnnDoc(6, { stacks: true });
  doc.modules = [{ path: "cell", type: "GRUCell", calls: 6 }];
  const { levels } = prepare(doc);
  assert.equal(levels[0].kind, "call");
  assert.equal(unitLabel(levels[0], 2), "cell call 3 of 6");
});
