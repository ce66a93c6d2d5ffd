// A scalar is never shown without its sign (src/graph/values.js): a 50-iteration hand-written
// SGD loop whose scalar gradients lost their values to the document's values budget (a
// 900-element weight spends it first) shows each of them signed, as its stats hold it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fmtNum, fmtTensorShort } from "../src/graph/values.js";

const doc = JSON.parse(readFileSync(new URL("./fixtures/findings_sgd_scalars.json", import.meta.url), "utf8"));

function scalars() {
  const out = [];
  for (const ev of doc.events) {
    for (const tv of [...(ev.grad_inputs || []), ...(ev.grad_outputs || []), ev.grad]) if (tv && tv.shape.length === 0) out.push(tv);
  }
  for (const n of doc.graph.nodes) for (const tv of [n.grad, ...(n.grad_history || [])]) if (tv && tv.shape.length === 0) out.push(tv);
  return out;
}

test("every scalar gradient of the SGD loop shows its sign", () => {
  const all = scalars();
  const withoutValues = all.filter((tv) => tv.values == null);
  assert.ok(withoutValues.length >= 450, `${withoutValues.length} scalars without values`);
  assert.ok(withoutValues.some((tv) => tv.stats.mean < 0));
  for (const tv of all) {
    const text = fmtTensorShort(tv);
    const value = tv.values ?? tv.stats.mean;
    assert.equal(text, fmtNum(value));
    assert.ok(!text.includes("‖"));
    assert.equal(text.startsWith("-"), value < 0, text);
  }
});

test("one element in a shape shows its signed value, bigger tensors their norm", () => {
  const one = { shape: [1, 1], dtype: "float32", values: null, stats: { min: -34.85, max: -34.85, mean: -34.85, norm: 34.85 } };
  assert.equal(fmtTensorShort(one), "[-34.85] 1×1");
  assert.equal(fmtTensorShort(one, 4, false), "-34.85");
  const two = { shape: [2], dtype: "float32", values: null, stats: { min: -3, max: -1, mean: -2, norm: 3.162 } };
  assert.equal(fmtTensorShort(two), "‖3.162‖ 2");
});
