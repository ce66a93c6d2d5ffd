/**
 * The step's sentence under the graph (analysis/words.js stepSentence), as a viewer panel
 * (NOTE [one panel shape] in ui/registry.js). Screen readers hear it (aria-live) only when
 * the run is not playing, and once the graph has the focus.
 */
import { stepSentence } from "../analysis/words.js";
import { withCode } from "./dom.js";

export const sentencePanel = {
  id: "sentence",
  mount(ctx) {
    const el = ctx.part("sentence");
    if (!el) return null;
    const graph = ctx.part("graph");
    if (graph) graph.addEventListener("focus", () => el.setAttribute("aria-live", "polite"));
    return {
      update(model, st, changed) {
        if (!changed.includes("step")) return;
        el.setAttribute("aria-live", st.playing ? "off" : "polite");
        el.replaceChildren(...withCode(stepSentence(model.words, st.step)));
      },
    };
  },
};
