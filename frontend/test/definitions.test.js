// The user's names and what the graph cannot show, as the page reads them from the document
// (src/graph/names.js, src/ui/definitions.js; fixtures/definitions_*.json: run_snippet output
// of tests/programs.py's TINY_LM and FINE_TUNE).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { indexDocument } from "../src/graph/document.js";
import { buildView } from "../src/graph/view.js";
import { moduleTree } from "../src/graph/modules.js";
import { tiedLabel, tiedSub, varSub } from "../src/graph/names.js";
import { searchNodes } from "../src/analysis/search.js";
import { functionName, namesContext } from "../src/analysis/names.js";
import { frozenModules, frozenNote, gradOffAt, gradOffMarks, gradOffText, lineNote, lineNotes, optimizerNote } from "../src/ui/definitions.js";

const load = (name) => JSON.parse(readFileSync(new URL(`./fixtures/definitions_${name}.json`, import.meta.url), "utf8"));

test("a function node with a variable says it under its name; without one, only its shape", () => {
  assert.equal(varSub({ var: "h" }, "[1, 3]"), "→ h · [1, 3]");
  assert.equal(varSub({ var: "h" }, ""), "→ h");
  assert.equal(varSub({}, "[1, 3]"), "[1, 3]");
});

test("a tied parameter's box names its other paths", () => {
  const n = { name: "m.emb.weight", tied: ["m.emb.weight", "m.lm_head.weight"] };
  assert.equal(tiedLabel(n), "m.emb.weight = m.lm_head.weight");
  assert.equal(tiedSub(n, "[11, 6]"), "tied · [11, 6]");
  assert.equal(tiedSub({ name: "w" }, "[3]"), "[3]");
  assert.equal(tiedLabel({ name: "w" }), null);
});

test("the tiny LM's boxes: one tied embedding, the forward's variables under their ops", () => {
  const doc = load("tiny_lm");
  const index = indexDocument(doc);
  const view = buildView(index, moduleTree(index), { collapsed: new Set(), expandedRepeats: new Set() });
  const byKey = new Map(view.vnodes.map((v) => [v.key, v]));
  const tied = doc.graph.nodes.filter((n) => n.tied);
  assert.equal(tied.length, 1);
  assert.equal(byKey.get(tied[0].id).label, "model.emb.weight = model.lm_head.weight");
  assert.equal(byKey.get(tied[0].id).sub, "tied · 11×6");
  const tanh = doc.graph.nodes.find((n) => n.name === "TanhBackward0");
  assert.equal(tanh.var, "h");
  assert.match(byKey.get(tanh.id).sub, /^→ h · /);
  const leaves = doc.graph.nodes.filter((n) => n.role === "leaf");
  assert.ok(leaves.length && leaves.every((n) => n.def_line != null));
});

test("the fine-tune's frozen backbone and its no_grad block", () => {
  const doc = load("fine_tune");
  assert.deepEqual(frozenModules(doc), [{ path: "backbone.0", names: ["weight", "bias"] }, { path: "backbone.2", names: ["weight", "bias"] }]);
  const b = gradOffAt(doc, 11);
  assert.equal(gradOffText(b), "torch.no_grad() at line 10");
  assert.equal(gradOffAt(doc, 13), null);
  assert.deepEqual(gradOffMarks(doc), { lines: [11, 12], heads: [{ line: 10, text: "no graph recorded here" }] });
  assert.equal(lineNote(doc, 12), "Gradients are off here (torch.no_grad() at line 10): no graph is recorded in lines 11–12.");
  assert.equal(lineNote(doc, 13), null);
  assert.deepEqual(lineNotes(doc, 8), ["defines head.weight, head.bias."]);
  assert.deepEqual(lineNotes(doc, 11), ["Gradients are off here (torch.no_grad() at line 10): no graph is recorded in lines 11–12."]);
  assert.deepEqual(lineNotes(doc, 5), []);  // the frozen backbone: no leaf in the graph
});

test("a no_grad block with an enable_grad() cut out of it: two pieces, one note on its line", () => {
  const doc = { analysis: { grad_off: [{ kind: "no_grad", line: 7, start: 8, end: 9 }, { kind: "no_grad", line: 7, start: 11, end: 11 }] } };
  assert.deepEqual(gradOffMarks(doc), { lines: [8, 9, 11], heads: [{ line: 7, text: "no graph recorded here" }] });
  assert.equal(gradOffAt(doc, 10), null);
  assert.equal(lineNote(doc, 11), "Gradients are off here (torch.no_grad() at line 7): no graph is recorded in line 11.");
});

test("a collapsed module names the frozen parameters in and around it", () => {
  const doc = load("fine_tune");
  assert.equal(frozenNote(doc, "backbone"), "Frozen (requires_grad=False, no node): backbone.0: weight, bias; backbone.2: weight, bias.");
  assert.equal(frozenNote(doc, "backbone.2"), "Frozen (requires_grad=False, no node): backbone.2: weight, bias.");
  assert.equal(frozenNote(doc, "head"), null);
});

test("an intermediate's variable finds it in search and names it in sentences; a tied path finds its one node", () => {
  const doc = load("tiny_lm");
  const index = indexDocument(doc);
  const tanh = index.idx.get(doc.graph.nodes.find((n) => n.name === "TanhBackward0").id);
  assert.ok(searchNodes(index, "h").some((m) => m.ref === tanh && m.why === "name"));
  const tied = searchNodes(index, "lm_head.weight").filter((m) => m.why === "name");
  assert.equal(tied.length, 1);
  assert.deepEqual(index.nodes[tied[0].ref].tied, ["model.emb.weight", "model.lm_head.weight"]);
  assert.equal(functionName(namesContext(index), tanh).text, "TanhBackward0 → h");
});

test("a leaf says whether an optimizer that stepped holds it, only where one stepped", () => {
  const q = { id: "n1", kind: "tensor", role: "leaf", name: "q.weight", optimized: true };
  const target = { id: "n2", kind: "tensor", role: "leaf", name: "q_target.weight" };
  const doc = { graph: { nodes: [q, target] } };
  assert.match(optimizerNote(q, doc), /held by an optimizer/);
  assert.match(optimizerNote(target, doc), /no optimizer that stepped holds it/);
  assert.equal(optimizerNote(target, { graph: { nodes: [target] } }), null);  // no step ran: nothing to say
  assert.equal(optimizerNote({ id: "n3", kind: "function", name: "AddBackward0" }, doc), null);
  const head = { id: "n4", kind: "tensor", role: "leaf", name: "model.2.weight", optimized: true, stepped_twice: [10, 11] };
  assert.match(optimizerNote(head, { graph: { nodes: [head] } }), /held by two optimizers: both step\(\) calls \(lines 10 and 11\)/);
  const fresh = { id: "n5", kind: "tensor", role: "leaf", name: "w", optimized: true,
    state_restarts: { optimizer: "Adam", steps: 6, restarts: 5, line: 9 } };
  assert.match(optimizerNote(fresh, { graph: { nodes: [fresh] } }), /Adam's state for it started from zero at 6 of its 6 steps/);
});
