/**
 * Groups that follow how the program ran: loop iterations and module calls, as "levels" of
 * repeated units, outermost first. Pure data over an indexed document and its timeline; no DOM.
 *
 * NOTE [where units come from]
 *   1. Iterations of a training loop: one per backward pass (passes run inside another pass
 *      excluded), when there are two or more. An iteration is everything from the end of the
 *      previous pass to the end of its own pass.
 *   2. Calls of a module called many times (an RNN cell unrolled 200 times): from
 *      `Node.module_stack` (the capture records the call index), or, in documents without it,
 *      from the module's op sequence, which repeats once per call (period detection; a call's
 *      count from `RunDocument.modules[].calls` fixes the period when present).
 *   3. Otherwise, iterations of a loop found from lines revisited: the forward events' lines
 *      jump back to the loop's first line once per iteration.
 *   Shared nodes (parameters, their AccumulateGrad, inputs made before the loop) belong to no
 *   unit: they stay drawn while the units around them are folded.
 *
 * A level is {kind, label, count, unitOf: Int32Array (node → unit or −1), units: [{index,
 * firstStep, forwardEnd, lastStep, nodes}]}. `openAt(levels, timeline, k)` answers which unit of
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

/** Calls of the module with the most repeated calls, within each unit of `outer` when given. */
function moduleCalls(index, outer) {
  const stacks = index.nodes.some((n) => n.module_stack && n.module_stack.length);
  const info = new Map(((index.doc && index.doc.modules) || []).map((m) => [m.path, m]));
  const byPath = new Map();
  index.nodes.forEach((n, i) => {
    if (isShared(index, i) || !index.module[i]) return;
    if (stacks && n.module_stack) {
      for (const mc of n.module_stack) {
        if (!byPath.has(mc.path)) byPath.set(mc.path, new Map());
        const calls = byPath.get(mc.path);
        if (!calls.has(mc.call)) calls.set(mc.call, []);
        calls.get(mc.call).push(i);
      }
    } else if (!stacks) {
      // Without call indices, the module's own nodes in creation order, split by period.
      const p = index.module[i];
      if (!byPath.has(p)) byPath.set(p, new Map([[0, []]]));
      byPath.get(p).get(0).push(i);
    }
  });
  if (!stacks) {
    for (const [path, calls] of byPath) {
      const nodes = calls.get(0);
      const split = splitByPeriod(nodes.map((i) => index.nodes[i].name || ""), info.get(path)?.calls);
      if (!split) { byPath.delete(path); continue; }
      byPath.set(path, new Map(split.map((range, c) => [c, nodes.slice(range[0], range[1])])));
    }
  }
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

/**
 * Split a sequence of op names into repeats of one period: [[start, end), …], or null when
 * it does not repeat. With `calls` known the period is length / calls (a first call may make
 * a few more nodes than the rest, so the remainder goes to the first unit).
 */
export function splitByPeriod(names, calls) {
  const n = names.length;
  if (n < 2 * MIN_UNITS) return null;
  const tryPeriod = (p, head) => {
    for (let i = head; i + p < n; i++) if (names[i] !== names[i + p]) return false;
    return (n - head) % p === 0;
  };
  let period = 0, head = 0;
  if (calls && calls >= MIN_UNITS && n >= calls) {
    const p = Math.floor(n / calls);
    const h = n - p * calls;
    if (tryPeriod(p, h)) { period = p; head = h; }
  }
  if (!period) {
    for (let p = 1; p <= n / MIN_UNITS; p++) if (tryPeriod(p, 0)) { period = p; break; }
  }
  if (!period || (n - head) / period < MIN_UNITS) return null;
  const out = [];
  for (let s = head; s < n; s += period) out.push([out.length ? s : 0, s + period]);
  return out;
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

/** The open unit of each level at step k. */
export function openAt(levels, k) {
  return levels.map((lv) => lv.at[Math.max(0, Math.min(k, lv.at.length - 1))]);
}

/**
 * NOTE [folds open one level at a time]
 *   A node is drawn for itself when, at every level it belongs to, its unit is open: the
 *   active one (`active[l]`, follows the step) or one the person (or a search) opened, named
 *   `unit:L:U` in the view state's open set. Otherwise it is drawn in a fold: the run of
 *   closed units around its own, within the same open unit of the level above (so an opened
 *   iteration shows its own calls folded: "GRUCell × 10"). Opening a run (`units:L`) shows
 *   its units one by one, each still folded; opening one of those opens the unit itself.
 */
export function unitKey(l, u) { return `unit:${l}:${u}`; }
export function unitsKey(l) { return `units:${l}`; }

/** Whether unit u of level l is drawn open. (No key is built while nothing is opened by hand:
 * foldOf asks this for every unit of a fold, for every node in it.) */
export function isOpen(active, open, l, u) { return u === active[l] || (open.size > 0 && open.has(unitKey(l, u))); }

/**
 * The fold a node is drawn in, or null when it is drawn itself (its units are open).
 * Answers {key, level, lo, hi, single, n} with lo..hi the folded unit range (inclusive) and n
 * the number of units of that level in its scope (the open unit of the level above).
 */
export function foldOf(levels, active, i, open = new Set()) {
  let scope = "";
  for (let l = 0; l < levels.length; l++) {
    const lv = levels[l], u = lv.unitOf[i];
    if (u < 0) continue;
    if (isOpen(active, open, l, u)) { scope += `${l}.${u}/`; continue; }
    const outer = lv.outer ? lv.outer[u] : -1;
    const same = (x) => x >= 0 && x < lv.count && (!lv.outer || lv.outer[x] === outer);
    let first = u, last = u;
    while (same(first - 1)) first--;
    while (same(last + 1)) last++;
    if (open.has(unitsKey(l))) return { key: `fold:${scope}${l}:${u}-${u}`, level: l, lo: u, hi: u, single: true, n: last - first + 1 };
    let lo = u, hi = u;
    while (same(lo - 1) && !isOpen(active, open, l, lo - 1)) lo--;
    while (same(hi + 1) && !isOpen(active, open, l, hi + 1)) hi++;
    return { key: `fold:${scope}${l}:${lo}-${hi}`, level: l, lo, hi, single: false, n: last - first + 1 };
  }
  return null;
}

/** The text of a unit ("iteration 7 of 20", "GRUCell call 37 of 200") and of a fold. */
export function unitLabel(lv, u) {
  if (lv.names && lv.names[u]) return `${lv.names[u].path} call ${lv.names[u].call + 1} of ${lv.names[u].of}`;
  return lv.kind === "call" ? `${lv.label} call ${u + 1} of ${lv.count}` : `${lv.label} ${u + 1} of ${lv.count}`;
}

/** "GRUCell × 200", "calls 1–36 of GRUCell", "iteration × 20", "iterations 1–6", "iteration 20". */
export function foldLabel(lv, lo, hi, n = lv.count) {
  const k = hi - lo + 1;
  if (k === 1) return unitLabel(lv, lo);
  if (lv.names) {  // NOTE [several models, one picker]: a fold says whose calls it holds
    const a = lv.names[lo], b = lv.names[hi];
    if (a.path === b.path) return a.call === 0 && b.call === a.of - 1 ? `${a.path} × ${a.of}` : `calls ${a.call + 1}–${b.call + 1} of ${a.path}`;
    return `${a.path} call ${a.call + 1} … ${b.path} call ${b.call + 1}`;
  }
  if (k === n && k > 1) return `${lv.label} × ${k}`;
  if (lv.kind === "block") return `${lv.label} ${lo + 1}–${hi + 1} of ${lv.count}`;
  return lv.kind === "call" ? `calls ${lo + 1}–${hi + 1} of ${lv.label}` : `iterations ${lo + 1}–${hi + 1}`;
}

/** 1 for each node drawn for itself or in a module box when `open` units are open, else 0. */
export function shownMask(levels, active, n, open = new Set()) {
  const mask = new Uint8Array(n).fill(1);
  levels.forEach((lv, l) => { for (let i = 0; i < n; i++) if (lv.unitOf[i] >= 0 && !isOpen(active, open, l, lv.unitOf[i])) mask[i] = 0; });
  return mask;
}

/** The visible nodes that belong to the open units (what Fit frames), by visible index. */
export function activeVNodes(view, levels, open) {
  if (!levels.length) return null;
  const out = [];
  view.vnodes.forEach((v, k) => {
    if (v.fold) return;
    if (v.refs.some((r) => levels.some((lv, l) => lv.unitOf[r] === open[l]))) out.push(k);
  });
  return out;
}
