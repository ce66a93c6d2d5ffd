/**
 * "Check gradient": a numerical check of a leaf, a parameter or a custom Function node of the
 * shown run (POST /api/runs/{id}/gradcheck, answered by backend/gradtrace/gradcheck). The panel
 * shows the verdict chip, the reasons, a grid of per-element errors with the worst element
 * preselected, and hands the suspect node to the viewer, which outlines it on the graph.
 *
 * The pure parts (which nodes can be checked, the grid's rows, custom Functions) are exported
 * for node:test; the panel is built with textContent only (the result quotes user code).
 */

import { isCustomFunction } from "../graph/custom.js";
import { el } from "./dom.js";

export { isCustomFunction };

/** Can a click on this node ask for a check? A leaf (or its AccumulateGrad) or a custom Function. */
export function isCheckable(node, code) {
  if (!node) return false;
  if (node.kind === "tensor") return node.role === "leaf";
  return node.name === "AccumulateGrad" || isCustomFunction(node, code);
}

/**
 * The backward passes the check can be made on, for the pass chooser: `{index, label}` with the
 * line and the iteration (which call of that line), as the result's own words say them.
 */
export function passChoices(doc) {
  const seen = new Map();
  return (doc.passes || []).map((p) => {
    const it = (seen.get(p.line) || 0) + 1;
    seen.set(p.line, it);
    const where = p.line != null ? ` · line ${p.line} · iteration ${it}` : "";
    return { index: p.index, label: `backward ${p.index + 1}${where}` };
  });
}

/** "checked backward 4 of 20 (line 7, iteration 4)": which pass the result checked, counted from 1 as the timeline counts them. */
export function passLine(result) {
  const of = result.pass_count != null ? ` of ${result.pass_count}` : "";
  const where = [result.pass_line != null ? `line ${result.pass_line}` : null, result.iteration != null ? `iteration ${result.iteration}` : null].filter(Boolean);
  return `checked backward ${(result.pass_index ?? 0) + 1}${of}${where.length ? ` (${where.join(", ")})` : ""}`;
}

/** A module's parameter, as capture names it (`model.0.weight`): "Check every parameter" too. */
export function isParameter(node) {
  return !!node && node.kind === "tensor" && node.role === "leaf" && String(node.name || "").includes(".");
}

const fmt = (x, digits = 6) => (typeof x === "string" ? x : Math.abs(x) >= 1e4 || (x !== 0 && Math.abs(x) < 1e-3) ? x.toExponential(Math.min(3, digits - 1)) : String(+x.toPrecision(digits)));
const short = (x) => fmt(x, 4); // the grid's cells; the detail line under it has six digits

/** The grid: one row per checked element, the worst flagged; cells already formatted, and the
 * sentence with every number of the row (shown under the grid for the selected row). */
export function gridRows(result) {
  return result.elements.map((e, i) => {
    const name = `${result.tensors[e.tensor].name}[${e.index.join(", ")}]`;
    const state = e.kink ? "kink" : e.nonfinite ? "nonfinite" : e.ok ? "ok" : "fail";
    return {
      worst: i === result.worst, state,
      cells: [name, short(e.analytic), short(e.numeric), short(e.rel_error)],
      detail: `${name}: analytic ${fmt(e.analytic)} · numeric ${fmt(e.numeric)} (left ${fmt(e.left)}, right ${fmt(e.right)}) · ` +
        `abs error ${fmt(e.abs_error)} · rel error ${fmt(e.rel_error)} · ${state === "kink" ? "on a kink" : state === "nonfinite" ? "non-finite gradient (not judged)" : state}`,
    };
  });
}

/** One sentence for the chip's title: "fail · 2 of 2 elements, 2 failed (float64)". */
export function verdictLine(result) {
  const kinks = result.kinks ? `, ${result.kinks} on a kink` : "";
  return `${result.verdict} · ${result.checked} of ${result.total} element${result.total === 1 ? "" : "s"}, ${result.failed} failed${kinks} (${result.dtype})`;
}

