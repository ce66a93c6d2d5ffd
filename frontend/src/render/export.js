/**
 * Exports: the current view as SVG (built separately from the Canvas view, research §3) and
 * PNG (the Canvas drawing at a fixed scale), and the document as JSON and Graphviz DOT.
 */
import { drawScene } from "./draw.js";
import { edgePoints, midpoint } from "./geometry.js";
import { stepState } from "./scene.js";
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

/** Graphviz DOT of the whole document (not only the visible, collapsed view). */
export function toDot(index, direction = "TB") {
  const shapes = { function: "box", acc: "box", leaf: "box", output: "box", retained: "box", cut: "box" };
  const colors = { function: "#e8f0fe", acc: "#e3f5e1", leaf: "#fff4d6", output: "#f3e5ff", retained: "#dff5f3", cut: "#eeeeee" };
  const lines = [`digraph gradtrace {`, `  rankdir=${direction};`, `  node [fontname="monospace", fontsize=10, style="rounded,filled"];`];
  index.nodes.forEach((n, i) => {
    const kind = index.kind[i];
    const label = [n.name || kind, n.shape ? `[${n.shape.join(", ")}]` : "", n.line != null ? `line ${n.line}` : ""].filter(Boolean).join("\\n");
    lines.push(`  "${dotEsc(n.id)}" [label="${dotEsc(label).replace(/\\\\n/g, "\\n")}", shape=${shapes[kind]}, fillcolor="${colors[kind]}"];`);
  });
  for (const e of index.edges) lines.push(`  "${dotEsc(index.nodes[e.s].id)}" -> "${dotEsc(index.nodes[e.t].id)}";`);
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

/**
 * The graph as shown at step k, as SVG text: everything the PNG (render/draw.js) draws —
 * module outlines and titles, edges coloured by the gradient's sign with width by its size,
 * arrowheads, ✂ on cut edges, gradient labels, node shapes and dashes by kind, the bar of
 * nodes the backward pass reached, the current and just-done rings, and the error marks with
 * their text — with each edge's full gradient as a tooltip.
 */
export function toSvg(scene, k, pal) {
  const st = stepState(scene, k);
  const pad = 20;
  const W = Math.ceil(scene.width + 2 * pad), H = Math.ceil(scene.height + 2 * pad);
  const { vnodes, vedges } = scene.view;
  const out = [`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="${-pad} ${-pad} ${W} ${H}" font-family="ui-monospace, monospace">`,
    `<defs><marker id="gt-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" markerUnits="userSpaceOnUse" orient="auto">` +
    `<path d="M0,0 L10,5 L0,10 z" fill="${pal.edge}"/></marker></defs>`,
    `<rect x="${-pad}" y="${-pad}" width="${W}" height="${H}" fill="${pal.bg}"/>`];
  for (const b of scene.boxes) {
    if (!(b.reveal <= k)) continue;
    const pts = [];
    for (let i = 0; i < b.poly.length; i += 2) pts.push(`${b.poly[i].toFixed(1)},${b.poly[i + 1].toFixed(1)}`);
    out.push(`<g class="module"><polygon points="${pts.join(" ")}" fill="${pal.box}" stroke="${pal.boxStroke}" stroke-dasharray="4 3"/>` +
      `<text x="${b.lx}" y="${b.ly + 9}" font-size="11" fill="${pal.boxText}">${esc(`▾ ${b.path}`)}</text></g>`);
  }
  const active = [];
  vedges.forEach((e, i) => {
    if (!(scene.edgeReveal[i] <= k)) return;
    const p = edgePoints(scene, i);
    if (e.cut) {
      const [mx, my] = midpoint(p);
      out.push(`<g class="edge cut"><path d="${pathD(p)}" fill="none" stroke="${pal.cut}" stroke-width="1.5" stroke-dasharray="5 4"/>` +
        `<text x="${mx}" y="${my + 5}" font-size="14" text-anchor="middle" fill="${pal.cut}">✂</text></g>`);
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
    const text = `∇ ${g.all.map((t) => fmtTensorShort(t, 3)).join(" + ")}`;
    let label = "";
    if (g.step === k || active.length <= 12) {
      const [mx, my] = midpoint(p);
      label = `<rect x="${mx + 4}" y="${my - 7}" width="${text.length * 6.4 + 6}" height="14" fill="${pal.labelBg}"/>` +
        `<text x="${mx + 7}" y="${my + 4}" font-size="10.5" fill="${g.step === k ? pal.current : pal.text}">${esc(text)}</text>`;
    }
    out.push(`<g class="edge grad"><path d="${pathD(p)}" fill="none" stroke="${color}" stroke-width="${width.toFixed(2)}" marker-end="url(#gt-arrow)">` +
      `<title>${esc(`∇ ${g.all.map((t) => fmtTensorShort(t, 6)).join(" + ")}`)}</title></path>${label}</g>`);
  });
  const tl = scene.timeline;
  const rings = [];
  vnodes.forEach((n, v) => {
    if (!(scene.reveal[v] <= k)) return;
    const style = pal.kinds[n.kind];
    const x = scene.x[v] - n.w / 2, y = scene.y[v] - n.h / 2;
    const rx = n.kind === "acc" || n.kind === "output" ? n.h / 2 : 6;
    const dash = n.kind === "cut" || n.kind === "group" ? ` stroke-dasharray="4 3"` : "";
    let sub = n.sub;
    if (n.kind === "leaf" || n.kind === "retained") {
      const g = tl.leafGradAt(n.refs[0], k);
      const grad = g ? g.value : (k >= tl.N && scene.index.nodes[n.refs[0]].grad) || null;
      if (grad) sub = `∇ ${fmtTensorShort(grad, 3)}${g && g.count > 1 ? ` (×${g.count})` : ""}`;
    } else if ((n.kind === "function" || n.kind === "acc") && st.pass >= 0) {
      const step = tl.lastBackward(n.refs[0], k);
      const ev = step != null && tl.passAt(step) === st.pass ? tl.event(step) : null;
      const g = ev && ev.grad_outputs && ev.grad_outputs[0];
      if (g) sub = `${n.sub} · ∇ ${fmtTensorShort(g, 2, false)}`;
    }
    const reached = st.pass >= 0 ? st.reached(v) : 0;
    const bar = reached ? `<rect x="${x + 4}" y="${y + n.h - 5}" width="${n.w - 8}" height="3" fill="${reached === 2 ? pal.reached : pal.reachedOld}"/>` : "";
    out.push(`<g class="node ${n.kind}"><rect x="${x}" y="${y}" width="${n.w}" height="${n.h}" rx="${rx}" fill="${style.fill}" stroke="${style.stroke}" stroke-width="1.2"${dash}/>${bar}` +
      `<text x="${scene.x[v]}" y="${scene.y[v] - 3}" font-size="12" text-anchor="middle" fill="${style.text}">${esc(n.label)}</text>` +
      `<text x="${scene.x[v]}" y="${scene.y[v] + 12}" font-size="10.5" text-anchor="middle" fill="${style.sub}">${esc(sub)}</text></g>`);
    if (st.justDone.has(v) && !st.current.has(v)) rings.push(ring(scene, v, pal.justDone, 3, 3));
    if (st.current.has(v)) rings.push(ring(scene, v, pal.current, 3.5, 3));
  });
  const err = scene.index.doc.error;
  for (const v of scene.errorV || []) {
    if (!(scene.reveal[v] <= k) || !err) continue;
    const n = vnodes[v];
    const text = (scene.errorLabels && scene.errorLabels.get(v)) || `⚠ ${err.type}${err.line != null ? ` (line ${err.line})` : ""}`;
    rings.push(ring(scene, v, pal.error, 3, 5) +
      `<text class="error" x="${scene.x[v] + n.w / 2 + 10}" y="${scene.y[v] + 4}" font-size="11.5" font-weight="bold" fill="${pal.error}">${esc(text)}</text>`);
  }
  out.push(...rings, "</svg>");
  return out.join("\n");
}

function ring(scene, v, color, width, pad) {
  const n = scene.view.vnodes[v];
  return `<rect class="ring" x="${scene.x[v] - n.w / 2 - pad}" y="${scene.y[v] - n.h / 2 - pad}" width="${n.w + 2 * pad}" height="${n.h + 2 * pad}" rx="8" fill="none" stroke="${color}" stroke-width="${width}"/>`;
}

/** The whole graph at step k as a PNG blob (at most 8,000 px a side). */
export function toPng(scene, k, pal) {
  const pad = 20;
  const s = Math.min(2, 8000 / (scene.width + 2 * pad), 8000 / (scene.height + 2 * pad));
  const W = Math.max(1, Math.ceil((scene.width + 2 * pad) * s)), H = Math.max(1, Math.ceil((scene.height + 2 * pad) * s));
  const canvas = document.createElement("canvas");
  canvas.width = W; canvas.height = H;
  drawScene(canvas.getContext("2d"), scene, stepState(scene, k), { x: -pad, y: -pad, k: s }, W, H,
    { pal, dpr: 1, selected: new Set(), lineSel: new Set() });
  return new Promise((resolve) => canvas.toBlob(resolve, "image/png"));
}
