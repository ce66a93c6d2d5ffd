/**
 * Keys of the graph panel. They act only while the panel has focus (never while typing in
 * the editor, whose keys are its own): Space play/pause, ←/→ step, Shift+←/→ phase, Home/End, +/−/f zoom, w the whole graph,
 * and the jumps: L / Shift+L next/previous line, I / Shift+I next/previous loop iteration,
 * PageDown/PageUp (or P / Shift+P) next/previous pass, / to search.
 */
/**
 * @param jump    (unit: "line"|"iteration"|"pass", back: boolean) => void
 * @param search  () => void, focuses the search box
 */
export function graphKeyHandler(player, canvas, { jump = () => {}, search = () => {} } = {}) {
  return (ev) => {
    const keys = {
      " ": () => player.toggle(),
      ArrowRight: () => (ev.shiftKey ? player.phaseForward() : player.step(1)),
      ArrowLeft: () => (ev.shiftKey ? player.phaseBack() : player.step(-1)),
      Home: () => player.go(0, { fromUser: true }),
      End: () => player.go(player.N, { fromUser: true }),
      PageDown: () => jump("pass", false),
      PageUp: () => jump("pass", true),
      l: () => jump("line", ev.shiftKey),
      i: () => jump("iteration", ev.shiftKey),
      p: () => jump("pass", ev.shiftKey),
      "/": () => search(),
      "+": () => canvas.zoomBy(1.25),
      "=": () => canvas.zoomBy(1.25),
      "-": () => canvas.zoomBy(0.8),
      f: () => canvas.fit(),
      w: () => canvas.fit({ whole: true }),
    };
    const fn = keys[ev.key.length === 1 ? ev.key.toLowerCase() : ev.key];
    if (!fn || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    ev.preventDefault();
    fn();
  };
}

/**
 * The key hint under a narrow graph is one line of its main keys (static/app.css, NOTE [narrow
 * windows]): its whole text becomes its tooltip, and its "Graph focused:" lead is marked, as
 * its secondary keys are in the template, so the narrow layout hides them visually (they stay
 * in the graph's accessible description).
 */
export function compactKeyHint(el) {
  if (!el || el.dataset.compact) return;
  el.dataset.compact = "1";
  el.title = el.textContent.replace(/\s+/g, " ").trim();
  const first = el.firstChild;
  const lead = /^\s*Graph focused:\s*/.exec(first && first.nodeType === 3 ? first.data : "");
  if (!lead) return;
  const span = document.createElement("span");
  span.className = "gt-keys-more";
  span.textContent = lead[0];
  first.data = first.data.slice(lead[0].length);
  el.insertBefore(span, first);
}

/**
 * The graph's keys as a viewer panel (NOTE [one panel shape] in ui/registry.js): the keys
 * above, Enter to open the selected fold one level (graph/units.js), the ⤢ button, and the
 * key hint's compact form.
 */
export const keysPanel = {
  id: "keys",
  mount(ctx) {
    const graph = ctx.part("graph");
    compactKeyHint(ctx.root.querySelector("#graph-keys"));
    graph.addEventListener("keydown", (ev) => {
      const v = ctx.selectedV;
      if (ev.key === "Enter" && ctx.scene && v >= 0 && ctx.scene.view.vnodes[v].kind === "group") { ev.preventDefault(); ctx.openGroup(v); }
    });
    graph.addEventListener("keydown", graphKeyHandler(ctx.player, ctx.canvas, {
      jump: (unit, back) => ctx.jump(unit, back), search: () => ctx.panels.search && ctx.panels.search.focus() }));
    const whole = ctx.part("whole");
    if (whole) whole.addEventListener("click", () => ctx.canvas.fit({ whole: true }));
    return null;
  },
};
