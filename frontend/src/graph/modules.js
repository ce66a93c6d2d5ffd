/**
 * The module tree (`encoder.layers.0.self_attn` …) behind collapsible module boxes, the
 * default collapse that keeps the visible graph small, and detection of repeated blocks.
 *
 * NOTE [repeated blocks]
 *   Siblings whose last path segment is a number (`layers.0` … `layers.5`), with the same
 *   sub-module structure and node counts within 15% of each other, are "repeated blocks"
 *   (exact equality is too strict: the first layer of a stack often records a few more or
 *   fewer nodes than the next, e.g. 49 vs 52 in a TransformerEncoder). While every one is
 *   collapsed (and the user has not expanded the repeat), they are drawn as one box
 *   "layers × 6"; expanding it shows the six module boxes.
 */
import { prefixes } from "./document.js";

export function moduleTree(index) {
  const mods = new Map();
  const get = (path) => {
    let m = mods.get(path);
    if (!m) {
      const dot = path.lastIndexOf(".");
      m = { path, parent: dot > 0 ? path.slice(0, dot) : null, depth: path.split(".").length,
        direct: [], count: 0, children: [] };
      mods.set(path, m);
    }
    return m;
  };
  index.module.forEach((path, i) => {
    if (!path) return;
    get(path).direct.push(i);
    for (const p of prefixes(path)) get(p).count++;
  });
  for (const m of mods.values()) if (m.parent) get(m.parent);
  for (const m of mods.values()) if (m.parent) mods.get(m.parent).children.push(m.path);
  const repeats = new Map(); // parent path → [child paths]
  for (const m of mods.values()) {
    const numbered = m.children.filter((c) => /\.\d+$/.test(c));
    if (numbered.length < 2 || numbered.length !== m.children.length) continue;
    const sigs = numbered.map((c) => structure(mods, c));
    const counts = numbered.map((c) => mods.get(c).count);
    if (sigs.every((s) => s === sigs[0]) && Math.max(...counts) <= 1.15 * Math.min(...counts)) {
      numbered.sort((p, q) => Number(p.slice(p.lastIndexOf(".") + 1)) - Number(q.slice(q.lastIndexOf(".") + 1)));
      repeats.set(m.path, numbered);
    }
  }
  const roots = [...mods.values()].filter((m) => !m.parent).map((m) => m.path);
  return { mods, roots, repeats };
}

export const DEFAULT_BUDGET = 150;
const MIN_VISIBLE = 12;

/** The sub-module paths under `path`, relative to it, as one comparable string. */
function structure(mods, path) {
  const out = [];
  const stack = [path];
  while (stack.length) {
    const p = stack.pop();
    out.push(p.slice(path.length));
    stack.push(...mods.get(p).children);
  }
  return out.sort().join("|");
}

/**
 * Which modules start collapsed: none when the whole graph fits the budget; otherwise start
 * from everything collapsed and expand the biggest modules, breadth first, while it fits.
 * Identical blocks stay merged ("layers × 6") until the user opens them.
 */
export function defaultCollapsed(index, tree, budget = DEFAULT_BUDGET, shown = null) {
  // `shown`: the nodes drawn at all (folded iterations or calls are not), as a 0/1 mask.
  const total = shown ? shown.reduce((s, x) => s + x, 0) : index.nodes.length;
  if (total <= budget || tree.mods.size === 0) return new Set();
  const collapsed = new Set(tree.mods.keys());
  let visible = index.module.filter((m) => !m).length + tree.roots.length;
  const queue = [...tree.roots].sort((p, q) => tree.mods.get(q).count - tree.mods.get(p).count);
  while (queue.length) {
    const m = tree.mods.get(queue.shift());
    if (m.parent && tree.repeats.has(m.parent)) continue;
    const cost = m.direct.length + m.children.length - 1;
    if (visible + cost > budget) continue;
    collapsed.delete(m.path);
    visible += cost;
    if (tree.repeats.has(m.path)) visible -= m.children.length - 1;
    queue.push(...[...m.children].sort((p, q) => tree.mods.get(q).count - tree.mods.get(p).count));
  }
  // NOTE [one module called in a loop]: an RNN cell called 200 times puts thousands of nodes
  // in one module without sub-modules; collapsed, the whole graph would be one box. When the
  // collapsed view is that empty, open the biggest such module: the unrolled loop is the point.
  if (visible < MIN_VISIBLE) {
    const shown = [...collapsed].filter((p) => {
      const m = tree.mods.get(p);
      return !m.children.length && !prefixes(p).slice(0, -1).some((q) => collapsed.has(q));
    });
    shown.sort((p, q) => tree.mods.get(q).count - tree.mods.get(p).count);
    if (shown.length) collapsed.delete(shown[0]);
  }
  return collapsed;
}

/** The group key a node is drawn in (`mod:path`, `rep:parent`), or null when drawn itself. */
export function groupKeyFor(path, tree, collapsed, expandedRepeats) {
  if (!path) return null;
  for (const p of prefixes(path)) {
    if (!collapsed.has(p)) continue;
    const parent = tree.mods.get(p).parent;
    const rep = parent ? tree.repeats.get(parent) : null;
    if (rep && !expandedRepeats.has(parent) && rep.every((c) => collapsed.has(c))) return `rep:${parent}`;
    return `mod:${p}`;
  }
  return null;
}
