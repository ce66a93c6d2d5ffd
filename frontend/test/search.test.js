// Unit tests of the graph search (src/ui/search.js) on a recorded lesson (fixtures/words_*.json).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { indexDocument } from "../src/graph/document.js";
import { cycle, parseQuery, searchNodes } from "../src/ui/search.js";

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
