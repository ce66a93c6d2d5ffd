/**
 * "Explain this node": the selected backward node's local rule for each input, and that rule
 * worked out with the recorded numbers at one element (`grad_self = grad_out · other` →
 * `0.3 · 2 = 0.6`). The rules and the arithmetic live in the service
 * (backend/gradtrace/analysis/explain/node.py, GET /api/runs/{id}/explain); this panel only reads the
 * answer, so there is one copy of the rules. A tensor gradient gets an element picker.
 *
 * Without the service, the request is another's: a saved file answers from the explanations it
 * carries (`fromCarried`), the notebook widget asks its kernel (src/widget/index.js).
 *
 * The pure parts (the request's URL, the lines shown) are exported for node:test; the panel is
 * built with textContent only.
 */
import { backwardLines, isCustomFunction } from "../graph/custom.js";
import { el, withCode } from "./dom.js";

/** The explanation as lines: per input its rule, the instance (or why there is none), and
 * whether the rule's number agrees with what backward recorded. */
/** The saved arguments a rule reads, as the panel writes them: `exponent = 2 · dim = -1`. */
export function argsText(answer) {
  const args = answer && answer.args;
  if (!args || !Object.keys(args).length) return null;
  return Object.entries(args).map(([k, v]) => `${k} = ${Array.isArray(v) ? `(${v.join(", ")})` : v}`).join(" · ");
}

/**
 * NOTE [why numbers are missing]: the service says why a known rule has no numbers ("this node
 * did not run backward", "the received gradient's values were not kept"): that note is the
 * first line, before the bare rules. A custom autograd.Function's node (graph/custom.js) has no
 * rule in any catalogue: its rule is the snippet's own `backward`, and the panel points there.
 * `own`: {lines} of that `backward` in the snippet (graph/custom.js backwardLines), or null.
 */
export function explainLines(answer, own = null) {
  if (own) {
    const span = own.lines.length ? `lines ${own.lines[0]}–${own.lines[own.lines.length - 1]}` : null;
    return [{ rule: null, instance: null, line: own.lines.length ? own.lines[0] : null,
      note: span ? `your code: this node's backward is the \`backward\` of your autograd.Function, ${span} of the snippet (marked in the code while it runs)`
        : "your code: this node's backward is the `backward` of your autograd.Function (its class is not in the snippet)" }];
  }
  if (!answer.known) return [{ rule: null, instance: null, note: answer.note || `no rule for ${answer.op}` }];
  const head = answer.note ? [{ rule: null, instance: null, note: answer.note, why: true }] : [];
  return [...head, ...answer.inputs.map((inp) => {
    const at = inp.index && inp.index.length ? `[${inp.index.join(", ")}]` : "";
    const agrees = inp.recorded == null || inp.value == null ? null
      : typeof inp.value === "string" || typeof inp.recorded === "string" ? inp.value === inp.recorded
        : Math.abs(inp.value - inp.recorded) <= 1e-5 * Math.max(1, Math.abs(inp.recorded));
    return {
      rule: inp.rule,
      instance: inp.instance != null ? `${at ? `at ${at}: ` : ""}${inp.instance}` : null,
      note: inp.note || (inp.instance == null && !answer.note ? "no gradient passed to this input" : null),
      recorded: inp.recorded == null ? null : `recorded grad_inputs${at}: ${+Number(inp.recorded).toPrecision(6)}${agrees === false ? " (differs)" : ""}`,
      // the rule's terms cancel to about 0: both numbers are float32 rounding noise (NOTE [terms
      // that cancel] in analysis/explain/node.py)
      cancels: inp.cancels || null,
      shape: inp.shape || null, index: inp.index || null, input: inp.input_nr,
    };
  })];
}

/** Every element's coordinates of a shape, row-major (the picker's options; at most `cap`). */
export function elements(shape, cap = 1000) {
  const out = [];
  const n = shape.reduce((a, b) => a * b, 1);
  for (let k = 0; k < Math.min(n, cap); k++) {
    const c = []; let r = k;
    for (let d = shape.length - 1; d >= 0; d--) { c.unshift(r % shape[d]); r = Math.floor(r / shape[d]); }
    out.push(c);
  }
  return out;
}

/**
 * A request that answers from the explanations a saved file carries (written by the analysis
 * package when the file was saved: NOTE [explanations carried offline] in
 * backend/gradtrace/analysis/explain/offline.py), in the service's answer's shape. An element
 * or a node the file has no room for says so.
 */
