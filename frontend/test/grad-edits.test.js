// Unit tests of what the run did to .grad outside autograd (src/analysis/grad-edits.js), on the
// clipping program recorded by gradtrace (fixtures/findings_clip.json) and a zero_grad loop.
// Run: node --test test/   (from frontend/)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { indexDocument } from "../src/graph/document.js";
import { Timeline, finalGrad } from "../src/graph/timeline.js";
import { effectWords, gradEdits, lineGradNotes } from "../src/analysis/grad-edits.js";
import { stepSentence, wordsContext } from "../src/analysis/words.js";
import { fmtTensorShort } from "../src/graph/values.js";

const load = (name) => JSON.parse(readFileSync(new URL(`./fixtures/${name}.json`, import.meta.url), "utf8"));

test("the last step's sentence agrees with the clipped .grad the box shows", () => {
  const doc = load("findings_clip");
  const index = indexDocument(doc);
  const tl = new Timeline(index);
  const ctx = wordsContext(index, tl);
  const last = stepSentence(ctx, tl.N);
  const leaf = index.leafOfAcc.get(tl.evNode[tl.N - 1]);
  const box = tl.leafGradAt(leaf, tl.N);  // what the box and the inspector show
  assert.ok(box.edited);
  assert.ok(last.includes(fmtTensorShort(box.value, 4)), last);
  assert.match(last, /After backward, line 8 changed it outside autograd to /);
  assert.match(last, /norm scaled × 0\.\d+/);
  assert.match(last, /, and 3 more leaves' \.grad\.$/);
  // one step earlier nothing was edited yet
  assert.doesNotMatch(stepSentence(ctx, tl.N - 1), /outside autograd/);
});

test("the last step shows the clipped .grad's kept tensor, not a .grad the file has no key for", () => {
  const doc = load("findings_clip");
  const leafNode = doc.graph.nodes.find((n) => n.name === "model.0.weight");
  assert.equal(finalGrad(leafNode), leafNode.grad);  // no tensor file: the document's final .grad
  // what a run with a tensor file writes now: the clip as an edit after the one accumulation
  // (its value the final .grad), a key on each history entry and edit, none on `grad`
  leafNode.grad_history.forEach((h, j) => { h.key = `${leafNode.id}.gh${j}`; });
  leafNode.grad_edits = [{ at: 1, line: 8, in_backward: false, value: { ...leafNode.grad, key: `${leafNode.id}.ge0` } }];
  const tl = new Timeline(indexDocument(doc));
  const box = tl.leafGradAt(tl.index.idx.get(leafNode.id), tl.N);
  assert.ok(box.edited);
  assert.equal(box.value.key, `${leafNode.id}.ge${leafNode.grad_edits.length - 1}`);
  assert.deepEqual(box.value.stats, leafNode.grad.stats);
  // a final .grad that is not the last edit's value keeps its own (unkeyed) value
  const other = { ...leafNode, grad: { ...leafNode.grad, stats: { ...leafNode.grad.stats, norm: 0 } } };
  assert.equal(finalGrad(other), other.grad);
});

test("the clipping line says what it did to which .grad", () => {
  const doc = load("findings_clip");
  const { line, edits } = gradEdits(doc);
  assert.equal(line, 8);
  assert.deepEqual(edits.map((e) => e.name), ["model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"]);
  const [note] = lineGradNotes(doc, 8);
  assert.match(note, /^changed \.grad outside autograd/);
  assert.ok(note.includes(`model.0.weight.grad ${fmtTensorShort(edits[0].before, 4)} → ${fmtTensorShort(edits[0].after, 4)}`), note);
  assert.deepEqual(lineGradNotes(doc, 7), []);
});

test("a zero_grad line says it cleared .grad between accumulations", () => {
  const doc = { graph: { nodes: [
    { id: "a", kind: "tensor", name: "w", grad_resets: [{ at: 1, kind: "none", line: 8 }, { at: 2, kind: "none", line: 8 }] },
    { id: "b", kind: "tensor", name: "b", grad_resets: [{ at: 1, kind: "none", line: 8 }, { at: 2, kind: "none", line: 8 }] },
  ] } };
  assert.deepEqual(lineGradNotes(doc, 8), ["set to None w.grad, b.grad between accumulations, 2 times: the next backward starts that .grad afresh."]);
});

test("effects read from the norms", () => {
  const t = (norm) => ({ stats: { norm } });
  assert.equal(effectWords(t(4), t(1)), "norm scaled × 0.25");
  assert.equal(effectWords(t(4), t(0)), "zeroed");
  assert.equal(effectWords(t(4), {}), "changed");
});
