/**
 * The timeline: everything the renderer needs to draw step k of the run, precomputed once.
 *
 * Step k means "the first k events have happened" (0 ≤ k ≤ N). Event i is applied at step
 * i + 1. The page never recomputes layout per step: a node is *revealed* at the step of its
 * forward event, so the forward pass uncovers boxes at fixed positions (nothing
 * already drawn moves while the run plays, so the eye can follow it).
 *
 * NOTE [which gradient an edge carries]
 *   A backward event on F carries `grad_inputs`, the gradients F hands to its
 *   `next_functions`; entry i goes along the edge whose `input_nr` is i (edges follow the
 *   forward flow, next_function → F). An AccumulateGrad event hands the leaf its gradient:
 *   the leaf → AccumulateGrad edge shows `grad_outputs[0]` (or the accumulated `.grad`).
 */

export class Timeline {
  constructor(index) {
    this.index = index;
    const events = (index.doc.events || []).filter((e) => index.idx.has(e.node));
    this.events = events;
    const n = index.nodes.length;
    this.N = events.length;
    this.evNode = Int32Array.from(events, (e) => index.idx.get(e.node));
    this.evPass = Int32Array.from(events, (e) => (e.phase === "backward" ? e.pass ?? 0 : -1));
    const reveal = new Float64Array(n).fill(Infinity);
    const bwd = index.nodes.map(() => []);
    events.forEach((e, i) => {
      const v = this.evNode[i];
      if (reveal[v] === Infinity) reveal[v] = i + 1;
      if (e.phase === "backward") bwd[v].push(i + 1);
    });
    // Tensors appear with the first function next to them (a leaf with its first use).
    for (let round = 0; round < 2; round++) {
      index.nodes.forEach((node, i) => {
        if (node.kind !== "tensor") return;
        for (const k of index.outEdges[i]) reveal[i] = Math.min(reveal[i], reveal[index.edges[k].t]);
        for (const k of index.inEdges[i]) reveal[i] = Math.min(reveal[i], reveal[index.edges[k].s]);
      });
    }
    const anyForward = events.some((e) => e.phase === "forward");
    for (let i = 0; i < n; i++) if (reveal[i] === Infinity || !anyForward) reveal[i] = 0;
    this.reveal = reveal;
    this.bwd = bwd;

    // Gradient flows per document edge: [step, TensorValue].
    this.flows = index.edges.map(() => []);
    events.forEach((e, i) => {
      if (e.phase !== "backward") return;
      const v = this.evNode[i];
      const ins = index.inEdges[v];
      if (index.kind[v] === "acc") {
        const g = (e.grad_outputs && e.grad_outputs[0]) || e.grad || null;
        for (const k of ins) if (g) this.flows[k].push([i + 1, g]);
        return;
      }
      const gi = e.grad_inputs || [];
      ins.forEach((k, pos) => {
        const nr = index.edges[k].inputNr ?? pos;
        const g = gi[nr];
        if (g) this.flows[k].push([i + 1, g]);
      });
    });

    // Each leaf's .grad after each accumulation: [step, TensorValue, pass].
    this.leafGrads = new Map();
    events.forEach((e, i) => {
      const v = this.evNode[i];
      const leaf = index.leafOfAcc.get(v);
      if (e.phase !== "backward" || leaf === undefined || !e.grad) return;
      if (!this.leafGrads.has(leaf)) this.leafGrads.set(leaf, []);
      this.leafGrads.get(leaf).push([i + 1, e.grad, this.evPass[i]]);
    });
    this.segments = segmentsOf(events, this.evPass, events.map((e, i) => index.nodes[this.evNode[i]].created_in_pass ?? null));
    // Leaves whose .grad was changed outside autograd after backward (the analysis' hint
    // `grad-edited`): at the last step they show the final .grad torch holds, not the last
    // accumulation.
    const edited = ((index.doc.analysis && index.doc.analysis.hints) || []).filter((h) => h.code === "grad-edited");
    this.edited = new Set(edited.flatMap((h) => h.nodes).map((id) => index.idx.get(id)).filter((r) => r !== undefined));
  }

