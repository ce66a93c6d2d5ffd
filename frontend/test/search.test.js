// Unit tests of the graph search (src/analysis/search.js) on a recorded lesson (fixtures/words_*.json).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { indexDocument } from "../src/graph/document.js";
import { cycle, parseQuery, searchNodes } from "../src/analysis/search.js";

const load = (name) => indexDocument(JSON.parse(readFileSync(new URL(`./fixtures/words_${name}.json`, import.meta.url), "utf8")));

test("queries: a line number in several spellings, else words", () => {
  assert.deepEqual(parseQuery("line 5"), { line: 5 });
  assert.deepEqual(parseQuery("5"), { line: 5 });
  assert.deepEqual(parseQuery(":12"), { line: 12 });
  assert.deepEqual(parseQuery(" MulBackward "), { text: "mulbackward" });
  assert.equal(parseQuery("   "), null);
});

test("search by op, tensor name and line finds exactly those nodes, in the run's order", () => {
  const index = load("01_chain_rule");
  const names = (q) => searchNodes(index, q).map((m) => index.nodes[m.ref].name);
  assert.deepEqual(names("mul"), ["MulBackward0", "MulBackward0"]);
  assert.deepEqual(names("x"), ["x"]);
  assert.deepEqual(searchNodes(index, "line 5").map((m) => m.ref), index.nodes.flatMap((n, i) => (n.line === 5 ? [i] : [])));
  assert.deepEqual(searchNodes(index, "no such thing"), []);
  const ops = searchNodes(index, "AddBackward0");
  assert.ok(ops.every((m) => m.why === "op") && ops.length === 2);
  assert.ok(ops[0].ref < ops[1].ref);
});

test("search by module path", () => {
  const index = load("01_chain_rule");
  // The chain-rule lesson has no module: pretend two nodes were made inside `model.0`.
  index.module[1] = "model.0"; index.module[3] = "model.0.inner";
  assert.deepEqual(searchNodes(index, "model.0").map((m) => [m.ref, m.why]), [[1, "module"], [3, "module"]]);
});

test("Enter cycles through the matches and wraps around", () => {
  assert.equal(cycle(-1, 3), 0);
  assert.equal(cycle(0, 3), 1);
  assert.equal(cycle(2, 3), 0);
  assert.equal(cycle(0, 3, true), 2);
  assert.equal(cycle(-1, 3, true), 2);
  assert.equal(cycle(-1, 0), -1);
});

test("a name with _ or . is found from any substring, with or without the separators", () => {
  const doc = { graph: { nodes: [
    { id: "a", kind: "tensor", name: "cell.weight_hh", role: "leaf" },
    { id: "b", kind: "tensor", name: "attn.in_proj_weight", role: "leaf" },
    { id: "c", kind: "function", name: "AccumulateGrad" },
    { id: "d", kind: "function", name: "MulBackward0" },
  ], edges: [] }, events: [] };
  const index = indexDocument(doc);
  const ids = (q) => searchNodes(index, q).map((m) => index.nodes[m.ref].id);
  for (const q of ["weight_hh", "weighthh", "weight hh", "WEIGHT_HH", "cell.weight_hh", "ght_h"]) assert.deepEqual(ids(q), ["a"], q);
  for (const q of ["in_proj_weight", "proj_weight", "inprojweight", "n_proj"]) assert.deepEqual(ids(q), ["b"], q);
  // Short queries keep to word starts: "mul" is no substring match inside AccumulateGrad.
  assert.deepEqual(ids("mul"), ["d"]);
  assert.deepEqual(ids("hh"), ["a"]);
});
