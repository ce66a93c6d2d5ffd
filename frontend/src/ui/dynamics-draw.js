/**
 * The dynamics panel's charts (ui/dynamics.js), drawn on canvases: series by iteration on a
 * log (or linear) axis with the hovered and the current iteration marked, NaN and Inf drawn as
 * red crosses at the top edge, and the gradient-flow bars of one backward pass. Pure drawing:
 * the numbers come from the document's `analysis.dynamics` (docs/CONTRACT.md `Dynamics`).
 */

export const COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
const PAD = { l: 46, r: 8, t: 14, b: 16 };

/** A series value as a number: "nan"/"inf"/"-inf" strings become NaN/±Infinity, null stays null. */
export function num(v) {
  if (v == null) return null;
  if (typeof v === "number") return v;
  return v === "inf" ? Infinity : v === "-inf" ? -Infinity : NaN;
}

/** [lo, hi] of the finite values of `series` (after `f`) over iterations [from, to], or null. */
export function rangeOf(series, from, to, f = (x) => x) {
  let lo = Infinity, hi = -Infinity;
  for (const s of series) {
    for (let i = Math.max(0, from); i <= to && i < s.length; i++) {
      const v = num(s[i]);
      if (v == null || !Number.isFinite(v)) continue;
      const y = f(v);
      if (!Number.isFinite(y)) continue;
      if (y < lo) lo = y;
      if (y > hi) hi = y;
    }
  }
  if (lo > hi) return null;
  if (lo === hi) { lo -= 0.5; hi += 0.5; }
  return [lo, hi];
}

function sized(canvas) {
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || 300, h = canvas.clientHeight || 110;
  if (canvas.width !== Math.round(w * dpr)) canvas.width = Math.round(w * dpr);
  if (canvas.height !== Math.round(h * dpr)) canvas.height = Math.round(h * dpr);
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  g.font = "10px ui-monospace, monospace";
  return { g, w, h };
}

/** The x pixel of iteration i of n in a chart of width w, and back. */
export const xOf = (i, n, w) => PAD.l + (n <= 1 ? 0 : (i / (n - 1)) * (w - PAD.l - PAD.r));
export const iterAt = (x, n, w) => Math.max(0, Math.min(n - 1, Math.round(((x - PAD.l) / Math.max(1, w - PAD.l - PAD.r)) * (n - 1))));

/**
 * Lines by iteration (or by call). `lines`: [{series, colour}]; `opts`: {log, title, n, from, to (the y
 * range's iterations), band: [lo, hi] (a shaded band in data units), marks: {hover, current}, word: what
 * the x axis counts, "iteration" unless said, exp: the series hold log10 of their numbers already (the
 * axis is labelled in the numbers: `ticks`)}.
 */
