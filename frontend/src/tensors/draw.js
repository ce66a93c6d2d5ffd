/**
 * Drawing one tensor's numbers: the heatmap of a 2-D plane (one pixel per element, scaled up
 * without smoothing) and the histogram of its finite values. NaN, +Inf and −Inf have colours
 * of their own, outside the diverging scale (TENSOR_COLOURS, with the legend's words).
 */

/** The colours the heatmap gives what is not a finite number, and the ends of its scale. */
export const TENSOR_COLOURS = {
  neg: [49, 99, 206], zero: [247, 247, 247], pos: [206, 49, 49],
  nan: [214, 0, 214], pinf: [255, 170, 0], ninf: [0, 176, 160],
};
export const SPECIAL_WORDS = [["nan", "NaN"], ["pinf", "+Inf"], ["ninf", "−Inf"]];

/** RGB of `x` on a scale symmetric around 0 with half-width `s`. */
export function colourOf(x, s) {
  const c = TENSOR_COLOURS;
  if (Number.isNaN(x)) return c.nan;
  if (x === Infinity) return c.pinf;
  if (x === -Infinity) return c.ninf;
  const t = s > 0 ? Math.max(-1, Math.min(1, x / s)) : 0;
  const end = t < 0 ? c.neg : c.pos, a = Math.abs(t);
  return [0, 1, 2].map((j) => Math.round(c.zero[j] + (end[j] - c.zero[j]) * a));
}

export const rgb = (c) => `rgb(${c[0]}, ${c[1]}, ${c[2]})`;

/**
 * Draw `rows × cols` values of `values` starting at `offset` on `canvas` (its size set to
 * the plane's), coloured on the scale of half-width `s`; only the first `cells` (a wrapped
 * 1-D tensor's last row is short), the rest left blank.
 */
export function drawHeatmap(canvas, values, offset, rows, cols, s, cells = rows * cols) {
  canvas.width = cols;
  canvas.height = rows;
  const g = canvas.getContext("2d");
  const img = g.createImageData(cols, rows);
  const px = img.data;
  paint(px, values, offset, cells, s);
  g.putImageData(img, 0, 0);
}

/**
 * The pixels of `cells` values from `offset` into `px` (RGBA): colourOf's colours, written
 * without an array per element (a 256×256 plane in a few ms).
 */
export function paint(px, values, offset, cells, s) {
  const { neg, zero, pos, nan, pinf, ninf } = TENSOR_COLOURS;
  const inv = s > 0 ? 1 / s : 0;
  for (let i = 0, o = 0; i < cells; i++, o += 4) {
    const x = values[offset + i];
    let c = null;
    if (x !== x) c = nan;
    else if (x === Infinity) c = pinf;
    else if (x === -Infinity) c = ninf;
    if (c) { px[o] = c[0]; px[o + 1] = c[1]; px[o + 2] = c[2]; px[o + 3] = 255; continue; }
    let t = x * inv;
    if (t > 1) t = 1; else if (t < -1) t = -1;
    const end = t < 0 ? neg : pos, a = t < 0 ? -t : t;
    px[o] = (zero[0] + (end[0] - zero[0]) * a + 0.5) | 0;  // Math.round of a positive number
    px[o + 1] = (zero[1] + (end[1] - zero[1]) * a + 0.5) | 0;  // Math.round of a positive number
    px[o + 2] = (zero[2] + (end[2] - zero[2]) * a + 0.5) | 0;  // Math.round of a positive number
    px[o + 3] = 255;
  }
}

/**
 * NOTE [warm drawing]
 *   The first tensor a page draws ran its loops (finiteStats, histogram, paint) in V8's
 *   interpreter and made the page's first image canvas: 13-23 ms for a 256×256 plane on a
 *   loaded 2-core machine, against 3-5 ms for every later one (bench/bench_tensor_page.py).
 *   `warmDrawing` runs the same code once on a small made-up plane before the first draw:
 *   ui/tensors.js calls it in idle time once a run's graph is drawn, or at the latest while
 *   the first tensor's bytes are on the network, so that the first look draws like the later ones. `stats` is safetensors.js finiteStats (passed in:
 *   this module draws, it does not decode).
 */
let warmed = false;
export function warmDrawing(stats, side = 128) {
  if (warmed || typeof document === "undefined") return;
  warmed = true;
  const v = new Float64Array(side * side);
  for (let i = 0; i < v.length; i++) v[i] = ((i * 7919) % 257) / 128 - 1;
  v[1] = NaN; v[2] = Infinity; v[3] = -Infinity;  // the special colours' branches too
  const st = stats(v);
  histogram(v, st.min, st.max);
  drawHeatmap(document.createElement("canvas"), v, 0, side, side, 1);
}

/** Counts of the finite values in `bins` equal bins over [min, max]. */
export function histogram(values, min, max, bins = 40) {
  const counts = new Array(bins).fill(0);
  const w = max > min ? (max - min) / bins : 1;
  for (let i = 0; i < values.length; i++) {
    const x = values[i];
    if (!Number.isFinite(x)) continue;
    counts[Math.min(bins - 1, Math.max(0, Math.floor((x - min) / w)))]++;
  }
  return counts;
}

/** The histogram's bars on `canvas` (CSS pixels `w × h`, drawn at the device's pixel ratio). */
export function drawHistogram(canvas, counts, w = 220, h = 56) {
  const r = (typeof devicePixelRatio === "number" && devicePixelRatio) || 1;
  canvas.width = Math.round(w * r);
  canvas.height = Math.round(h * r);
  canvas.style.width = `${w}px`;
  canvas.style.height = `${h}px`;
  const g = canvas.getContext("2d");
  g.scale(r, r);
  const top = Math.max(1, ...counts), bw = w / counts.length;
  g.fillStyle = getComputedStyle(canvas).color || "#555";
  counts.forEach((c, i) => {
    if (!c) return;
    const bh = Math.max(1, (c / top) * (h - 2));
    g.fillRect(i * bw + 0.5, h - bh, Math.max(1, bw - 1), bh);
  });
}
