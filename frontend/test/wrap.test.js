// A long layered layout cut into columns shaped like the view (src/render/wrap.js).
import { test } from "node:test";
import assert from "node:assert/strict";
import { WRAP_MIN, columnsFor, wrapLayout } from "../src/render/wrap.js";

/** A chain of n boxes 100×30, one per rank 70 px apart, top to bottom (layout/layered.js's shape). */
function chain(n, direction = "TB") {
  const long = Float64Array.from({ length: n }, (_, i) => 15 + 70 * i), cross = new Float64Array(n).fill(50);
  const points = Array.from({ length: n - 1 }, (_, i) => (direction === "TB" ? [50, long[i] + 15, 50, long[i + 1] - 15] : [long[i] + 15, 50, long[i + 1] - 15, 50]));
  const sizes = Array.from({ length: n }, () => (direction === "TB" ? { w: 100, h: 30 } : { w: 30, h: 100 }));
  const L = 70 * (n - 1) + 30;
  return direction === "TB"
    ? { layout: { x: cross, y: long, width: 100, height: L, points, direction }, sizes }
    : { layout: { x: long, y: cross, width: L, height: 100, points, direction }, sizes };
}

test("a strip much longer than the view is cut into columns that fill its width", () => {
  const { layout, sizes } = chain(88);
  const before = Math.min(570 / layout.width, 450 / layout.height);
  wrapLayout(layout, sizes, { w: 570, h: 450 });
  assert.ok(layout.columns >= 2, `columns ${layout.columns}`);
  const after = Math.min(570 / layout.width, 450 / layout.height);
  assert.ok(after >= 1.8 * before, `zoom to fit ${before} → ${after}`);
  // every node inside the new extent, no two overlapping
  for (let i = 0; i < 88; i++) {
    assert.ok(layout.y[i] - 15 >= -1e-9 && layout.y[i] + 15 <= layout.height + 1e-9);
    assert.ok(layout.x[i] - 50 >= -1e-9 && layout.x[i] + 50 <= layout.width + 1e-9);
  }
  const seen = new Set(Array.from(layout.x, (x, i) => `${Math.round(x)},${Math.round(layout.y[i])}`));
  assert.equal(seen.size, 88);
  // an edge still starts at its source and ends at its target
  for (let e = 0; e < 87; e++) {
    const p = layout.points[e];
    assert.ok(Math.abs(p[0] - layout.x[e]) < 1e-6 && Math.abs(p[p.length - 2] - layout.x[e + 1]) < 1e-6, `edge ${e}`);
  }
});

test("left to right, a line becomes rows", () => {
  const { layout, sizes } = chain(88, "LR");
  wrapLayout(layout, sizes, { w: 570, h: 450 });
  assert.ok(layout.columns >= 3, `rows ${layout.columns}`);
  assert.ok(layout.height > 3 * 100 && layout.width < 70 * 88 / 2);
});

test("small graphs and strips shaped like the view stay whole", () => {
  const small = chain(WRAP_MIN - 1);
  wrapLayout(small.layout, small.sizes, { w: 570, h: 450 });
  assert.equal(small.layout.columns, 1);
  assert.equal(columnsFor(450, 570, 570 / 450), 1);
  assert.equal(columnsFor(4000, 900, 570 / 450), 2);
});
