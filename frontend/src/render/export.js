/**
 * Exports: the whole graph at the current step as PNG and SVG, and the document as JSON and
 * Graphviz DOT.
 *
 * NOTE [exports equal the screen]: PNG and SVG come from one drawing: render/draw.js draws the
 * scene on an offscreen canvas at the zoom of the screen (so texts are the screen's size, short
 * forms and all), and its label placement (render/texts.js) is what both show: the PNG is that
 * canvas, the SVG draws the same shapes and puts every text where the placement put it. Both
 * add the legend of the marks they hold under the graph. tests/browser/test_teacher.py compares
 * the label boxes of the canvas, the PNG drawing and the SVG.
 */
import { drawScene } from "./draw.js";
import { edgePoints, midpoint } from "./geometry.js";
import { stepState } from "./scene.js";
import { KINDS } from "../graph/document.js";
import { fmtTensorShort, gradMagnitude } from "../graph/values.js";

export function download(filename, blob) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}

const esc = (s) => String(s ?? "").replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
const dotEsc = (s) => String(s ?? "").replace(/\\/g, "\\\\").replace(/"/g, '\\"');

/**
 * Graphviz DOT of the whole document (not only the visible, collapsed view): one cluster per
 * module (nested as the modules are), and on each edge the gradient it carried in the last
 * backward pass that used it (timeline.js flows), as the screen shows at the end of the run.
 */
export function toDot(index, direction = "TB", timeline = null) {
  const shapes = { function: "box", acc: "box", leaf: "box", output: "box", retained: "box", cut: "box" };
  const colors = { function: "#e8f0fe", acc: "#e3f5e1", leaf: "#fff4d6", output: "#f3e5ff", retained: "#dff5f3", cut: "#eeeeee" };
  const lines = [`digraph gradtrace {`, `  rankdir=${direction};`, `  node [fontname="monospace", fontsize=10, style="rounded,filled"];`];
  const nodeLine = (i, indent) => {
    const n = index.nodes[i];
    const kind = index.kind[i];
    const label = [n.name || kind, n.shape ? `[${n.shape.join(", ")}]` : "", n.line != null ? `line ${n.line}` : ""].filter(Boolean).join("\\n");
    return `${indent}"${dotEsc(n.id)}" [label="${dotEsc(label).replace(/\\\\n/g, "\\n")}", shape=${shapes[kind]}, fillcolor="${colors[kind]}"];`;
  };
  // Modules as nested clusters: a tree of paths, each holding the nodes made directly in it.
  const tree = new Map([["", { kids: new Map(), nodes: [] }]]);
  const at = (path) => {
    if (tree.has(path)) return tree.get(path);
    const dot = path.lastIndexOf(".");
    const parent = at(dot > 0 ? path.slice(0, dot) : "");
    const t = { kids: new Map(), nodes: [] };
    parent.kids.set(path, t);
    tree.set(path, t);
    return t;
  };
  index.nodes.forEach((_, i) => at(index.module[i] || "").nodes.push(i));
  let clusters = 0;
  const emit = (t, indent) => {
    for (const i of t.nodes) lines.push(nodeLine(i, indent));
    for (const [path, kid] of t.kids) {
      lines.push(`${indent}subgraph "cluster_${clusters++}" {`, `${indent}  label="${dotEsc(path)}"; style="dashed,rounded"; color="#888899"; fontname="monospace";`);
      emit(kid, `${indent}  `);
      lines.push(`${indent}}`);
    }
  };
  emit(tree.get(""), "  ");
  index.edges.forEach((e, k) => {
    const flows = timeline ? timeline.flows[k] : null;
    const g = flows && flows.length ? flows[flows.length - 1][1] : null;
    const attrs = g ? ` [label="${dotEsc(`∇ ${fmtTensorShort(g, 3)}`)}", fontname="monospace", fontsize=9]` : "";
    lines.push(`  "${dotEsc(index.nodes[e.s].id)}" -> "${dotEsc(index.nodes[e.t].id)}"${attrs};`);
  });
  index.nodes.forEach((n) => {
    if (n.cut && n.cut.source) lines.push(`  "${dotEsc(n.cut.source)}" -> "${dotEsc(n.id)}" [style=dashed, label="${dotEsc(n.cut.kind)}"];`);
  });
  lines.push("}");
  return lines.join("\n") + "\n";
}

function pathD(p) {
  let d = `M${p[0].toFixed(1)},${p[1].toFixed(1)}`;
  for (let i = 2; i < p.length; i += 2) d += ` L${p[i].toFixed(1)},${p[i + 1].toFixed(1)}`;
  return d;
}

const PAD = 20;
const LEGEND_ROW = 18;

/** The PNG's pixels per drawing px unless the person picks another: 2, sharp on slides and
 * high-density screens (the drawing's px are the screen's CSS px). */
export const PNG_SCALE = 2;
const MAX_SIDE = 16_000;  // px of the PNG's canvas a side: browsers refuse larger canvases

/**
 * The drawing both exports come from (NOTE [exports equal the screen]): the whole graph at
 * step k drawn by render/draw.js at zoom `zoom` (the screen's), at most 7,000 px a side.
 * `scale` is the pixels per drawing px of its canvas (the PNG's; 1 unless asked): the texts,
 * the placement and the SVG are the same at any scale, only sharper.
 * @returns {{canvas, placed, cam, W, H, s, scale}}  `placed`: the texts in the drawing's px;
 *          `canvas` is W·scale × H·scale pixels
 */
export function exportDrawing(scene, k, pal, zoom = 1, { selected = new Set(), lineSel = new Set(), scale = 1 } = {}) {
  const s = Math.min(Math.max(zoom, 0.05), 4, 7000 / (scene.width + 2 * PAD), 7000 / (scene.height + 2 * PAD));
  // Room around the graph for the texts placed beside it (an error's words, an edge's
  // gradient), then cropped to what was drawn.
  const gw = Math.ceil((scene.width + 2 * PAD) * s), gh = Math.ceil((scene.height + 2 * PAD) * s);
  const fw = gw + 2 * MARGIN_X, fh = gh + 2 * MARGIN_Y;
  const r = Math.max(0.1, Math.min(scale, MAX_SIDE / fw, MAX_SIDE / fh));
  const full = document.createElement("canvas");
  full.width = Math.ceil(fw * r); full.height = Math.ceil(fh * r);
  const cam0 = { x: -PAD - MARGIN_X / s, y: -PAD - MARGIN_Y / s, k: s };
  const opts = { pal, dpr: r, selected, lineSel };
  drawScene(full.getContext("2d"), scene, stepState(scene, k), cam0, fw, fh, opts);
  const placed0 = opts.placed || [];
  let x0 = MARGIN_X, y0 = MARGIN_Y, x1 = MARGIN_X + gw, y1 = MARGIN_Y + gh;
  for (const p of placed0) { x0 = Math.min(x0, p.x - 4); y0 = Math.min(y0, p.y - 4); x1 = Math.max(x1, p.x + p.w + 4); y1 = Math.max(y1, p.y + p.h + 4); }
  x0 = Math.max(0, Math.floor(x0)); y0 = Math.max(0, Math.floor(y0));
  const W = Math.max(1, Math.min(fw, Math.ceil(x1)) - x0), H = Math.max(1, Math.min(fh, Math.ceil(y1)) - y0);
  const canvas = document.createElement("canvas");
  canvas.width = Math.round(W * r); canvas.height = Math.round(H * r);
  canvas.getContext("2d").drawImage(full, -Math.round(x0 * r), -Math.round(y0 * r));
  const cam = { x: cam0.x + x0 / s, y: cam0.y + y0 / s, k: s };
  const placed = placed0.map((p) => ({ ...p, x: p.x - x0, y: p.y - y0 }));
  return { canvas, placed, cam, W, H, s, scale: r };
}

/** Screen px around the graph where the export drawing has room for texts beside it. */
const MARGIN_X = 260, MARGIN_Y = 40;

/** The width in px the legend's longest line needs (11 px monospace, after its 42 px swatch). */
function legendWidth(legend) { return legend.reduce((w, e) => Math.max(w, 42 + 6.7 * [...e.text].length + 12), 0); }

/** The legend of what a drawing holds: its node kinds, then the marks it shows. */
export function legendEntries(scene, k, pal) {
  const st = stepState(scene, k);
  const out = [];
  const kinds = new Set(), orders = new Set();
  scene.view.vnodes.forEach((n, v) => {
    if (!(scene.reveal[v] <= k)) return;
    kinds.add(n.kind);
    if (n.higher) orders.add(Math.min(n.higher, 2));
  });
  for (const kind of kinds) out.push({ fill: pal.kinds[kind].fill, stroke: pal.kinds[kind].stroke, text: KINDS[kind] || kind });
  if (orders.has(1)) out.push({ band: pal.higher, text: "built by a backward with create_graph=True (1st order)" });
  if (orders.has(2)) out.push({ band: pal.higher2, text: "built by a backward over that graph (2nd order)" });
  if (st.pass >= 0) out.push({ line: pal.gradPos, text: "gradient > 0 (width ∝ |grad|)" }, { line: pal.gradNeg, text: "gradient < 0" });
  if (scene.view.vedges.some((e) => e.cut)) out.push({ glyph: "✂", text: "a cut: gradients stop here" });
  if (scene.errorV && scene.errorV.length) out.push({ glyph: "⚠", text: "where the run's error was raised" });
  if (scene.boxes.length) out.push({ stroke: pal.boxStroke, fill: pal.box, dash: true, text: "▾ a module, iteration or call" });
  return out;
}

/**
 * The graph as shown at step k, as SVG text: the shapes render/draw.js draws (module outlines,
 * edges coloured by the gradient's sign with width by its size, arrowheads, node shapes and
 * dashes by kind, derivative-order bands, the reached bar, the rings) and every text where the
 * drawing's label placement put it, then the legend; each edge's full gradient is a tooltip.
 */
export function toSvg(scene, k, pal, zoom = 1, drawing = null) {
  const d = drawing || exportDrawing(scene, k, pal, zoom);
  const { s, W, H, placed } = d;
  const st = stepState(scene, k);
  const legend = legendEntries(scene, k, pal);
  const LH = legend.length ? legend.length * LEGEND_ROW + 12 : 0;
  const WW = Math.max(W, Math.ceil(legendWidth(legend)));
  const { vnodes, vedges } = scene.view;
  const out = [`<svg xmlns="http://www.w3.org/2000/svg" width="${WW}" height="${H + LH}" viewBox="0 0 ${WW} ${H + LH}" font-family="ui-monospace, monospace">`,
    `<defs><marker id="gt-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" markerUnits="userSpaceOnUse" orient="auto">` +
    `<path d="M0,0 L10,5 L0,10 z" fill="${pal.edge}"/></marker></defs>`,
    `<rect x="0" y="0" width="${WW}" height="${H + LH}" fill="${pal.bg}"/>`,
    `<g class="graph" transform="scale(${s}) translate(${-d.cam.x} ${-d.cam.y})">`];
  for (const b of scene.boxes) {
    if (!(b.reveal <= k)) continue;
    const pts = [];
    for (let i = 0; i < b.poly.length; i += 2) pts.push(`${b.poly[i].toFixed(1)},${b.poly[i + 1].toFixed(1)}`);
    out.push(`<polygon class="module" points="${pts.join(" ")}" fill="${pal.box}" stroke="${pal.boxStroke}" stroke-dasharray="4 3"/>`);
  }
  const active = [];
  vedges.forEach((e, i) => {
    if (!(scene.edgeReveal[i] <= k)) return;
    const p = edgePoints(scene, i);
    if (e.cut) {
      out.push(`<path class="edge cut" d="${pathD(p)}" fill="none" stroke="${pal.cut}" stroke-width="1.5" stroke-dasharray="5 4"/>`);
      return;
    }
    const g = st.pass >= 0 ? st.edgeGrad(i) : null;
    if (g) { active.push([i, g, p]); return; }
    out.push(`<path class="edge" d="${pathD(p)}" fill="none" stroke="${pal.edge}" stroke-width="1.2" marker-end="url(#gt-arrow)"/>`);
  });
  const mags = active.map(([, g]) => gradMagnitude(g.g));
  const maxNorm = mags.reduce((mx, m) => Math.max(mx, m.size), 1e-12);
  active.forEach(([, g, p], j) => {
    const { sign, size } = mags[j];
    const width = 1.5 + 0.45 * Math.round(10 * Math.sqrt(size / maxNorm));
    const color = sign > 0 ? pal.gradPos : sign < 0 ? pal.gradNeg : pal.gradZero;
    out.push(`<path class="edge grad" d="${pathD(p)}" fill="none" stroke="${color}" stroke-width="${width.toFixed(2)}" marker-end="url(#gt-arrow)">` +
      `<title>${esc(`∇ ${g.all.map((t) => fmtTensorShort(t, 6)).join(" + ")}`)}</title></path>`);
  });
  const rings = [];
  vnodes.forEach((n, v) => {
    if (!(scene.reveal[v] <= k)) return;
    const style = pal.kinds[n.kind];
    const x = scene.x[v] - n.w / 2, y = scene.y[v] - n.h / 2;
    const rx = n.kind === "acc" || n.kind === "output" ? n.h / 2 : 6;
    const dash = n.kind === "cut" || n.kind === "group" ? ` stroke-dasharray="4 3"` : "";
    const reached = st.pass >= 0 ? st.reached(v) : 0;
    const bar = reached ? `<rect x="${x + 4}" y="${y + n.h - 5}" width="${n.w - 8}" height="3" fill="${reached === 2 ? pal.reached : pal.reachedOld}"/>` : "";
    let bands = "";
    if (n.higher) {
      const order = Math.min(n.higher, 2), color = order === 1 ? pal.higher : pal.higher2;
      bands = `<rect class="order${order}" x="${x + 3}" y="${y + 3}" width="${n.w - 6}" height="${n.h - 6}" fill="none" stroke="${color}" stroke-width="1.5"/>`;
      for (let b = 0; b < order; b++) bands += `<rect x="${x + 2 + 4 * b}" y="${y + 3}" width="3" height="${n.h - 6}" fill="${color}"/>`;
    }
    out.push(`<rect class="node ${n.kind}" x="${x}" y="${y}" width="${n.w}" height="${n.h}" rx="${rx}" fill="${style.fill}" stroke="${style.stroke}" stroke-width="1.2"${dash}/>${bar}${bands}`);
    if (st.justDone.has(v) && !st.current.has(v)) rings.push(ring(scene, v, pal.justDone, 3, 3));
    if (st.current.has(v)) rings.push(ring(scene, v, pal.current, 3.5, 3));
  });
  for (const v of scene.errorV || []) if (scene.reveal[v] <= k) rings.push(ring(scene, v, pal.error, 3, 5));
  out.push(...rings, "</g>", `<g class="texts">`);
  // The texts, where the drawing's placement put them (render/texts.js), in the drawing's px.
  for (const p of placed) {
    const bg = p.bg ? `<rect x="${p.x.toFixed(1)}" y="${p.y.toFixed(1)}" width="${p.w.toFixed(1)}" height="${p.h.toFixed(1)}" fill="${p.bg}"/>` : "";
    const x = p.x + (p.bg ? 3 : 0);
    // The text takes the width the drawing measured (textLength): a viewer whose monospace
    // font is wider would otherwise push it out of its background or its box.
    const len = Math.max(1, p.w - (p.bg ? 6 : 0));
    out.push(`${bg}<text class="label ${p.kind}" x="${x.toFixed(1)}" y="${(p.y + p.h / 2).toFixed(1)}" dominant-baseline="central" ` +
      `textLength="${len.toFixed(1)}" lengthAdjust="spacingAndGlyphs" ` +
      `style="font: ${esc(p.font)}" fill="${p.color}"${p.full ? ` data-full="${esc(p.full)}"` : ""}>${esc(p.text)}</text>`);
  }
  out.push("</g>");
  legend.forEach((e, i) => {
    const y = H + 6 + i * LEGEND_ROW;
    let mark;
    if (e.band) mark = `<rect x="12" y="${y + 2}" width="22" height="12" fill="none" stroke="${e.band}"/><rect x="12" y="${y + 2}" width="4" height="12" fill="${e.band}"/>`;
    else if (e.line) mark = `<rect x="12" y="${y + 7}" width="22" height="3" fill="${e.line}"/>`;
    else if (e.glyph) mark = `<text x="23" y="${y + 13}" font-size="13" text-anchor="middle" fill="${pal.text}">${esc(e.glyph)}</text>`;
    else mark = `<rect x="12" y="${y + 2}" width="22" height="12" rx="3" fill="${e.fill}" stroke="${e.stroke}"${e.dash ? ` stroke-dasharray="4 3"` : ""}/>`;
    out.push(`<g class="legend">${mark}<text x="42" y="${y + 12}" font-size="11" fill="${pal.text}">${esc(e.text)}</text></g>`);
  });
  out.push("</svg>");
  return out.join("\n");
}

function ring(scene, v, color, width, pad) {
  const n = scene.view.vnodes[v];
  return `<rect class="ring" x="${scene.x[v] - n.w / 2 - pad}" y="${scene.y[v] - n.h / 2 - pad}" width="${n.w + 2 * pad}" height="${n.h + 2 * pad}" rx="8" fill="none" stroke="${color}" stroke-width="${width}"/>`;
}

/**
 * The whole graph at step k as a PNG blob: the export drawing with the legend under it, at
 * `scale` pixels per drawing px (PNG_SCALE unless the person picks another; a given drawing
 * keeps its own).
 */
export function toPng(scene, k, pal, zoom = 1, drawing = null, scale = PNG_SCALE) {
  const d = drawing || exportDrawing(scene, k, pal, zoom, { scale });
  const r = d.scale || 1;
  const legend = legendEntries(scene, k, pal);
  const LH = legend.length ? legend.length * LEGEND_ROW + 12 : 0;
  const out = document.createElement("canvas");
  out.width = Math.round(Math.max(d.W, Math.ceil(legendWidth(legend))) * r); out.height = Math.round((d.H + LH) * r);
  const ctx = out.getContext("2d");
  ctx.fillStyle = pal.bg;
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.drawImage(d.canvas, 0, 0);
  ctx.setTransform(r, 0, 0, r, 0, 0);  // the legend in drawing px, as the SVG's
  ctx.textBaseline = "middle";
  legend.forEach((e, i) => {
    const y = d.H + 6 + i * LEGEND_ROW;
    ctx.lineWidth = 1.2;
    if (e.band) { ctx.strokeStyle = e.band; ctx.strokeRect(12, y + 2, 22, 12); ctx.fillStyle = e.band; ctx.fillRect(12, y + 2, 4, 12); }
    else if (e.line) { ctx.fillStyle = e.line; ctx.fillRect(12, y + 7, 22, 3); }
    else if (e.glyph) { ctx.fillStyle = pal.text; ctx.font = "13px sans-serif"; ctx.fillText(e.glyph, 17, y + 8); }
    else {
      ctx.fillStyle = e.fill; ctx.strokeStyle = e.stroke; ctx.setLineDash(e.dash ? [4, 3] : []);
      ctx.fillRect(12, y + 2, 22, 12); ctx.strokeRect(12, y + 2, 22, 12); ctx.setLineDash([]);
    }
    ctx.fillStyle = pal.text;
    ctx.font = "11px ui-monospace, monospace";
    ctx.fillText(e.text, 42, y + 8);
  });
  return new Promise((resolve) => out.toBlob(resolve, "image/png"));
}
