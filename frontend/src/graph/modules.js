/**
 * The module tree (`encoder.layers.0.self_attn` …) behind collapsible module boxes, the
 * default collapse that keeps the visible graph small, and detection of repeated blocks.
 *
 * NOTE [repeated blocks]
 *   Siblings whose last path segment is a number (`layers.0` … `layers.5`) and whose nodes
 *   have the same names in the same order are "identical blocks". While every one of them is
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
        direct: [], count: 0, children: [], sig: [] };
      mods.set(path, m);
    }
    return m;
  };
  index.module.forEach((path, i) => {
    if (!path) return;
    get(path).direct.push(i);
    for (const p of prefixes(path)) {
      const m = get(p);
      m.count++;
      m.sig.push(index.nodes[i].name || index.kind[i]);
    }
  });
  for (const m of mods.values()) if (m.parent) get(m.parent);
  for (const m of mods.values()) if (m.parent) mods.get(m.parent).children.push(m.path);
  const repeats = new Map(); // parent path → [child paths]
  for (const m of mods.values()) {
    const numbered = m.children.filter((c) => /\.\d+$/.test(c));
    if (numbered.length < 2 || numbered.length !== m.children.length) continue;
    const sigs = numbered.map((c) => mods.get(c).sig.join("|"));
    if (sigs.every((s) => s === sigs[0])) {
      numbered.sort((p, q) => Number(p.slice(p.lastIndexOf(".") + 1)) - Number(q.slice(q.lastIndexOf(".") + 1)));
      repeats.set(m.path, numbered);
    }
  }
  for (const m of mods.values()) m.sig = null;
  const roots = [...mods.values()].filter((m) => !m.parent).map((m) => m.path);
  return { mods, roots, repeats };
}

/**
 * Which modules start collapsed: none when the whole graph fits the budget; otherwise start
 * from everything collapsed and expand the biggest modules, breadth first, while it fits.
 */
export function defaultCollapsed(index, tree, budget = 300) {
  const total = index.nodes.length;
  if (total <= budget || tree.mods.size === 0) return new Set();
  const collapsed = new Set(tree.mods.keys());
  let visible = index.module.filter((m) => !m).length + tree.roots.length;
  const queue = [...tree.roots].sort((p, q) => tree.mods.get(q).count - tree.mods.get(p).count);
  while (queue.length) {
    const m = tree.mods.get(queue.shift());
    const cost = m.direct.length + m.children.length - 1;
    if (visible + cost > budget) continue;
    collapsed.delete(m.path);
    visible += cost;
    queue.push(...[...m.children].sort((p, q) => tree.mods.get(q).count - tree.mods.get(p).count));
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
