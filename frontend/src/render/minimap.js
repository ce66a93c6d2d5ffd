/**
 * The minimap: the whole graph's silhouette (drawn once per scene) with the viewport as a
 * rectangle. Pressing or dragging on it centres the main view there, through `onMove`.
 */
const W = 180, H = 120;

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
      onMove((ev.clientX - r.left - this.t.ox) / this.t.s, (ev.clientY - r.top - this.t.oy) / this.t.s);
    };
    canvas.addEventListener("pointerdown", (ev) => { canvas.setPointerCapture(ev.pointerId); dragging = true; move(ev); });
    canvas.addEventListener("pointermove", (ev) => { if (dragging) move(ev); });
    canvas.addEventListener("pointerup", () => { dragging = false; });
  }

  invalidate() { this.cache = null; }

  /** Draw for a scene and camera; hidden for small graphs, which fit the view anyway. */
  draw(scene, cam, view, pal, dpr) {
    const show = !!scene && scene.view.vnodes.length > 40;
    this.canvas.hidden = !show;
    if (!show) return;
    if (this.canvas.width !== W * dpr) { this.canvas.width = W * dpr; this.canvas.height = H * dpr; }
    const s = Math.min((W - 8) / Math.max(scene.width, 1), (H - 8) / Math.max(scene.height, 1));
    const ox = (W - scene.width * s) / 2, oy = (H - scene.height * s) / 2;
    this.t = { s, ox, oy };
    if (!this.cache) this.cache = silhouette(scene, pal, dpr, s, ox, oy);
    const ctx = this.canvas.getContext("2d");
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(this.cache, 0, 0);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.strokeStyle = pal.current;
    ctx.lineWidth = 1.5;
    ctx.strokeRect(ox + cam.x * s, oy + cam.y * s, (view.w / cam.k) * s, (view.h / cam.k) * s);
  }
}

function silhouette(scene, pal, dpr, s, ox, oy) {
  const cache = document.createElement("canvas");
  cache.width = W * dpr; cache.height = H * dpr;
  const cc = cache.getContext("2d");
  cc.setTransform(dpr, 0, 0, dpr, 0, 0);
  cc.fillStyle = pal.mini;
  cc.fillRect(0, 0, W, H);
  cc.fillStyle = pal.edge;
  cc.beginPath();
  scene.view.vnodes.forEach((n, v) => {
    cc.rect(ox + (scene.x[v] - n.w / 2) * s, oy + (scene.y[v] - n.h / 2) * s, Math.max(1, n.w * s), Math.max(1, n.h * s));
  });
  cc.fill();
  return cache;
}