  event(k) { return k >= 1 && k <= this.N ? this.events[k - 1] : null; }
  passAt(k) { return k >= 1 ? this.evPass[k - 1] : -1; }

  /** The leaf's .grad as of step k, with how many accumulations led to it. */
  leafGradAt(leaf, k) {
    const list = this.leafGrads.get(leaf);
    if (!list) return null;
    const j = lastAtOrBefore(list, k, (x) => x[0]);
    if (j < 0) return null;
    const node = this.index.nodes[leaf];
    const value = k >= this.N && this.edited.has(leaf) && node.grad ? finalGrad(node) : list[j][1];
    return { value, count: j + 1, pass: list[j][2], step: list[j][0], edited: value !== list[j][1] };
  }

  /** The latest backward event on document node v at or before step k. */
  lastBackward(v, k) {
    const j = lastAtOrBefore(this.bwd[v], k, (x) => x);
    return j < 0 ? null : this.bwd[v][j];
  }

  /** The last step of backward pass p (after it, autograd may have freed what p used). */
  passEnd(p) {
    let end = null;
    for (const s of this.segments) if (s.phase === "backward" && s.pass === p) end = s.end;
    return end;
  }

  /** Steps where each phase (forward, backward pass p) starts and ends, for the scrubber. */
  segmentAt(k) {
    const s = Math.max(1, k);
    return this.segments.find((g) => s >= g.start && s <= g.end) || null;
  }
}

/**
 * A leaf's final .grad as the page shows it. The document's final `grad` names no tensor of the
 * file (docs/CONTRACT.md, "The tensor file"); where it is the value of the leaf's last history
 * entry or edit (the recorder looks at every .grad again when the block ends, so a later change
 * would be an edit of its own: NOTE [gradient edits] in backend/gradtrace/capture/gradedits.py),
 * that entry is shown instead: the same numbers, with the key of the kept tensor.
 */
export function finalGrad(node) {
  const g = node.grad;
  if (!g || g.key) return g;
  const hist = node.grad_history || [];
  const edits = node.grad_edits || [];
  const edit = edits.length ? edits[edits.length - 1] : null;
  const last = edit && edit.at >= hist.length ? edit.value : hist[hist.length - 1];
  return last && last.key && sameTensorValue(last, g) ? last : g;
}

function sameTensorValue(a, b) {
  return ["dtype", "shape", "stats", "values"].every((f) => JSON.stringify(a[f]) === JSON.stringify(b[f]));
}

/** Index of the last item whose key is ≤ k in a list sorted by key, or −1. */
export function lastAtOrBefore(list, k, key) {
  let lo = 0, hi = list.length - 1, ans = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (key(list[mid]) <= k) { ans = mid; lo = mid + 1; } else hi = mid - 1;
  }
  return ans;
}

/**
 * NOTE [one segment per pass]: a backward with create_graph=True interleaves its backward
 * steps with the forward steps of the graph it builds (each node it makes is recorded as a
 * forward event with `created_in_pass`). Cut at each change of phase, one pass became a
 * barcode of slivers and `P` stopped at each. The built steps belong to their pass: the pass
 * is one segment, and its sub-steps are its `parts` ({phase, start, end}), drawn inside it.
 * Labels number passes from 1 (NOTE [numbered from 1] in analysis/format.js).
 */
function segmentsOf(events, evPass, builtIn = events.map(() => null)) {
  const segs = [];
  events.forEach((e, i) => {
    const pass = e.phase === "forward" ? builtIn[i] ?? -1 : evPass[i];
    const label = pass < 0 ? "forward" : `backward ${pass + 1}`;
    const last = segs[segs.length - 1];
    if (last && last.label === label) last.end = i + 1;
    else segs.push({ label, phase: pass < 0 ? "forward" : "backward", pass, start: i + 1, end: i + 1, parts: [] });
    const seg = segs[segs.length - 1];
    const part = seg.parts[seg.parts.length - 1];
    if (part && part.phase === e.phase) part.end = i + 1;
    else seg.parts.push({ phase: e.phase, start: i + 1, end: i + 1 });
  });
  return segs;
}
