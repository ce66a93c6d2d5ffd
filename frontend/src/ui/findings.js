/**
 * What the analysis found in a run (the document's `analysis`, computed once on the server by
 * gradtrace/analysis): the first NaN or inf, and the hints. This module only reads it (one rule,
 * one side): the marks on the graph and in the code, the words under the status badge, and the
 * panel with each finding's evidence, fix and "show on graph".
 */

const SEVERITY = { error: "✖", warning: "⚠", info: "ℹ" };

/** The run's findings, empty when the document has none. */
export function findingsOf(doc) {
  const a = (doc && doc.analysis) || {};
  return { badge: a.badge || null, nonfinite: a.nonfinite || [], hints: a.hints || [], starved: a.starved || [] };
}

/** The status badge's text: "ok · x.grad has NaN". */
export function statusWithFindings(label, doc) {
  const { badge } = findingsOf(doc);
  return badge ? `${label} · ${badge}` : label;
}

/**
 * Graph marks for the findings, added to analysis/errors.js's marks (the viewer draws both): the node
 * that produced the first NaN (not the ones that only passed it on), and each hint's first node.
 * Also the code lines the hints concern (the gutter's ⚑).
 */
export function addFindingMarks(errors, index) {
  const { nonfinite, hints } = findingsOf(index.doc);
  const seen = new Set(errors.nodes.map((m) => m.ref));
  const add = (id, text, finding) => {
    const ref = index.idx.get(id);
    if (ref === undefined || seen.has(ref)) return;
    seen.add(ref);
    errors.nodes.push({ ref, text, finding });  // `finding`: the inspector's row label
  };
  for (const f of nonfinite) {
    const what = f.kind === "nan" ? "NaN" : "inf";
    add(f.node, f.phase === "backward" ? `✱ first ${what} made here` : `✱ first ${what} seen`, what);
  }
  for (const h of hints) if (h.nodes.length) add(h.nodes[0], `⚑ ${h.title}`, "hint");
  errors.findingLines = [...new Set([...nonfinite, ...hints].map((f) => f.line).filter((l) => l != null))];
  errors.nonfiniteRefs = new Set();
  for (const f of nonfinite) for (const id of [f.node, ...f.passed_on]) if (index.idx.has(id)) errors.nonfiniteRefs.add(index.idx.get(id));
  return errors;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

function linkButton(text, onClick) {
  const b = el("button", "gt-link", text);
  b.type = "button";
  b.addEventListener("click", onClick);
  return b;
}

/**
 * The findings panel under the results: one entry per first non-finite value and per hint,
 * each with its line (a link), "show on graph", its evidence and its fix as code.
 * @param {HTMLElement|null} box
 * @param {object} doc
 * @param {{onLine: (line:number)=>void, onNode: (id:string)=>void}} cb
 */
export function renderFindings(box, doc, cb) {
  if (!box) return;
  box.replaceChildren();
  const { nonfinite, hints, starved } = findingsOf(doc);
  box.hidden = !nonfinite.length && !hints.length && !starved.length;
  if (box.hidden) return;
  if (hints.length || nonfinite.length) box.append(el("h2", null, hints.length ? `Hints (${hints.length + nonfinite.length})` : "Non-finite values"));
  for (const f of nonfinite) {
    // one the program's GradScaler already skipped a step for is no fault of its own (NOTE [a
    // NaN GradScaler skips] in analysis/nonfinite/scaler.py): a warning, and what it did
    const item = entry(box, f.handled ? "warning" : "error", f.sentence, f.line, f.node, cb);
    item.classList.add("gt-finding-nonfinite");
    if (f.handled) item.append(el("p", "gt-finding-handled", f.handled));
    if (f.passed_on.length) item.append(el("p", "gt-muted", `${f.passed_on.length} node${f.passed_on.length > 1 ? "s" : ""} after it only passed it on.`));
    // the arithmetic that made it, where a pattern names it and the sentence does not already
    if (f.cause && f.trap && !f.sentence.includes(f.cause)) item.append(el("p", "gt-finding-cause", f.cause));
    if (f.trap) item.append(el("p", null, f.trap));
    if (f.fix) item.append(el("pre", "gt-finding-fix", f.fix));
  }
  for (const h of hints) {
    const item = entry(box, h.severity, h.title, h.line, h.nodes[0], cb);
    item.dataset.code = h.code;
    item.append(el("p", null, h.message));
    if (h.evidence.length) {
      const dl = el("dl", "gt-finding-evidence");
      for (const e of h.evidence) dl.append(el("dt", null, e.label), el("dd", null, e.value));
      item.append(dl);
    }
    item.append(el("pre", "gt-finding-fix", h.fix));
    if (h.lesson) item.append(el("p", "gt-muted", `Lesson: ${h.lesson.replace(/^\d+_/, "").replaceAll("_", " ")}`));
  }
  if (starved.length) renderStarved(box, starved, cb);
}

const STARVED = { unused: "unused", cut: "cut off", frozen: "frozen" };

/** The leaves and parameters that end with no gradient, each with what starved it (analysis/starved.py). */
function renderStarved(box, starved, cb) {
  const section = el("section", "gt-starved");
  section.dataset.gt = "starved";
  section.append(el("h2", null, `No gradient (${starved.length})`));
  const list = el("ul", "gt-starved-list");
  for (const s of starved) {
    const li = el("li", `gt-starved-${s.reason}`);
    li.append(el("code", null, s.name), " ", el("span", "gt-starved-reason", STARVED[s.reason] || s.reason), ": ", s.detail);
    if (s.line != null) li.append(" · ", linkButton(`line ${s.line}`, () => cb.onLine(s.line)));
    if (s.node != null) li.append(" · ", linkButton("show on graph", () => cb.onNode(s.node)));
    list.append(li);
  }
  section.append(list);
  box.append(section);
}

function entry(box, severity, title, line, node, cb) {
  const item = el("details", `gt-finding gt-finding-${severity}`);
  const head = el("summary");
  head.append(el("span", "gt-finding-icon", SEVERITY[severity] || "•"), " ", el("span", "gt-finding-title", title));
  item.append(head);
  const links = el("p", "gt-finding-links");
  if (line != null) links.append(linkButton(`line ${line}`, () => cb.onLine(line)));
  if (node != null) links.append(" · ", linkButton("show on graph", () => cb.onNode(node)));
  item.append(links);
  box.append(item);
  return item;
}

/**
 * A mark on the transport at the step of each first non-finite value's producer (its backward
 * event), under the segments; clicking it goes to that step.
 * @param {HTMLElement|null} timelineRoot  the viewer's data-gt="timeline" element
 * @param {{events: object[], N: number}} timeline  graph/timeline.js's Timeline
 */
export function markTransport(timelineRoot, timeline, doc, go) {
  if (!timelineRoot) return;
  const bar = timelineRoot.querySelector('[data-gt="tl-segments"]');
  if (!bar) return;
  let host = timelineRoot.querySelector(".gt-nan-marks");
  if (!host) {
    host = el("div", "gt-nan-marks");
    bar.after(host);
  }
  host.replaceChildren();
  for (const f of findingsOf(doc).nonfinite) {
    if (f.event == null) continue;
    const k = timeline.events.indexOf(doc.events[f.event]) + 1;
    if (k < 1) continue;
    const b = el("button", "gt-nan-mark", `✱ first ${f.kind === "nan" ? "NaN" : "inf"}`);
    b.type = "button";
    b.style.left = `${((k - 1) / Math.max(timeline.N, 1)) * 100}%`;
    b.title = `${f.sentence} (step ${k})`;
    b.setAttribute("aria-label", `Go to step ${k}: ${f.sentence}`);
    b.addEventListener("click", () => go(k));
    host.append(b);
  }
  host.hidden = !host.children.length;
}

/**
 * The findings as a viewer panel (NOTE [one panel shape] in ui/registry.js): the list under
 * the results, and the marks on the transport (after the transport panel in the registry,
 * which draws the segments they sit under).
 */
export const findingsPanel = {
  id: "findings",
  mount(ctx) {
    return {
      update(model, st, changed) {
        if (!changed.includes("document")) return;
        renderFindings(ctx.part("findings"), model.doc, { onLine: (line) => ctx.onLine(line), onNode: (id) => ctx.showNode(id) });
        markTransport(ctx.part("timeline"), model.timeline, model.doc, (k) => ctx.player.go(k, { fromUser: true }));
      },
    };
  },
};
