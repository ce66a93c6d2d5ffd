/**
 * Tints on a viewer's graph (the compare page): a coloured ring around each revealed node
 * that one run alone has (red in A, green in B) or whose gradient changed (amber to orange).
 * Drawn over the frame through the canvas's `decorate` hook (render/canvas.js), so the
 * renderer itself knows nothing of comparisons.
 */

/** Draw the rings of `colours` (document node id → colour) on the viewer's canvas. */
export function installTints(viewer, colours) {
  let forScene = null, byV = [];
  viewer.canvas.decorate = (ctx, { scene, k, cam, dpr }) => {
    if (scene !== forScene) {  // a new scene (layout, a fold opened): map its visible nodes once
      forScene = scene;
      byV = scene.view.vnodes.map((vn) => {
        for (const ref of vn.refs) {
          const c = colours.get(viewer.index.nodes[ref].id);
          if (c) return c;
        }
        return null;
      });
    }
    ctx.save();
    ctx.setTransform(dpr * cam.k, 0, 0, dpr * cam.k, -cam.x * cam.k * dpr, -cam.y * cam.k * dpr);
    ctx.lineWidth = Math.max(3 / cam.k, 2.5);
    for (let v = 0; v < byV.length; v++) {
      const c = byV[v];
      if (!c || !(scene.reveal[v] <= k)) continue;
      const n = scene.view.vnodes[v];
      ctx.strokeStyle = c;
      ctx.beginPath();
      ctx.roundRect(scene.x[v] - n.w / 2 - 3, scene.y[v] - n.h / 2 - 3, n.w + 6, n.h + 6, 8);
      ctx.stroke();
    }
    ctx.restore();
  };
  viewer.canvas.redraw();
}
