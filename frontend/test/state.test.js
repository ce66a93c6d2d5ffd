// The view state is the one home of the step (src/app/state.js, src/animate/player.js).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Player } from "../src/animate/player.js";
import { ViewState } from "../src/app/state.js";

test("the player's step is the view state's step, both ways", () => {
  const state = new ViewState();
  const heard = [];
  state.subscribe((st, changed) => { if (changed.includes("step")) heard.push(st.step); });
  const moves = [];
  const player = new Player(state, (k, o) => moves.push([k, o.playing]));
  player.reset(10, [], 10);
  assert.equal(state.get("step"), 10);
  player.step(-1);
  assert.equal(player.k, 9);
  assert.equal(state.get("step"), 9);
  state.set({ step: 4 });  // a panel (or a notebook's trait) moves the step: the player reads it
  assert.equal(player.k, 4);
  player.go(99);
  assert.equal(state.get("step"), 10, "clamped to N");
  assert.deepEqual(heard, [10, 9, 4, 10]);
  assert.ok(!("k" in Object.getOwnPropertyDescriptors(player)), "the player keeps no copy of the step");
});

test("playing lives in the state too; a new document resets it", () => {
  const state = new ViewState();
  const player = new Player(state, () => {});
  player.reset(5, [], 0);
  player.play();
  assert.equal(state.get("playing"), true);
  player.pause();
  assert.equal(state.get("playing"), false);
  state.set({ direction: "LR" });
  assert.equal(state.get("dynamicsOpen"), false, "the dynamics panel opens closed");
  state.set({ dynamicsOpen: true });
  state.reset({ step: 2 });
  assert.equal(state.get("direction"), "LR", "the direction survives a new document");
  assert.equal(state.get("dynamicsOpen"), true, "so does the person's choice to open the dynamics panel");
  assert.equal(state.get("step"), 2);
  assert.throws(() => state.set({ nosuch: 1 }), /unknown view state field/);
});
