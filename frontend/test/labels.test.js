// Label placement (src/render/labels.js): no overlap, nothing outside the viewport, ≥ 9 px.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ellipsize, intersects, placeLabels } from "../src/render/labels.js";

const item = (x, y, extra = {}) => ({ w: 40, h: 12, px: 11, candidates: [[x, y]], ...extra });

test("a label that would cover a placed one moves to its next candidate or is dropped", () => {
  const placed = placeLabels([item(10, 10), { ...item(20, 12), candidates: [[20, 12], [20, 30]] }, item(15, 14)], [], 200, 100);
  assert.equal(placed.length, 2);
  assert.deepEqual([placed[1].x, placed[1].y], [20, 30]);
  for (let i = 0; i < placed.length; i++) for (let j = i + 1; j < placed.length; j++) assert.ok(!intersects(placed[i], placed[j]));
});

test("labels below 9 px are never placed, and none leaves the viewport", () => {
  assert.equal(placeLabels([item(10, 10, { px: 8.9 })], [], 200, 100).length, 0);
  assert.equal(placeLabels([item(180, 10)], [], 200, 100).length, 0);
  const clamped = placeLabels([item(180, 95, { clamp: true })], [], 200, 100);
  assert.deepEqual([clamped[0].x, clamped[0].y], [158, 86]);  // 2 px clear of the edges
});

test("a node's own box is no obstacle for its label; other nodes' boxes are", () => {
  const boxes = [{ x: 0, y: 0, w: 60, h: 30, owner: 1 }, { x: 70, y: 0, w: 60, h: 30, owner: 2 }];
  const placed = placeLabels([item(5, 5, { owner: 1 }), item(75, 5, { owner: 1 }), item(5, 40)], boxes, 300, 100);
  assert.deepEqual(placed.map((p) => p.x), [5, 5]);
});

test("many edge labels in a crowd never overlap", () => {
  const items = [];
  for (let i = 0; i < 200; i++) {
    const x = (i * 37) % 300, y = (i * 53) % 200;
    items.push({ w: 30 + (i % 5) * 8, h: 13, px: 10, candidates: [[x, y], [x + 20, y], [x, y + 15]] });
  }
  const placed = placeLabels(items, [], 400, 260);
  assert.ok(placed.length > 20);
  for (let i = 0; i < placed.length; i++) {
    for (let j = i + 1; j < placed.length; j++) assert.ok(!intersects(placed[i], placed[j]), `${i} ${j}`);
    assert.ok(placed[i].x >= 0 && placed[i].y >= 0 && placed[i].x + placed[i].w <= 400 && placed[i].y + placed[i].h <= 260);
  }
});

test("a title too wide for its box is shortened in its longest word, keeping its numbers", () => {
  const measure = (s) => 6 * [...s].length;  // 6 px a character
  const title = "TransformerEncoderLayer 1–3 of 6";
  assert.equal(ellipsize(title, 6 * title.length, measure), title);
  const short = ellipsize(title, 150, measure);
  assert.ok(measure(short) <= 150, short);
  assert.match(short, /^Transformer\S*… 1–3 of 6$/);
  // No word long enough to give: cut at the end of a word; too little left to read: nothing.
  assert.equal(ellipsize("calls 1–36 of GRU", 60, measure), "calls…");
  assert.equal(ellipsize(title, 20, measure), null);
});
