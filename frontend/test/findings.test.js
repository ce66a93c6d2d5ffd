// Unit tests of what the page reads from the document's analysis (src/ui/findings.js) and of
// searching "nan" (src/ui/search.js), on documents recorded from real programs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { indexDocument } from "../src/graph/document.js";
import { addFindingMarks, findingsOf, statusWithFindings } from "../src/ui/findings.js";
import { searchNodes } from "../src/ui/search.js";

const load = (name) => JSON.parse(readFileSync(new URL(`./fixtures/findings_${name}.json`, import.meta.url), "utf8"));
const emptyMarks = () => ({ nodes: [], lines: { error: null, cause: null } });

test("the badge says what is not finite: ok · x.grad has NaN", () => {
  assert.equal(statusWithFindings("ok", load("where_nan")), "ok · x.grad has NaN");
  assert.equal(statusWithFindings("ok", load("loss_broadcast")), "ok");
  assert.equal(statusWithFindings("ok", { status: "ok" }), "ok");  // a document from before the analysis
});

test("the graph marks the node that made the first NaN, and the code its line", () => {
  const doc = load("where_nan");
  const index = indexDocument(doc);
  const marks = addFindingMarks(emptyMarks(), index);
  const [f] = findingsOf(doc).nonfinite;
  assert.equal(index.nodes[marks.nodes[0].ref].name, "SqrtBackward0");
  assert.equal(marks.nodes[0].text, "✱ first NaN made here");
  assert.deepEqual(marks.findingLines, [5]);
  assert.equal(marks.nonfiniteRefs.size, 1 + f.passed_on.length);
});

test("a hint marks its first node with its title", () => {
  const index = indexDocument(load("loss_broadcast"));
  const marks = addFindingMarks(emptyMarks(), index);
  assert.equal(index.nodes[marks.nodes[0].ref].name, "MseLossBackward0");
  assert.match(marks.nodes[0].text, /^⚑ the loss broadcast its input from \[3, 1\] to \[3, 3\]$/);
});

test("searching nan finds the producer, the nodes that passed it on and the leaf", () => {
  const index = indexDocument(load("where_nan"));
  const names = searchNodes(index, "NaN").map((m) => index.nodes[m.ref].name);
  assert.deepEqual(names, ["AccumulateGrad", "SqrtBackward0", "x"]);
  assert.deepEqual(searchNodes(index, "inf"), []);
  assert.deepEqual(searchNodes(indexDocument(load("loss_broadcast")), "nan"), []);
});

test("after clip_grad_norm_, the last step shows the .grad torch holds, earlier steps the accumulation", async () => {
  const { Timeline } = await import("../src/graph/timeline.js");
  const doc = load("clip");
  const index = indexDocument(doc);
  const tl = new Timeline(index);
  const leaf = index.nodes.findIndex((n) => n.name === "model.0.weight");
  const [hint] = findingsOf(doc).hints;
  assert.equal(hint.code, "grad-edited");
  assert.equal(hint.line, 8);
  const end = tl.leafGradAt(leaf, tl.N);
  assert.equal(end.value, index.nodes[leaf].grad);
  assert.ok(end.edited);
  assert.ok(Math.abs(end.value.stats.norm - 0.17593864) < 1e-6);  // what torch printed in the run
  assert.match(doc.stdout, /^0\.17593/);
  const [step, accumulated] = tl.leafGrads.get(leaf).at(-1);
  assert.ok(accumulated.stats.norm > 7);  // what backward left, before clipping
  if (step < tl.N) assert.equal(tl.leafGradAt(leaf, step).value, accumulated);
  assert.equal(tl.leafGradAt(leaf, tl.N - 1)?.value ?? accumulated, accumulated);
});
