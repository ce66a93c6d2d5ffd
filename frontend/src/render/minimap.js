/**
 * The minimap: the whole graph's silhouette (drawn once per scene) with the viewport as a
 * rectangle. Pressing or dragging on it centres the main view there, through `onMove`.
 */
import { smallWhole } from "./fit.js";

/** The minimap's size for a view: 180×120 on a roomy canvas, down to 110×74 on a small one. */
export function minimapSize(view) {
  const w = Math.round(Math.max(110, Math.min(180, view.w * 0.22, view.h * 0.33 * 1.5)));
  return [w, Math.round(w / 1.5)];
}

export class Minimap {
  /** @param {(wx: number, wy: number) => void} onMove  called with the world point to centre on */
  constructor(canvas, onMove) {
    this.canvas = canvas;
    this.cache = null;
    this.t = null;
    let dragging = false;
    const move = (ev) => {
      if (!this.t) return;
      const r = canvas.getBoundingClientRect();
      onMove((ev.clientX - r.left - this.t.ox) / this.t.sx, (ev.clientY - r.top - this.t.oy) / this.t.sy);
    };
    canvas.addEventListener("pointerdown", (ev) => { canvas.setPointerCapture(ev.pointerId); dragging = true; move(ev); });
    canvas.addEventListener("pointermove", (ev) => { if (dragging) move(ev); });
    canvas.addEventListener("pointerup", () => { dragging = false; });
  }

  invalidate() { this.cache = null; }

  /**
   * Never shown (`off`): a view that is a part of a page with its own overview (a compare
   * pane, which Fit frames whole) spends no corner on it.
   */
  set off(yes) { this._off = !!yes; if (yes) this.canvas.hidden = true; }
  get off() { return !!this._off; }

  /**
   * NOTE [a minimap that covers no label]: Fit keeps the minimap's corner free of nodes
   * (`reserve`), but a label placed beside a node, or a camera moved by hand, can still reach
   * under it. After the labels are placed (render/labels.js), the minimap takes the first
   * corner of the view that none of them reaches into, its own corner first so that it does
   * not jump about, then the others; when every corner holds a label it hides for that frame.
   * @param placed  the texts drawn this frame, {x, y, w, h} in CSS px
   * @returns whether a free corner was found
   */
  avoid(view, placed) {
    const [W, H] = minimapSize(view), m = 10;
    const at = { br: [view.w - W - m, view.h - H - m], bl: [m, view.h - H - m], tr: [view.w - W - m, m], tl: [m, m] };
    const free = (c) => {
      const [x, y] = at[c];
      return !placed.some((p) => p.x < x + W && p.x + p.w > x && p.y < y + H && p.y + p.h > y);
    };
    const corner = [this.corner || "br", "br", "bl", "tr", "tl"].find(free);
    this.blocked = !corner;
    if (!corner) return false;
    if (corner !== this.corner || this.placedFor !== `${view.w}x${view.h}`) {
      this.corner = corner;
      this.placedFor = `${view.w}x${view.h}`;
      Object.assign(this.canvas.style, { left: `${at[corner][0]}px`, top: `${at[corner][1]}px`, right: "auto", bottom: "auto" });
    }
    return true;
  }

  /** The minimap's box in the view's CSS px (where avoid() put it). */
  rect(view) {
    const [W, H] = minimapSize(view), m = 10;
    const c = this.corner || "br";
    return { x: c[1] === "r" ? view.w - W - m : m, y: c[0] === "b" ? view.h - H - m : m, w: W, h: H };
  }

  /** Screen pixels Fit keeps free for the minimap: [right, bottom]; one of them is 0. */
  reserve(view) {
    const [w, h] = minimapSize(view);
    // The cheaper side: a strip on the right of a wide view, along the bottom of a tall one.
    return view.w / view.h > 1.25 ? [w + 14, 0] : [0, h + 14];
  }

