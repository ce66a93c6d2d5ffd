/**
 * Every step in words: one plain sentence per timeline step, the way Python Tutor narrates a
 * program. Pure functions of the indexed document and its timeline (no DOM), so they are
 * unit-tested with node:test (frontend/test/words.test.js) and the page only prints them.
 *
 * The timeline is read through its plain fields (`events`, `evNode`, `evPass`, `N`), so this
 * module works with graph/timeline.js's index of events wherever that file lives.
 *
 * NOTE [naming things in a sentence]
 *   Autograd's nodes have no variable names; tensors do, when gradtrace found one. A sentence
 *   names a leaf by its name ("x"), an AccumulateGrad by the leaf it writes ("x.grad"), and a
 *   function by its op ("MulBackward0"), adding its line when several nodes share that op.
 */
import { parseInplaceOp, parseSavedName, parseShapes, parseVersions } from "./errors.js";
import { fmtTensorShort } from "./format.js";

const MAX_CODE = 60;

/** Everything the sentences need, computed once per document. */
export function wordsContext(index, timeline, code = null) {
  const doc = index.doc;
  const lines = String(code ?? doc.code ?? "").split("\n");
  const opCount = new Map(), atLine = new Map(), ordinal = new Int32Array(index.nodes.length);
  index.nodes.forEach((n, i) => {
    if (n.kind !== "function") return;
    opCount.set(n.name, (opCount.get(n.name) || 0) + 1);
    const key = `${n.name}@${n.line}`;
    ordinal[i] = (atLine.get(key) || 0) + 1;
    atLine.set(key, ordinal[i]);
  });
  // A function's output tensor, when the document names it (a root `y`, a retained `h`).
  const outName = new Map();
  index.edges.forEach((e) => {
    const t = index.nodes[e.t];
    if (index.nodes[e.s].kind === "function" && t.kind === "tensor" && t.name) outName.set(e.s, t.name);
  });
  const passes = new Map((doc.passes || []).map((p) => [p.index, p]));
  const calls = new Map((doc.modules || []).map((m) => [m.path, m.calls]));
  const ctx = { index, timeline, doc, lines, opCount, atLine, ordinal, outName, passes, calls };
  ctx.resets = inferResets(ctx);
  return ctx;
}

/** The text of snippet line `line`, trimmed and shortened, or "". */
export function codeAt(ctx, line) {
  if (line == null) return "";
  const text = stripComment(ctx.lines[line - 1] || "").trim();
  return text.length > MAX_CODE ? `${text.slice(0, MAX_CODE - 1)}…` : text;
}

/** A Python line without its trailing `# comment` (a # inside a string stays). */
export function stripComment(line) {
  let quote = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) { if (c === "\\") i++; else if (c === quote) quote = null; }
    else if (c === "'" || c === '"') quote = c;
    else if (c === "#") return line.slice(0, i).trimEnd();
  }
  return line;
}

/** A short name for document node i. */
export function nameOf(ctx, i) {
  const { index } = ctx;
  const n = index.nodes[i];
  if (!n) return "?";
  if (n.kind === "tensor") return n.name || (n.role === "root" ? "the output" : "a tensor");
  if (index.kind[i] === "acc") {
    const leaf = index.leafOfAcc.get(i);
    return leaf != null ? `${nameOf(ctx, leaf)}.grad` : "a leaf's .grad";
  }
  if (ctx.outName.has(i)) return `${n.name} (${ctx.outName.get(i)})`;
  if ((ctx.opCount.get(n.name) || 0) <= 1 || n.line == null) return n.name || "a function";
  // Several nodes of this op: tell them apart by line, then by which one on that line (a loop).
  return ctx.atLine.get(`${n.name}@${n.line}`) > 1 ? `${n.name} #${ctx.ordinal[i]} (line ${n.line})` : `${n.name} (line ${n.line})`;
}

/** How an input of a function reads: a leaf by its name, a function by its op. */
function inputName(ctx, s) {
  const { index } = ctx;
  if (index.kind[s] === "acc") {
    const leaf = index.leafOfAcc.get(s);
    return leaf != null ? nameOf(ctx, leaf) : "a leaf";
  }
  return nameOf(ctx, s);
}

/** "a", "a and b", "a, b and c"; repeated names once, with "(twice)" etc. */
export function listWords(names) {
  const counts = new Map();
  for (const n of names) counts.set(n, (counts.get(n) || 0) + 1);
  const parts = [...counts].map(([n, c]) => (c === 1 ? n : `${n} (${c === 2 ? "twice" : `${c} times`})`));
  if (parts.length <= 1) return parts.join("");
  return `${parts.slice(0, -1).join(", ")} and ${parts[parts.length - 1]}`;
}

export function fmtGrad(tv) { return tv ? fmtTensorShort(tv, 4) : "nothing"; }

function linePrefix(ctx, line) {
  if (line == null) return "";
  const code = codeAt(ctx, line);
  return code ? `line ${line}, \`${code}\`: ` : `line ${line}: `;
}

function passName(ctx, p) {
  const info = ctx.passes.get(p);
  return `backward ${p}${info && info.create_graph ? " (building a graph)" : ""}`;
}

