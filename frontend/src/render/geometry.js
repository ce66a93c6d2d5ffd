/** Where edges run: their polylines, bounding boxes (for culling), midpoints and moving points. */

export function edgeBoxes(scene) {
  if (scene.ebox) return scene.ebox;
  const pts = scene.layout.points;
  const es = scene.view.vedges;
  const box = new Float64Array(es.length * 4);
  es.forEach((e, k) => {
    let p = pts[k];
    if (!p || p.length < 4) p = [scene.x[e.s], scene.y[e.s], scene.x[e.t], scene.y[e.t]];
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (let i = 0; i < p.length; i += 2) { x0 = Math.min(x0, p[i]); x1 = Math.max(x1, p[i]); y0 = Math.min(y0, p[i + 1]); y1 = Math.max(y1, p[i + 1]); }
    box.set([x0, y0, x1, y1], k * 4);
  });
  scene.ebox = box;
  return box;
}

export function edgePoints(scene, k) {
  const p = scene.layout.points[k];
  if (p && p.length >= 4) return p;
  const e = scene.view.vedges[k];
  return [scene.x[e.s], scene.y[e.s], scene.x[e.t], scene.y[e.t]];
}

/** The middle of a polyline's middle segment (where edge labels go). */
export function midpoint(p) {
  const seg = Math.floor((p.length / 2 - 1) / 2);
  const i = seg * 2;
  return [(p[i] + p[i + 2]) / 2, (p[i + 1] + p[i + 3]) / 2];
}

/** The point a fraction t of the way along a polyline, walked from its end back to its start. */
export function alongReversed(p, t) {
  const segs = [];
  let total = 0;
  for (let i = p.length - 2; i >= 2; i -= 2) {
    const l = Math.hypot(p[i] - p[i - 2], p[i + 1] - p[i - 1]);
    segs.push([i, l]);
    total += l;
  }
  let d = Math.min(1, Math.max(0, t)) * total;
  for (const [i, l] of segs) {
    if (d <= l || l === 0) {
      const f = l ? d / l : 0;
      return [p[i] + (p[i - 2] - p[i]) * f, p[i + 1] + (p[i - 1] - p[i + 1]) * f];
    }
    d -= l;
  }
  return [p[0], p[1]];
}
