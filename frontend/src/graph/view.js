/**
 * The visible graph: document nodes after module collapsing, plus per-use proxies of shared
 * leaves. Each visible node keeps `refs`, the document nodes it stands for, so the timeline
 * (which speaks document ids) can light up the right boxes.
 *
 * NOTE [per-use proxies]
 *   A parameter used at every step of an unrolled RNN feeds hundreds of consumers; its long
 *   edges make every layered layout slow and unreadable. On bigger
 *   graphs each extra use of a shared AccumulateGrad (and its leaf) gets its own copy, drawn
 *   next to the consumer. Copies share `refs`, so inspecting or highlighting works the same.
 */
import { prefixes } from "./document.js";
import { isShared } from "./groups.js";
import { foldLabel, foldOf, isOpen, unitKey, unitLabel } from "./units.js";
import { groupKeyFor } from "./modules.js";
import { derivativeOrders } from "./orders.js";
import { isCustomFunction } from "./custom.js";
import { tiedLabel, tiedSub, varSub } from "./names.js";

export const PROXY_MIN_NODES = 150;
const CHAR_W = 7.4;

function fmtShape(shape) {
  if (!shape) return "";
  return shape.length ? shape.join("×") : "scalar";
}

function nodeLabels(index, i) {
  const n = index.nodes[i];
  const kind = index.kind[i];
  if (isCustomFunction(n, index.doc && typeof index.doc.code === "string" ? index.doc.code : undefined)) return [n.name, `your code · ${fmtShape(n.shape)}`]; // graph/custom.js
  if (kind === "function" || kind === "acc") return [n.name || "?", varSub(n, fmtShape(n.shape))];
  if (kind === "cut") return [`✂ ${(n.cut && n.cut.kind) || "cut"}${n.name ? " " + n.name : ""}`, fmtShape(n.shape)];
  const fallback = kind === "output" ? "output" : kind === "retained" ? "retained" : "leaf";
  return [tiedLabel(n) || n.name || fallback, tiedSub(n, fmtShape(n.shape))];
}

function sizeFor(label, sub, kind) {
  const chars = Math.max(label.length, (sub || "").length, kind === "function" || kind === "acc" ? 0 : 12);
  return [Math.max(56, Math.round(chars * CHAR_W + 22)), kind === "group" ? 42 : 38];
}

/**
 * @param index  from indexDocument()
 * @param tree   from moduleTree()
 * @param state  {collapsed: Set<path>, expandedRepeats: Set<path>, levels?: from runLevels(),
 *                openUnits?: the open unit of each level}: units other than the open ones are folded
 */
export function buildView(index, tree, state) {
  const vnodes = [];
  const groupOf = new Map();
  const vmap = new Int32Array(index.nodes.length);
  const levels = state.levels || [];
  const active = state.openUnits || levels.map(() => 0);
  const opened = state.open || new Set();
  index.nodes.forEach((_, i) => {
    const fold = levels.length ? foldOf(levels, active, i, opened) : null;
    const key = fold ? fold.key : groupKeyFor(index.module[i], tree, state.collapsed, state.expandedRepeats);
    if (key) {
      let g = groupOf.get(key);
      if (g === undefined) {
        g = vnodes.length;
        groupOf.set(key, g);
        vnodes.push(fold ? foldNode(fold, levels[fold.level]) : groupNode(key, tree));
      }
      vnodes[g].refs.push(i);
      vmap[i] = g;
    } else {
      const [label, sub] = nodeLabels(index, i);
      const kind = index.kind[i];
      const [w, h] = sizeFor(label, sub, kind);
      vmap[i] = vnodes.length;
      vnodes.push({ key: index.nodes[i].id, kind, label, sub, refs: [i], w, h, proxy: false });
    }
  });
  for (const v of vnodes) if (v.kind === "group") v.sub = `${v.sub} · ${v.refs.length} nodes`;
  // Built by a backward with create_graph=True: its derivative order (graph/orders.js), 1 or more.
  const orders = derivativeOrders(index);
  for (const v of vnodes) if (v.kind !== "group" && orders[v.refs[0]]) v.higher = orders[v.refs[0]];

  const vedges = [];
  const pair = new Map();
  const addEdge = (s, t, ref, cut) => {
    if (s === t) return;
    const key = `${s}>${t}${cut ? "!" : ""}`;
    let e = pair.get(key);
    if (e === undefined) { e = vedges.length; pair.set(key, e); vedges.push({ s, t, refs: [], cut: !!cut }); }
    if (ref >= 0) vedges[e].refs.push(ref);
  };
  index.edges.forEach((e, k) => addEdge(vmap[e.s], vmap[e.t], k, false));
  index.nodes.forEach((n, i) => {
    const src = n.cut && n.cut.source != null ? index.idx.get(n.cut.source) : undefined;
    if (src !== undefined) addEdge(vmap[src], vmap[i], -1, true);
  });
  if (vnodes.length > PROXY_MIN_NODES) addProxies(vnodes, vedges);

  for (const v of vnodes) if (v.fold) v.sub = `${v.single ? "folded" : `folded · × ${v.hi - v.lo + 1}`} · ${v.refs.length} nodes`;

  const byRef = index.nodes.map(() => []);
  vnodes.forEach((v, k) => { for (const r of v.refs) byRef[r].push(k); });
  const boxes = boxesOf(index, vnodes, levels, active, opened);
  return { vnodes, vedges, byRef, cluster: boxes.cluster, boxPaths: boxes.paths, titles: boxes.titles };
}

