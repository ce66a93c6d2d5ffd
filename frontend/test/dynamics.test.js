// The dynamics panel's pure parts (src/ui/dynamics.js, src/ui/dynamics-draw.js): module filter,
// iteration of a step, axis ranges, NaN/Inf strings.
import assert from "node:assert/strict";
import { test } from "node:test";
import { iterAt, num, rangeOf, ticks, xOf } from "../src/ui/dynamics-draw.js";
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

test("a log axis is labelled at whole decades as the numbers they stand for, at most five", () => {
  assert.deepEqual(ticks(-2.4, 0.1, true), [[-2, "1e-2"], [-1, "1e-1"], [0, "1"]]);
  assert.deepEqual(ticks(-42.3, 0.7, true).map(([y]) => y), [-40, -30, -20, -10, 0]);
  assert.ok(ticks(-42.3, 0.7, true).length <= 5);
  assert.deepEqual(ticks(-0.9, 1.6, true).map(([, l]) => l), ["1", "10"]);
  const inside = ticks(-1.4, -1.1, true);  // inside one decade: its two ends, as numbers
  assert.deepEqual(inside.map(([y]) => y), [-1.4, -1.1]);
  assert.deepEqual(inside.map(([, l]) => l), ["0.04", "0.079"]);
  assert.deepEqual(ticks(-1.49, -0.005, true).map(([, l]) => l), ["0.032", "1e-1", "0.989"]);  // one decade inside
  assert.deepEqual(ticks(-1.05, -0.005, true).map(([, l]) => l), ["1e-1", "0.989"]);  // an end beside it is left out
});

test("a linear axis has round steps inside its range", () => {
  assert.deepEqual(ticks(0.02, 0.61, false).map(([, l]) => l), ["0.2", "0.4", "0.6"]);
  assert.deepEqual(ticks(-0.05, 1.05, false).map(([y]) => y), [0, 0.5, 1]);
  for (const [lo, hi] of [[0.02, 0.61], [-3, 7], [1e-5, 3e-5], [-0.05, 1.05]]) {
    const t = ticks(lo, hi, false);
    assert.ok(t.length >= 2 && t.length <= 5, `${lo}..${hi}: ${t.length}`);
    assert.ok(t.every(([y]) => y >= lo - 1e-12 && y <= hi + 1e-12));
  }
});