export function drawSeries(canvas, lines, opts) {
  const { g, w, h } = sized(canvas);
  const { n, log } = opts;
  const f = log ? (v) => (v > 0 ? Math.log10(v) : -Infinity) : (v) => v;
  let r = rangeOf(lines.map((l) => l.series), opts.from, opts.to, f) || [0, 1];
  if (opts.band) r = [Math.min(r[0], opts.band[0]), Math.max(r[1], opts.band[1])];
  const [lo, hi] = [r[0] - (r[1] - r[0]) * 0.05, r[1] + (r[1] - r[0]) * 0.05];
  const yOf = (y) => PAD.t + (1 - (y - lo) / (hi - lo)) * (h - PAD.t - PAD.b);
  g.fillStyle = "#888";
  g.fillText(opts.title, PAD.l, 10);
  g.strokeStyle = "rgba(128,128,128,0.35)";
  g.strokeRect(PAD.l, PAD.t, w - PAD.l - PAD.r, h - PAD.t - PAD.b);
  axis(g, ticks(lo, hi, log || opts.exp), yOf, w);
  if (opts.band) {
    g.fillStyle = "rgba(89,161,79,0.18)";
    const y0 = yOf(opts.band[1]), y1 = yOf(opts.band[0]);
    g.fillRect(PAD.l, y0, w - PAD.l - PAD.r, y1 - y0);
  }
  const crosses = [];
  g.save();
  g.beginPath();
  g.rect(PAD.l, PAD.t, w - PAD.l - PAD.r, h - PAD.t - PAD.b);
  g.clip();
  for (const { series, colour } of lines) {
    g.strokeStyle = colour;
    g.lineWidth = 1.25;
    g.beginPath();
    let pen = false;
    for (let i = 0; i < series.length; i++) {
      const v = num(series[i]);
      if (v == null) { pen = false; continue; }
      if (!Number.isFinite(v)) { crosses.push(i); pen = false; continue; }
      const y = f(v);
      if (!Number.isFinite(y)) { pen = false; continue; }
      const px = xOf(i, n, w), py = yOf(y);
      if (pen) g.lineTo(px, py); else g.moveTo(px, py);
      pen = true;
    }
    g.stroke();
    if (series.length === 1 || n === 1) {
      const v = num(series[0]);
      if (v != null && Number.isFinite(f(v))) { g.fillStyle = colour; g.fillRect(xOf(0, n, w) - 2, yOf(f(v)) - 2, 4, 4); }
    }
  }
  g.restore();
  g.strokeStyle = "#d62728";
  for (const i of crosses) {  // NaN and Inf: a red cross at the top edge
    const px = xOf(i, n, w);
    g.beginPath(); g.moveTo(px - 3, PAD.t - 3); g.lineTo(px + 3, PAD.t + 3); g.moveTo(px + 3, PAD.t - 3); g.lineTo(px - 3, PAD.t + 3); g.stroke();
  }
  mark(g, opts.marks, n, w, h, opts.word || "iteration");
}

function mark(g, marks, n, w, h, word) {
  if (!marks) return;
  for (const [i, colour, dash] of [[marks.current, "rgba(120,120,120,0.9)", []], [marks.hover, "#e15759", [3, 3]]]) {
    if (i == null || i < 0) continue;
    g.strokeStyle = colour;
    g.setLineDash(dash);
    g.beginPath(); g.moveTo(xOf(i, n, w), PAD.t); g.lineTo(xOf(i, n, w), h - PAD.b); g.stroke();
    g.setLineDash([]);
  }
  if (marks.hover != null && marks.hover >= 0) {
    g.fillStyle = "#e15759";
    g.fillText(`${word} ${marks.hover + 1}`, Math.min(xOf(marks.hover, n, w) + 4, w - 90), h - 4);
  }
}

/**
 * The gradient-flow bars of one pass: mean |grad| (solid) and max |grad| (light) per parameter, in
 * network order, on a log axis; a NaN/Inf bar is a red cross, a missing one a grey dash.
 */
export function drawFlow(canvas, params, i, title) {
  const { g, w, h } = sized(canvas);
  const f = (v) => (v > 0 ? Math.log10(v) : -Infinity);
  const r = rangeOf(params.flatMap((p) => [p.grad_mean.slice(i, i + 1), p.grad_max.slice(i, i + 1)]), 0, 0, f) || [-1, 0];
  const lo = Math.floor(r[0]) - 0.5, hi = Math.ceil(r[1]) + 0.2;
  const yOf = (y) => PAD.t + (1 - (y - lo) / (hi - lo)) * (h - PAD.t - PAD.b - 18);
  const base = h - PAD.b - 18;
  g.fillStyle = "#888";
  g.fillText(title, PAD.l, 10);
  axis(g, ticks(lo, hi, true), yOf, w);
  const bw = (w - PAD.l - PAD.r) / Math.max(1, params.length);
  params.forEach((p, k) => {
    const x = PAD.l + k * bw;
    for (const [s, colour, inset] of [[p.grad_max, "rgba(78,121,167,0.35)", 0], [p.grad_mean, "#4e79a7", bw * 0.25]]) {
      const v = num(s[i]);
      if (v == null) { g.fillStyle = "#aaa"; g.fillRect(x + bw * 0.3, base - 1, bw * 0.4, 1); continue; }
      if (!Number.isFinite(v)) {
        g.strokeStyle = "#d62728";
        g.beginPath(); g.moveTo(x + bw / 2 - 4, PAD.t); g.lineTo(x + bw / 2 + 4, PAD.t + 8); g.moveTo(x + bw / 2 + 4, PAD.t); g.lineTo(x + bw / 2 - 4, PAD.t + 8); g.stroke();
        continue;
      }
      const y = Math.max(PAD.t, yOf(Math.max(f(v), lo)));
      g.fillStyle = colour;
      g.fillRect(x + 1 + inset, y, Math.max(1, bw - 2 - 2 * inset), base - y);
    }
    g.save();
    g.fillStyle = "#888";
    g.textAlign = "center";
    const label = p.name || p.node;
    g.fillText(label.length * 6 > bw ? `…${label.slice(-Math.max(3, Math.floor(bw / 6) - 1))}` : label, x + bw / 2, h - 6);
    g.restore();
  });
}

