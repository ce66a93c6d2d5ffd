/**
 * Every step in words: one plain sentence per timeline step, the way Python Tutor narrates a
 * program. Pure functions of the indexed document and its timeline (no DOM), so they are
 * unit-tested with node:test (frontend/test/words.test.js) and the page only prints them.
 *
 * The timeline is read through its plain fields (`events`, `evNode`, `evPass`, `N`), so this
 * module works with graph/timeline.js's index of events wherever that file lives.
 *
 * Nodes are named by analysis/names.js (see NOTE [naming repeated ops] there): in a loop by the
 * iteration or call they belong to, which the page's groups (graph/groups.js) found.
 */
import { gradResets } from "./accumulations.js";
import { parseShapes, parseVersions } from "./errors.js";
import { fmtTensorShort, passNo } from "./format.js";
import { editAfterWords } from "./grad-edits.js";
import { capital, functionName, namesContext } from "./names.js";

const MAX_CODE = 60;

/**
 * Everything the sentences need, computed once per document. `levels` are the run's repeated
 * units (graph/groups.js runLevels): with them a repeated op is named by its iteration or call.
 */
export function wordsContext(index, timeline, code = null, levels = []) {
  const doc = index.doc;
  const lines = String(code ?? doc.code ?? "").split("\n");
  const names = namesContext(index, levels || []);
  // A function's output tensor, when the document names it (a root `y`, a retained `h`).
  const outName = new Map();
  index.edges.forEach((e) => {
    const t = index.nodes[e.t];
    if (index.nodes[e.s].kind === "function" && t.kind === "tensor" && t.name) outName.set(e.s, t.name);
  });
  const passes = new Map((doc.passes || []).map((p) => [p.index, p]));
  const calls = new Map((doc.modules || []).map((m) => [m.path, m.calls]));
  // The iteration each backward pass belongs to, when the run is a training loop.
  const iterLevel = (levels || []).find((lv) => lv.passUnit);
  const ctx = { index, timeline, doc, lines, names, outName, passes, calls, iterLevel };
  ctx.resets = gradResets(ctx);
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

/**
 * A short name for document node i. `ref` ({line, node}) is what the sentence said already:
 * its line and the node whose iteration or call a mention shares need not be repeated.
 */
export function nameOf(ctx, i, ref = null) {
  return nameParts(ctx, i, ref).text;
}

function nameParts(ctx, i, ref = null) {
  const { index } = ctx;
  const n = index.nodes[i];
  if (!n) return { text: "?", unit: false };
  if (n.kind === "tensor") return { text: n.name || (n.role === "root" ? "the output" : "a tensor"), unit: false };
  if (index.kind[i] === "acc") {
    const leaf = index.leafOfAcc.get(i);
    return { text: leaf != null ? `${nameOf(ctx, leaf)}.grad` : "a leaf's .grad", unit: false };
  }
  return functionName(ctx.names, i, ref, ctx.outName.get(i) || null);
}

/** How an input of a function reads: a leaf by its name, a function by its op. */
function inputName(ctx, s, ref) {
  const { index } = ctx;
  if (index.kind[s] === "acc") {
    const leaf = index.leafOfAcc.get(s);
    return leaf != null ? nameOf(ctx, leaf) : "a leaf";
  }
  return nameOf(ctx, s, ref);
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
  return `backward ${passNo(p)}${info && info.create_graph ? " (building a graph)" : ""}`;
}

/** " of iteration 12 of 20" when backward pass p is one turn of a training loop, else "". */
function passIteration(ctx, p) {
  const lv = ctx.iterLevel;
  if (!lv || !lv.passUnit.has(p)) return "";
  return ` (iteration ${lv.passUnit.get(p) + 1} of ${lv.count})`;
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
  text += firstNonfiniteWords(ctx, e, v);
  if (k >= tl.N) {  // NOTE [the last step after an edit] in analysis/grad-edits.js
    const leaf = index.leafOfAcc.get(v);
    text += editAfterWords(doc, leaf != null ? index.nodes[leaf].id : null);
  }
  if (k >= tl.N && doc.error) text += ` Then the run stopped: ${errorSentence(ctx, { short: true })}`;
  return text;
}

/** " ✱ The run's first NaN: made here." at the step the analysis names (`analysis.nonfinite`), else "". */
function firstNonfiniteWords(ctx, e, v) {
  const { doc } = ctx;
  for (const f of (doc.analysis && doc.analysis.nonfinite) || []) {
    if (f.event == null || (doc.events || [])[f.event] !== e) continue;
    const what = f.kind === "nan" ? "NaN" : "inf";
    return f.phase === "backward" ? ` ✱ This is the run's first ${what}: ${nameOf(ctx, v)} made it here.` : ` ✱ The run's first ${what} is seen here.`;
  }
  return "";
}

function forwardSentence(ctx, e, v) {
  const { index } = ctx;
  const n = index.nodes[v];
  const line = e.line ?? n.line;
  const during = n.created_in_pass != null ? ` during ${passName(ctx, n.created_in_pass)}` : "";
  if (index.kind[v] === "acc") {
    const leaf = index.leafOfAcc.get(v);
    const who = leaf != null ? nameOf(ctx, leaf) : "a leaf";
    return `${linePrefix(ctx, line)}AccumulateGrad is created for ${who}${during}; backward will add its gradient to ${who}.grad.`;
  }
  const prefix = linePrefix(ctx, line);
  // The sentence says the line (prefix) and the module ("in enc.layers.0.self_attn") itself.
  const module = index.module[v] || null;
  const me = nameParts(ctx, v, { line: prefix ? line : undefined, node: null, module });
  const ref = { line: prefix ? line : n.line, node: v, module };
  const ins = index.inEdges[v].map((k) => index.edges[k]).filter((ed) => index.nodes[ed.s].kind === "function" || index.kind[ed.s] === "acc");
  const from = ins.length ? ` from ${listWords(ins.map((ed) => inputName(ctx, ed.s, ref)))}` : "";
  // A name that says its call already needs no "(call 37 of 200)" after the module.
  const mod = index.module[v] ? ` in ${index.module[v]}${me.unit ? "" : callWords(ctx, n)}` : "";
  const who = prefix ? me.text : capital(me.text);
  return `${prefix}${who} is created${from}${mod}${during}.`;
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
    head = `${passName(ctx, p)}${passIteration(ctx, p)} starts${line != null ? ` at line ${line}${code ? ` (\`${code}\`)` : ""}` : ""}. `;
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
  const ref = { line: index.nodes[v].line, node: v, module: index.module[v] || null };
  const outs = (e.grad_outputs || []).filter(Boolean);
  const recv = outs.length ? `receives ∇ = ${outs.map(fmtGrad).join(" and ")}` : "receives no gradient";
  const passes = [];
  const gi = e.grad_inputs || [];
  index.inEdges[v].forEach((k, pos) => {
    const ed = index.edges[k];
    if (index.nodes[ed.s].kind !== "function") return;
    const g = gi[ed.inputNr ?? pos];
    if (g) passes.push(`${fmtGrad(g)} to ${inputName(ctx, ed.s, ref)}`);
  });
  const hook = e.changed_by_hook ? " (a hook changed it)" : "";
  const pass = passes.length ? ` and passes ${listWords(passes)}` : " and passes nothing on (its inputs need no gradient)";
  return `${head}${capital(nameOf(ctx, v))} ${recv}${hook}${pass}.`;
}

function resetWords(r) {
  const how = r.kind === "zero" ? "zeroed" : r.kind === "none" ? "set to None" : "cleared";
  return `.grad was ${how}${r.line != null ? ` at line ${r.line}` : ""} since the last accumulation`;
}

/**
 * The run's error in one sentence: where it happened, and for autograd errors why. `short`
 * is for under the timeline (the results panel has the long one with the API's `detail`).
 */
export function errorSentence(ctx, { short = false, besideMessage = false } = {}) {
  const err = ctx.doc.error;
  if (!err) return "";
  const where = err.line != null ? ` at line ${err.line}` : "";
  const ver = parseVersions(err);
  if (err.inplace_line != null || ver) {
    const opName = err.inplace_op || null;
    const op = opName ? `\`${opName}\`` : "an in-place operation";
    const owner = err.node != null && ctx.index.idx.has(err.node) ? nameOf(ctx, ctx.index.idx.get(err.node)) : "a node";
    const savedName = err.saved_name || null;
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
    // Beside the error box, which prints the message already, the sentence adds only the where.
    if (besideMessage) return `Raised${where}${inside ? ` by ${inside}` : ""}${shapes}.`;
    return `${err.type}${where}${inside ? `, raised by ${inside}` : ""}${shapes}: ${clip(err.message, short)}`;
  }
  if (besideMessage && !err.detail) return "";  // it would print the message a second time
  return `${err.type}${where}: ${err.detail ? `${capital(err.detail)}.` : clip(err.message, short)}`;
}

function clip(text, short) {
  const t = String(text || "");
  return short && t.length > 160 ? `${t.slice(0, 159)}… (see the error under the code)` : t;
}

