/**
 * The pipeline's pure steps around the layout worker: the visible graph of a model seen as a
 * view state (graph/view.js), the worker's input, and the scene drawn from the layout
 * (render/scene.js) with the run's error marks and the open units on it. The viewer
 * (app/viewer.js `relayout`) runs them around the one asynchronous step, the layout itself.
 */
import { activeVNodes } from "../graph/units.js";
import { buildView, lineNodes } from "../graph/view.js";
import { makeScene } from "../render/scene.js";
import { wrapLayout } from "../render/wrap.js";

export { lineNodes };

/** The visible graph of `model` under the view state `st`. */
export function viewOf(model, st) { return buildView(model.index, model.tree, st); }

/** What the layout worker (layout/worker.js) reads: sizes, edges and clusters as typed arrays. */
export function layoutInput(view) {
  return {
    w: Float64Array.from(view.vnodes, (v) => v.w), h: Float64Array.from(view.vnodes, (v) => v.h),
    src: Int32Array.from(view.vedges, (e) => e.s), dst: Int32Array.from(view.vedges, (e) => e.t),
    cluster: view.cluster,
  };
}

/**
 * The scene of a laid-out view. `box`: the graph's size in px, into which a long strip is cut
 * into columns (NOTE [wrapped layout] in render/wrap.js), or null.
 */
export function sceneOf(model, st, view, layout, box = null) {
  if (box) wrapLayout(layout, view.vnodes, box);
  const scene = makeScene(model.index, view, layout, model.timeline, st.collapsed);
  markErrors(scene, model.errors);
  scene.active = activeVNodes(view, st.levels, st.openUnits);
  scene.units = st.levels.length ? { count: st.levels[0].count, open: st.openUnits[0] } : null;
  return scene;
}

/** Put the error marks (analysis/errors.js) on the visible nodes that stand for them. */
function markErrors(scene, errors) {
  scene.suspectV = [];  // the gradient check's (ui/gradcheck.js)
  const labels = new Map();
  for (const m of errors.nodes) {
    for (const v of scene.view.byRef[m.ref] || []) if (!labels.has(v)) labels.set(v, m.text);
  }
  if (!labels.size) return;
  scene.errorV = [...labels.keys()];
  scene.errorLabels = new Map([...labels].filter(([, text]) => text));
}
