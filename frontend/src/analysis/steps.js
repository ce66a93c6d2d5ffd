/**
 * Where the keys jump: the steps that start a new line, a new loop iteration, or a new pass.
 * Pure functions of the indexed document and its timeline (no DOM); unit-tested in
 * frontend/test/steps.test.js. A "start" is a step k (1…N) whose event begins the unit.
 *
 * NOTE [iterations without loop groups]
 *   A loop iteration starts where the program goes back: a forward event after a backward
 *   pass (a training step), a forward event on an earlier line than the one before, a new call
 *   of the outermost module (Node.module_stack, when recorded), or, inside one line called
 *   over and over (an RNN cell), the op that began the current iteration coming round again.
 */

/** Steps whose event is on another line than the step before. */
export function lineStarts(tl, index) {
  const out = [];
  let prev = null;
  for (let i = 0; i < tl.N; i++) {
    const e = tl.events[i];
    const line = e.line ?? index.nodes[tl.evNode[i]].line ?? null;
    if (i === 0 || line !== prev) out.push(i + 1);
    prev = line;
  }
  return out;
}

/** Steps that begin a backward pass or the forward work before it. */
export function passStarts(tl) {
  const out = [];
  for (const s of tl.segments) out.push(s.start);
  return out;
}

/** Steps that begin a loop iteration (see NOTE above); the first step always does. */
export function iterationStarts(tl, index) {
  const out = [];
  let prevPhase = null, prevLine = null, prevCall = null, first = null;
  for (let i = 0; i < tl.N; i++) {
    const e = tl.events[i];
    const v = tl.evNode[i];
    const n = index.nodes[v];
    if (e.phase !== "forward" || n.created_in_pass != null) { prevPhase = "backward"; continue; }
    const line = e.line ?? n.line ?? null;
    const call = outerCall(n);
    const key = `${n.name}@${line}`;
    let start = i === 0 || prevPhase === "backward";
    if (!start && line != null && prevLine != null && line < prevLine) start = true;
    if (!start && call != null && prevCall != null && call.path === prevCall.path && call.call !== prevCall.call) start = true;
    if (!start && first != null && key === first && index.kind[v] !== "acc") start = true;
    if (start) { out.push(i + 1); first = index.kind[v] === "acc" ? null : key; }
    else if (first == null && index.kind[v] !== "acc") first = key;
    prevPhase = "forward";
    prevLine = line;
    if (call) prevCall = call;
  }
  return out;
}

function outerCall(n) {
  const st = n.module_stack;
  return Array.isArray(st) && st.length ? st[0] : null;
}

/** The first start after step k, or N when there is none. */
export function nextStart(starts, k, N) {
  for (const s of starts) if (s > k) return s;
  return N;
}

/** The last start before step k (so from inside a unit, its own start), or 0. */
export function prevStart(starts, k) {
  let best = 0;
  for (const s of starts) { if (s < k) best = s; else break; }
  return best;
}
