/**
 * Short forms of the graph's labels for the overview level of the semantic zoom (render/draw.js
 * NOTE [semantic zoom]): zoomed out, a box whose label no longer fits shows a short form
 * ("Addmm…", "l.0.w"), and only where even that does not fit does its group's title speak for it.
 * Pure, unit-tested in test/abbrev.test.js.
 */

const OP_SUFFIX = /Backward\d*$/;

/**
 * The short forms of a label, longest first; a box shows the first that fits.
 *   "AddmmBackward0" → ["Addmm…", "Add…", "A…", "A"]
 *   "model.0.weight" → ["m.0.weight", "m.0.w", "weight", "0.w", "w"]
 *   "layers × 6"     → ["layers×6", "l×6"]
 */
export function abbreviations(label) {
  const text = String(label || "").trim();
  if (!text) return [];
  const out = [];
  const add = (s) => { if (s && s !== text && !out.includes(s)) out.push(s); };
  if (OP_SUFFIX.test(text) && text.replace(OP_SUFFIX, "")) {
    const op = text.replace(OP_SUFFIX, "");
    add(`${op}…`);
    const words = op.match(/[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])/g) || [op];
    if (words.length > 1) add(`${words[0]}…`);
    if (op.length > 3) add(`${op.slice(0, 3)}…`);
    add(`${op[0]}…`);
    add(op[0]);
    return out;
  }
  const times = /^(.*?)\s*×\s*(\d+)$/.exec(text);
  if (times) {
    add(`${times[1]}×${times[2]}`);
    add(`${shortPath(times[1], true)}×${times[2]}`);
    return out;
  }
  if (text.includes(".")) {
    const parts = text.split(".");
    const last = parts[parts.length - 1];
    add(shortPath(text, false));
    add(shortPath(text, true));
    // The last segment, unless it is a bare number ("G.2" → "G.2", never "2").
    if (!/^\d+$/.test(last)) {
      add(last);
      add(shortPath(parts.slice(-2).join("."), true));
      add(last[0]);
    }
    return out;
  }
  if (text.length > 4) { add(`${text.slice(0, 3)}…`); add(`${text[0]}…`); add(text[0]); }
  return out;
}

/** "model.0.weight" → "m.0.weight" (all but the last segment) or "m.0.w" (all). */
function shortPath(path, all) {
  const parts = path.split(".");
  return parts.map((p, i) => (/^\d+$/.test(p) || (!all && i === parts.length - 1) ? p : p[0])).join(".");
}
