/**
 * Predict-then-reveal, the pure part: which steps ask a question, what each asks, and whether
 * an answer is right, all from the run document's recorded numbers (docs/CONTRACT.md `Event`).
 * ui/predict.js shows the questions; frontend/test/predict.test.js checks them on the lessons.
 *
 * NOTE [what a question asks]
 *   At a backward step the node has just passed gradients on (`grad_inputs`, one per input).
 *   A step whose node passes a gradient to some inputs and none to others asks which input gets
 *   none; otherwise it asks for a value or, every third question, its sign. A tensor gradient
 *   asks for one element: the one of largest magnitude (never a zero when the gradient has
 *   anything else), and the question names it. A forward step asks for the shape its op
 *   produces. A value is right within a tolerance the question states: 0.5 % of its size (and
 *   10⁻¹² at least), tight enough that the value with its sign flipped is never accepted.
 *
 * NOTE [what the teacher chooses]
 *   `predict=all` asks at every backward step, `predict=nodes:n3,n7` at the steps of those
 *   nodes, `predict=line:7` at the steps of line 7; `predict=shapes` adds the forward steps'
 *   shapes (`predict=all+shapes`). The choice travels in the share link's query (app/link.js).
 */

const REL = 0.005;
const ABS = 1e-12;

/** A teacher's choice from a link's `predict` parameter (null when absent or unreadable). */
export function parseSpec(text) {
  if (!text) return null;
  const parts = String(text).split("+");
  const spec = { scope: null, nodes: [], line: null, shapes: false };
  for (const p of parts) {
    if (p === "all") spec.scope = "all";
    else if (p === "shapes") spec.shapes = true;
    else if (p.startsWith("nodes:")) { spec.scope = "nodes"; spec.nodes = p.slice(6).split(",").filter((s) => /^[\w.:-]+$/.test(s)); }
    else if (/^line:\d+$/.test(p)) { spec.scope = "line"; spec.line = Number(p.slice(5)); }
  }
  if (!spec.scope && !spec.shapes) return null;
  return spec;
}

/** The `predict` parameter that says `spec` (parseSpec's inverse). */
export function specParam(spec) {
  if (!spec) return null;
  const head = spec.scope === "nodes" ? `nodes:${spec.nodes.join(",")}` : spec.scope === "line" ? `line:${spec.line}` : spec.scope;
  return [head, spec.shapes ? "shapes" : null].filter(Boolean).join("+");
}

/** A recorded number ("nan", "inf" strings included) as a JS number. */
export function num(x) {
  if (typeof x === "number") return x;
  if (typeof x === "boolean") return x ? 1 : 0;
  if (x === "nan") return NaN;
  if (x === "inf") return Infinity;
  if (x === "-inf") return -Infinity;
  return NaN;
}

function flat(values) {
  if (!Array.isArray(values)) return [values];
  const out = [];
  const walk = (v) => { if (Array.isArray(v)) v.forEach(walk); else out.push(v); };
  walk(values);
  return out;
}

function unravel(k, shape) {
  const c = [];
  let r = k;
  for (let d = shape.length - 1; d >= 0; d--) { c.unshift(r % shape[d]); r = Math.floor(r / shape[d]); }
  return c;
}

/** The tolerance a value question states. */
export function tolerance(v) { return Math.max(REL * Math.abs(v), ABS); }

/** The inputs of `node` as edges: input_nr → the producer's label (`AccumulateGrad (x)`). */
function inputLabels(doc, nodeId) {
  const byId = new Map(doc.graph.nodes.map((n) => [n.id, n]));
  const out = new Map();
  for (const e of doc.graph.edges) {
    if (e.target !== nodeId || e.cut) continue;
    const src = byId.get(e.source);
    let label = src ? src.name || src.id : e.source;
    if (src && src.name === "AccumulateGrad") {
      const leaf = doc.graph.edges.find((x) => x.target === src.id && byId.get(x.source)?.kind === "tensor");
      if (leaf) label = `AccumulateGrad (${byId.get(leaf.source).name || leaf.source})`;
    }
    out.set(e.input_nr, label);
  }
  return out;
}

function inScope(spec, node) {
  if (spec.scope === "all") return true;
  if (spec.scope === "nodes") return spec.nodes.includes(node.id);
  if (spec.scope === "line") return node.line === spec.line;  // the nodes that line made (a backward event's own line is the backward call's)
  return false;
}

/**
 * The questions of a run under a teacher's `spec`, by step (step k shows event k − 1).
 * @returns {Map<number, object>}
 */
export function questionsFor(doc, spec) {
  const out = new Map();
  if (!doc || !spec || !doc.events) return out;
  const byId = new Map(doc.graph.nodes.map((n) => [n.id, n]));
  let ordinal = 0;
  doc.events.forEach((ev, i) => {
    const node = byId.get(ev.node);
    if (!node) return;
    let q = null;
    if (ev.phase === "backward" && spec.scope && inScope(spec, node)) q = backwardQuestion(doc, ev, node, ordinal);
    else if (ev.phase === "forward" && spec.shapes && Array.isArray(node.shape) && node.name !== "AccumulateGrad") q = shapeQuestion(node);
    if (!q) return;
    ordinal++;
    out.set(i + 1, { ...q, step: i + 1, node: node.id, name: node.name, line: node.line ?? ev.line ?? null, pass: ev.pass ?? null });
  });
  return out;
}

