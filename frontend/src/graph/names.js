/**
 * The user's names on the graph's boxes (docs/CONTRACT.md `var`, `tied`): the second line of a
 * function node whose output the snippet bound to a variable, and of a tied parameter.
 */

/** The graph's second line for a function node with a variable: "→ h · [3, 4]". */
export function varSub(n, shapeText) {
  return n.var ? `→ ${n.var}${shapeText ? ` · ${shapeText}` : ""}` : shapeText;
}

/** The graph's second line for a tied parameter: "tied = model.lm_head.weight · [11, 6]". */
export function tiedSub(n, shapeText) {
  if (!(n.tied && n.tied.length > 1)) return shapeText;
  const others = n.tied.filter((p) => p !== n.name);
  return `tied = ${others.join(" = ")}${shapeText ? ` · ${shapeText}` : ""}`;
}
