/**
 * The search box as a panel (NOTE [panels] in app/state.js): it writes the query and its
 * matches to the view state, shows "3 of 12" from the state, and Enter asks the viewer to
 * reveal and select the next match. The matching itself is analysis/search.js (pure).
 */
import { cycle, searchNodes } from "../analysis/search.js";
import { part } from "./parts.js";

/** @returns {() => void} unsubscribe */
export function searchPanel(state, root, viewer) {
  const box = part(root, "search");
  const count = part(root, "search-count");
  if (!box) return () => {};
  const run = () => {
    const query = box.value;
    state.set({ search: { query, matches: viewer.index ? searchNodes(viewer.index, query) : [], at: -1 } });
  };
  const status = () => {
    if (!count) return;
    const { query, matches, at } = state.get("search");
    count.textContent = !query.trim() ? "" : !matches.length ? "no match"
      : at < 0 ? `${matches.length} match${matches.length > 1 ? "es" : ""}` : `${at + 1} of ${matches.length}`;
  };
  const next = async (back) => {
    if (!viewer.scene || state.get("search").query !== box.value) run();
    const s = state.get("search");
    const at = cycle(s.at, s.matches.length, back);
    state.set({ search: { ...s, at } });
    if (at < 0) return;
    const v = await viewer.reveal(s.matches[at].ref);
    if (v < 0) return;
    if (viewer.scene.reveal[v] > viewer.player.k) viewer.player.go(viewer.scene.reveal[v], { fromUser: true });
    viewer.selectNode(v);
    viewer.canvas.setLineSelection([v]);
    viewer.canvas.centerOn(v);
  };
  viewer.nextMatch = next;
  viewer.focusSearch = () => { box.focus(); box.select(); };
  const onInput = () => run();
  const onKey = (ev) => {
    if (ev.key === "Enter") { ev.preventDefault(); next(ev.shiftKey); }
    else if (ev.key === "Escape") { ev.preventDefault(); box.value = ""; run(); viewer.els.graph.focus(); }
  };
  box.addEventListener("input", onInput);
  box.addEventListener("keydown", onKey);
  const unsub = state.subscribe((_, changed) => {
    if (changed.includes("search")) status();
    if (changed.includes("document") && box.value.trim()) run();  // a new run: the same query again
  });
  return () => { unsub(); box.removeEventListener("input", onInput); box.removeEventListener("keydown", onKey); };
}
