/**
 * What a share link carries besides the run: the step, the selected node, the groups the
 * sharer opened or closed, the camera and the page's mode, as query parameters that a person
 * can read ("?step=12&sel=n34&open=unit:0:2&cam=310,220,0.82&mode=present").
 *
 * NOTE [a link opens what the sharer saw]
 *   Module folds are written as changes to the default (graph/modules.js defaultCollapsed),
 *   which the receiving page computes from the same document: "+path" opened, "-path" folded.
 *   So a link stays short on a model with hundreds of modules. The camera is the world point
 *   at the centre of the view and the zoom, so a window of another size centres the same
 *   thing. Node ids are the document's own (docs/CONTRACT.md), stable across loads.
 *   Parsing is forgiving: a parameter that does not parse is left out, never an error.
 */

const list = (v) => (v ? v.split(",").filter(Boolean) : []);

/**
 * @param v {{step?: number|null, N: number, sel?: string|null, open?: Iterable<string>,
 *            collapsed?: Set<string>, defaults?: Set<string>, repeats?: Iterable<string>,
 *            cam?: {x:number, y:number, k:number}|null, size?: {w:number, h:number}, mode?: string}}
 * @returns {URLSearchParams}
 */
export function encodeView(v) {
  const q = new URLSearchParams();
  if (v.step != null && v.step < v.N) q.set("step", String(v.step));
  if (v.sel) q.set("sel", v.sel);
  const open = [...(v.open || [])];
  if (open.length) q.set("open", open.join(","));
  if (v.collapsed && v.defaults) {
    const folds = [...v.defaults].filter((p) => !v.collapsed.has(p)).map((p) => `+${p}`)
      .concat([...v.collapsed].filter((p) => !v.defaults.has(p)).map((p) => `-${p}`));
    if (folds.length) q.set("fold", folds.join(","));
  }
  const repeats = [...(v.repeats || [])];
  if (repeats.length) q.set("rep", repeats.join(","));
  if (v.cam && v.size) {
    const cx = v.cam.x + v.size.w / 2 / v.cam.k, cy = v.cam.y + v.size.h / 2 / v.cam.k;
    q.set("cam", `${Math.round(cx)},${Math.round(cy)},${Number(v.cam.k.toFixed(3))}`);
  }
  if (v.mode && v.mode !== "edit") q.set("mode", v.mode);
  return q;
}

/** The view a link asks for (every field optional: null or empty when absent or malformed). */
export function decodeView(search) {
  const q = new URLSearchParams(search);
  const step = /^\d+$/.test(q.get("step") || "") ? Number(q.get("step")) : null;
  const folds = list(q.get("fold"));
  const cam = (q.get("cam") || "").split(",").map(Number);
  const camOk = cam.length === 3 && cam.every(Number.isFinite) && cam[2] > 0;
  return {
    step,
    sel: q.get("sel") || null,
    open: list(q.get("open")),
    expand: folds.filter((f) => f.startsWith("+")).map((f) => f.slice(1)),
    collapse: folds.filter((f) => f.startsWith("-")).map((f) => f.slice(1)),
    repeats: list(q.get("rep")),
    cam: camOk ? { cx: cam[0], cy: cam[1], k: cam[2] } : null,
    mode: q.get("mode") === "present" ? "present" : null,
  };
}

/** Whether a decoded view asks for anything beyond the step. */
export function hasView(v) {
  return !!(v.sel || v.open.length || v.expand.length || v.collapse.length || v.repeats.length || v.cam);
}

/** The fold fields of a share link's view over the document's defaults (modules that exist only). */
export function foldsOf(view, defaults, tree) {
  const collapsed = new Set(defaults);
  for (const p of view.expand) collapsed.delete(p);
  for (const p of view.collapse) if (tree.mods.has(p)) collapsed.add(p);
  return { collapsed, open: new Set(view.open), expandedRepeats: new Set(view.repeats.filter((p) => tree.repeats.has(p))) };
}

/** The query of a share link for `model` seen as `st`, with the selected node `sel` and the canvas's camera. */
export function linkQuery(model, st, { sel = null, cam = null, size = null, mode = null } = {}) {
  return encodeView({
    step: st.step, N: model ? model.N : 0, mode, sel: sel ? sel.id : null,
    open: st.open, collapsed: st.collapsed, defaults: model ? model.defaults : null, repeats: st.expandedRepeats, cam, size,
  });
}
