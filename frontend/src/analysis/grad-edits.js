/**
 * What the run did to `.grad` outside autograd, in words: the edits after the last backward
 * (`clip_grad_norm_`, `.grad.mul_()`: a leaf whose final `grad` is not its last accumulation,
 * which the analysis' hint `grad-edited` names with its line) and the clearings between
 * accumulations (`zero_grad()`, `.grad = None`: `Node.grad_resets`).
 *
 * NOTE [the last step after an edit]: at the last step the box and the inspector of an edited
 * leaf show the `.grad` torch holds at the end (graph/timeline.js `leafGradAt`), so the
 * sentence of that step says the edit too, or it would read "which is now ‖2.174‖" beside a
 * box that says ‖0.3267‖. A line that edited or cleared `.grad` creates no autograd node;
 * clicking it says what it did to which leaves instead.
 *
 * Pure functions of the document (no DOM): unit-tested in test/grad-edits.test.js.
 */
import { fmtNum, fmtTensorShort } from "./format.js";

/** The edits after the last backward: [{id, name, before, after, effect}], with their line. */
export function gradEdits(doc) {
  const hint = ((doc && doc.analysis && doc.analysis.hints) || []).find((h) => h.code === "grad-edited");
  const edits = [];
  for (const n of (doc && doc.graph && doc.graph.nodes) || []) {
    const hist = n.grad_history || [];
    if (n.kind !== "tensor" || !n.grad || !hist.length || !differs(n.grad, hist[hist.length - 1])) continue;
    edits.push({ id: n.id, name: n.name || "a leaf", before: hist[hist.length - 1], after: n.grad, effect: effectWords(hist[hist.length - 1], n.grad) });
  }
  return { line: hint && hint.line != null ? hint.line : null, edits };
}

/** "norm scaled × 0.09311", "zeroed" or "changed": what an edit did, from the norms. */
export function effectWords(before, after) {
  const b = Number(before && before.stats && before.stats.norm), a = Number(after && after.stats && after.stats.norm);
  if (!Number.isFinite(a) || !Number.isFinite(b)) return "changed";
  if (a === 0) return "zeroed";
  return b ? `norm scaled × ${fmtNum(a / b)}` : "changed";
}

/**
 * The words added to the last step's sentence when `.grad` was edited after backward, or "".
 * `leafId`: the leaf the step's AccumulateGrad filled, named first.
 */
export function editAfterWords(doc, leafId) {
  const { line, edits } = gradEdits(doc);
  if (!edits.length) return "";
  const mine = edits.find((e) => e.id === leafId) || null;
  // The line is marked in the code beside the sentence; its number is enough here (short
  // sentences keep the graph its height, in Present mode above all).
  const where = line != null ? `line ${line}` : "code outside autograd";
  const others = edits.filter((e) => e !== mine);
  if (mine) {
    const more = others.length ? `, and ${others.length === 1 ? `${others[0].name}.grad` : `${others.length} more leaves' .grad`}` : "";
    return ` After backward, ${where} changed it outside autograd to ${fmtTensorShort(mine.after, 4)} (${mine.effect})${more}.`;
  }
  const first = edits[0];
  const rest = edits.length > 1 ? ` and ${edits.length - 1} more` : "";
  return ` After backward, ${where} changed the .grad of ${first.name}${rest} outside autograd (${first.name}.grad: ${fmtTensorShort(first.before, 4)} → ${fmtTensorShort(first.after, 4)}, ${first.effect}).`;
}

/** What code line `line` did to `.grad` (the inspector's page of a clicked line): sentences. */
export function lineGradNotes(doc, line) {
  const out = [];
  const { line: at, edits } = gradEdits(doc);
  if (at === line && edits.length) {
    const each = edits.map((e) => `${e.name}.grad ${fmtTensorShort(e.before, 4)} → ${fmtTensorShort(e.after, 4)} (${e.effect})`);
    out.push(`changed .grad outside autograd, after the last backward (autograd records no node for it): ${each.join("; ")}.`);
  }
  const cleared = new Map();  // kind → {leaves, times}
  for (const n of (doc && doc.graph && doc.graph.nodes) || []) {
    for (const r of n.grad_resets || []) {
      if (r.line !== line) continue;
      const c = cleared.get(r.kind) || { leaves: new Set(), times: 0 };
      c.leaves.add(n.name || n.id); c.times++;
      cleared.set(r.kind, c);
    }
  }
  for (const [kind, c] of cleared) {
    const how = kind === "zero" ? "zeroed" : "set to None";
    const leaves = [...c.leaves];
    const who = leaves.length <= 3 ? leaves.map((x) => `${x}.grad`).join(", ") : `the .grad of ${leaves.length} leaves (${leaves.slice(0, 2).join(", ")}, …)`;
    const times = c.times / leaves.length;
    out.push(`${how} ${who} between accumulations${times > 1 ? `, ${Number.isInteger(times) ? times : "several"} times` : ""}: the next backward starts that .grad afresh.`);
  }
  return out;
}

function differs(a, b) {
  if (a.values != null && b.values != null) return JSON.stringify(a.values) !== JSON.stringify(b.values);
  return JSON.stringify(a.stats || null) !== JSON.stringify(b.stats || null);
}
