/**
 * Index a run document (docs/CONTRACT.md + backend/gradtrace/schema/document.py) for the page:
 * node ids become array indices, edges become index pairs, and each node gets the visual
 * kind the legend explains. Pure data, no DOM.
 */

/** Visual kinds, in legend order. */
export const KINDS = {
  function: "Function node (grad_fn)",
  acc: "AccumulateGrad (writes a leaf's .grad)",
  leaf: "Leaf tensor (requires grad)",
  output: "Output / backward root",
  retained: "Tensor with retain_grad()",
  cut: "Cut: detach() / no_grad",
  group: "Module (collapsed)",
};

export function visualKind(node) {
  if (node.kind === "function") return node.name === "AccumulateGrad" ? "acc" : "function";
  if (node.cut || node.role === "cut") return "cut";
  if (node.role === "root") return "output";
  if (node.role === "retained") return "retained";
  return "leaf";
}

export function indexDocument(doc) {
  const nodes = (doc.graph && doc.graph.nodes) || [];
  const rawEdges = (doc.graph && doc.graph.edges) || [];
  const idx = new Map(nodes.map((n, i) => [n.id, i]));
  const edges = [];
  for (const e of rawEdges) {
    const s = idx.get(e.source), t = idx.get(e.target);
    if (s === undefined || t === undefined) continue;
    edges.push({ s, t, inputNr: e.input_nr ?? null });
  }
  const kind = nodes.map(visualKind);
  const inEdges = nodes.map(() => []), outEdges = nodes.map(() => []);
  edges.forEach((e, k) => { outEdges[e.s].push(k); inEdges[e.t].push(k); });

  // The leaf tensor behind each AccumulateGrad node (edge leaf → AccumulateGrad).
  const leafOfAcc = new Map();
  const accOfLeaf = new Map();
  edges.forEach((e) => {
    if (kind[e.t] === "acc" && nodes[e.s].kind === "tensor") { leafOfAcc.set(e.t, e.s); accOfLeaf.set(e.s, e.t); }
  });

  // Modules: a node's own module, else a parameter leaf's owner (`model.0.weight` → `model.0`),
  // and an AccumulateGrad node follows its leaf, so a collapsed module takes its parameters in.
  const known = new Set();
  for (const n of nodes) if (n.module) for (const p of prefixes(n.module)) known.add(p);
  const module = nodes.map((n) => n.module || null);
  nodes.forEach((n, i) => {
    if (module[i] || n.kind !== "tensor" || !n.name || !n.name.includes(".")) return;
    // The longest known module path that prefixes the name: `out_proj` in MultiheadAttention
    // is used functionally (never called), so its weight belongs to `…self_attn`.
    const owner = prefixes(n.name).slice(0, -1).reverse().find((p) => known.has(p));
    if (owner) module[i] = owner;
  });
  for (const [acc, leaf] of leafOfAcc) {
    if (!module[acc]) module[acc] = module[leaf];
    else if (!module[leaf]) module[leaf] = module[acc];
  }

  const errorNode = doc.error && doc.error.node != null ? idx.get(doc.error.node) ?? -1 : -1;
  const byLine = new Map();
  nodes.forEach((n, i) => {
    if (n.line == null) return;
    if (!byLine.has(n.line)) byLine.set(n.line, []);
    byLine.get(n.line).push(i);
  });
  return { doc, nodes, idx, edges, kind, inEdges, outEdges, leafOfAcc, accOfLeaf, module, errorNode, byLine };
}

/** `a.b.c` → [`a`, `a.b`, `a.b.c`]. */
export function prefixes(path) {
  const parts = path.split(".");
  return parts.map((_, i) => parts.slice(0, i + 1).join("."));
}
