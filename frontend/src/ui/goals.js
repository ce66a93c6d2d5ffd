/**
 * The exercise checklist beside the code: the run document's `goals` (docs/CONTRACT.md,
 * `GoalReport`), each goal ticked or crossed with why, a failing one pointing at its line and
 * node. All pass: the exercise is done. A viewer panel (NOTE [one panel shape] in ui/registry.js), so the
 * page, the widget and a saved HTML file show the same list; a saved file cannot re-run a
 * gradient check, and says so.
 *
 * Progress across lessons is kept in this browser (`exerciseProgress`), exportable as a file.
 */
import { el } from "./dom.js";

const MARK = { pass: "✓", fail: "✗", needs_service: "…", unknown: "?" };
const WORD = { pass: "passes", fail: "fails", needs_service: "needs the service", unknown: "cannot tell" };
const PROGRESS = "gradtrace.exercises";

/** The checklist of `report` as elements (pure enough for a test: no viewer needed). */
export function goalItems(report, { onLine, onNode, offline = false } = {}) {
  return report.results.map((r) => {
    const li = el("li", { class: `gt-goal gt-goal-${r.status}`, "data-status": r.status },
      el("span", { class: "gt-goal-mark", "aria-hidden": "true" }, MARK[r.status] || "?"),
      el("span", { class: "gt-goal-text" }, `${r.text}: ${WORD[r.status] || r.status}`));
    const why = el("div", { class: "gt-goal-why" }, r.why);
    if (offline && r.goal && r.goal.kind === "gradcheck") why.append(" (as checked when this run was recorded: checking it again needs the gradtrace service)");
    li.append(why);
    if (r.status !== "pass" && r.line != null && onLine) {
      li.append(el("button", { type: "button", class: "gt-goal-line", onclick: () => onLine(r.line) }, `line ${r.line}`));
    }
    if (r.status !== "pass" && r.node && onNode) {
      li.append(el("button", { type: "button", class: "gt-goal-node", onclick: () => onNode(r.node) }, "show the node"));
    }
    return li;
  });
}

/** Progress across lessons in this browser: {stem: {done: bool, at: ISO time}}. */
export function exerciseProgress() {
  try { return JSON.parse(localStorage.getItem(PROGRESS) || "{}") || {}; } catch { return {}; }
}

export function saveProgress(progress) {
  try { localStorage.setItem(PROGRESS, JSON.stringify(progress)); } catch { /* storage disabled */ }
}

/** Progress read back from an exported file's text; throws on anything else. */
export function parseProgress(text) {
  const data = JSON.parse(text);
  const entries = data && data.kind === "gradtrace-exercises" && data.progress && typeof data.progress === "object" ? data.progress : null;
  if (!entries) throw new Error("not a gradtrace progress file");
  const out = {};
  for (const [stem, v] of Object.entries(entries)) {
    if (/^\d{2}_[a-z0-9_]+$/.test(stem) && v && typeof v === "object") out[stem] = { done: v.done === true, at: typeof v.at === "string" ? v.at : null };
  }
  return out;
}

export function progressFile(progress) {
  return JSON.stringify({ kind: "gradtrace-exercises", version: 1, progress }, null, 2);
}

/** The goals as a viewer panel (NOTE [one panel shape] in ui/registry.js): renders the document's goals into [data-gt=goals]. */
export const goalsPanel = {
  id: "goals",
  mount(ctx) {
    const box = ctx.part("goals");
    const list = ctx.part("goals-list");
    const status = ctx.part("goals-status");
    if (!box || !list) return null;
    const render = (doc) => {
      const report = doc.goals;
      box.hidden = !report;
      if (!report) { list.replaceChildren(); return; }
      const offline = !ctx.service.live;
      list.replaceChildren(...goalItems(report, { onLine: (line) => ctx.onLine(line), onNode: (id) => ctx.showNode(id), offline }));
      const passed = report.results.filter((r) => r.status === "pass").length;
      const text = report.done ? `Exercise done: all ${report.results.length} goals pass.`
        : `${passed} of ${report.results.length} goals pass${doc.status !== "ok" ? `, and the run ended with ${doc.status}` : ""}.`;
      if (status) status.textContent = text;
      box.classList.toggle("gt-goals-done", !!report.done);
      if (report.done && report.exercise) {
        const progress = exerciseProgress();
        progress[report.exercise] = { done: true, at: new Date().toISOString() };
        saveProgress(progress);
      }
      if (ctx.onGoals) ctx.onGoals(report);
    };
    return { update(model, st, changed) { if (changed.includes("document")) render(model.doc); } };
  },
};