export function fromCarried(bundle) {
  return async (doc, node, index) => {
    const slim = bundle.nodes[node.id];
    if (!slim) {
      const n = Object.keys(bundle.nodes).length;
      throw new Error(bundle.skipped_nodes
        ? `this file carries the explanations of its first ${n} nodes only (its size budget); open the run on a gradtrace service to explain this one`
        : `this file carries no explanation of ${node.id}`);
    }
    const texts = bundle.rules[slim.op] || null;
    const key = index ? index.join(",") : null;
    const inputs = slim.inputs.map((inp) => {
      const { elements: carried, ...first } = inp;
      let at = first;
      if (key !== null && inp.shape && index.length === inp.shape.length && key !== (inp.index || []).join(",")) {
        const hit = (carried || []).find((e) => e.index.join(",") === key);
        at = hit ? { ...first, ...hit }
          : { input_nr: inp.input_nr, shape: inp.shape, index, note: `this file carries this gradient's first ${(carried || [first]).length} element(s) only; the service works out any` };
      }
      return { ...at, rule: texts ? texts[inp.input_nr] : null };
    });
    return { node: node.id, op: slim.op, known: !!texts, pass: slim.pass, note: slim.note, args: slim.args, inputs };
  };
}

export class ExplainPanel {
  /** @param {{request: (doc: object, node: object, index: number[]|null, signal: AbortSignal) => Promise<object>, onLine?: Function}} cb */
  constructor(cb) {
    this.request = cb.request;
    this.onLine = cb.onLine || null;
    this.controller = null;
    this.cache = new Map(); // the inspector redraws on every playback step: ask once per element
  }

  /** The inspector's section for a backward node (null for tensors or a run not on the service). */
  section(doc, node) {
    if (!doc || !doc.id || !node || node.kind !== "function") return null;
    const root = el("section", { class: "gt-explain", "data-gt": "explain" }, el("h4", {}, "Explain this node"));
    const body = el("div", { class: "gt-explain-body" }, "Working out the rule…");
    root.append(body);
    this.last = { doc, node, body };
    this.load(doc, node, null, body);
    return root;
  }

  /** Explain the shown node at `index` (an element picked in a gradient's heatmap: ui/tensors.js). */
  pickElement(index) {
    if (this.last && this.last.body.isConnected) this.load(this.last.doc, this.last.node, index, this.last.body);
  }

  async load(doc, node, index, body) {
    if (this.controller) this.controller.abort();
    const controller = new AbortController();
    this.controller = controller;
    const key = `${doc.id} ${node.id} ${index ? index.join(",") : ""}`;
    let answer = this.cache.get(key);
    try {
      if (!answer) {
        answer = await this.request(doc, node, index, controller.signal);
        if (this.cache.size > 200) this.cache.clear();
        this.cache.set(key, answer);
      }
    } catch (err) {
      if (controller.signal.aborted) return;
      body.replaceChildren(el("p", { class: "gt-explain-note" }, `No explanation: ${err.message}`));
      return;
    }
    if (controller.signal.aborted) return;
    const args = argsText(answer);
    const own = isCustomFunction(node) && !answer.known ? { lines: backwardLines(doc.code, node.name) } : null;
    body.replaceChildren(...(args ? [el("div", { class: "gt-explain-args", "data-gt": "explain-args" }, `with ${args}`)] : []),
      ...explainLines(answer, own).map((line) => this.row(doc, node, line, body)));
  }

  row(doc, node, line, body) {
    const box = el("div", { class: "gt-explain-input" });
    if (line.rule) box.append(el("code", { class: "gt-explain-rule" }, line.rule));
    if (line.instance) box.append(el("div", { class: "gt-explain-instance", "data-gt": "explain-instance" }, `→ ${line.instance}`));
    if (line.recorded) box.append(el("div", { class: "gt-explain-recorded" }, line.recorded));
    if (line.cancels) box.append(el("div", { class: "gt-explain-note", "data-gt": "explain-cancels" }, line.cancels));
    if (line.note) box.append(el("div", { class: "gt-explain-note" }, ...withCode(line.note)));
    if (line.line != null && this.onLine) {
      box.append(el("button", { type: "button", class: "gt-link", onclick: () => this.onLine(line.line) }, `go to line ${line.line}`));
    }
    if (line.shape && line.shape.length && line.shape.reduce((a, b) => a * b, 1) > 1) {
      const pick = el("select", { "aria-label": `element of input ${line.input}'s gradient`, "data-gt": "explain-element" });
      for (const c of elements(line.shape)) {
        const o = el("option", { value: c.join(",") }, `[${c.join(", ")}]`);
        if (line.index && c.join(",") === line.index.join(",")) o.selected = true;
        pick.append(o);
      }
      pick.addEventListener("change", () => this.load(doc, node, pick.value.split(",").map(Number), body));
      box.append(el("label", { class: "gt-explain-pick" }, "element ", pick));
    }
    return box;
  }
}

/**
 * "Explain this node" as a viewer panel (NOTE [one panel shape] in ui/registry.js): a section
 * of the inspector, where something answers (the context's service: this service, a widget's
 * kernel, a saved file's carried explanations).
 */
export const explainPanel = {
  id: "explain",
  mount(ctx) {
    if (!ctx.service.explain) return null;
    const panel = new ExplainPanel({ request: ctx.service.explain, onLine: (line) => ctx.onLine(line) });
    panel.inspect = (model, node) => panel.section(model.doc, node);
    return panel;
  },
};
