// The dynamics panel's pure parts (src/ui/dynamics.js, src/ui/dynamics-draw.js): module filter,
// iteration of a step, axis ranges, NaN/Inf strings.
import assert from "node:assert/strict";
import { test } from "node:test";
import { iterAt, num, rangeOf, xOf } from "../src/ui/dynamics-draw.js";
import { iterationAt, modulesOf, summaryOf, within } from "../src/ui/dynamics.js";

const DYN = {
  params: [{ module: "model.0" }, { module: "model.2" }, { module: null }],
  layers: [{ module: "model.1" }, { module: "enc.blocks.3.act" }],
};

test("the filter offers every module and its ancestors, and keeps what is inside the picked one", () => {
  assert.deepEqual(modulesOf(DYN), ["enc", "enc.blocks", "enc.blocks.3", "enc.blocks.3.act", "model", "model.0", "model.1", "model.2"]);
  assert.ok(within("model.2", "model") && within("model.2", "model.2") && within("model.2", ""));
  assert.ok(!within("model.20", "model.2") && !within(null, "model") && within(null, ""));
});

test("a step belongs to the first iteration whose backward ends at or after it", () => {
  const ends = [10, 20, 30];
  assert.deepEqual([0, 10, 11, 20, 29, 30, 99].map((k) => iterationAt(ends, k)), [0, 0, 1, 1, 2, 2, 2]);
});

test("NaN and Inf strings are numbers for the charts; ranges skip them", () => {
  assert.ok(Number.isNaN(num("nan")) && num("inf") === Infinity && num("-inf") === -Infinity && num(null) === null);
  assert.deepEqual(rangeOf([[1, "nan", 100, null], ["inf", 10]], 0, 3, Math.log10), [0, 2]);
  assert.deepEqual(rangeOf([[1, 5, 100]], 1, 1), [4.5, 5.5]);  // one value: a unit-wide range around it
  assert.equal(rangeOf([["nan", null]], 0, 1), null);
});

test("a chart's x position and the iteration under it agree", () => {
  for (const i of [0, 6, 19]) assert.equal(iterAt(xOf(i, 20, 400), 20, 400), i);
});

test("the closed panel's line says what it holds: steps, the last update ratios, calls, its hints", () => {
  const dyn = {
    iterations: [0, 1, 2], threshold: 0.97, layers: [],
    params: [{ update: [-1.2, -2.6, -2.9] }, { update: [null, "-inf", -2.2] }, { update: ["nan", -1.1, null] }],
  };
  const hints = [{ code: "update-ratio-high" }, { code: "grad-accumulated" }];
  assert.equal(summaryOf(dyn, hints), "Dynamics: 3 steps, update ratio 1e-3..1e-1, 1 hint");
  const gru = { iterations: [0], threshold: 0.97, params: [], layers: [],
    calls: [{ module: "cell", pass: 0, calls: [0, 1, 2], grad_norm: [1.03e-42, 0, 4] }] };
  assert.equal(summaryOf(gru, [{ code: "gradients-vanish" }, { code: "gradients-vanish" }]),
    "Dynamics: 3 calls of cell, ‖grad‖ 1e-42..4, 2 hints");
});
