/**
 * Groups that follow how the program ran: loop iterations and module calls, as "levels" of
 * repeated units, outermost first. Pure data over an indexed document and its timeline; no DOM.
 *
 * NOTE [where units come from]
 *   1. Iterations of a training loop: one per backward pass (passes run inside another pass
 *      excluded), when there are two or more. An iteration is everything from the end of the
 *      previous pass to the end of its own pass.
 *   2. Calls of a module called many times (an RNN cell unrolled 200 times): from
 *      `Node.module_stack` (the capture records the call index).
 *   3. Otherwise, iterations of a loop found from lines revisited: the forward events' lines
 *      jump back to the loop's first line once per iteration.
 *   Shared nodes (parameters, their AccumulateGrad, inputs made before the loop) belong to no
 *   unit: they stay drawn while the units around them are folded.
 *
 * A level is {kind, label, count, unitOf: Int32Array (node → unit or −1), units: [{index,
 * firstStep, forwardEnd, lastStep, nodes}]}. graph/units.js answers which unit of
 * each level is current at step k: the unit of the latest event at or before k on a node of
 * that level (the first unit before any).
 */

const MIN_UNITS = 2;

/** Every level of repeated units in the run, outermost first (may be empty). */
export function runLevels(index, timeline, tree = null) {
  const levels = [];
  const iters = passIterations(index, timeline);
  if (iters) levels.push(iters);
  const calls = moduleCalls(index, levels[0] || null);
  if (calls) levels.push(calls);
  else if (tree) {
    const blocks = repeatedBlocks(index, tree);
    if (blocks) levels.push(blocks);
  }
  if (!levels.length) {
    const loop = lineIterations(index, timeline);
    if (loop) levels.push(loop);
  }
  for (const lv of levels) finishLevel(lv, index, timeline);
  // A unit of an inner level lies in one unit of the level above (where most of its nodes are).
  for (let l = 1; l < levels.length; l++) {
    const up = levels[l - 1];
    levels[l].outer = levels[l].units.map((unit) => {
      const tally = new Map();
      for (const i of unit.nodes) tally.set(up.unitOf[i], (tally.get(up.unitOf[i]) || 0) + 1);
      let best = -1, most = 0;
      for (const [u, c] of tally) if (c > most) { best = u; most = c; }
      return best;
    });
  }
  return levels;
}

/** Nodes shared by every unit: leaves, AccumulateGrad, and cut tensors. */
export function isShared(index, i) {
  const kind = index.kind[i];
  return kind === "acc" || kind === "leaf" || kind === "retained";
}

function passIterations(index, timeline) {
  // A pass run inside another (`BackwardPass.within`: a reentrant checkpoint's recomputation)
  // is part of that pass's iteration, not one of its own.
  const inner = new Set(((index.doc && index.doc.passes) || []).filter((p) => p.within != null).map((p) => p.index));
  const segs = timeline.segments.filter((s) => s.phase === "backward" && !inner.has(s.pass));
  const passes = [...new Set(segs.map((s) => s.pass))];
  if (passes.length < MIN_UNITS) return null;
  // Iteration j ends where pass j ends; step → iteration by binary search over the ends.
  const ends = passes.map((p) => Math.max(...segs.filter((s) => s.pass === p).map((s) => s.end)));
  const unitOf = new Int32Array(index.nodes.length).fill(-1);
  index.nodes.forEach((_, i) => {
    if (isShared(index, i)) return;
    const r = timeline.reveal[i];
    if (!(r >= 1)) return;
    let u = ends.findIndex((e) => r <= e);
    if (u < 0) u = ends.length - 1;
    unitOf[i] = u;
  });
  // Two passes that do different things (a double backward) are no training loop.
  if (!repeats(index, unitOf, ends.length)) return null;
  const passUnit = new Map(passes.map((p, u) => [p, u]));
  for (const p of (index.doc && index.doc.passes) || []) if (p.within != null && passUnit.has(p.within)) passUnit.set(p.index, passUnit.get(p.within));
  return { kind: "iteration", label: "iteration", count: ends.length, unitOf, passUnit, ends };
}

