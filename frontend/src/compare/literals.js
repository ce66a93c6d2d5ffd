/**
 * The scalars a what-if slider can move in a snippet: a scalar leaf (`x = torch.tensor(2.0,
 * requires_grad=True)`) or a plain number assigned to a name (`lr = 0.1`). Pure; the page
 * re-runs the edited code (compare/whatif.js).
 */
const NUMBER = String.raw`-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?`;
const LEAF = new RegExp(String.raw`^(\s*)([A-Za-z_]\w*)\s*=\s*torch\.tensor\(\s*(${NUMBER})\s*[,)]`);
const PLAIN = new RegExp(String.raw`^(\s*)([A-Za-z_]\w*)\s*=\s*(${NUMBER})\s*(?:#.*)?$`);

/** [{line, name, value, start, end, text, kind}] in the order of the code. */
export function findScalars(code) {
  const out = [];
  let offset = 0;
  code.split("\n").forEach((text, i) => {
    for (const [kind, re] of [["leaf", LEAF], ["literal", PLAIN]]) {
      const m = text.match(re);
      if (!m) continue;
      const start = offset + text.indexOf(m[3], m[1].length + m[2].length);
      out.push({ line: i + 1, name: m[2], value: Number(m[3]), text: m[3], start, end: start + m[3].length, kind });
      break;
    }
    offset += text.length + 1;
  });
  return out;
}

/** `code` with the scalar `item` set to `value` (a float stays a float: `3` is written `3.0`). */
export function withScalar(code, item, value) {
  let text = String(Number(value.toPrecision(6)));
  const wasFloat = /[.eE]/.test(item.text);
  if (wasFloat && !/[.eE]/.test(text)) text += ".0";
  if (!wasFloat) text = String(Math.round(value));
  return code.slice(0, item.start) + text + code.slice(item.end);
}

/** A slider's range around `value`: {min, max, step}. */
export function sliderRange(value, isInteger) {
  const reach = Math.max(Math.abs(value) * 2, isInteger ? 5 : 2);
  const min = value - reach, max = value + reach;
  const step = isInteger ? 1 : Number(((max - min) / 80).toPrecision(1));
  return { min, max, step };
}