  /**
   * Whether a scene gets a minimap: when it is not legible whole in the view (at zoom `readK`),
   * is big, or has folded units standing for more of it. It depends on the scene and the view
   * size only (not the camera), so Fit can keep the minimap's corner free beforehand.
   */
  wanted(scene, view, readK) {
    if (!scene || this.off || smallWhole(scene, view)) return false;
    const tooBig = (scene.width + 40) * readK > view.w || (scene.height + 40) * readK > view.h;
    return tooBig || scene.view.vnodes.length > 40 || !!scene.units;
  }

  /** Draw for a scene and camera; hidden for small graphs, which fit the view anyway, and while the whole graph is framed (`wholeShown`). */
  draw(scene, cam, view, pal, dpr, readK) {
    const show = this.wanted(scene, view, readK) && !this.blocked && !this.wholeShown;
    this.canvas.hidden = !show;
    if (!show) return;
    const [W, H] = minimapSize(view);
    if (this.canvas.width !== W * dpr || this.size !== `${W}x${H}`) {
      this.canvas.width = W * dpr; this.canvas.height = H * dpr;
      this.canvas.style.width = `${W}px`; this.canvas.style.height = `${H}px`;
      this.size = `${W}x${H}`;
      this.cache = null;
    }
    // NOTE [shape of the whole]: a tall thin graph (an unrolled RNN) scaled uniformly is a
    // one-pixel line; each axis gets its own scale, at most 6× apart, so its shape shows.
    const strip = scene.units ? 10 : 0;
    let sx = (W - 8) / Math.max(scene.width, 1), sy = (H - 8 - strip) / Math.max(scene.height, 1);
    if (sx > 6 * sy) sx = 6 * sy;
    if (sy > 6 * sx) sy = 6 * sx;
    const ox = (W - scene.width * sx) / 2, oy = (H - strip - scene.height * sy) / 2;
    this.t = { sx, sy, ox, oy };
    // Stepping moves no camera: the minimap then stays as it is (one blit less per step).
    const key = `${cam.x},${cam.y},${cam.k},${view.w},${view.h}`;
    if (this.cache && this.drawn === key) return;
    if (!this.cache) this.cache = silhouette(scene, pal, dpr, sx, sy, ox, oy, strip, W, H);
    this.drawn = key;
    const ctx = this.canvas.getContext("2d");
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(this.cache, 0, 0);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.strokeStyle = pal.current;
    ctx.lineWidth = 1.5;
    // The viewport, clipped to the minimap (a view wider than the map is drawn to its edges).
    const x0 = Math.max(1, ox + cam.x * sx), y0 = Math.max(1, oy + cam.y * sy);
    const x1 = Math.min(W - 1, ox + (cam.x + view.w / cam.k) * sx), y1 = Math.min(H - 1, oy + (cam.y + view.h / cam.k) * sy);
    if (x1 > x0 && y1 > y0) ctx.strokeRect(x0, y0, x1 - x0, y1 - y0);
  }
}

function silhouette(scene, pal, dpr, sx, sy, ox, oy, strip, W, H) {
  const cache = document.createElement("canvas");
  cache.width = W * dpr; cache.height = H * dpr;
  const cc = cache.getContext("2d");
  cc.setTransform(dpr, 0, 0, dpr, 0, 0);
  cc.fillStyle = pal.mini;
  cc.fillRect(0, 0, W, H);
  cc.fillStyle = pal.edge;
  cc.beginPath();
  scene.view.vnodes.forEach((n, v) => {
    cc.rect(ox + (scene.x[v] - n.w / 2) * sx, oy + (scene.y[v] - n.h / 2) * sy, Math.max(1.5, n.w * sx), Math.max(1.5, n.h * sy));
  });
  cc.fill();
  if (strip && scene.units) {
    // The run's units (iterations, calls) in a row along the bottom, the open one marked.
    const { count, open } = scene.units;
    const cw = (W - 8) / count;
    cc.fillStyle = pal.edge;
    cc.fillRect(4, H - strip + 2, W - 8, strip - 4);
    cc.fillStyle = pal.current;
    cc.fillRect(4 + open * cw, H - strip, Math.max(2, cw), strip);
  }
  return cache;
}
