/**
 * Exports: the current view as SVG (built separately from the Canvas view, research §3) and
 * PNG (the Canvas drawing at a fixed scale), and the document as JSON and Graphviz DOT.
 */
import { drawScene } from "./draw.js";
import { edgePoints } from "./geometry.js";
import { stepState } from "./scene.js";
import { fmtTensorShort } from "../graph/values.js";

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

/** The graph as shown at step k (revealed nodes, gradients of the current pass), as SVG text. */
export function toSvg(scene, k, pal) {
  const st = stepState(scene, k);
  const pad = 20;
  const W = Math.ceil(scene.width + 2 * pad), H = Math.ceil(scene.height + 2 * pad);
  const out = [`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="${-pad} ${-pad} ${W} ${H}" font-family="monospace">`,
    `<rect x="${-pad}" y="${-pad}" width="${W}" height="${H}" fill="${pal.bg}"/>`];
  for (const b of scene.boxes) {
    if (!(b.reveal <= k)) continue;
    const pts = [];
    for (let i = 0; i < b.poly.length; i += 2) pts.push(`${b.poly[i].toFixed(1)},${b.poly[i + 1].toFixed(1)}`);
    out.push(`<g class="module"><polygon points="${pts.join(" ")}" fill="${pal.box}" stroke="${pal.boxStroke}" stroke-dasharray="4 3"/>` +
      `<text x="${b.lx}" y="${b.ly + 9}" font-size="11" fill="${pal.boxText}">${esc(b.path)}</text></g>`);
  }
  scene.view.vedges.forEach((e, i) => {
    if (!(scene.edgeReveal[i] <= k)) return;
    const g = st.pass >= 0 ? st.edgeGrad(i) : null;
    const color = e.cut ? pal.cut : g ? pal.gradPos : pal.edge;
    const dash = e.cut ? ` stroke-dasharray="5 4"` : "";
    const title = g ? `<title>∇ ${esc(fmtTensorShort(g.g, 6))}</title>` : "";
    out.push(`<path class="edge" d="${pathD(edgePoints(scene, i))}" fill="none" stroke="${color}" stroke-width="${g ? 2.5 : 1.2}"${dash}>${title}</path>`);
  });
  scene.view.vnodes.forEach((n, v) => {
    if (!(scene.reveal[v] <= k)) return;
    const style = pal.kinds[n.kind];
    const x = scene.x[v] - n.w / 2, y = scene.y[v] - n.h / 2;
    const cur = st.current.has(v) ? ` stroke-width="3" stroke="${pal.current}"` : ` stroke="${style.stroke}"`;
    let sub = n.sub;
    const g = scene.timeline.leafGradAt(n.refs[0], k);
    if (g) sub = `∇ ${fmtTensorShort(g.value, 3)}`;
    out.push(`<g class="node ${n.kind}"><rect x="${x}" y="${y}" width="${n.w}" height="${n.h}" rx="6" fill="${style.fill}"${cur}/>` +
      `<text x="${scene.x[v]}" y="${scene.y[v] - 3}" font-size="12" text-anchor="middle" fill="${style.text}">${esc(n.label)}</text>` +
      `<text x="${scene.x[v]}" y="${scene.y[v] + 12}" font-size="10" text-anchor="middle" fill="${style.sub}">${esc(sub)}</text></g>`);
  });
  out.push("</svg>");
  return out.join("\n");
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