/** Calls of the module with the most repeated calls (`Node.module_stack`), within each unit of `outer` when given. */
function moduleCalls(index, outer) {
  const info = new Map(((index.doc && index.doc.modules) || []).map((m) => [m.path, m]));
  const byPath = new Map();
  index.nodes.forEach((n, i) => {
    if (isShared(index, i) || !index.module[i]) return;
    for (const mc of n.module_stack || []) {
      if (!byPath.has(mc.path)) byPath.set(mc.path, new Map());
      const calls = byPath.get(mc.path);
      if (!calls.has(mc.call)) calls.set(mc.call, []);
      calls.get(mc.call).push(i);
    }
  });
  // The outermost module path with the most calls (ties: the one covering more nodes).
  let best = null;
  for (const [path, calls] of byPath) {
    if (calls.size < MIN_UNITS) continue;
    // Inside a training iteration a module called once per iteration is no deeper level.
    if (outer && calls.size <= outer.count) continue;
    const covered = [...calls.values()].reduce((s, l) => s + l.length, 0);
    const depth = path.split(".").length;
    if (!best || depth < best.depth || (depth === best.depth && covered > best.covered)) best = { path, calls, covered, depth };
  }
  if (!best) return null;
  const unitOf = new Int32Array(index.nodes.length).fill(-1);
  const type = info.get(best.path)?.type || best.path.slice(best.path.lastIndexOf(".") + 1);
  // NOTE [several models, one picker]: two models of one snippet trained one after the other
  // (the same network with and without batch norm) have as many calls each. Units of one of
  // them only left the other's calls all open beside the picked one, while the picker named
  // one model: their calls are one sequence of units, in the order the run made them, each
  // named by its own model ("model_nobn call 2 of 3").
  const peers = [best];
  for (const [path, calls] of byPath) {
    if (path === best.path || calls.size !== best.calls.size || path.split(".").length !== best.depth) continue;
    if (outer && calls.size <= outer.count) continue;
    if (!apart(calls, peers)) continue;
    peers.push({ path, calls });
  }
  if (peers.length > 1) {
    const all = [];
    for (const p of peers) for (const [c, nodes] of p.calls) all.push({ path: p.path, call: c, of: p.calls.size, nodes, first: Math.min(...nodes) });
    all.sort((a, b) => a.first - b.first);
    all.forEach((x, u) => { for (const i of x.nodes) unitOf[i] = u; });
    const names = all.map((x) => ({ path: x.path, call: [...peers.find((p) => p.path === x.path).calls.keys()].sort((a, b) => a - b).indexOf(x.call), of: x.of }));
    return { kind: "call", label: peers.map((p) => p.path).join(" and "), names, type, path: best.path, count: all.length, unitOf };
  }
  const order = [...best.calls.keys()].sort((a, b) => a - b);
  order.forEach((c, u) => { for (const i of best.calls.get(c)) unitOf[i] = u; });
  // NOTE [naming the instance]: a call is named by the module's path, the snippet's own name
  // for it ("net call 2 of 3", "D call 2 of 3", "cell call 37 of 200"), never by its type:
  // "Sequential call 2 of 3" says nothing when G and D are both Sequential, and a run that
  // named one module by its type and another by its variable read as two kinds of name.
  return { kind: "call", label: best.path, type, path: best.path, count: order.length, unitOf };
}

/** Whether a module's calls happen wholly before or after each of `peers`' (no interleaving). */
function apart(calls, peers) {
  const span = (m) => { let lo = Infinity, hi = -Infinity; for (const l of m.values()) for (const i of l) { lo = Math.min(lo, i); hi = Math.max(hi, i); } return [lo, hi]; };
  const [a0, a1] = span(calls);
  return peers.every((p) => { const [b0, b1] = span(p.calls); return a1 < b0 || b1 < a0; });
}

/**
 * NOTE [repeated blocks as units]: a stack of identical blocks (`layers.0` … `layers.5` of a
 * TransformerEncoder, graph/modules.js finds them) is a level too: the block active at the
 * step is drawn open, its attention and feed-forward as module boxes, the others folded on
 * both sides. Each block's own parameters belong to it (they are not shared between blocks).
 */
function repeatedBlocks(index, tree) {
  let best = null;
  for (const [parent, blocks] of tree.repeats) {
    const covered = blocks.reduce((sum, b) => sum + tree.mods.get(b).count, 0);
    if (!best || blocks.length > best.blocks.length || (blocks.length === best.blocks.length && covered > best.covered)) best = { parent, blocks, covered };
  }
  if (!best) return null;
  const unitOf = new Int32Array(index.nodes.length).fill(-1);
  const at = new Map(best.blocks.map((b, u) => [b, u]));
  index.module.forEach((path, i) => {
    if (!path) return;
    for (let p = path; p; p = p.lastIndexOf(".") > 0 ? p.slice(0, p.lastIndexOf(".")) : null) {
      if (at.has(p)) { unitOf[i] = at.get(p); return; }
    }
  });
  const info = new Map(((index.doc && index.doc.modules) || []).map((m) => [m.path, m]));
  const type = info.get(best.blocks[0])?.type || best.parent.slice(best.parent.lastIndexOf(".") + 1);
  return { kind: "block", label: type, path: best.parent, blocks: best.blocks, count: best.blocks.length, unitOf };
}

