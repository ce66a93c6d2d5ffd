/**
 * The page model: everything the page derives from one run document, built once per document
 * and never changed afterwards. A pure function of the document (and of the step a link asks
 * for, which decides the modules folded at first): no DOM, no view state, so node:test builds it
 * (test/model.test.js) and two viewers on one page each build their own.
 *
 * NOTE [model and state]
 *   The model is what the run *is*: its index (graph/document.js), module tree, timeline,
 *   repeated units (graph/groups.js), default folds, sentences (analysis/words.js) and error
 *   marks. The view state (app/state.js) is what the person is *looking at*. Folds, navigation
 *   and links (app/folds.js, app/navigate.js, app/link.js) are functions of the two that answer
 *   a change; the viewer applies it in one place (app/viewer.js `apply`).
 */
import { errorMarks } from "../analysis/errors.js";
import { wordsContext } from "../analysis/words.js";
import { indexDocument } from "../graph/document.js";
import { runLevels } from "../graph/groups.js";
import { defaultCollapsed, moduleTree } from "../graph/modules.js";
import { Timeline } from "../graph/timeline.js";
import { openAt, shownMask } from "../graph/units.js";
import { addFindingMarks } from "../ui/findings.js";

/**
 * @param {object} doc  a run document (docs/CONTRACT.md)
 * @param {{code?: string, step?: number|null}} opts  `code`: the snippet when the document does not
 *   carry it (the editor's text); `step`: the step to open at (null: the end)
 */
export function pageModel(doc, { code = "", step = null } = {}) {
  const index = indexDocument(doc);
  const tree = moduleTree(index);
  const timeline = new Timeline(index);
  // Iterations and module calls (graph/groups.js): the open ones drawn in full, the rest folded.
  const levels = runLevels(index, timeline, tree);
  const N = timeline.N;
  const k0 = step == null ? N : Math.max(0, Math.min(N, step));
  const openUnits = openAt(levels, k0);
  const shown = levels.length ? shownMask(levels, openUnits, index.nodes.length) : null;
  return {
    doc, index, tree, timeline, levels, N, k0, openUnits,
    defaults: defaultCollapsed(index, tree, undefined, shown),
    words: wordsContext(index, timeline, doc.code ?? code, levels),
    errors: addFindingMarks(errorMarks(index), index),
  };
}

/** The view state a model opens with (app/state.js fields), before a link's folds (app/link.js foldsOf). */
export function initialState(model) {
  return { collapsed: model.defaults, step: model.k0, levels: model.levels, openUnits: model.openUnits };
}

/** The document node drawn by visible node `v` of `scene`, or null. */
export function nodeOfV(model, scene, v) {
  return v >= 0 && scene ? model.index.nodes[scene.view.vnodes[v].refs[0]] : null;
}
