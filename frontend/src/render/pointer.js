/**
 * The graph view's pointer: wheel zoom, drag to pan, click to inspect (a fold opens one level,
 * a box title folds its module), double click to open a group, and the hover tooltips of nodes,
 * merged edges' labels and shortened titles. Functions of a render/canvas.js GraphCanvas.
 */
import { edgeText } from "./draw.js";
import { stepState } from "./scene.js";
import { fmtTensorShort } from "../graph/values.js";

export function bindPointer(canvas) {
  let drag = null;
  const c = canvas.overlay;
  c.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = c.getBoundingClientRect();
    canvas.zoomBy(Math.exp(-ev.deltaY * 0.0015), ev.clientX - r.left, ev.clientY - r.top);
  }, { passive: false });
  c.addEventListener("pointerdown", (ev) => {
    drag = { x: ev.clientX, y: ev.clientY, cam: { ...canvas.cam }, moved: false };
    c.setPointerCapture(ev.pointerId);
  });
  c.addEventListener("pointermove", (ev) => {
    const r = c.getBoundingClientRect();
    if (drag) {
      const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      if (drag.moved) canvas.panTo({ ...drag.cam, x: drag.cam.x - dx / canvas.cam.k, y: drag.cam.y - dy / canvas.cam.k });
      return;
    }
    tooltip(canvas, canvas.hit(ev.clientX - r.left, ev.clientY - r.top), ev.clientX - r.left, ev.clientY - r.top);
  });
  c.addEventListener("pointerleave", () => tooltip(canvas, -1));
  c.addEventListener("pointerup", (ev) => {
    const r = c.getBoundingClientRect();
    const wasDrag = drag && drag.moved;
    drag = null;
    if (wasDrag) return;
    const sx = ev.clientX - r.left, sy = ev.clientY - r.top;
    const v = canvas.hit(sx, sy);
    // A click on a fold opens it one level (graph/units.js); any other node is inspected.
    if (v >= 0 && canvas.scene.view.vnodes[v].fold && canvas.cb.onGroupOpen) { canvas.cb.onGroupOpen(v); return; }
    if (v >= 0) { if (canvas.cb.onNodeClick) canvas.cb.onNodeClick(v); return; }
    const box = canvas.hitBox(sx, sy);
    if (box && canvas.cb.onBoxClick) canvas.cb.onBoxClick(box);
    else if (canvas.cb.onNodeClick) canvas.cb.onNodeClick(-1);
  });
  c.addEventListener("dblclick", (ev) => {
    const r = c.getBoundingClientRect();
    const v = canvas.hit(ev.clientX - r.left, ev.clientY - r.top);
    if (v >= 0 && canvas.scene.view.vnodes[v].kind === "group" && canvas.cb.onGroupOpen) canvas.cb.onGroupOpen(v);
  });
}

function tooltip(canvas, v, sx, sy) {
  if (v < 0 && canvas.scene && sx !== undefined && edgeTip(canvas, sx, sy)) return;
  if (v < 0 || !canvas.scene) { canvas.tip.hidden = true; return; }
  const n = canvas.scene.view.vnodes[v];
  const ref = n.refs[0];
  const st = stepState(canvas.scene, canvas.k);
  let text = `${n.label}${n.sub ? ` · ${n.sub}` : ""}`;
  const g = canvas.scene.timeline.leafGradAt(ref, canvas.k);
  if (g) text += `\n.grad ${fmtTensorShort(g.value, 6)}`;
  if (st.reached(v) === 2) text += "\nreached in this backward pass";
  canvas.tip.textContent = text;
  canvas.tip.hidden = false;
  canvas.tip.style.left = `${sx + 14}px`;
  canvas.tip.style.top = `${sy + 10}px`;
  if (canvas.cb.onHover) canvas.cb.onHover(v);
}

/** Hovering a merged edge's label lists the gradients it adds up; a shortened title shows whole. */
function edgeTip(canvas, sx, sy) {
  const it = (canvas.placed || []).find((p) => (p.edge !== undefined || p.full) && sx >= p.x && sx <= p.x + p.w && sy >= p.y && sy <= p.y + p.h);
  if (!it) return false;
  if (it.edge === undefined) {
    canvas.tip.textContent = it.full;
    canvas.tip.hidden = false;
    canvas.tip.style.left = `${sx + 14}px`;
    canvas.tip.style.top = `${sy + 10}px`;
    return true;
  }
  const g = stepState(canvas.scene, canvas.k).edgeGrad(it.edge);
  if (!g) return false;
  const parts = g.all.map((t) => `  ${fmtTensorShort(t, 6)}`).join("\n");
  canvas.tip.textContent = g.all.length > 1 ? `∇ ${edgeText(g)}\nthe sum of ${g.all.length} gradients:\n${parts}` : `∇ ${edgeText(g)}`;
  canvas.tip.hidden = false;
  canvas.tip.style.left = `${sx + 14}px`;
  canvas.tip.style.top = `${sy + 10}px`;
  return true;
}
