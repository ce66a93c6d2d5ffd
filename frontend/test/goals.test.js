// The exercise progress file (src/ui/goals.js): exported, imported, and refused when it is not one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseProgress, progressFile } from "../src/ui/goals.js";

test("progress round-trips through its file", () => {
  const progress = { "03_loop": { done: true, at: "2026-01-01T00:00:00.000Z" }, "09_accumulating_grads": { done: false, at: null } };
  assert.deepEqual(parseProgress(progressFile(progress)), progress);
});

test("anything else is refused, and odd entries are dropped", () => {
  assert.throws(() => parseProgress("{}"), /not a gradtrace progress file/);
  assert.throws(() => parseProgress("not json"));
  const text = JSON.stringify({ kind: "gradtrace-exercises", progress: { "../evil": { done: true }, "01_chain_rule": { done: "yes" } } });
  assert.deepEqual(parseProgress(text), { "01_chain_rule": { done: false, at: null } });
});
