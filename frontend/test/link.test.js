// Share links carry the view (src/app/link.js): step, selection, folds, camera, mode.
import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeView, encodeView, hasView } from "../src/app/link.js";

test("a view survives a round trip through the link's query", () => {
  const q = encodeView({
    step: 12, N: 40, sel: "n34", open: ["unit:0:2", "units:1"],
    collapsed: new Set(["enc", "dec.layers.1"]), defaults: new Set(["enc", "enc.layers.0", "dec"]),
    repeats: ["enc.layers"], cam: { x: 100, y: 50, k: 0.5 }, size: { w: 600, h: 400 }, mode: "present",
  });
  const back = decodeView(`?${q}`);
  assert.equal(back.step, 12);
  assert.equal(back.sel, "n34");
  assert.deepEqual(back.open, ["unit:0:2", "units:1"]);
  assert.deepEqual(back.expand.sort(), ["dec", "enc.layers.0"]);
  assert.deepEqual(back.collapse, ["dec.layers.1"]);
  assert.deepEqual(back.repeats, ["enc.layers"]);
  assert.deepEqual(back.cam, { cx: 700, cy: 450, k: 0.5 });  // the centre of the view, in the world
  assert.equal(back.mode, "present");
  assert.ok(hasView(back));
});

test("the end of the run and the default folds write nothing", () => {
  const q = encodeView({ step: 40, N: 40, collapsed: new Set(["a"]), defaults: new Set(["a"]) });
  assert.equal(q.toString(), "");
  const v = decodeView("");
  assert.equal(v.step, null);
  assert.ok(!hasView(v));
});

test("malformed parameters are left out, never an error", () => {
  const v = decodeView("?step=-3&cam=1,2&mode=weird&fold=,,&open=");
  assert.equal(v.step, null);
  assert.equal(v.cam, null);
  assert.equal(v.mode, null);
  assert.deepEqual([v.open, v.expand, v.collapse], [[], [], []]);
  assert.equal(decodeView("?cam=1,2,0").cam, null);
  assert.equal(decodeView("?cam=1,x,2").cam, null);
});
