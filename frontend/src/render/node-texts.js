/**
 * The texts of the nodes (label, sub-label with the gradient, or the short forms of the
 * overview level), collected for render/texts.js to place. Split from render/draw.js.
 */
import { abbreviations } from "../analysis/abbrev.js";
import { fmtTensorShort } from "../graph/values.js";
import { MIN_TEXT_PX } from "./labels.js";

/**
 * NOTE [texts too small to show]: a node's label is 12 px and its sub-label 11 px at zoom 1;
 * below MIN_TEXT_PX on screen neither is drawn, so neither is built (a zoomed-out view of
 * thousands of nodes would otherwise format thousands of gradients per frame for nothing).
 * A group's title keeps 11 px at any zoom, so it is always built.
 */
export const LABEL_PX = 12, SUB_PX = 11;
/** Screen px a box needs for the shortest short form ("w" at 9 px, with its padding). */
const OVERVIEW_MIN_W = 10;

export function nodeTexts(scene, st, batches, pal, k, texts) {
  const { vnodes } = scene.view;
  const tl = scene.timeline;
  const labels = LABEL_PX * k >= MIN_TEXT_PX, subs = SUB_PX * k >= MIN_TEXT_PX;
  for (let b = 0; b < batches.length; b++) {
    for (const v of batches[b]) {
      const n = vnodes[v];
      const cx = scene.x[v], cy = scene.y[v];
      const group = n.kind === "group";
      if (!labels && !group) {
        // The overview level (NOTE [overview labels] in render/texts.js): the label or a
        // short form of it at the smallest legible size, inside its box, or nothing. A box
        // narrower than the shortest form ("w" at 9 px) has none: nothing is measured for it.
        if (n.w * k < OVERVIEW_MIN_W) continue;
        texts.push({ kind: "node", text: n.label, wx: cx, wy: cy, base: LABEL_PX, min: MIN_TEXT_PX, color: pal.kinds[n.kind].text,
          prio: 1.2, node: v, centre: true, room: n.w, pad: 2, alts: (n.alts ||= abbreviations(n.label)), abbrOnly: true,
          clip: [cx - n.w / 2, cy - n.h / 2, cx + n.w / 2, cy + n.h / 2] });
        continue;
      }
      // A box with derivative-order bands keeps its texts clear of them (2 + 4 px per band).
      const bands = n.higher ? 4 * Math.min(n.higher, 2) + 2 : 0;
      texts.push({ kind: "node", text: n.label, wx: cx + bands / 2, wy: cy - (group ? 9 : 7), base: LABEL_PX, min: group ? 11 : 0, bold: group,
        color: pal.kinds[n.kind].text, prio: 1, node: v, centre: true, room: group ? n.w : undefined,
        alts: group ? (n.alts ||= abbreviations(n.label)) : undefined, clip: group ? [cx - n.w / 2, cy - n.h / 2, cx + n.w / 2, cy + n.h / 2] : undefined });
      if (!subs) continue;
      let sub = n.sub;
      if (n.kind === "leaf" || n.kind === "retained") {
        const g = tl.leafGradAt(n.refs[0], st.k);
        const grad = g ? g.value : (st.k >= tl.N && scene.index.nodes[n.refs[0]].grad) || null;
        const since = g ? g.count - lastReset(scene.index.nodes[n.refs[0]], g.count) : 0;
        if (grad) sub = `∇ ${fmtTensorShort(grad, 3)}${since > 1 ? ` (×${since})` : ""}`;
      } else if ((n.kind === "function" || n.kind === "acc") && st.pass >= 0) {
        // The gradient that reached this node in the current pass (its grad_outputs[0]).
        const step = tl.lastBackward(n.refs[0], st.k);
        const ev = step != null && tl.passAt(step) === st.pass ? tl.event(step) : null;
        const g = ev && ev.grad_outputs && ev.grad_outputs[0];
        if (g) sub = `${n.sub} · ∇ ${fmtTensorShort(g, 2, false)}`;
      }
      // A group's title is kept at 11 px at least: its second line sits lower to stay clear of it.
      if (sub) texts.push({ kind: "node", text: sub, wx: cx + bands / 2, wy: cy + (group ? 10 : 8), base: SUB_PX, color: pal.kinds[n.kind].sub, prio: 1.1, node: v, centre: true, fitTo: n.w - 6 - bands });
    }
  }
}

/**
 * How many of a leaf's first `count` accumulations came before its .grad was last cleared
 * (Node.grad_resets: zero_grad() or .grad = None), so "(×n)" counts what .grad holds now.
 */
function lastReset(node, count) {
  let at = 0;
  for (const r of node.grad_resets || []) if (r.at < count) at = Math.max(at, r.at);
  return at;
}