/**
 * The label of a timeline segment. A backward with create_graph=True is named so, and the
 * nodes it builds (recorded as forward events inside it) belong to that pass, not to "forward".
 */
export function segmentLabel(ctx, seg) {
  if (seg.phase === "backward") return passName(ctx, seg.pass);
  const { timeline: tl, index } = ctx;
  let p = null;
  for (let k = seg.start; k <= seg.end; k++) {
    const c = index.nodes[tl.evNode[k - 1]].created_in_pass;
    if (c == null) return seg.label;
    p = c;
  }
  return p == null ? seg.label : passName(ctx, p);
}

/** The sentence for step k (the first k events have happened). */
export function stepSentence(ctx, k) {
  const { timeline: tl, index, doc } = ctx;
  if (!tl || tl.N === 0) return doc.error ? errorSentence(ctx) : "This run recorded no autograd step.";
  if (k <= 0) return `Before the first step: ${tl.N} steps to go. Press → to step through the run.`;
  const i = Math.min(k, tl.N) - 1;
  const e = tl.events[i];
  const v = tl.evNode[i];
  let text = e.phase === "forward" ? forwardSentence(ctx, e, v) : backwardSentence(ctx, e, v, i);
  if (k >= tl.N && doc.error) text += ` Then the run stopped: ${errorSentence(ctx, { short: true })}`;
  return text;
}

function forwardSentence(ctx, e, v) {
  const { index } = ctx;
  const n = index.nodes[v];
  const line = e.line ?? n.line;
  const during = n.created_in_pass != null ? ` during ${passName(ctx, n.created_in_pass)}` : "";
  if (index.kind[v] === "acc") {
    const leaf = index.leafOfAcc.get(v);
    const who = leaf != null ? nameOf(ctx, leaf) : "a leaf";
    return `${linePrefix(ctx, line)}AccumulateGrad is created for ${who}${during}; backward will add ${who}'s gradient to ${who}.grad.`;
  }
  const ins = index.inEdges[v].map((k) => index.edges[k]).filter((ed) => index.nodes[ed.s].kind === "function" || index.kind[ed.s] === "acc");
  const from = ins.length ? ` from ${listWords(ins.map((ed) => inputName(ctx, ed.s)))}` : "";
  const mod = index.module[v] ? ` in ${index.module[v]}${callWords(ctx, n)}` : "";
  return `${linePrefix(ctx, line)}${nameOf(ctx, v)} is created${from}${mod}${during}.`;
}

/** " (call 38 of 200)" for a node made by a module called several times (Node.module_stack). */
function callWords(ctx, n) {
  const st = n.module_stack;
  if (!Array.isArray(st) || !st.length) return "";
  const last = st[st.length - 1];
  const total = ctx.calls.get(last.path);
  if (last.call == null || !(total > 1)) return "";
  return ` (call ${last.call + 1} of ${total})`;
}

function backwardSentence(ctx, e, v, i) {
  const { index, timeline: tl } = ctx;
  const p = tl.evPass[i];
  const first = i === 0 || tl.evPass[i - 1] !== p || tl.events[i - 1].phase !== "backward";
  const info = ctx.passes.get(p);
  let head = "";
  if (first && !(i > 0 && tl.events[i - 1].phase === "forward" && index.nodes[tl.evNode[i - 1]].created_in_pass === p)) {
    const line = info && info.line != null ? info.line : e.line;
    const code = codeAt(ctx, line);
    head = `${passName(ctx, p)} starts${line != null ? ` at line ${line}${code ? ` (\`${code}\`)` : ""}` : ""}. `;
  }
  if (index.kind[v] === "acc") {
    const leaf = index.leafOfAcc.get(v);
    const who = leaf != null ? nameOf(ctx, leaf) : "a leaf";
    const add = (e.grad_outputs && e.grad_outputs[0]) || null;
    const reset = ctx.resets.get(i);
    if (reset) return `${head}AccumulateGrad sets ${who}.grad to ${fmtGrad(e.grad || add)} (${resetWords(reset)}).`;
    if (!e.grad) return `${head}AccumulateGrad adds ${fmtGrad(add)} to ${who}.grad.`;
    return `${head}AccumulateGrad adds ${fmtGrad(add)} to ${who}.grad, which is now ${fmtGrad(e.grad)}.`;
  }
  const outs = (e.grad_outputs || []).filter(Boolean);
  const recv = outs.length ? `receives ∇ = ${outs.map(fmtGrad).join(" and ")}` : "receives no gradient";
  const passes = [];
  const gi = e.grad_inputs || [];
  index.inEdges[v].forEach((k, pos) => {
    const ed = index.edges[k];
    if (index.nodes[ed.s].kind !== "function") return;
    const g = gi[ed.inputNr ?? pos];
    if (g) passes.push(`${fmtGrad(g)} to ${inputName(ctx, ed.s)}`);
  });
  const hook = e.changed_by_hook ? " (a hook changed it)" : "";
  const pass = passes.length ? ` and passes ${listWords(passes)}` : " and passes nothing on (its inputs need no gradient)";
  return `${head}${nameOf(ctx, v)} ${recv}${hook}${pass}.`;
}