function lineIterations(index, timeline) {
  const ev = timeline.events;
  const fwd = [];
  ev.forEach((e, j) => { if (e.phase === "forward" && e.line != null) fwd.push(j); });
  const jumps = [];
  for (let a = 1; a < fwd.length; a++) {
    const l0 = ev[fwd[a - 1]].line, l1 = ev[fwd[a]].line;
    if (l1 < l0) jumps.push([a, l1, l0]);
  }
  if (jumps.length < MIN_UNITS - 1) return null;
  const head = Math.min(...jumps.map((j) => j[1]));
  const tail = Math.max(...jumps.map((j) => j[2]));
  const unitOf = new Int32Array(index.nodes.length).fill(-1);
  let u = -1, prev = Infinity;
  for (const j of fwd) {
    const line = ev[j].line;
    const inLoop = line >= head && line <= tail;
    if (!inLoop) { if (u >= 0 && line > tail) u = -2; prev = line; continue; }
    if (u === -2) break;
    if (u === -1 || line < prev) u++;
    prev = line;
    const i = timeline.evNode[j];
    if (!isShared(index, i) && unitOf[i] === -1) unitOf[i] = u;
  }
  const count = Math.max(-1, ...unitOf) + 1;
  if (count < MIN_UNITS || !repeats(index, unitOf, count)) return null;
  return { kind: "iteration", label: "iteration", count, unitOf };
}

/**
 * NOTE [a loop repeats itself]: lines revisited (or backward passes) are a loop only when the
 * iterations do the same ops each time. Recursion (lesson 11) also jumps back to earlier lines, with a different op
 * sequence each time; folding it would hide the tree it builds. At least 3 in 4 units (the
 * first may set things up) must share one op sequence.
 */
function repeats(index, unitOf, count) {
  const seqs = Array.from({ length: count }, () => []);
  unitOf.forEach((u, i) => { if (u >= 0) seqs[u].push(index.nodes[i].name || ""); });
  const tally = new Map();
  for (const s of seqs.slice(1)) { const key = s.join("|"); tally.set(key, (tally.get(key) || 0) + 1); }
  const best = Math.max(...tally.values());
  // With two units there is no majority to ask: they must match.
  if (count === 2) return seqs[0].join("|") === seqs[1].join("|");
  return best >= MIN_UNITS - 1 && best >= 0.75 * (count - 1);
}

/** Per unit: its nodes and where its events lie on the timeline; per step: the current unit. */
function finishLevel(lv, index, timeline) {
  lv.units = Array.from({ length: lv.count }, (_, u) => ({ index: u, nodes: [], firstStep: Infinity, forwardEnd: 0, lastStep: 0 }));
  lv.unitOf.forEach((u, i) => { if (u >= 0) lv.units[u].nodes.push(i); });
  lv.sizes = lv.units.map((unit) => unit.nodes.length);
  const at = new Int32Array(timeline.N + 1);
  let cur = 0;
  at[0] = 0;
  for (let k = 1; k <= timeline.N; k++) {
    const j = k - 1;
    let u = lv.unitOf[timeline.evNode[j]];
    // An event on a shared node (a parameter's AccumulateGrad, made in the first forward and
    // run in every pass) belongs to the iteration under way: the first whose pass ends at or after it.
    if (u < 0 && lv.ends) { u = lv.ends.findIndex((e) => k <= e); if (u < 0) u = lv.ends.length - 1; }
    if (u >= 0) {
      cur = u;
      const unit = lv.units[u];
      unit.firstStep = Math.min(unit.firstStep, k);
      unit.lastStep = Math.max(unit.lastStep, k);
      if (timeline.events[j].phase === "forward") unit.forwardEnd = Math.max(unit.forwardEnd, k);
    }
    at[k] = cur;
  }
  for (const unit of lv.units) {
    if (unit.firstStep === Infinity) unit.firstStep = 0;
    if (!unit.forwardEnd) unit.forwardEnd = unit.lastStep;
  }
  lv.at = at;
}
