// torch's checks folded on their line, and a reentrant checkpoint's inner backward counted in its
// outer pass's iteration (fixtures/flows_*.json: run_snippet output of tests/capture/test_flows.py's
// EXP with its gradchecks, and CHECKPOINT with use_reentrant=True).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { indexDocument } from "../src/graph/document.js";
import { Timeline } from "../src/graph/timeline.js";
import { runLevels } from "../src/graph/groups.js";
import { foldedMarks, foldedNotes, foldedTitle } from "../src/ui/folded.js";
import { lineNotes } from "../src/ui/definitions.js";

const load = (name) => JSON.parse(readFileSync(new URL(`./fixtures/flows_${name}.json`, import.meta.url), "utf8"));

test("each folded check is one box on its line with its verdict", () => {
  const doc = load("gradcheck");
  const marks = foldedMarks(doc);
  assert.deepEqual(marks.map((m) => [m.line, m.text, m.verdict]), [[13, "gradcheck passed ✓", "passed"], [14, "gradgradcheck passed ✓", "passed"]]);
  assert.match(marks[0].title, /torch\.autograd\.gradcheck ran here: passed ✓\. torch's own check, folded: its \d+ autograd nodes/);
  assert.equal(foldedNotes(doc, 13).length, 1);
  assert.ok(lineNotes(doc, 14).some((t) => t.startsWith("torch.autograd.gradgradcheck ran here")));
  assert.deepEqual(foldedNotes(doc, 15), []);
  assert.equal(foldedTitle({ api: "torch.autograd.gradcheck", verdict: "failed", calls: 3 }), "gradcheck failed ✗ (3 calls)");
});

test("the picker counts the snippet's 4 iterations, not torch's checks", () => {
  const doc = load("gradcheck");
  const index = indexDocument(doc);
  const levels = runLevels(index, new Timeline(index));
  assert.equal(levels[0].kind, "iteration");
  assert.equal(levels[0].count, 4);
});

test("a reentrant checkpoint's inner backward belongs to its outer pass's iteration", () => {
  const doc = load("checkpoint");
  assert.equal(doc.passes.length, 4);
  assert.deepEqual(doc.passes.map((p) => p.within ?? null), [null, 0, null, 2]);
  const index = indexDocument(doc);
  const levels = runLevels(index, new Timeline(index));
  assert.equal(levels[0].kind, "iteration");
  assert.equal(levels[0].count, 2);
  assert.equal(levels[0].passUnit.get(1), 0);
  assert.equal(levels[0].passUnit.get(3), 1);
});

test("a document without folded checks has no boxes", () => {
  assert.deepEqual(foldedMarks({}), []);
  assert.deepEqual(foldedNotes(null, 3), []);
});
