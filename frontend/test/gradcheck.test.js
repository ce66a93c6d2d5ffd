// Unit tests of the gradient check's pure parts (src/ui/gradcheck.js).
import { test } from "node:test";
import assert from "node:assert/strict";
import { gridRows, isCheckable, isCustomFunction, isParameter, passChoices, passLine, verdictLine } from "../src/ui/gradcheck.js";

test("custom Functions are told from built-in nodes by autograd's names", () => {
  assert.equal(isCustomFunction({ kind: "function", name: "CubeBackward" }), true);
  assert.equal(isCustomFunction({ kind: "function", name: "MulBackward0" }), false);
  assert.equal(isCustomFunction({ kind: "function", name: "CompiledFunctionBackward" }), false);
  assert.equal(isCustomFunction({ kind: "tensor", name: "CubeBackward" }), false);
});

test("a leaf, its AccumulateGrad and a custom Function can be checked; other nodes cannot", () => {
  assert.equal(isCheckable({ kind: "tensor", role: "leaf", name: "x" }), true);
  assert.equal(isCheckable({ kind: "tensor", role: "root", name: "y" }), false);
  assert.equal(isCheckable({ kind: "function", name: "AccumulateGrad" }), true);
  assert.equal(isCheckable({ kind: "function", name: "CubeBackward" }), true);
  assert.equal(isCheckable({ kind: "function", name: "AddBackward0" }), false);
});

test("the grid flags the worst element and formats every number", () => {
  const result = {
    verdict: "fail", dtype: "float64", checked: 2, total: 2, failed: 2, kinks: 0, worst: 1,
    tensors: [{ name: "x" }],
    elements: [
      { tensor: 0, index: [0], analytic: 1, numeric: 3.0000000001, left: 2.9999, right: 3.0001, abs_error: 2, rel_error: 0.6666666, ok: false, kink: false },
      { tensor: 0, index: [1], analytic: 4, numeric: 12, left: 12, right: 12, abs_error: 8, rel_error: "inf", ok: false, kink: false },
    ],
  };
  const rows = gridRows(result);
  assert.deepEqual(rows.map((r) => r.worst), [false, true]);
  assert.deepEqual(rows[0].cells, ["x[0]", "1", "3", "0.6667"]);
  assert.equal(rows[1].cells[3], "inf");
  assert.equal(rows[0].detail, "x[0]: analytic 1 · numeric 3 (left 2.9999, right 3.0001) · abs error 2 · rel error 0.666667 · fail");
  assert.equal(rows[0].state, "fail");
  assert.equal(verdictLine(result), "fail · 2 of 2 elements, 2 failed (float64)");
});

test("the backward lines of a custom Function are found in the snippet", async () => {
  const { backwardLines } = await import("../src/graph/custom.js");
  const code = [
    "import torch",                              // 1
    "class Cube(torch.autograd.Function):",      // 2
    "    @staticmethod",                         // 3
    "    def forward(ctx, x):",                  // 4
    "        ctx.save_for_backward(x)",          // 5
    "        return x ** 3",                     // 6
    "",                                          // 7
    "    @staticmethod",                         // 8
    "    def backward(ctx, grad):",              // 9
    "        (x,) = ctx.saved_tensors",          // 10
    "",                                          // 11
    "        return grad * x ** 2",              // 12
    "x = torch.ones(2, requires_grad=True)",     // 13
  ].join("\n");
  assert.deepEqual(backwardLines(code, "CubeBackward"), [9, 10, 12]);
  assert.deepEqual(backwardLines(code, "SquareBackward"), []);
});

test("a module's parameter also offers every parameter", () => {
  assert.equal(isParameter({ kind: "tensor", role: "leaf", name: "model.0.weight" }), true);
  assert.equal(isParameter({ kind: "tensor", role: "leaf", name: "x" }), false);
  assert.equal(isParameter({ kind: "function", name: "AccumulateGrad" }), false);
});

test("only a Function the snippet defines is the user's code", () => {
  const code = "import torch\nclass Cube(torch.autograd.Function):\n    pass\n";
  assert.equal(isCustomFunction({ kind: "function", name: "CubeBackward" }, code), true);
  assert.equal(isCustomFunction({ kind: "function", name: "UndefinedGradBackward" }, code), false);
  assert.equal(isCheckable({ kind: "function", name: "UndefinedGradBackward" }, code), false);
  assert.equal(isCustomFunction({ kind: "function", name: "CubeBackward" }), true); // no code: the name alone
});

test("the pass chooser names each pass with its line and iteration, and a result says which it checked", () => {
  const doc = { passes: [{ index: 0, line: 7 }, { index: 1, line: 9 }, { index: 2, line: 7 }] };
  assert.deepEqual(passChoices(doc).map((c) => c.label), ["backward 1 · line 7 · iteration 1", "backward 2 · line 9 · iteration 1", "backward 3 · line 7 · iteration 2"]);
  assert.equal(passLine({ pass_index: 2, pass_count: 3, pass_line: 7, iteration: 2 }), "checked backward 3 of 3 (line 7, iteration 2)");
  assert.equal(passLine({ pass_index: 0 }), "checked backward 1");
});

test("a non-finite gradient is its own state in the grid, never a fail", () => {
  const result = { worst: 0, tensors: [{ name: "x" }], elements: [{ tensor: 0, index: [0], analytic: "nan", numeric: 0, left: 0, right: 0, abs_error: "nan", rel_error: "nan", ok: false, kink: false, nonfinite: true }] };
  const [row] = gridRows(result);
  assert.equal(row.state, "nonfinite");
  assert.match(row.detail, /non-finite gradient \(not judged\)/);
});
