// Revealing a node hidden in folds (src/graph/reveal.js): the folds are opened on the view
// alone, so the page lays the graph out once per reveal (NOTE [one layout per reveal]).
import { test } from "node:test";
import assert from "node:assert/strict";
import { indexDocument } from "../src/graph/document.js";
import { moduleTree } from "../src/graph/modules.js";
import { revealPlan } from "../src/graph/reveal.js";
import { buildView } from "../src/graph/view.js";

/** A stack `enc.layers.{0,1,2}`, each layer with `attn` and `ff` sub-modules making two ops each. */
function stackDoc() {
  const nodes = [{ id: "x", kind: "tensor", name: "x", role: "leaf" }];
  const edges = [];
  let prev = "x";
  for (let l = 0; l < 3; l++) {
    for (const sub of ["attn", "ff"]) {
      for (const op of ["MmBackward0", "ReluBackward0"]) {
        const id = `${l}${sub}${op}`;
        nodes.push({ id, kind: "function", name: op, module: `enc.layers.${l}.${sub}` });
        edges.push({ source: prev, target: id, input_nr: 0 });
        prev = id;
      }
    }
  }
  return { graph: { nodes, edges }, events: nodes.map((n) => ({ phase: "forward", node: n.id })) };
}

const allCollapsed = (tree) => ({ collapsed: new Set(tree.mods.keys()), expandedRepeats: new Set(), open: new Set(), levels: [], openUnits: [] });

test("a node three folds deep is revealed by opening each fold, on the view alone", () => {
  const index = indexDocument(stackDoc());
  const tree = moduleTree(index);
  const fields = allCollapsed(tree);
  const ref = index.idx.get("1ffReluBackward0");
  const before = buildView(index, tree, fields);
  assert.equal(before.vnodes[before.byRef[ref][0]].kind, "group", "hidden to start with");
  const plan = revealPlan(index, tree, fields, ref);
  assert.ok(plan.v >= 0);
  assert.equal(plan.view.vnodes[plan.v].label, "ReluBackward0");
  assert.deepEqual(plan.view.vnodes[plan.v].refs, [ref]);
  // enc, enc.layers, the repeat "layers × 3", layers.1, layers.1.ff: each opened once.
  assert.equal(plan.opened, 5);
  assert.ok(plan.fields.expandedRepeats.has("enc.layers"));
  assert.ok(!plan.fields.collapsed.has("enc.layers.1.ff") && plan.fields.collapsed.has("enc.layers.0.ff"));
  // The caller's sets are not touched: a plan is only a plan until it is set.
  assert.equal(fields.collapsed.size, tree.mods.size);
  assert.equal(fields.expandedRepeats.size, 0);
});

test("a visible node needs no fold opened; the plan is the same view", () => {
  const index = indexDocument(stackDoc());
  const tree = moduleTree(index);
  const fields = { collapsed: new Set(), expandedRepeats: new Set(), open: new Set(), levels: [], openUnits: [] };
  const view = buildView(index, tree, fields);
  const plan = revealPlan(index, tree, fields, 3, view);
  assert.equal(plan.opened, 0);
  assert.equal(plan.view, view);
  assert.equal(plan.fields, fields);
  assert.deepEqual(view.vnodes[plan.v].refs, [3]);
});
