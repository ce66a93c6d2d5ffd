// The compare page's pure parts (src/compare/sync.js, literals.js, presets.js): the shared
// cursor over both runs, tints, memory at a cursor, the what-if scalars, checkpointing off.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ONLY_A, ONLY_B, cursorOfEvent, cursorTable, divergenceCursor, gradTint, memoryAt, tintMaps } from "../src/compare/sync.js";
import { findScalars, sliderRange, withScalar } from "../src/compare/literals.js";
import { withoutCheckpointing } from "../src/compare/presets.js";

// A: 3 events; B: the same 3 plus one only B has after its first (an inserted node).
const STEPS = [[0, 0], [null, 1], [1, 2], [2, 3]];

test("the cursor moves both runs, and the side without an event waits", () => {
  const t = cursorTable(STEPS);
  assert.deepEqual([...t.a], [0, 1, 1, 2, 3]);
  assert.deepEqual([...t.b], [0, 1, 2, 3, 4]);
  assert.equal(cursorOfEvent(STEPS, "a", 1), 3);
  assert.equal(cursorOfEvent(STEPS, "b", 1), 2);
  assert.equal(cursorOfEvent(STEPS, "a", 9), -1);
});

test("the first divergence's cursor is its step in A, else in B, and -1 without one", () => {
  assert.equal(divergenceCursor({ steps: STEPS, first_divergence: { a_event: 2, b_event: 3 } }), 4);
  assert.equal(divergenceCursor({ steps: STEPS, first_divergence: { a_event: null, b_event: 1 } }), 2);
  assert.equal(divergenceCursor({ steps: STEPS, first_divergence: null }), -1);
});

test("only-A nodes red, only-B green, matched ones tinted only beyond tolerance, stronger when larger", () => {
  const delta = (rel, beyond = true) => ({ rel_l2: rel, beyond_tolerance: beyond });
  const cmp = {
    only_a: [{ id: "n9" }], only_b: [{ id: "n7" }],
    pairs: [{ a: "n1", b: "n1", grad: delta(0.5) }, { a: "n2", b: "n3", grad: delta(0, false) },
      { a: "n4", b: "n5", grad: null, value: null, shape_changed: false }],
  };
  const t = tintMaps(cmp);
  assert.equal(t.a.get("n9"), ONLY_A);
  assert.equal(t.b.get("n7"), ONLY_B);
  assert.ok(t.a.get("n1") && t.a.get("n1") === t.b.get("n1"));
  assert.ok(!t.a.has("n2") && !t.b.has("n3") && !t.a.has("n4"));
  assert.equal(gradTint(delta(1e-3, false)), null);
  const alpha = (c) => Number(c.match(/, ([\d.]+)\)$/)[1]);
  assert.ok(alpha(gradTint(delta(1))) > alpha(gradTint(delta(1e-3))));
});

test("memory at a cursor reads each run's live bytes at its own step", () => {
  const cmp = { memory_a: { live: [0, 10, 10, 0] }, memory_b: { live: [0, 10, 30, 30, 0] } };
  const t = cursorTable(STEPS);
  assert.deepEqual(memoryAt(cmp, t, 0), { a: 0, b: 0 });
  assert.deepEqual(memoryAt(cmp, t, 2), { a: 10, b: 30 });
  assert.deepEqual(memoryAt(cmp, t, 4), { a: 0, b: 0 });
});

test("what-if finds lesson 01's scalar leaf and plain literals, and keeps a float a float", () => {
  const code = "# chain rule\nimport torch\n\nx = torch.tensor(2.0, requires_grad=True)\nn = 3\nlr = 1e-2  # step\ny = x * n\n";
  const found = findScalars(code);
  assert.deepEqual(found.map((s) => [s.name, s.line, s.value, s.kind]),
    [["x", 4, 2, "leaf"], ["n", 5, 3, "literal"], ["lr", 6, 0.01, "literal"]]);
  assert.match(withScalar(code, found[0], 3), /x = torch\.tensor\(3\.0, requires_grad=True\)/);
  assert.match(withScalar(code, found[0], 2.5), /torch\.tensor\(2\.5,/);
  assert.match(withScalar(code, found[1], 4.4), /^n = 4$/m);
  assert.equal(withScalar(code, found[2], 0.02).split("\n")[5], "lr = 0.02  # step");
  const r = sliderRange(2, false);
  assert.ok(r.min < 2 && r.max > 2 && r.step > 0 && r.step <= 0.2);
  assert.deepEqual(sliderRange(3, true), { min: -3, max: 9, step: 1 });
});

test("checkpointing off turns checkpoint(f, x, ...) into f(x), and leaves other code alone", () => {
  const code = "for block in blocks:\n    h = checkpoint(block, h, use_reentrant=False)\n";
  assert.equal(withoutCheckpointing(code), "for block in blocks:\n    h = block(h)\n");
  assert.equal(withoutCheckpointing("y = f(x)\n"), null);
});

test("a self-seeded snippet is found, and its seed varied in the code", async () => {
  const { selfSeed, withSeed } = await import("../src/compare/presets.js");
  const code = "import torch\n# torch.manual_seed(5) in a comment\ntorch.manual_seed(0)\nx = torch.randn(3)\n";
  assert.deepEqual(selfSeed(code), { line: 3, seed: 0 });
  assert.equal(withSeed(code, 1), "import torch\n# torch.manual_seed(5) in a comment\ntorch.manual_seed(1)\nx = torch.randn(3)\n");
  assert.equal(selfSeed("import torch\nx = torch.randn(3)\n"), null);
  assert.deepEqual(selfSeed("torch.random.manual_seed(42)\n"), { line: 1, seed: 42 });
});
