// The page model (src/app/model.js) and the folds and moves over it (src/app/folds.js,
// src/app/navigate.js, src/app/link.js): pure functions, run here in Node on recorded lessons
// (fixtures/words_*.json) without a page. Each move answers a change; nothing is applied here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { clickBox, openGroup, toggleModule, toggled } from "../src/app/folds.js";
import { decodeView, foldsOf, linkQuery } from "../src/app/link.js";
import { initialState, pageModel } from "../src/app/model.js";
import { followUnits, jump, pickUnit, reveal } from "../src/app/navigate.js";
import { viewOf } from "../src/app/pipeline.js";
import { emptyViewState } from "../src/app/state.js";

const load = (name) => JSON.parse(readFileSync(new URL(`./fixtures/${name.includes("_lm") ? "" : "words_"}${name}.json`, import.meta.url), "utf8"));
const stateOf = (model, extra = {}) => ({ ...emptyViewState(), ...initialState(model), ...extra });

test("the model is a function of the document: built twice, it says the same", () => {
  const doc = load("loop_gru");
  const a = pageModel(doc), b = pageModel(doc);
  assert.equal(a.N, a.timeline.N);
  assert.equal(a.k0, a.N);
  assert.deepEqual([...a.defaults].sort(), [...b.defaults].sort());
  assert.deepEqual(a.openUnits, b.openUnits);
  assert.deepEqual(a.errors.nodes, b.errors.nodes);
  assert.ok(a.index.nodes.length > 20 && a.tree.mods.size > 0 && a.levels.length > 0);
  assert.equal(pageModel(doc, { step: 3 }).k0, 3);
  assert.equal(pageModel(doc, { step: 10 ** 9 }).k0, a.N);
});

test("folding a module and clicking its box title answer the same change, and toggled() makes a new Set", () => {
  const model = pageModel(load("definitions_tiny_lm"));
  const st = stateOf(model);
  const path = [...model.tree.mods.keys()][0];
  const change = toggleModule(st, path);
  assert.equal(change.layout, "keep");
  assert.equal(change.keepSelection, true);
  assert.equal(change.set.collapsed.has(path), !st.collapsed.has(path));
  assert.notEqual(change.set.collapsed, st.collapsed);
  assert.deepEqual(clickBox(st, `${path}@2`), change);
  assert.deepEqual(clickBox({ ...st, open: new Set(["unit:0:1"]) }, "unit:0:1").set.open, new Set());
  assert.deepEqual(toggled(new Set(["a"]), "a", true), new Set(["a"]));
});

test("a folded module opened from the view unfolds, and the view built after shows more nodes", () => {
  const model = pageModel(load("definitions_tiny_lm"));
  const path = [...model.tree.mods.keys()].find((p) => model.tree.mods.get(p).count > 1);
  const st = stateOf(model, { collapsed: new Set([path]) });
  const view = viewOf(model, st);
  const v = view.vnodes.findIndex((n) => n.kind === "group" && n.module === path);
  assert.ok(v >= 0, "the folded module is drawn as one box");
  const change = openGroup(st, view, v);
  assert.equal(change.set.collapsed.has(path), false);
  assert.ok(viewOf(model, { ...st, ...change.set }).vnodes.length > view.vnodes.length);
});

test("revealing a node folded in another call goes to its step and opens its call, with one layout", () => {
  const model = pageModel(load("loop_gru"));
  const st = stateOf(model);
  const view = viewOf(model, st);
  const folded = (ref) => view.vnodes[view.byRef[ref][0]].kind === "group";
  const hidden = model.index.nodes.findIndex((_, ref) => (view.byRef[ref] || []).length && folded(ref));
  assert.ok(hidden >= 0, "some node is folded away");
  const change = reveal(model, st, hidden, view);
  assert.equal(change.layout, "keep");
  assert.deepEqual(change.stats, { opened: change.stats.opened, layouts: 1 });
  assert.equal(change.go, Math.max(1, model.timeline.reveal[hidden]));
  assert.notDeepEqual(change.set.openUnits, st.openUnits);
  assert.ok(change.view.vnodes[change.v].refs.includes(hidden));
  assert.equal(change.view.vnodes[change.v].kind === "group", false);
  const shown = model.index.nodes.findIndex((_, ref) => (view.byRef[ref] || []).length && !folded(ref));
  assert.deepEqual(reveal(model, st, shown, view), { v: view.byRef[shown][0], stats: { opened: 0, layouts: 0 } });
});

test("jumps go to the next pass start; a loop's units follow the step and the picker goes to a unit's forward end", () => {
  const model = pageModel(load("09_accumulating_grads"));
  const st = stateOf(model, { step: 0 });
  const next = jump(model, st, "pass").go;
  assert.ok(next > 0 && next <= model.N);
  assert.ok(jump(model, { ...st, step: next }, "pass", true).go < next);
  if (!model.levels.length) return;
  const lv = model.levels[0];
  assert.equal(followUnits({ ...st, step: model.N }, model.N), null, "at the end the last unit is already open");
  const change = followUnits({ ...st, openUnits: model.levels.map(() => -1) }, model.N);
  assert.ok(change && change.layout === "fresh" && change.k === model.N);
  assert.deepEqual(pickUnit(st, 0), { go: lv.units[0].forwardEnd || lv.units[0].lastStep });
  assert.equal(pickUnit(st, lv.count + 5), null);
});

test("a link carries the folds changed from the default, and reading it back gives the same folds", () => {
  const model = pageModel(load("definitions_tiny_lm"));
  const path = [...model.tree.mods.keys()][0];
  const st = stateOf(model, { collapsed: toggled(model.defaults, path), step: 2 });
  const query = linkQuery(model, st, { sel: model.index.nodes[0], mode: "present" });
  const view = decodeView(`?${query}`);
  assert.equal(view.step, 2);
  assert.equal(view.sel, model.index.nodes[0].id);
  assert.equal(view.mode, "present");
  assert.deepEqual([...foldsOf(view, model.defaults, model.tree).collapsed].sort(), [...st.collapsed].sort());
});