function foldNode(fold, lv) {
  const label = foldLabel(lv, fold.lo, fold.hi, fold.n);
  const [w, h] = sizeFor(label, `folded · × ${fold.hi - fold.lo + 1} · 00000 nodes`, "group");
  return { key: fold.key, kind: "group", fold: true, single: fold.single, level: fold.level, lo: fold.lo, hi: fold.hi,
    unitKind: lv.kind, unitNoun: lv.label, module: null, label, sub: "folded", refs: [], w, h,
    firstStep: lv.units ? lv.units[fold.lo].firstStep : 0, lastStep: lv.units ? lv.units[fold.hi].lastStep : 0 };
}

/**
 * NOTE [outlines of units and modules]
 *   The boxes each visible node is drawn inside, outermost first: each open iteration
 *   ("iteration 7 of 20"), then each expanded module. A module called once per unit of a call
 *   level gets one box per call (`cell@36`, titled "GRUCell call 37 of 200"), so two open
 *   calls are two outlines that never share one polygon. Shared nodes (parameters and their
 *   AccumulateGrad) sit outside every unit's outline: they belong to all of them.
 *   `paths[v]` lists box keys; `cluster[v]` the same as small ints for the layout.
 */
function boxesOf(index, vnodes, levels, active, opened) {
  const titles = new Map();
  const callLevel = levels.findIndex((lv) => lv.kind === "call");
  const callPath = callLevel >= 0 ? levels[callLevel].path : null;
  // An open block of a stack is its module's box, titled "TransformerEncoderLayer 4 of 6".
  levels.forEach((lv, l) => {
    if (lv.kind === "block") lv.blocks.forEach((b, u) => { if (isOpen(active, opened, l, u)) titles.set(b, `${b} · ${unitLabel(lv, u)}`); });
  });
  const paths = vnodes.map((v) => {
    if (v.fold) {
      // A fold inside an open unit of an outer level sits in that unit's outline.
      const out = [];
      for (let l = 0; l < v.level; l++) {
        const u = levels[l].unitOf[v.refs[0]];
        if (u >= 0 && isOpen(active, opened, l, u)) out.push(unitBox(levels, l, u, titles));
      }
      return out.length ? out : null;
    }
    const ref = v.refs[0];
    // Shared by the units of a level (a parameter every iteration or call uses): drawn once,
    // outside every outline, also its module's (a module box would reach into each unit).
    const shared = v.kind !== "group" && isShared(index, ref) && levels.length > 0 && levels.every((lv) => lv.unitOf[ref] < 0);
    if (shared) return null;
    const out = [];
    if (!shared) {
      levels.forEach((lv, l) => {
        const u = lv.unitOf[ref];
        if (lv.kind === "iteration" && u >= 0 && v.refs.every((r) => lv.unitOf[r] === u)) out.push(unitBox(levels, l, u, titles));
      });
    }
    const path = v.kind === "group" ? (v.repeat ? v.module : parentPath(v.module)) : index.module[ref];
    if (path) {
      const call = callLevel >= 0 ? levels[callLevel].unitOf[ref] : -1;
      for (const p of prefixes(path)) {
        const inCall = callPath && (p === callPath || p.startsWith(callPath + "."));
        if (inCall && (shared || call < 0)) break;
        const key = inCall ? `${p}@${call}` : p;
        // A module inside the call is titled by its path ("net.0"), never by its key ("net.0@0").
        if (inCall && !titles.has(key)) titles.set(key, p === callPath ? unitLabel(levels[callLevel], call) : p);
        out.push(key);
      }
    }
    return out.length ? out : null;
  });
  // A module whose only content is one box inside it (`encoder` around `encoder.layers` around
  // the open layer) adds an outline that says nothing: leave it out.
  const inner = new Map();
  for (const list of paths) {
    if (!list) continue;
    list.forEach((key, d) => {
      if (!inner.has(key)) inner.set(key, new Set());
      inner.get(key).add(d + 1 < list.length ? list[d + 1] : null);
    });
  }
  const hollow = new Set([...inner].filter(([key, next]) => next.size === 1 && !next.has(null) && !key.startsWith("unit:")).map(([key]) => key));
  const kept = paths.map((list) => {
    if (!list) return null;
    const out = list.filter((key) => !hollow.has(key));
    return out.length ? out : null;
  });
  paths.splice(0, paths.length, ...kept);
  const ids = new Map();
  const cluster = paths.map((list) => list && list.map((key) => { if (!ids.has(key)) ids.set(key, ids.size); return ids.get(key); }));
  return { paths, titles, cluster: ids.size ? cluster : null };
}

