/**
 * The search box as a viewer panel (NOTE [one panel shape] in ui/registry.js): it writes the
 * query and its matches to the view state, shows "3 of 12" from the state, and Enter reveals
 * and selects the next match. The matching itself is analysis/search.js (pure).
 */
import { cycle, searchNodes } from "../analysis/search.js";

export const searchPanel = {
  id: "search",
  mount(ctx) {
    const box = ctx.part("search");
    const count = ctx.part("search-count");
    if (!box) return null;
    const { state } = ctx;
    const run = () => {
      const query = box.value;
      state.set({ search: { query, matches: ctx.model ? searchNodes(ctx.model.index, query) : [], at: -1 } });
    };
    const status = () => {
      if (!count) return;
      const { query, matches, at } = state.get("search");
      count.textContent = !query.trim() ? "" : !matches.length ? "no match"
        : at < 0 ? `${matches.length} match${matches.length > 1 ? "es" : ""}` : `${at + 1} of ${matches.length}`;
    };
    const next = async (back) => {
      if (!ctx.scene || state.get("search").query !== box.value) run();
      const s = state.get("search");
      const at = cycle(s.at, s.matches.length, back);
      state.set({ search: { ...s, at } });
      if (at < 0) return;
      const v = await ctx.reveal(s.matches[at].ref);
      if (v < 0) return;
      if (ctx.scene.reveal[v] > ctx.player.k) ctx.player.go(ctx.scene.reveal[v], { fromUser: true });
      ctx.selectNode(v);
      ctx.canvas.setLineSelection([v]);
      ctx.canvas.centerOn(v);
    };
    box.addEventListener("input", () => run());
    box.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") { ev.preventDefault(); next(ev.shiftKey); }
      else if (ev.key === "Escape") { ev.preventDefault(); box.value = ""; run(); ctx.part("graph").focus(); }
    });
    return {
      next,
      focus() { box.focus(); box.select(); },
      update(model, st, changed) {
        if (changed.includes("search")) status();
        if (changed.includes("document") && box.value.trim()) run();  // a new run: the same query again
      },
    };
  },
};
