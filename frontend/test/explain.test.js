// Unit tests of "Explain this node"'s pure parts (src/ui/explain.js); the rules themselves are
// the service's (tests/analysis/test_explain.py).
import { test } from "node:test";
import assert from "node:assert/strict";
import { explainUrl } from "../src/api.js";
import { argsText, elements, explainLines, fromCarried } from "../src/ui/explain.js";

test("the request names the run, the node and the element", () => {
  assert.equal(explainUrl("abc", "n3", null), "/api/runs/abc/explain?node=n3");
  assert.equal(explainUrl("a/b", "n3", [1, 2]), "/api/runs/a%2Fb/explain?node=n3&index=1%2C2");
});

test("each input shows its rule, the instance at its element and the recorded number", () => {
  const lines = explainLines({
    known: true, op: "MulBackward0", node: "n1", pass: 0,
    inputs: [
      { input_nr: 0, rule: "grad_self = grad_out · other", shape: [2], index: [1], instance: "0.3 · 2 = 0.6", value: 0.6, recorded: 0.6 },
      { input_nr: 1, rule: "grad_other = grad_out · self", note: "values of self were not kept (more than 1,000 elements)" },
    ],
  });
  assert.equal(lines[0].instance, "at [1]: 0.3 · 2 = 0.6");
  assert.equal(lines[0].recorded, "recorded grad_inputs[1]: 0.6");
  assert.equal(lines[1].instance, null);
  assert.match(lines[1].note, /not kept/);
});

test("a rule that disagrees with the recording says so; an unknown op says there is no rule", () => {
  const [line] = explainLines({ known: true, op: "X", inputs: [{ input_nr: 0, rule: "r", index: [], instance: "1 = 1", value: 1, recorded: 2 }] });
  assert.match(line.recorded, /differs/);
  const [none] = explainLines({ known: false, op: "CumsumBackward0", inputs: [], note: "no rule for CumsumBackward0 in the catalogue" });
  assert.equal(none.rule, null);
  assert.match(none.note, /no rule/);
});

test("the element picker lists coordinates row-major", () => {
  assert.deepEqual(elements([2, 2]), [[0, 0], [0, 1], [1, 0], [1, 1]]);
  assert.equal(elements([40, 40]).length, 1000);
});

test("a saved file's carried explanations answer in the service's shape, and say what they lack", async () => {
  const bundle = {
    rules: { MulBackward0: ["grad_self = grad_out · other", "grad_other = grad_out · self"] },
    nodes: {
      n1: { op: "MulBackward0", pass: 0, inputs: [
        { input_nr: 0, shape: [2], index: [0], instance: "1 · 2 = 2", value: 2, recorded: 2,
          elements: [{ index: [0], instance: "1 · 2 = 2", value: 2, recorded: 2 }, { index: [1], instance: "1 · 3 = 3", value: 3, recorded: 3 }] },
        { input_nr: 1, shape: [3], index: [0], instance: "1 · 5 = 5", value: 5, recorded: 5 }] },
      n2: { op: "CumsumBackward0", pass: 0, note: "no rule for CumsumBackward0 in the catalogue", inputs: [] },
    },
    skipped_nodes: 4, budget: 100,
  };
  const ask = fromCarried(bundle);
  const first = await ask({ id: "d" }, { id: "n1" }, null);
  assert.equal(first.known, true);
  assert.equal(first.inputs[0].rule, "grad_self = grad_out · other");
  assert.equal(first.inputs[0].elements, undefined);
  const lines = explainLines(first);
  assert.match(lines[0].instance, /^at \[0\]: 1 · 2 = 2$/);
  const second = await ask({ id: "d" }, { id: "n1" }, [1]);
  assert.equal(second.inputs[0].instance, "1 · 3 = 3");
  assert.match(second.inputs[1].note, /first 1 element/);
  assert.equal(second.inputs[1].rule, "grad_other = grad_out · self");
  const unknown = await ask({ id: "d" }, { id: "n2" }, null);
  assert.equal(unknown.known, false);
  assert.match(explainLines(unknown)[0].note, /no rule/);
  await assert.rejects(ask({ id: "d" }, { id: "n9" }, null), /first 2 nodes only/);
});

test("the saved arguments a rule reads are written out", () => {
  assert.equal(argsText({ args: { exponent: 2 } }), "exponent = 2");
  assert.equal(argsText({ args: { dims: [2, 0, 1], keepdim: false } }), "dims = (2, 0, 1) · keepdim = false");
  assert.equal(argsText({ args: {} }), null);
  assert.equal(argsText({}), null);
});

test("a known rule without numbers says why first", () => {
  const lines = explainLines({ known: true, op: "MulBackward0", note: "this node did not run backward",
    inputs: [{ input_nr: 0, rule: "grad_self = grad · other" }, { input_nr: 1, rule: "grad_other = grad · self" }] });
  assert.equal(lines[0].note, "this node did not run backward");
  assert.equal(lines[0].rule, null);
  assert.deepEqual(lines.slice(1).map((l) => l.rule), ["grad_self = grad · other", "grad_other = grad · self"]);
  const kept = explainLines({ known: true, op: "X", note: "the received gradient's values were not kept (a large tensor)", inputs: [{ input_nr: 0, rule: "r" }] });
  assert.match(kept[0].note, /values were not kept/);
});

test("a custom Function points to its own backward, not to the catalogue", () => {
  const [line] = explainLines({ known: false, op: "CubeBackward", inputs: [], note: "no rule for CubeBackward in the catalogue" }, { lines: [8, 9, 10] });
  assert.match(line.note, /^your code: .*lines 8–10 of the snippet/);
  assert.doesNotMatch(line.note, /catalogue/);
  assert.equal(line.line, 8);
});

test("terms that cancel are said to, beside the two numbers they leave", () => {
  const cancels = "the terms cancel: their sizes add up to 0.1192 and what is left is 1.612e-08 of that";
  const [line] = explainLines({ known: true, op: "ConvolutionBackward0", inputs: [
    { input_nr: 2, rule: "grad_bias = Σ grad_out", shape: [8], index: [0], instance: "… = -1.721e-09", value: -1.72e-9, recorded: -1.92e-9, cancels },
  ] });
  assert.equal(line.cancels, cancels);
  const [plain] = explainLines({ known: true, op: "X", inputs: [{ input_nr: 0, rule: "r", index: [], instance: "1 = 1", value: 1, recorded: 1 }] });
  assert.equal(plain.cancels, null);
});
