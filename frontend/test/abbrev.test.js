// Short forms of labels for the zoomed-out graph (src/analysis/abbrev.js).
import { test } from "node:test";
import assert from "node:assert/strict";
import { abbreviations } from "../src/analysis/abbrev.js";

test("an op loses its Backward suffix, then letters, always marked with …", () => {
  assert.deepEqual(abbreviations("AddmmBackward0"), ["Addmm…", "Add…", "A…", "A"]);
  assert.deepEqual(abbreviations("NativeLayerNormBackward0"), ["NativeLayerNorm…", "Native…", "Nat…", "N…", "N"]);
  assert.deepEqual(abbreviations("MulBackward0"), ["Mul…", "M…", "M"]);
});

test("a dotted name keeps its numbers and its last segment longest", () => {
  assert.deepEqual(abbreviations("model.0.weight"), ["m.0.weight", "m.0.w", "weight", "0.w", "w"]);
  assert.deepEqual(abbreviations("G.2"), []);
  assert.deepEqual(abbreviations("encoder.layers.0"), ["e.l.0"]);
  assert.deepEqual(abbreviations("layers × 6"), ["layers×6", "l×6"]);
});

test("short and empty labels have no shorter form than themselves", () => {
  assert.deepEqual(abbreviations("x"), []);
  assert.deepEqual(abbreviations(""), []);
  assert.deepEqual(abbreviations("loss"), []);
  assert.deepEqual(abbreviations("output"), ["out…", "o…", "o"]);
  for (const l of ["AddmmBackward0", "model.0.weight", "layers × 6", "output"]) {
    for (const a of abbreviations(l)) assert.ok(a.length < l.length, `${a} is shorter than ${l}`);
  }
});