/**
 * The y axis's ticks over [lo, hi]: [[y, label]]. `exp`: the values drawn are powers of ten
 * (a log axis, or a series that holds log10 already), so the ticks are whole decades labelled
 * as the numbers they stand for ("1e-3", "1", "1e2"), every k-th decade where more would crowd
 * the axis; a range with one whole decade or none inside also gets its ends as numbers. Otherwise round
 * steps of 1, 2 or 5 times a power of ten. At most five ticks, never fewer than two.
 */
export function ticks(lo, hi, exp) {
  if (!(hi > lo)) return [[lo, exp ? pow10(lo) : fmt(lo)]];
  if (exp) {
    const out = stepped(lo, hi, 1).map((k) => [k, decade(k)]);
    if (out.length >= 2) return out;
    // one decade inside, or none: the ends as numbers, beside the decade where there is room
    const near = (y) => out.some(([k]) => Math.abs(k - y) < (hi - lo) * 0.2);
    return [...(near(lo) ? [] : [[lo, pow10(lo)]]), ...out, ...(near(hi) ? [] : [[hi, pow10(hi)]])];
  }
  const out = stepped(lo, hi, 0).map((y) => [y, fmt(y)]);
  return out.length >= 2 ? out : [[lo, fmt(lo)], [hi, fmt(hi)]];
}

/** The multiples of the least round step (1, 2 or 5 times a power of ten, at least `least`) that
 * puts at most five of them in [lo, hi]. */
function stepped(lo, hi, least) {
  let mag = 10 ** Math.floor(Math.log10((hi - lo) / 5));
  for (;;) {
    for (const m of [1, 2, 5]) {
      const step = Math.max(least, m * mag);
      const first = Math.ceil(lo / step - 1e-9), last = Math.floor(hi / step + 1e-9);
      if (last - first + 1 <= 5) {
        const out = [];
        for (let j = first; j <= last; j++) out.push(Number((j * step).toPrecision(12)) + 0);
        return out;
      }
    }
    mag *= 10;
  }
}

const decade = (k) => (k === 0 ? "1" : k === 1 ? "10" : `1e${k}`);
const pow10 = (y) => fmt(10 ** y);

/** The ticks' labels left of the frame and their grid lines across it. */
function axis(g, marks, yOf, w) {
  g.save();
  g.textAlign = "right";
  g.textBaseline = "middle";
  for (const [y, label] of marks) {
    const py = yOf(y);
    g.fillStyle = "#888";
    g.fillText(label, PAD.l - 3, py);
    g.strokeStyle = "rgba(128,128,128,0.18)";
    g.beginPath(); g.moveTo(PAD.l, py); g.lineTo(w - PAD.r, py); g.stroke();
  }
  g.restore();
}

function fmt(x) {
  return Math.abs(x) >= 1e4 || (Math.abs(x) < 1e-2 && x !== 0) ? x.toExponential(1) : String(Math.round(x * 1000) / 1000);
}
