/**
 * Search the run: by op ("addmm", "AddmmBackward0"), tensor or parameter name ("x",
 * "model.0.weight", any path of a tied one), an intermediate's variable ("h"), line ("line 5", "5", ":5") or module path ("layers.1", "cell").
 * A pure function of the indexed document (no DOM): unit-tested in frontend/test/search.test.js.
 * Matches come in the order the run made the nodes, so Enter walks through the program.
 */

/** What a query asks for: a line number, or words matched against names and module paths. */
export function parseQuery(query) {
  const q = String(query || "").trim();
  if (!q) return null;
  const m = /^(?:line\s*|l\s*|:)?(\d+)$/i.exec(q);
  if (m) return { line: Number(m[1]) };
  return { text: q.toLowerCase() };
}

/**
 * The document nodes that match `query`, each with why it matched:
 * [{ ref, why: "line" | "op" | "name" | "module" }], in creation order.
 */
export function searchNodes(index, query) {
  const q = parseQuery(query);
  if (!q) return [];
  if (q.text === "nan" || q.text === "inf") return nonfiniteNodes(index, q.text);
  const out = [];
  index.nodes.forEach((n, i) => {
    let why = null;
    if (q.line != null) {
      if (n.line === q.line) why = "line";
    } else {
      const mod = (index.module[i] || "").toLowerCase();
      if (n.kind === "function" && wordMatch(n.name, q.text)) why = "op";
      else if (n.kind === "function" && n.var && wordMatch(n.var, q.text)) why = "name";  // its variable
      else if (n.kind === "tensor" && (wordMatch(n.name, q.text) || (n.tied || []).some((p) => wordMatch(p, q.text)))) why = "name";
      else if (mod && (mod.includes(q.text) || (squash(q.text).length >= SUBSTRING_MIN && squash(mod).includes(squash(q.text))))) why = "module";
    }
    if (why) out.push({ ref: i, why });
  });
  return out;  // document order is the order the run made the nodes
}

/**
 * "nan" and "inf": the nodes the analysis names (the producer of the first one, then those that
 * passed it on: the document's `analysis.nonfinite`), and the tensors whose value or gradient
 * holds one, in creation order.
 */
function nonfiniteNodes(index, word) {
  const hit = new Set();
  for (const f of (index.doc.analysis && index.doc.analysis.nonfinite) || []) {
    if (word === "inf" && f.kind !== "inf") continue;
    for (const id of [f.node, ...f.passed_on]) if (index.idx.has(id)) hit.add(index.idx.get(id));
  }
  const holds = (tv) => !!tv && !!tv.stats && Object.values(tv.stats).some((s) => s === word || (word === "inf" && s === "-inf"));
  index.nodes.forEach((n, i) => { if (holds(n.grad) || holds(n.value)) hit.add(i); });
  return [...hit].sort((a, b) => a - b).map((ref) => ({ ref, why: word }));
}

/**
 * Whether `query` starts the name or one of its words: "mul" finds MulBackward0 but not
 * AccumulateGrad; "weight" finds model.0.weight; "x" finds x but not max.
 * NOTE [search across separators]: a query of SUBSTRING_MIN characters or more (not counting
 * `_`, `.`, `-` and spaces) finds any substring of the name with or without those separators:
 * "weight_hh", "weighthh" and "weight hh" all find cell.weight_hh, "proj_weight" finds
 * in_proj_weight. Shorter queries keep to word starts, where a substring is mostly noise.
 */
export const SUBSTRING_MIN = 4;

const squash = (s) => s.replace(/[\s._\-]+/g, "");

export function wordMatch(name, query) {
  if (!name) return false;
  const lower = name.toLowerCase();
  if (lower.startsWith(query)) return true;
  const words = name.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase().split(/[\s._\-[\]()]+/);
  if (words.some((w) => w.startsWith(query))) return true;
  const q = squash(query);
  return q.length >= SUBSTRING_MIN && squash(lower).includes(q);
}

/** The next match index after `at` (or before, with `back`), wrapping around. */
export function cycle(at, count, back = false) {
  if (!count) return -1;
  if (at < 0) return back ? count - 1 : 0;
  return (at + (back ? count - 1 : 1)) % count;
}