const HEAD = ["element", "analytic", "numeric", "rel error"];

export class GradcheckPanel {
  /**
   * @param {HTMLElement} host  where the panel goes (the inspector)
   * @param {{onSuspect: (nodeId: string|null) => void, currentPass: () => number,
   *          request: (doc: object, node: object, signal: AbortSignal) => Promise<object>}} cb
   *   `request` asks for the check: the service (api.js checkOnService), or the notebook
   *   widget's Python side (backend/gradtrace/notebook/widget.py).
   */
  constructor(host, cb) {
    this.cb = cb;
    this.request = cb.request;
    this.root = el("section", { class: "gt-check", "data-gt": "gradcheck", "aria-label": "Gradient check", hidden: "" });
    host.append(this.root);
    this.controller = null;
    this.timer = 0;
  }

  /**
   * The button the inspector shows for a checkable node (null for any other node). A leaf of a
   * run with several backward passes gets a chooser: which pass to check (the pass on screen
   * first). A custom Function's call belongs to the pass after it (the service picks it).
   */
  button(doc, node) {
    if (!doc || !doc.code || !isCheckable(node, doc.code)) return null;
    const fn = isCustomFunction(node, doc.code);
    const what = fn ? `${node.name.replace(/Backward$/, "")}'s inputs` : node.kind === "tensor" ? node.name : "this leaf";
    const choices = fn ? [] : passChoices(doc);
    let chooser = null;
    if (choices.length > 1) {
      const shown = this.cb.currentPass ? this.cb.currentPass() : -1;
      const current = choices.some((c) => c.index === shown) ? shown : choices[0].index;
      chooser = el("select", { class: "gt-check-pass", "data-gt": "check-pass", "aria-label": "Backward pass to check" },
        ...choices.map((c) => el("option", c.index === current ? { value: String(c.index), selected: "" } : { value: String(c.index) }, c.label)));
    }
    const chosen = (n) => (chooser ? { ...n, passIndex: Number(chooser.value) } : n);
    const one = el("button", { type: "button", class: "gt-check-button", "data-gt": "check", onclick: () => this.check(doc, chosen(node)) },
      `Check gradient of ${what} numerically`);
    const every = isParameter(node) ? el("button", { type: "button", class: "gt-check-button", "data-gt": "check-every",
      onclick: () => this.check(doc, chosen({ id: null, name: "every parameter", every: true })) }, "Check every parameter") : null;
    if (!every && !chooser) return one;
    const row = [one];
    if (every) row.push(" ", every);
    if (chooser) row.push(" ", el("label", { class: "gt-check-pass-label" }, "in ", chooser));
    return el("div", { class: "gt-check-actions" }, ...row);
  }

  async check(doc, node) {
    if (this.controller) this.controller.abort();
    const controller = (this.controller = new AbortController());
    this.cb.onSuspect(null);
    this.root.hidden = false;
    const progress = el("p", { class: "gt-hint", role: "status" });
    this.root.replaceChildren(el("h3", {}, `Checking ${node.name}…`), progress);
    const t0 = performance.now();
    clearInterval(this.timer);
    const tick = () => { progress.textContent = `Re-running the snippet with one element nudged at a time (about 2 × elements + 2 runs, at most 130)… ${((performance.now() - t0) / 1000).toFixed(1)} s`; };
    tick();
    this.timer = setInterval(tick, 100);
    let result;
    try {
      result = await this.request(doc, node, controller.signal);
    } catch (err) {
      if (err.name === "AbortError") return;
      this.root.replaceChildren(el("h3", {}, "Gradient check"), el("p", { class: "gt-check-error", role: "alert" }, err.message));
      return;
    } finally {
      clearInterval(this.timer);
      if (this.controller === controller) this.controller = null;
    }
    this.show(result);
  }

