// Unit tests of the jump targets (src/analysis/steps.js) on recorded lessons (fixtures/words_*.json).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { indexDocument } from "../src/graph/document.js";
import { iterationStarts, lineStarts, nextStart, passStarts, prevStart } from "../src/analysis/steps.js";

const { Timeline } = await import("../src/graph/timeline.js").catch(() => import("../src/animate/timeline.js"));

function load(name) {
  const index = indexDocument(JSON.parse(readFileSync(new URL(`./fixtures/words_${name}.json`, import.meta.url), "utf8")));
  return { index, tl: new Timeline(index) };
}

test("line starts: each step whose line differs from the one before", () => {
  const { index, tl } = load("01_chain_rule");
  const lines = tl.events.map((e, i) => e.line ?? index.nodes[tl.evNode[i]].line);
  const expected = lines.flatMap((l, i) => (i === 0 || l !== lines[i - 1] ? [i + 1] : []));
  assert.deepEqual(lineStarts(tl, index), expected);
  assert.ok(expected.length >= 4);
});

test("iterations of a loop without zero_grad: one per training step", () => {
  const { index, tl } = load("09_accumulating_grads");
  const starts = iterationStarts(tl, index);
  // Three turns of the loop, each a forward then a backward: each turn starts with a forward event.
  const firstForwardAfterBackward = tl.events.flatMap((e, i) => (e.phase === "forward" && (i === 0 || tl.events[i - 1].phase === "backward") ? [i + 1] : []));
  assert.deepEqual(starts, firstForwardAfterBackward);
  assert.equal(starts.length, 3);
});

test("pass starts are the timeline's segments; next/prev wrap to the ends", () => {
  const { tl } = load("13_double_backward");
  const starts = passStarts(tl);
  assert.deepEqual(starts, tl.segments.map((s) => s.start));
  assert.equal(nextStart(starts, 0, tl.N), starts[0]);
  assert.equal(nextStart(starts, tl.N, tl.N), tl.N);
  assert.equal(prevStart(starts, starts[1] + 1), starts[1]);
  assert.equal(prevStart(starts, starts[1]), starts[0]);
  assert.equal(prevStart(starts, 0), 0);
});

test("an RNN-like line called over and over: the first op of an iteration coming back starts the next", () => {
  // Synthetic timeline over one line: acc, A, B, A, B, A, B (three calls of a cell on line 8).
  const names = ["AccumulateGrad", "A", "B", "A", "B", "A", "B"];
  const index = { nodes: names.map((name) => ({ name, line: 8, kind: "function" })), kind: names.map((n) => (n === "AccumulateGrad" ? "acc" : "function")) };
  const tl = { N: names.length, events: names.map(() => ({ phase: "forward", line: 8 })), evNode: names.map((_, i) => i) };
  assert.deepEqual(iterationStarts(tl, index), [1, 4, 6]);
});