function resetWords(r) {
  const how = r.kind === "zero" ? "zeroed" : r.kind === "none" ? "set to None" : "cleared";
  return `.grad was ${how}${r.line != null ? ` at line ${r.line}` : ""} since the last accumulation`;
}

/**
 * Where each leaf's .grad was cleared between accumulations, keyed by event index of the
 * AccumulateGrad event that starts afresh. Read from Node.grad_resets when the document has
 * it; for older documents, an accumulation whose result equals what it added (after a first
 * one) started from nothing, so .grad had been cleared.
 */
export function inferResets(ctx) {
  const { index, timeline: tl } = ctx;
  const out = new Map();
  if (!tl) return out;
  const seen = new Map();  // leaf → accumulations so far
  tl.events.forEach((e, i) => {
    if (e.phase !== "backward") return;
    const v = tl.evNode[i];
    const leaf = index.leafOfAcc.get(v);
    if (leaf === undefined || !e.grad) return;
    const at = seen.get(leaf) || 0;
    seen.set(leaf, at + 1);
    if (at === 0) return;
    const declared = index.nodes[leaf].grad_resets;
    if (Array.isArray(declared)) {
      const r = declared.find((x) => x.at === at);
      if (r) out.set(i, { kind: r.kind, line: r.line ?? null, at });
      return;
    }
    const add = e.grad_outputs && e.grad_outputs[0];
    if (add && sameTensor(add, e.grad)) out.set(i, { kind: null, line: null, at, inferred: true });
  });
  return out;
}

function sameTensor(a, b) {
  if (!a || !b || String(a.shape) !== String(b.shape)) return false;
  if (a.values != null && b.values != null) return JSON.stringify(a.values) === JSON.stringify(b.values);
  const sa = a.stats || {}, sb = b.stats || {};
  return sa.norm != null && sa.norm === sb.norm && sa.mean === sb.mean && sa.min === sb.min && sa.max === sb.max;
}

/** The leaf's accumulations since .grad was last cleared, as of step k: {count, total, reset}. */
export function accumulationsAt(ctx, leaf, k) {
  const { timeline: tl, index } = ctx;
  let count = 0, total = 0, reset = null;
  for (let i = 0; i < Math.min(k, tl.N); i++) {
    const e = tl.events[i];
    if (e.phase !== "backward" || !e.grad || index.leafOfAcc.get(tl.evNode[i]) !== leaf) continue;
    total++;
    const r = ctx.resets.get(i);
    if (r) { count = 1; reset = r; } else count++;
  }
  return { count, total, reset };
}

/**
 * The run's error in one sentence: where it happened, and for autograd errors why. `short`
 * is for under the timeline (the results panel has the long one with the API's `detail`).
 */
export function errorSentence(ctx, { short = false } = {}) {
  const err = ctx.doc.error;
  if (!err) return "";
  const where = err.line != null ? ` at line ${err.line}` : "";
  const ver = parseVersions(err);
  if (err.inplace_line != null || ver) {
    const opName = err.inplace_op || parseInplaceOp(err.detail);
    const op = opName ? `\`${opName}\`` : "an in-place operation";
    const owner = err.node != null && ctx.index.idx.has(err.node) ? nameOf(ctx, ctx.index.idx.get(err.node)) : "a node";
    const savedName = err.saved_name || parseSavedName(err.detail);
    const saved = savedName ? `'${savedName}'` : "a tensor";
    const versions = ver ? ` It was saved at version ${ver.saved} and is now at version ${ver.current}.` : "";
    const own = `${op}${err.inplace_line != null ? ` at line ${err.inplace_line}` : ""} changed ${saved}, which ${owner} saved for backward`;
    if (short) return `${err.type}${where}: ${own}${ver ? ` (version ${ver.saved} → ${ver.current})` : ""}.`;
    const lead = err.detail ? `${capital(err.detail)}.` : `${own}.`;
    return `${err.type}${where}: ${lead}${versions}`;
  }
  const got = err.shapes || parseShapes(err.message);
  if (err.module || got) {
    const mod = err.module ? `${err.module}${err.module_type ? ` (${err.module_type})` : ""}` : "";
    const op = err.op ? `\`${err.op}\`` : "";
    const shapes = got && got.length ? ` with inputs of shape ${got.map((s) => `[${s.join(", ")}]`).join(" and ")}` : "";
    const inside = [op, mod && `in ${mod}`].filter(Boolean).join(" ");
    return `${err.type}${where}${inside ? `, raised by ${inside}` : ""}${shapes}: ${clip(err.message, short)}`;
  }
  return `${err.type}${where}: ${err.detail ? `${capital(err.detail)}.` : clip(err.message, short)}`;
}

function clip(text, short) {
  const t = String(text || "");
  return short && t.length > 160 ? `${t.slice(0, 159)}… (see the error under the code)` : t;
}

function capital(s) { return s ? s[0].toUpperCase() + s.slice(1) : s; }
