// The dynamics panel's pure parts (src/ui/dynamics.js, src/ui/dynamics-draw.js): module filter,
// iteration of a step, axis ranges, NaN/Inf strings.
import assert from "node:assert/strict";
import { test } from "node:test";
import { iterAt, num, rangeOf, xOf } from "../src/ui/dynamics-draw.js";
import { iterationAt, modulesOf, within } from "../src/ui/dynamics.js";

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