function unitBox(levels, l, u, titles) {
  const key = unitKey(l, u);
  if (!titles.has(key)) titles.set(key, unitLabel(levels[l], u));
  return key;
}

function parentPath(path) {
  const dot = path ? path.lastIndexOf(".") : -1;
  return dot > 0 ? path.slice(0, dot) : null;
}

function groupNode(key, tree) {
  const path = key.slice(4);
  if (key.startsWith("rep:")) {
    const blocks = tree.repeats.get(path);
    const last = path.slice(path.lastIndexOf(".") + 1);
    const label = `${last} × ${blocks.length}`;
    const [w, h] = sizeFor(label, `${path} · repeated blocks · 0000 nodes`, "group");
    return { key, kind: "group", repeat: true, module: path, label, sub: `${path}.0–${blocks.length - 1}`, refs: [], w, h };
  }
  const [w, h] = sizeFor(path, `module · 00000 nodes`, "group");
  return { key, kind: "group", repeat: false, module: path, label: path, sub: "module", refs: [], w, h };
}

/** Give each extra consumer of a shared AccumulateGrad its own copy (with its leaf). */
function addProxies(vnodes, vedges) {
  const out = vnodes.map(() => []);
  const inc = vnodes.map(() => []);
  vedges.forEach((e, k) => { out[e.s].push(k); inc[e.t].push(k); });
  const n0 = vnodes.length;
  for (let a = 0; a < n0; a++) {
    if (vnodes[a].kind !== "acc" || out[a].length < 2) continue;
    const leaves = inc[a].filter((k) => vnodes[vedges[k].s].kind === "leaf" && out[vedges[k].s].length === 1);
    for (const k of out[a].slice(1)) {
      const copy = vnodes.length;
      vnodes.push({ ...vnodes[a], key: `${vnodes[a].key}#${k}`, refs: vnodes[a].refs.slice(), proxy: true });
      vedges[k].s = copy;
      for (const lk of leaves) {
        const leaf = vedges[lk].s;
        const lc = vnodes.length;
        vnodes.push({ ...vnodes[leaf], key: `${vnodes[leaf].key}#${k}`, refs: vnodes[leaf].refs.slice(), proxy: true });
        vedges.push({ s: lc, t: copy, refs: vedges[lk].refs.slice(), cut: false });
      }
    }
  }
}

/** The visible nodes of `view` that draw what code line `line` made. */
export function lineNodes(index, view, line) {
  const refs = index.byLine.get(line) || [];
  return [...new Set(refs.flatMap((r) => view.byRef[r]))];
}
