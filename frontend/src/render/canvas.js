/**
 * The live graph view: a base canvas (the scene at step k, redrawn on change), an overlay
 * canvas (the gradient dots travelling backward along edges), a minimap, zoom/pan/fit, and
 * hit testing (the pointer and tooltips are render/pointer.js). Knows nothing about the page around it: it reports
 * clicks through callbacks.
 */
import { drawScene } from "./draw.js";
import { alongReversed, edgePoints } from "./geometry.js";
import { stepState } from "./scene.js";
import { Minimap, minimapSize } from "./minimap.js";
import { palette } from "./palette.js";
import { READ_K, fitCamera } from "./fit.js";
import { bindPointer } from "./pointer.js";

/** Screen pixels a pane that shows its whole graph keeps clear around it (its module titles stand above the top row). */
const WHOLE_PAD = 14;

export class GraphCanvas {
  constructor(host, callbacks = {}) {
    this.host = host;
    this.cb = callbacks;
    /** How much larger than usual Fit makes the text (presentation mode, ui/present.js). */
    this.textScale = 1;
    /** Whether Fit frames the whole graph unasked (a compare pane: what differs may be anywhere). */
    this.wholeByDefault = false;  // a compare pane: Fit frames the whole graph, WHOLE_PAD px clear of its edges
    this.base = host.querySelector("canvas.gt-base");
    this.overlay = host.querySelector("canvas.gt-overlay");
    this.minimap = new Minimap(host.querySelector("canvas.gt-minimap"), (wx, wy) => {
      const { w, h } = this._size();
      this.cam = { ...this.cam, x: wx - w / 2 / this.cam.k, y: wy - h / 2 / this.cam.k };
      this.redraw();
    });
    this.tip = host.querySelector(".gt-tooltip");
    this.scene = null;
    this.k = 0;
    this.cam = { x: 0, y: 0, k: 1 };
    this.selected = new Set();
    this.lineSel = new Set();
    this.dots = [];
    this.pal = palette();
    this.lastDrawMs = 0;
    this.frames = 0;
    this._raf = 0;
    this.reducedMotion = matchMedia("(prefers-reduced-motion: reduce)").matches;
    new ResizeObserver(() => this._resize()).observe(host);
    matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => { this.pal = palette(); this.minimap.invalidate(); this.redraw(); });
    bindPointer(this);
    this._resize();
  }

  setScene(scene, k, { keepCamera = false } = {}) {
    this.scene = scene;
    this.k = k;
    this.dots = [];
    this.minimap.invalidate();
    this.selected = new Set();
    this.lineSel = new Set();
    if (!keepCamera) this.fit({ readable: true });
    this.redraw();
  }

  /** Go to step k; when it is the next backward step, gradients travel along the edges. */
  setStep(k, { animate = false, durationMs = 300 } = {}) {
    const prev = this.k;
    this.k = k;
    this.dots = [];
    if (this.scene && animate && !this.reducedMotion && k === prev + 1) this._launchDots(k, durationMs);
    this._follow();
    this.redraw();
  }

  setSelection(vs) { this.selected = new Set(vs); this.redraw(); }
  /** Fill colours by visible node (a Map v → CSS colour; ui/colour-by.js), or null for the kinds' own. */
  setTint(tint) { this.tint = tint; this.redraw(); }
  setLineSelection(vs) { this.lineSel = new Set(vs); this.redraw(); }

  /** Frame the graph (NOTE [fit] in render/fit.js); `whole` shows all of it, however small. */
  fit({ whole = this.wholeByDefault } = {}) {
    if (!this.scene) return;
    // Fit follows a change of the page (a new scene, a button): the size is measured afresh.
    const m = this._measure();
    if (!this.sz || m.w !== this.sz.w || m.h !== this.sz.h) this._resize();
    this.cam = fitCamera(this.scene, this.k, this._size(), this.reserve(whole), this._fitOptions(whole));
    this._fitted = { whole };  // NOTE [fit follows the view's size]
    this.redraw();
  }

  _fitOptions(whole) {
    return { whole, readK: READ_K * this.textScale, pad: this.wholeByDefault ? WHOLE_PAD : 0 };
  }

  /** Screen pixels [right, bottom] the minimap keeps for itself at Fit ([0, 0] when hidden). */
  reserve(whole = false) {
    // The whole graph in view (⤢) is its own map: the minimap hides and keeps no room.
    if (whole) return [0, 0];
    return this.scene && this.minimap.wanted(this.scene, this._size(), READ_K) ? this.minimap.reserve(this._size()) : [0, 0];
  }

  zoomBy(f, sx, sy) {
    const { w, h } = this._size();
    sx ??= w / 2; sy ??= h / 2;
    const k = Math.min(4, Math.max(0.005, this.cam.k * f));
    const wx = this.cam.x + sx / this.cam.k, wy = this.cam.y + sy / this.cam.k;
    this.cam = { k, x: wx - sx / k, y: wy - sy / k };
    this._fitted = null;
    this.redraw();
  }

  /** Put world point (cx, cy) at the centre of the view at zoom k (a share link's camera). */
  lookAt(cx, cy, k) {
    const m = this._measure();  // measured afresh, as Fit does: the page may just have changed
    if (!this.sz || m.w !== this.sz.w || m.h !== this.sz.h) this._resize();
    const { w, h } = this._size();
    const kk = Math.min(4, Math.max(0.005, k));
    this.cam = { k: kk, x: cx - w / 2 / kk, y: cy - h / 2 / kk };
    this._fitted = null;
    this.redraw();
  }

  /** Put the camera at `cam` {x, y, k} (a drag, render/pointer.js): Fit no longer holds. */
  panTo(cam) {
    this.cam = cam;
    this._fitted = null;
    this.redraw();
  }

  /** Whether visible node v's box is wholly in view (a margin of `pad` CSS px inside the edges). */
  inView(v, pad = 8) {
    if (!this.scene) return false;
    const { w, h } = this._size(), n = this.scene.view.vnodes[v], c = this.cam;
    const x0 = (this.scene.x[v] - n.w / 2 - c.x) * c.k, x1 = (this.scene.x[v] + n.w / 2 - c.x) * c.k;
    const y0 = (this.scene.y[v] - n.h / 2 - c.y) * c.k, y1 = (this.scene.y[v] + n.h / 2 - c.y) * c.k;
    return x0 >= pad && y0 >= pad && x1 <= w - pad && y1 <= h - pad;
  }

  /** Bring visible node v into view when it is not (a selection made outside the canvas). */
  reveal(v) { if (this.scene && !this.inView(v)) this.centerOn(v); }

  /** Centre the view on visible node v without changing the zoom (unless very far out). */
  centerOn(v) {
    if (!this.scene) return;
    const { w, h } = this._size();
    const k = Math.max(this.cam.k, 0.6);
    this.cam = { k, x: this.scene.x[v] - w / 2 / k, y: this.scene.y[v] - h / 2 / k };
    this._fitted = null;
    this.redraw();
  }

  redraw() {
    if (this._raf) return;
    this._raf = requestAnimationFrame(() => { this._raf = 0; this._draw(); });
  }

  /** Draw now (benchmarks and tests measure this). */
  drawNow() { if (this._raf) { cancelAnimationFrame(this._raf); this._raf = 0; } this._draw(); }

  stepState() { return this.scene ? stepState(this.scene, this.k) : null; }

  /**
   * NOTE [no layout in a redraw]: the view's size is read when the ResizeObserver reports a
   * change (layout is clean then), not on every redraw: a step changes the page's text (the
   * sentence, the node list), and reading clientWidth after that forces the page's layout in
   * the middle of the redraw (most of the worst redraw times at the whole-graph zoom).
   */
  _size() { return this.sz || this._measure(); }

  _measure() { return { w: this.host.clientWidth || 1, h: this.host.clientHeight || 1 }; }

  /**
   * NOTE [fit follows the view's size]: a camera Fit chose is chosen again when the view
   * changes size (presentation mode, a panel that grew, the window), so what Fit framed stays
   * framed instead of being cut at the new edge; once the reader moves the camera (drag, zoom,
   * a link's camera, centring on a node) the camera is theirs and a resize keeps it.
   *
   * NOTE [a resize draws at once]: giving a canvas a size clears it, so the frame is drawn
   * here, not at the next animation frame: a ResizeObserver callback runs after layout and
   * before paint, and a deferred draw let one blank frame reach the screen (and a reader of
   * the pixels in between saw an empty graph: a notebook's output area settles its size after
   * the widget's first frame). A size that did not change leaves the canvas, and its frame, alone.
   */
  _resize() {
    const before = this.sz;
    this.sz = this._measure();
    if (this._fitted && this.scene && before && (before.w !== this.sz.w || before.h !== this.sz.h)) {
      this.cam = fitCamera(this.scene, this.k, this.sz, this.reserve(this._fitted.whole), this._fitOptions(this._fitted.whole));
    }
    const { w, h } = this.sz;
    this.dpr = Math.min(window.devicePixelRatio || 1, 2);
    const [pw, ph] = [Math.round(w * this.dpr), Math.round(h * this.dpr)];
    if (this.base.width === pw && this.base.height === ph) { this.redraw(); return; }
    for (const c of [this.base, this.overlay]) {
      c.width = pw; c.height = ph;
      c.style.width = `${w}px`; c.style.height = `${h}px`;
    }
    this.drawNow();
  }

  _draw() {
    const t0 = performance.now();
    const { w, h } = this._size();
    const ctx = this.base.getContext("2d");
    const st = this.scene ? stepState(this.scene, this.k) : null;
    const opts = { pal: this.pal, dpr: this.dpr, selected: this.selected, lineSel: this.lineSel, tint: this.tint || null };
    drawScene(ctx, this.scene, st, this.cam, w, h, opts);
    // A host's own marks over the frame (the compare page's tints: src/compare/tints.js).
    if (this.decorate && this.scene) this.decorate(ctx, { scene: this.scene, k: this.k, cam: this.cam, dpr: this.dpr, pal: this.pal });
    this.placed = opts.placed || [];
    this.minimap.avoid({ w, h }, this.placed);
    this.minimap.wholeShown = !!(this._fitted && this._fitted.whole);
    this.minimap.draw(this.scene, this.cam, { w, h }, this.pal, this.dpr, READ_K);
    this._drawOverlay();
    this.lastDrawMs = performance.now() - t0;
    this.frames++;
    if (this.cb.onFrame) this.cb.onFrame(this.lastDrawMs);
  }

  _launchDots(k, durationMs) {
    const st = stepState(this.scene, k);
    if (st.pass < 0) return;
    const t0 = performance.now();
    const dur = Math.max(120, Math.min(durationMs * 0.85, 700));
    this.scene.view.vedges.forEach((e, i) => {
      if (!st.current.has(e.t) || e.cut) return;
      const g = st.edgeGrad(i);
      if (g && g.step === k) this.dots.push({ pts: edgePoints(this.scene, i), t0, dur });
    });
    if (this.dots.length) this._animate();
  }

  _animate() {
    const tick = () => {
      this._drawOverlay();
      if (this.dots.length) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  }

  _drawOverlay() {
    const { w, h } = this._size();
    const ctx = this.overlay.getContext("2d");
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    const now = performance.now();
    this.dots = this.dots.filter((d) => now - d.t0 < d.dur);
    if (!this.dots.length) return;
    ctx.setTransform(this.dpr * this.cam.k, 0, 0, this.dpr * this.cam.k, -this.cam.x * this.cam.k * this.dpr, -this.cam.y * this.cam.k * this.dpr);
    ctx.fillStyle = this.pal.current;
    for (const d of this.dots) {
      const [x, y] = alongReversed(d.pts, (now - d.t0) / d.dur);
      ctx.beginPath();
      ctx.arc(x, y, 5 / Math.max(this.cam.k, 0.3), 0, Math.PI * 2);
      ctx.fill();
    }
  }

  _follow() {
    if (!this.scene) return;
    const st = stepState(this.scene, this.k);
    const [v] = st.current;
    if (v === undefined) return;
    const { w, h } = this._size();
    const sx = (this.scene.x[v] - this.cam.x) * this.cam.k, sy = (this.scene.y[v] - this.cam.y) * this.cam.k;
    // Under the minimap counts as out of view.
    const [mw, mh] = this.minimap.canvas.hidden ? [0, 0] : minimapSize({ w, h });
    const underMap = sx > w - mw - 14 && sy > h - mh - 14;
    if (sx < 0 || sy < 0 || sx > w || sy > h || underMap) this.cam = { ...this.cam, x: this.scene.x[v] - w / 2 / this.cam.k, y: this.scene.y[v] - h / 2 / this.cam.k };
  }

  /** The visible node under a screen point, or -1. */
  hit(sx, sy) {
    if (!this.scene) return -1;
    const wx = this.cam.x + sx / this.cam.k, wy = this.cam.y + sy / this.cam.k;
    const { vnodes } = this.scene.view;
    for (let v = vnodes.length - 1; v >= 0; v--) {
      const n = vnodes[v];
      if (!(this.scene.reveal[v] <= this.k)) continue;
      if (Math.abs(wx - this.scene.x[v]) <= n.w / 2 && Math.abs(wy - this.scene.y[v]) <= n.h / 2) return v;
    }
    return -1;
  }

  /** The expanded module box whose title strip is under a screen point, or null. */
  hitBox(sx, sy) {
    if (!this.scene) return null;
    const wx = this.cam.x + sx / this.cam.k, wy = this.cam.y + sy / this.cam.k;
    for (const b of [...this.scene.boxes].reverse()) {
      if (wx >= b.lx - 5 && wx <= b.lx + 8 * ((b.title || b.path).length + 2) && wy >= b.ly - 3 && wy <= b.ly + 13) return b.path;
    }
    return null;
  }
}