function backwardQuestion(doc, ev, node, ordinal) {
  const grads = ev.grad_inputs || [];
  if (!grads.length) return null;
  const labels = inputLabels(doc, node.id);
  const present = grads.map((g) => g != null && g.values != null);
  const none = grads.map((g, k) => g == null && labels.has(k));
  if (grads.length > 1 && none.some(Boolean) && present.some(Boolean)) {
    const choices = grads.map((_, k) => ({ input: k, label: labels.get(k) || `input ${k}` }));
    return { kind: "none", choices, truth: none.flatMap((x, k) => (x ? [k] : [])),
      prompt: `Which input of ${node.name} gets no gradient? Type its number (${choices.map((c) => `${c.input}: ${c.label}`).join(", ")}).` };
  }
  const input = present.indexOf(true);
  if (input < 0) return null;
  const g = grads[input];
  const values = flat(g.values).map(num);
  const shape = g.shape || [];
  let at = 0;
  values.forEach((v, k) => { if (Number.isFinite(v) && (!Number.isFinite(values[at]) || Math.abs(v) > Math.abs(values[at]))) at = k; });
  const truth = values[at];
  if (!Number.isFinite(truth)) return null;
  const index = shape.length ? unravel(at, shape) : [];
  const target = `${labels.get(input) || `input ${input}`}`;
  const where = index.length ? ` at element [${index.join(", ")}]` : "";
  const kind = ordinal % 3 === 2 && truth !== 0 ? "sign" : "value";
  const tol = tolerance(truth);
  const prompt = kind === "sign"
    ? `${node.name} passes a gradient to input ${input} (${target})${where}: is it positive (+), negative (−) or zero (0)?`
    : `What gradient does ${node.name} pass to input ${input} (${target})${where}? Within ±${fmt(tol)}.`;
  return { kind, input, index, truth, tolerance: tol, prompt, label: target };
}

function shapeQuestion(node) {
  return { kind: "shape", truth: node.shape, prompt: `What shape does ${node.name} produce? Type it like [2, 3] ([] for a scalar).` };
}

export function fmt(x) {
  if (!Number.isFinite(x)) return String(x);
  return Math.abs(x) >= 1e-3 && Math.abs(x) < 1e5 ? String(+x.toPrecision(4)) : x.toExponential(2);
}

function parseNumber(text) {
  const t = String(text).trim().replace(/−/g, "-").replace(/,/g, "");
  if (!/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(t)) return null;
  return Number(t);
}

function parseShape(text) {
  const t = String(text).trim().toLowerCase();
  if (t === "[]" || t === "scalar" || t === "()") return [];
  const inner = t.replace(/^[[(]|[\])]$/g, "");
  const parts = inner.split(/[\s,x×]+/).filter(Boolean);
  if (!parts.length || !parts.every((p) => /^\d+$/.test(p))) return null;
  return parts.map(Number);
}

/**
 * Whether `text` answers `q`: {verdict: "right" | "wrong" | "invalid", message}. An answer that
 * does not parse is "invalid": asked again and not counted.
 */
export function checkAnswer(q, text) {
  if (q.kind === "value") {
    const x = parseNumber(text);
    if (x == null || !Number.isFinite(x)) return { verdict: "invalid", message: "That is not a number: type one, like 0.25 or -3e-2." };
    return Math.abs(x - q.truth) <= q.tolerance ? { verdict: "right", message: `Right: ${fmt(q.truth)}.` }
      : { verdict: "wrong", message: `Not quite: ${String(text).trim()} is not within ±${fmt(q.tolerance)} of the recorded value.` };
  }
  if (q.kind === "sign") {
    const t = String(text).trim().toLowerCase().replace(/−/g, "-");
    const sign = ["+", "positive", "pos", "plus"].includes(t) ? 1 : ["-", "negative", "neg", "minus"].includes(t) ? -1 : ["0", "zero"].includes(t) ? 0 : null;
    if (sign == null) return { verdict: "invalid", message: "Type +, − or 0." };
    return sign === Math.sign(q.truth) ? { verdict: "right", message: `Right: it is ${q.truth > 0 ? "positive" : q.truth < 0 ? "negative" : "zero"} (${fmt(q.truth)}).` }
      : { verdict: "wrong", message: "Not quite: the recorded gradient has the other sign." };
  }
  if (q.kind === "none") {
    const x = parseNumber(text);
    if (x == null || !Number.isInteger(x) || !q.choices.some((c) => c.input === x)) {
      return { verdict: "invalid", message: `Type one of the input numbers: ${q.choices.map((c) => c.input).join(", ")}.` };
    }
    return q.truth.includes(x) ? { verdict: "right", message: `Right: input ${x} (${q.choices[x].label}) gets no gradient.` }
      : { verdict: "wrong", message: `Not quite: input ${x} does get a gradient.` };
  }
  const shape = parseShape(text);
  if (shape == null) return { verdict: "invalid", message: "Type a shape like [2, 3], or [] for a scalar." };
  const same = shape.length === q.truth.length && shape.every((d, k) => d === q.truth[k]);
  return same ? { verdict: "right", message: `Right: [${q.truth.join(", ")}].` }
    : { verdict: "wrong", message: `Not quite: the op does not produce [${shape.join(", ")}].` };
}

/** The score of a set of answers: {asked, right (first try), revealed}. */
export function score(questions, answers) {
  let right = 0, revealed = 0, answered = 0;
  for (const step of questions.keys()) {
    const a = answers[step];
    if (!a || !a.done) continue;
    answered++;
    if (a.right && a.tries === 1) right++;
    if (a.revealed) revealed++;
  }
  return { asked: questions.size, answered, right, revealed };
}
