/**
 * Label placement in screen space: every text the graph draws (node labels, edge labels,
 * module titles, the error badge) is placed so that none covers another, none covers a node
 * it does not belong to, and none sticks out of the canvas. Pure: no DOM, unit-tested.
 *
 * NOTE [greedy placement]
 *   Items come in priority order (the error, node labels, titles, edge labels). Each has a few
 *   candidate positions (an edge label: right of the edge's middle, left of it, above, below,
 *   further along); the first candidate that is inside the viewport and free wins, else the
 *   item is dropped. A uniform grid of 64 px cells keeps the overlap test cheap.
 */

export const MIN_TEXT_PX = 9;
const CELL = 64;

class Grid {
  constructor() { this.cells = new Map(); }
  _keys(r) {
    const out = [];
    for (let gx = Math.floor(r.x / CELL); gx <= Math.floor((r.x + r.w) / CELL); gx++) {
      for (let gy = Math.floor(r.y / CELL); gy <= Math.floor((r.y + r.h) / CELL); gy++) out.push(gx * 100003 + gy);
    }
    return out;
  }
  hits(r, owner, overNodes = false, lines = null, outlinesOnly = false) {
    for (const key of this._keys(r)) {
      for (const o of this.cells.get(key) || []) {
        if (o.line) { if (lines && o.line !== lines && !(outlinesOnly && o.line === "edge") && intersects(o, r)) return true; continue; }
        if ((owner === undefined || o.owner !== owner) && !(overNodes && (o.node || o.yields)) && intersects(o, r)) return true;
      }
    }
    return false;
  }
  add(r) {
    for (const key of this._keys(r)) {
      let list = this.cells.get(key);
      if (!list) this.cells.set(key, (list = []));
      list.push(r);
    }
  }
}

/** Open rectangles {x, y, w, h} overlap (touching edges do not). */
export function intersects(a, b) {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

/**
 * @param items  [{w, h, px, candidates: [[x, y], …] (top-left corners), owner?}] in priority order;
 *               `owner` names the node a label belongs to, so its own box is no obstacle
 * @param obstacles [{x, y, w, h, owner?, node?}] node boxes in screen space (`node`: an item
 *               marked `over`, a module region's label, may cover them)
 * @param vw, vh  the viewport
 * @param clamp  items whose every candidate leaves the viewport are moved inside it (the error badge)
 * @returns the placed items, each with {x, y} set; items below MIN_TEXT_PX are never placed
 */
export function placeLabels(items, obstacles, vw, vh) {
  const grid = new Grid();
  for (const o of obstacles) grid.add(o);
  const placed = [];
  for (const it0 of items) {
    let it = it0;
    if (!(it.px >= MIN_TEXT_PX)) continue;
    let cands = it.candidates;
    if (it.clamp) cands = [...cands, ...cands.map(([x, y]) => [clampTo(x, it.w, vw), clampTo(y, it.h, vh)])];
    // NOTE [titles clear of lines]: a module's title takes the first of its places that no edge
    // and no other module's outline runs through (`line` obstacles: pieces of those lines, each
    // marked with the box it outlines, which its own title may touch); where every place is
    // crossed it is drawn on a background of its own (`knock`), so no line runs through its text.
    let tries = cands.map(([x, y]) => [x, y, it0]);
    if (it0.lines) {
      const crossed = (v, x, y) => grid.hits({ x, y, w: v.w, h: v.h }, undefined, false, it0.lines);
      const knocked = it0.bg ? it0 : { ...it0, bg: it0.knock, w: it0.w + 6 };
      // Its whole text where nothing crosses it, else a shorter form of it (`shorter`, the
      // whole text stays its tooltip) where nothing does, else the first of them that only
      // edges cross, on its background, else the whole text, on its background where crossed.
      // It moves along its first row only (above its box it would land elsewhere in a view with
      // more room, an export, than on the screen).
      tries = [];
      const row = cands[0][1];
      const forms = [it0, ...(it0.shorter || []).map((sh) => ({ ...it0, ...sh, full: it0.full || it0.text }))];
      for (const v of forms) for (const [x, y] of cands) if (y === row && !crossed(v, x, y)) tries.push([x, y, v]);
      // Crossed by edges only: the first form clear of other modules' outlines, on its background.
      for (const v of forms) {
        const at = cands.find(([x, y]) => y === row && !grid.hits({ x, y, w: v.w, h: v.h }, undefined, false, it0.lines, true));
        if (at) { tries.push([at[0], at[1], v.bg ? v : { ...v, bg: it0.knock, w: v.w + 6 }]); break; }
      }
      for (const [x, y] of cands) tries.push([x, y, crossed(it0, x, y) ? knocked : it0]);
    }
    for (const [x, y, variant] of tries) {
      it = variant;
      const r = { x, y, w: it.w, h: it.h, owner: it.owner };
      if (x < 0 || y < 0 || x + it.w > vw || y + it.h > vh) continue;
      if (grid.hits(r, it.owner, !!it.over)) continue;  // `over`: a region's label may cover its nodes
      grid.add({ x, y, w: it.w, h: it.h, owner: it.owner === undefined ? undefined : `label:${it.owner}`, yields: !!it.abbrOnly });
      // A region's label covers node short forms (`abbrOnly`): they give way (NOTE [modules as regions] in draw.js).
      if (it.over) for (let j = placed.length - 1; j >= 0; j--) if (placed[j].abbrOnly && intersects(placed[j], r)) placed.splice(j, 1);
      placed.push({ ...it, x, y });
      break;
    }
  }
  return placed;
}

/**
 * A text shortened with "…" to fit `maxW` screen px (as `measure` measures it), or null when
 * too little of it would be left to read (fewer than `minChars` of its characters).
 *
 * NOTE [shortening titles]: the longest word goes first ("TransformerEncoderLayer 1–3 of 6"
 * becomes "TransformerEnc… 1–3 of 6"), so the numbers, which tell folds apart, stay; when
 * that is not enough, the text is cut at its end. The caller keeps the whole text (tooltip,
 * the node list's accessible name).
 */
export function ellipsize(text, maxW, measure, minChars = 4) {
  if (measure(text) <= maxW) return text;
  const words = text.split(" ");
  let longest = 0;
  words.forEach((wd, i) => { if (wd.length > words[longest].length) longest = i; });
  const withWord = (n) => words.map((wd, i) => (i === longest ? `${wd.slice(0, n)}…` : wd)).join(" ");
  const best = (make, hi) => {
    let lo = 0;  // the most characters kept that still fit, by bisection (measure is monotone)
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (measure(make(mid)) <= maxW) lo = mid; else hi = mid - 1; }
    return lo;
  };
  const chars = [...text].length;
  const keepWord = words[longest].length > 1 ? best(withWord, words[longest].length - 1) : 0;
  if (keepWord >= 1 && measure(withWord(keepWord)) <= maxW && chars - words[longest].length + keepWord >= minChars) return withWord(keepWord);
  const cut = (n) => `${text.slice(0, n).trimEnd()}…`;
  let keep = best(cut, text.length - 1);
  // At a word's end rather than inside a number ("calls…", not "calls 1–3…" for 1–36).
  const space = text.lastIndexOf(" ", keep);
  if (space >= minChars && /\S/.test(text[keep] || "")) keep = space;
  return keep >= minChars && measure(cut(keep)) <= maxW ? cut(keep) : null;
}

// A clamped label keeps EDGE px from the view's sides: a glyph taller than its line box (⚑, ‖)
// would otherwise be cut at the top.
const EDGE = 2;
function clampTo(v, size, max) { return Math.max(EDGE, Math.min(max - size - EDGE, v)); }
