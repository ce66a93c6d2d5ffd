// Unit tests of "Explain this node"'s pure parts (src/ui/explain.js); the rules themselves are
// the service's (tests/analysis/test_explain.py).
import { test } from "node:test";
import assert from "node:assert/strict";
import { elements, explainLines, explainUrl } from "../src/ui/explain.js";

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
