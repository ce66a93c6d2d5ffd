/**
 * The memory strip under the compare page's transport: saved-tensor bytes alive in A (red)
 * and B (green) at every cursor position, the cursor as a line. Clicking a band (a step)
 * moves the cursor there, which reaches that step's node in both panes.
 */
import { ONLY_A, ONLY_B } from "./sync.js";

export class MemoryStrip {
  /** @param {HTMLCanvasElement} canvas  @param {(c: number) => void} onPick */
  constructor(canvas, onPick) {
    this.canvas = canvas;
    this.series = null;
    this.cursor = 0;
    canvas.addEventListener("click", (ev) => {
      if (!this.series) return;
      const r = canvas.getBoundingClientRect();
      const n = this.series.a.length - 1;
      onPick(Math.max(0, Math.min(n, Math.round(((ev.clientX - r.left) / r.width) * n))));
    });
    new ResizeObserver(() => this.draw()).observe(canvas);
  }

  /** series: {a: number[], b: number[]} bytes at each cursor position. */
  setSeries(series) { this.series = series; this.draw(); }

  setCursor(c) { this.cursor = c; this.draw(); }

  draw() {
    const { canvas, series } = this;
    const dpr = Math.min(window.devicePixelRatio || 1, 2);
    const w = canvas.clientWidth || 1, h = canvas.clientHeight || 1;
    if (canvas.width !== Math.round(w * dpr)) { canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr); }
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    if (!series) return;
    const n = series.a.length - 1;
    const top = Math.max(1, ...series.a, ...series.b);
    const x = (c) => (n ? (c / n) * (w - 2) + 1 : 1);
    const y = (v) => h - 3 - (v / top) * (h - 8);
    for (const [data, colour] of [[series.a, ONLY_A], [series.b, ONLY_B]]) {
      ctx.beginPath();
      ctx.moveTo(x(0), y(data[0]));
      for (let c = 1; c <= n; c++) { ctx.lineTo(x(c), y(data[c - 1])); ctx.lineTo(x(c), y(data[c])); }
      ctx.strokeStyle = colour;
      ctx.lineWidth = 1.5;
      ctx.stroke();
      ctx.globalAlpha = 0.12;
      ctx.lineTo(x(n), h); ctx.lineTo(x(0), h); ctx.closePath();
      ctx.fillStyle = colour;
      ctx.fill();
      ctx.globalAlpha = 1;
    }
    ctx.fillStyle = getComputedStyle(canvas).color || "#888";
    ctx.fillRect(Math.round(x(this.cursor)) - 1, 0, 2, h);
  }
}
