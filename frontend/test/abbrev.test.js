// Short forms of labels for the zoomed-out graph (src/analysis/abbrev.js).
import { test } from "node:test";
import assert from "node:assert/strict";
import { abbreviations } from "../src/analysis/abbrev.js";

test("an op keeps a prefix of at least three letters, marked with …", () => {
  assert.deepEqual(abbreviations("AddmmBackward0"), ["Addmm…", "Add…"]);
  assert.deepEqual(abbreviations("NativeLayerNormBackward0"), ["NativeLayerNorm…", "Native…", "Nat…"]);
  assert.deepEqual(abbreviations("MulBackward0"), ["Mul…"]);
});

test("a dotted name keeps its tails, never initials or a bare number", () => {
  assert.deepEqual(abbreviations("model.0.weight"), ["0.weight", "weight", "wei…"]);
  assert.deepEqual(abbreviations("G.2"), []);
  assert.deepEqual(abbreviations("encoder.layers.0"), ["layers.0"]);
  assert.deepEqual(abbreviations("enc.layers.0.self_attn.in_proj_weight"),
    ["layers.0.self_attn.in_proj_weight", "0.self_attn.in_proj_weight", "self_attn.in_proj_weight", "in_proj_weight", "in_…"]);
  assert.deepEqual(abbreviations("layers × 6"), ["layers×6"]);
  assert.deepEqual(abbreviations("enc.layers × 6"), ["enc.layers×6", "layers×6"]);
});

test("a tied parameter keeps its first name and says it is tied", () => {
  assert.deepEqual(abbreviations("emb.weight = proj.weight"), ["emb.weight =…", "weight =…"]);
});

test("no short form is an initial or a single letter", () => {
  const labels = ["AddmmBackward0", "MulBackward0", "model.0.weight", "enc.layers.0.self_attn.in_proj_weight", "emb.weight = proj.weight", "output", "layers × 6"];
  for (const l of labels) {
    for (const a of abbreviations(l)) {
      assert.ok(a.replace(/[…=×\s]/g, "").length >= 3, `${a} (of ${l}) keeps three characters`);
      assert.doesNotMatch(a, /(^|\.)[a-z]\./, `${a} (of ${l}) has no initials`);
    }
  }
});

test("short and empty labels have no shorter form than themselves", () => {
  assert.deepEqual(abbreviations("x"), []);
  assert.deepEqual(abbreviations(""), []);
  assert.deepEqual(abbreviations("loss"), []);
  assert.deepEqual(abbreviations("output"), ["out…"]);
  for (const l of ["AddmmBackward0", "model.0.weight", "layers × 6", "output"]) {
    for (const a of abbreviations(l)) assert.ok(a.length < l.length, `${a} is shorter than ${l}`);
  }
});