  show(result) {
    this.root.hidden = false;
    const chip = el("span", { class: `gt-verdict gt-verdict-${result.verdict}`, "data-gt": "verdict", title: verdictLine(result) }, result.verdict);
    const parts = [el("h3", {}, "Gradient check ", chip), el("p", { class: "gt-hint" }, verdictLine(result) +
      ` · ${result.executions} runs in ${result.seconds.toFixed(2)} s`), el("p", { class: "gt-hint", "data-gt": "check-pass-line" }, passLine(result))];
    if (result.suspect) {
      parts.push(el("p", { class: "gt-check-suspect" }, el("b", {}, `Suspect: ${result.suspect.name}`),
        result.suspect.custom ? " (a Function your code defines)" : "", ` — ${result.suspect.message}`));
    }
    if (result.reasons.length) {
      const ul = el("ul", { class: "gt-check-reasons" });
      // the message says it in words ("upcast to float64 …"); the code is for scripts, not read twice
      for (const r of result.reasons) ul.append(el("li", { "data-code": r.code }, r.message));
      parts.push(ul);
    }
    if (result.elements.length) {
      const table = el("table", { class: "gt-check-grid", "data-gt": "check-grid" },
        el("caption", {}, "Per element: autograd (analytic) against the finite difference (numeric)"),
        el("tr", {}, ...HEAD.map((h) => el("th", { scope: "col" }, h))));
      const detail = el("p", { class: "gt-check-detail", "data-gt": "check-detail", "aria-live": "polite" });
      let worstRow = null;
      for (const row of gridRows(result)) {
        const tr = el("tr", { class: `gt-${row.state}${row.worst ? " gt-worst" : ""}`, tabindex: "0", title: row.detail },
          ...row.cells.map((c) => el("td", {}, c)));
        const pick = () => { this._select(tr); detail.textContent = row.detail; };
        tr.addEventListener("click", pick);
        tr.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); pick(); } });
        if (row.worst) { worstRow = tr; tr.setAttribute("aria-selected", "true"); detail.textContent = row.detail; }
        table.append(tr);
      }
      parts.push(el("div", { class: "gt-check-scroll" }, table), detail);
      this.root.replaceChildren(...parts);
      this.root.scrollIntoView({ block: "start" });
      if (worstRow) worstRow.scrollIntoView({ block: "nearest" });
    } else {
      this.root.replaceChildren(...parts);
    }
    this.cb.onSuspect(result.suspect ? result.suspect.node_id : null);
  }

  _select(tr) {
    for (const r of this.root.querySelectorAll("tr[aria-selected]")) r.removeAttribute("aria-selected");
    tr.setAttribute("aria-selected", "true");
  }

  hide() {
    if (this.controller) this.controller.abort();
    this.root.hidden = true;
    this.cb.onSuspect(null);
  }
}

/**
 * The gradient check as a viewer panel (NOTE [one panel shape] in ui/registry.js): in the
 * inspector, offered where something answers a check (the context's service).
 */
export const gradcheckPanel = {
  id: "gradcheck",
  mount(ctx) {
    const host = ctx.part("inspector");
    if (!ctx.service.check || !host) return null;
    let suspect = null;  // the document node the last check blames, outlined on every scene
    const outline = () => {
      if (!ctx.scene) return;
      ctx.scene.suspectV = suspect != null ? ctx.scene.view.byRef[suspect] || [] : [];
      ctx.canvas.drawNow();
    };
    const panel = new GradcheckPanel(host, { request: ctx.service.check,
      onSuspect: (id) => { const ref = id == null || !ctx.model ? -1 : ctx.model.index.nodes.findIndex((n) => n.id === id); suspect = ref >= 0 ? ref : null; outline(); },
      currentPass: () => { const k = ctx.state.get("step"); return ctx.model && k > 0 ? ctx.model.timeline.evPass[k - 1] : -1; } });
    panel.inspect = (model, node) => panel.button(model.doc, node);
    panel.update = (model, st, changed) => {
      if (changed.includes("document")) panel.hide();
      if (changed.includes("view") && suspect != null) outline();
    };
    return panel;
  },
};
