/**
 * How a sentence names an autograd node (analysis/words.js prints them). Pure data, no DOM.
 *
 * NOTE [naming things in a sentence]
 *   Autograd's nodes have no variable names; tensors do, when gradtrace found one. A sentence
 *   names a leaf by its name ("x"), an AccumulateGrad by the leaf it writes ("x.grad"), and a
 *   function by its op ("MulBackward0"), adding its line when several nodes share that op.
 *
 * NOTE [naming repeated ops]
 *   In a loop one op is made once per turn: a GRUCell unrolled 200 times makes 400
 *   TBackward0 on one line. A running count ("#398") tells a learner nothing, so a repeated op
 *   is named by the unit of the run it belongs to (graph/groups.js levels: the iteration of a
 *   training loop, the call of a module, the block of a stack), the same words the iteration
 *   picker shows ("call 200 of 200"), and, when that unit holds several of the op on that line,
 *   by which one in creation order ("the 2nd TBackward0"). Without units the order on the line
 *   tells them apart ("the 3rd MulBackward0 (line 5)").
 *   A name is written relative to what the sentence already said (`ref`): the line and the
 *   unit of the sentence's own node are not repeated for the nodes it mentions, so a mention
 *   carries a unit only when it differs ("from the 4th AddBackward0 (call 36 of 200)": the hidden
 *   state coming from the previous turn).
 */

/**
 * Per document: op counts, and each function's place among the nodes of its op on its line in
 * its units: which modules that group spans, and its order among those of its own module.
 */
export function namesContext(index, levels = []) {
  const opCount = new Map(), groupCount = new Map(), modules = new Map();
  const ordinal = new Int32Array(index.nodes.length);
  const group = new Array(index.nodes.length).fill("");
  index.nodes.forEach((n, i) => {
    if (n.kind !== "function") return;
    opCount.set(n.name, (opCount.get(n.name) || 0) + 1);
    group[i] = `${n.name}@${n.line}@${levels.map((lv) => lv.unitOf[i]).join(",")}`;
    if (!modules.has(group[i])) modules.set(group[i], new Set());
    modules.get(group[i]).add(index.module[i] || "");
    const key = `${group[i]}@${index.module[i] || ""}`;
    ordinal[i] = (groupCount.get(key) || 0) + 1;
    groupCount.set(key, ordinal[i]);
  });
  return { index, levels, opCount, groupCount, modules, ordinal, group };
}

/** "1st", "2nd", "3rd", "11th", "22nd". */
export function ordinalWord(k) {
  const tens = k % 100, ones = k % 10;
  const suffix = tens >= 11 && tens <= 13 ? "th" : ones === 1 ? "st" : ones === 2 ? "nd" : ones === 3 ? "rd" : "th";
  return `${k}${suffix}`;
}

/**
 * The units of node i that `ref`'s node does not share, in words: "iteration 12 of 20",
 * "call 37 of 200", "enc.layers.3" (a block by its module path), outermost first. A block is
 * left out when the sentence names a module inside it (`place`, "enc.layers.3.linear2").
 */
export function unitWords(names, i, ref = null, place = null) {
  const out = [];
  names.levels.forEach((lv, l) => {
    const u = lv.unitOf[i];
    if (u < 0) return;
    if (ref && ref.node != null && lv.unitOf[ref.node] === u) return;
    if (lv.kind === "block") {
      const path = lv.blocks ? lv.blocks[u] : null;
      if (path && place && (place === path || place.startsWith(`${path}.`))) return;
      out.push(path || `${lv.label} ${u + 1} of ${lv.count}`);
    } else out.push(`${lv.kind === "call" ? "call" : "iteration"} ${u + 1} of ${lv.count}`);
  });
  return out;
}

/**
 * Function node i's name, {text, unit}: `unit` says the name carries the node's units (so
 * the sentence need not add them again). `ref` is what the sentence said already: {line,
 * node (whose units a mention shares), module (the module it names)}. `outName` is the tensor
 * the document names as the node's output ("loss"), if any.
 */
export function functionName(names, i, ref = null, outName = null) {
  const n = names.index.nodes[i];
  // its variable, when the snippet bound its output to one (docs/CONTRACT.md `var`): "TanhBackward0 → h"
  const op = `${n.name || "a function"}${n.var && n.var !== outName ? ` → ${n.var}` : ""}`;
  const module = names.index.module[i] || "";
  const said = ref && ref.module && ref.module === module ? module : null;
  if (outName) {
    const units = unitWords(names, i, ref, said);
    return { text: `${op} (${[outName, ...units].join(", ")})`, unit: units.length > 0 };
  }
  if ((names.opCount.get(n.name) || 0) <= 1 || n.line == null) return { text: op, unit: false };
  // The op on this line in this unit comes from several modules: the module tells them apart.
  const showModule = !said && module && names.modules.get(names.group[i]).size > 1;
  const many = names.groupCount.get(`${names.group[i]}@${module}`) > 1;
  const units = unitWords(names, i, ref, showModule ? module : said);
  const quals = [];
  if (!ref || ref.line !== n.line) quals.push(`line ${n.line}`);
  quals.push(...units);
  const head = `${many ? `the ${ordinalWord(names.ordinal[i])} ` : ""}${op}${showModule ? ` in ${module}` : ""}`;
  return { text: quals.length ? `${head} (${quals.join(", ")})` : head, unit: units.length > 0 };
}

/** "The …" at the start of a sentence. */
export function capital(s) { return s ? s[0].toUpperCase() + s.slice(1) : s; }
