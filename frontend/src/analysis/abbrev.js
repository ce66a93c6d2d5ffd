/**
 * Short forms of the graph's labels for the overview level of the semantic zoom (render/draw.js
 * NOTE [semantic zoom]): zoomed out, a box whose label no longer fits shows a short form
 * ("Addmm…", "l.0.w"), and only where even that does not fit does its group's title speak for it.
 * Pure, unit-tested in test/abbrev.test.js.
 */

const OP_SUFFIX = /Backward\d*$/;

/**
 * NOTE [decodable short forms]: a short form keeps what a reader can map back to the name
 * without a key: a prefix of an op ("Addmm…"), a tail of a path ("0.weight", "self_attn"), a
 * prefix of a word ("outp…"), always at least MIN_KEPT letters and marked with … when cut.
 * Initials ("e.l.0.s.i" for enc.layers.0.self_attn.in_proj_weight, "e.w.w" for a tied
 * `emb.weight = proj.weight`) and single letters are not: they are never offered. Hovering a
 * box shows its whole name (render/canvas.js).
 *
 * The short forms of a label, longest first; a box shows the first that fits.
 *   "AddmmBackward0"            → ["Addmm…", "Add…"]
 *   "model.0.weight"            → ["0.weight", "weight", "wei…"]
 *   "emb.weight = proj.weight"  → ["emb.weight =…", "weight =…"]
 *   "layers × 6"                → ["layers×6"]
 */
export const MIN_KEPT = 3;

export function abbreviations(label) {
  const text = String(label || "").trim();
  if (!text) return [];
  const out = [];
  const add = (s) => { if (s && s !== text && s.length < text.length && !out.includes(s)) out.push(s); };
  if (OP_SUFFIX.test(text) && text.replace(OP_SUFFIX, "")) {
    const op = text.replace(OP_SUFFIX, "");
    add(`${op}…`);
    const words = op.match(/[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])/g) || [op];
    if (words.length > 1 && words[0].length >= MIN_KEPT) add(`${words[0]}…`);
    if (op.length > MIN_KEPT) add(`${op.slice(0, MIN_KEPT)}…`);
    return out;
  }
  const tied = /^(.+?)\s+=\s+.+$/.exec(text);
  if (tied) {
    add(`${tied[1]} =…`);
    for (const a of tails(tied[1])) add(`${a} =…`);
    return out;
  }
  const times = /^(.*?)\s*×\s*(\d+)$/.exec(text);
  if (times) {
    add(`${times[1]}×${times[2]}`);
    for (const a of tails(times[1])) add(`${a}×${times[2]}`);
    return out;
  }
  for (const a of tails(text)) add(a);
  const last = text.split(".").pop();
  if (!/^\d+$/.test(last) && last.length > MIN_KEPT + 1) add(`${last.slice(0, MIN_KEPT)}…`);
  return out;
}

/** The tails of a dotted path, longest first, never a bare number: "a.b.0.w" → ["b.0.w", "0.w", "w"]. */
function tails(path) {
  const parts = path.split(".");
  const out = [];
  for (let i = 1; i < parts.length; i++) {
    const tail = parts.slice(i);
    if (tail.length === 1 && /^\d+$/.test(tail[0])) continue;
    out.push(tail.join("."));
  }
  return out;
}
