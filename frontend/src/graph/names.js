/**
 * The user's names on the graph's boxes (docs/CONTRACT.md `var`, `tied`): the second line of a
 * function node whose output the snippet bound to a variable, and of a tied parameter.
 */

/** The graph's second line for a function node with a variable: "→ h · [3, 4]". */
export function varSub(n, shapeText) {
  return n.var ? `→ ${n.var}${shapeText ? ` · ${shapeText}` : ""}` : shapeText;
}

/** A tied parameter's box is named by all its paths: "m.emb.weight = m.lm_head.weight"; else null. */
export function tiedLabel(n) {
  return n.tied && n.tied.length > 1 ? n.tied.join(" = ") : null;
}

/** The graph's second line for a tied parameter (before its gradient replaces it): "tied · 11×6". */
export function tiedSub(n, shapeText) {
  if (!(n.tied && n.tied.length > 1)) return shapeText;
  return `tied${shapeText ? ` · ${shapeText}` : ""}`;
}
