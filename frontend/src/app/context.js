/**
 * The one context a viewer gives its panels (NOTE [one panel shape] in ui/registry.js): what
 * they read (state, model, scene, player, canvas, code pane), what they may ask the viewer to
 * do, the other panels, and the service (api.js `service`). Built once per viewer, which then
 * mounts every panel of the registry with it.
 */
import { service } from "../api.js";
import { afterFrame, part } from "../ui/dom.js";
import { nodeOfV } from "./model.js";
import { PANELS } from "../ui/registry.js";

export { part };

/**
 * @param viewer  app/viewer.js's Viewer, its player and canvas made
 * @param {HTMLElement} root  the viewer's root
 * @param {{checks?: true|Function, explain?: Function, codeText?: () => string, onGoals?: Function}} opts  the viewer's
 */
export function mountPanels(viewer, root, opts) {
  const ctx = {
    root, state: viewer.state, player: viewer.player, canvas: viewer.canvas, code: viewer.code,
    part: (name) => part(root, name),
    service: service(opts),
    codeText: opts.codeText || (() => ""),
    onGoals: opts.onGoals || null,
    panels: {},
    get model() { return viewer.model; },
    get doc() { return viewer.model ? viewer.model.doc : null; },
    get index() { return viewer.model ? viewer.model.index : null; },
    get scene() { return viewer.scene; },
    get selectedV() { return viewer.selectedV; },
    get generation() { return viewer.generation; },  // documents whose first frame is drawn (app/viewer.js)
    selectNode: (v, o) => viewer.selectNode(v, o),
    onLine: (line) => viewer.onLine(line, true),
    showNode: (id) => viewer.showNode(id),
    reveal: (ref) => viewer.reveal(ref),
    openGroup: (v) => viewer.openGroup(v),
    toggleModule: (path) => viewer.toggleModule(path),
    toggleRepeat: (path) => viewer.toggleRepeat(path),
    pickUnit: (u) => viewer.pickUnit(u),
    jump: (unit, back) => viewer.jump(unit, back),
    go: (k) => viewer.apply({ go: k }),  // a step, as the user picked it (ui/dynamics.js)
  };
  for (const panel of PANELS) {
    const mounted = panel.mount(ctx);
    if (mounted) ctx.panels[panel.id] = mounted;
  }
  return ctx.panels;
}

/** The pointer is on document node `node` of the graph (each move over it): panels that answer `hover(model, node)`
 *  may get ready for its selection (ui/tensors.js fetches its tensors). */
export function hoverPanels(panels, model, node) {
  if (model) for (const p of Object.values(panels)) if (p.hover) p.hover(model, node);
}

/** Document node `node` is being selected (before anything of the selection is drawn): panels that answer
 *  `select(model, node)` may start what the selection will wait on (ui/tensors.js: the first tensor's read). */
export function selectPanels(panels, model, node) {
  if (model && node) for (const p of Object.values(panels)) if (p.select) p.select(model, node);
  return node;
}

/** Selected node `v` (document node `node`), selected from anywhere (node list, search, inspector, a panel): brought
 *  into view, and its code line marked after the next frame (NOTE [the looked-at tensor first] in ui/tensors.js). */
export function showSelected(viewer, v, node) {
  viewer.canvas.reveal(v);
  const line = node.line ?? null;
  afterFrame().then(() => { if (viewer.selectedV === v && nodeOfV(viewer.model, viewer.scene, v) === node) viewer.code.mark({ selected: line }, { scroll: false }); });
}

/** Tell every mounted panel what changed (NOTE [one panel shape] in ui/registry.js); `model` is null before a document. */
export function updatePanels(panels, model, state, changed) {
  for (const p of Object.values(panels)) if (p.update) p.update(model, state, changed);
}
