/**
 * A leaf's `.grad` accumulations over the run: where the capture saw it cleared between two
 * accumulations (`Node.grad_resets`), and how many accumulations it holds at a step. Pure
 * functions of the words context (analysis/words.js wordsContext: the index and timeline).
 */

/**
 * Where each leaf's .grad was cleared between accumulations, keyed by event index of the
 * AccumulateGrad event that starts afresh: read from Node.grad_resets (absent: never cleared).
 */
export function gradResets(ctx) {
  const { index, timeline: tl } = ctx;
  const out = new Map();
  if (!tl) return out;
  const seen = new Map();  // leaf → accumulations so far
  tl.events.forEach((e, i) => {
    if (e.phase !== "backward") return;
    const v = tl.evNode[i];
    const leaf = index.leafOfAcc.get(v);
    if (leaf === undefined || !e.grad) return;
    const at = seen.get(leaf) || 0;
    seen.set(leaf, at + 1);
    const r = at > 0 && (index.nodes[leaf].grad_resets || []).find((x) => x.at === at);
    if (r) out.set(i, { kind: r.kind, line: r.line ?? null, at });
  });
  return out;
}

/** The leaf's accumulations since .grad was last cleared, as of step k: {count, total, reset}. */
export function accumulationsAt(ctx, leaf, k) {
  const { timeline: tl, index } = ctx;
  let count = 0, total = 0, reset = null;
  for (let i = 0; i < Math.min(k, tl.N); i++) {
    const e = tl.events[i];
    if (e.phase !== "backward" || !e.grad || index.leafOfAcc.get(tl.evNode[i]) !== leaf) continue;
    total++;
    const r = ctx.resets.get(i);
    if (r) { count = 1; reset = r; } else count++;
  }
  return { count, total, reset };
}
