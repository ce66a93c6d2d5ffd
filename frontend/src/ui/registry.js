/**
 * Every panel of the viewer, in one list.
 *
 * NOTE [one panel shape]
 *   A panel is a record `{id, mount(ctx)}` listed in PANELS below, its module in ui/. The
 *   viewer (app/viewer.js) mounts each once, in this order; `mount` finds its elements with
 *   `ctx.part(name)` (the `data-gt` parts of templates/viewer.html) and answers the mounted
 *   panel, or null when its parts are missing (a widget may leave some out). A mounted panel
 *   may have:
 *     update(model, state, changed)  after each change of the view state (app/state.js), with
 *         the page model (app/model.js) and the fields that changed. `document`: a new model;
 *         `view`: a new scene (ctx.scene); `step`: the step was shown (also on play/pause,
 *         state.playing says which); any other field by its name (search, openUnits, …).
 *     inspect(model, node)  a section of the inspector for the selected document node, or null
 *         (ui/inspector.js puts them side by side, in this order).
 *   A panel reaches everything else through `ctx` (app/context.js): the state, the model and
 *   scene, the player and canvas, the viewer's actions (selectNode, showNode, reveal,
 *   openGroup, onLine, …), the other mounted panels (`ctx.panels[id]`), and the service
 *   (`ctx.service`, api.js `service`: check and explain requests, null where nothing answers).
 *   No panel imports a fetch helper or writes a field of the viewer.
 *   A new panel (a tensor view in the inspector, a training-dynamics chart) is one module in
 *   ui/ exporting such a record, and one line here.
 */
import { codeMarksPanel } from "./code-marks.js";
import { dynamicsPanel } from "./dynamics.js";
import { explainPanel } from "./explain.js";
import { findingsPanel } from "./findings.js";
import { goalsPanel } from "./goals.js";
import { gradcheckPanel } from "./gradcheck.js";
import { inspectorPanel } from "./inspector.js";
import { iterationsPanel } from "./iterations.js";
import { keysPanel } from "./keys.js";
import { graphStatusPanel, modulesPanel, nodeListPanel } from "./panels.js";
import { predictPanel } from "./predict.js";
import { searchPanel } from "./search-box.js";
import { sentencePanel } from "./sentence.js";
import { transportPanel } from "./transport.js";
// the inspector's tensors (after Explain: a picked element asks it)
import { tensorsPanel } from "./tensors.js";
import { colourByPanel } from "./colour-by.js";

export const PANELS = [
  gradcheckPanel, explainPanel, tensorsPanel, inspectorPanel, transportPanel, findingsPanel, sentencePanel, codeMarksPanel,
  keysPanel, searchPanel, predictPanel, goalsPanel, iterationsPanel, graphStatusPanel, modulesPanel, nodeListPanel,
  colourByPanel,
];
// The training-dynamics charts (ui/dynamics.js): their own line, apart from the list above.
PANELS.push(dynamicsPanel);
