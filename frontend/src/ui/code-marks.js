/**
 * The code pane's marks as a viewer panel (NOTE [one panel shape] in ui/registry.js): per
 * document the error and its cause, the hints' lines (⚑), blocks with gradients off and
 * folded calls; per step the line running now, the one just done, and the lines of a custom
 * Function's own `backward` while it runs. The code pane is the context's `code` (anything
 * with `mark(marks, {scroll})`: ui/editor.js, a read-only listing); the selection's mark is the
 * viewer's, as it knows whether to scroll.
 */
import { backwardLines, isCustomFunction } from "../graph/custom.js";
import { gradOffMarks } from "./definitions.js";
import { foldedMarks } from "./folded.js";

export const codeMarksPanel = {
  id: "code-marks",
  mount(ctx) {
    return {
      update(model, st, changed) {
        const { doc, errors, index, timeline: tl } = model;
        if (changed.includes("document")) {
          ctx.code.mark({ error: errors.lines.error, cause: errors.lines.cause, hint: errors.findingLines, current: null, justDone: null, selected: null,
            gradOff: gradOffMarks(doc), folded: foldedMarks(doc) }, { scroll: true });
        }
        if (!changed.includes("step")) return;
        const k = st.step;
        const ev = tl.event(k), prev = tl.event(k - 1);
        const lineOf = (e, i) => (e ? e.line ?? index.nodes[tl.evNode[i]].line ?? null : null);
        const evNode = ev ? index.nodes[tl.evNode[k - 1]] : null;
        const userBackward = ev && ev.phase === "backward" && isCustomFunction(evNode, doc.code) ? backwardLines(doc.code ?? ctx.codeText(), evNode.name) : null;
        ctx.code.mark({ current: lineOf(ev, k - 1), justDone: lineOf(prev, k - 2), userBackward }, { scroll: !!ev });
      },
    };
  },
};
