/**
 * Where the snippet's tensors come from and what the graph cannot show, as the document says it
 * (capture writes it: docs/CONTRACT.md `def_line`, `var`, `tied`, `ModuleInfo.frozen`,
 * `analysis.grad_off`): a leaf's defining line, an intermediate's variable, a tied parameter's
 * paths, frozen parameters and the blocks run with gradients off. Read only, never re-derived;
 * built with textContent only (the document comes from user code).
 */
import { lineGradNotes } from "../analysis/grad-edits.js";
import { el } from "./dom.js";
import { foldedCalls, foldedNotes, foldedSentence, foldedTitle } from "./folded.js";

const KIND_TEXT = { no_grad: "torch.no_grad()", inference_mode: "torch.inference_mode()", set_grad_enabled: "torch.set_grad_enabled(False)" };

function lineLink(line, onLine) {
  return el("button", { type: "button", class: "gt-link", onclick: () => onLine(line) }, `line ${line}`);
}

/** The blocks with gradients off (`analysis.grad_off`), [] when none. */
export function gradOffBlocks(doc) {
  return (doc && doc.analysis && doc.analysis.grad_off) || [];
}

/** The innermost block with gradients off that holds `line`, or null. */
export function gradOffAt(doc, line) {
  let best = null;
  for (const b of gradOffBlocks(doc)) {
    if (line >= b.start && line <= b.end && (!best || b.end - b.start < best.end - best.start)) best = b;
  }
  return best;
}

/** "lines 11–12", or "line 11" */
function spanText(b) {
  return b.start === b.end ? `line ${b.start}` : `lines ${b.start}–${b.end}`;
}

/** "torch.no_grad() at line 10" */
export function gradOffText(b) {
  return `${KIND_TEXT[b.kind] || b.kind} at line ${b.line}`;
}

/** The code pane's marks for the blocks: `{lines: body lines, heads: [{line, text}]}` (ui/editor.js). */
export function gradOffMarks(doc) {
  const lines = [];
  const heads = [];
  for (const b of gradOffBlocks(doc)) {
    for (let l = b.start; l <= b.end; l++) lines.push(l);
    // a block with an enable_grad() cut out of it comes in pieces: one note on its line
    if (!heads.some((h) => h.line === b.line)) heads.push({ line: b.line, text: "no graph recorded here" });
  }
  return { lines, heads };
}

/** Modules' frozen parameters: [{path, names}] (`ModuleInfo.frozen`). */
export function frozenModules(doc) {
  return ((doc && doc.modules) || []).filter((m) => m.frozen && m.frozen.length).map((m) => ({ path: m.path, names: m.frozen }));
}

/** The frozen parameters of `module` and the modules around it ("backbone.0" → backbone, backbone.0). */
function frozenAround(doc, module) {
  if (!module) return [];
  return frozenModules(doc).filter((m) => module === m.path || module.startsWith(`${m.path}.`) || m.path.startsWith(`${module}.`));
}

/** A collapsed module's note on its frozen parameters (its own and those inside it), or null. */
export function frozenNote(doc, module) {
  const found = frozenAround(doc, module);
  if (!found.length) return null;
  return `Frozen (requires_grad=False, no node): ${found.map((m) => `${m.path}: ${m.names.join(", ")}`).join("; ")}.`;
}

/**
 * Whether an optimizer trains leaf `n` (docs/CONTRACT.md `optimized`): said only where some
 * optimizer's step() ran in the run (a loop with an optimizer), else null.
 */
export function optimizerNote(n, doc) {
  if (!n || n.kind !== "tensor" || n.role !== "leaf") return null;
  const nodes = (doc && doc.graph && doc.graph.nodes) || [];
  if (!nodes.some((m) => m.optimized)) return null;
  if (!n.optimized) return "no optimizer that stepped holds it: no step() updates it";
  const twice = n.stepped_twice;  // docs/CONTRACT.md `stepped_twice`: two optimizers, one gradient
  if (Array.isArray(twice) && twice.length === 2) {
    const where = twice[0] === twice[1] ? `line ${twice[0]}` : `lines ${twice[0]} and ${twice[1]}`;
    return `held by two optimizers: both step() calls (${where}) update it with one backward's gradient`;
  }
  const fresh = n.state_restarts;  // docs/CONTRACT.md `state_restarts`: an optimizer made afresh
  if (fresh && fresh.restarts > 0) {
    return `held by an optimizer whose step() ran: it trains, but ${fresh.optimizer}'s state for it started `
      + `from zero at ${fresh.restarts + 1} of its ${fresh.steps} steps (a new optimizer each time)`;
  }
  return "held by an optimizer whose step() ran: it trains";
}

/**
 * The inspector's rows for node `n` (a <dl> to append to): its variable, the line that defines
 * it (a link: the code pane highlights it), the paths of a tied parameter, its module's frozen
 * parameters, and the block with gradients off around a cut made there.
 */
export function definitionRows(dl, n, doc, module, onLine) {
  const add = (term, ...value) => dl.append(el("dt", {}, term), el("dd", {}, ...value));
  if (n.var) add("variable", `${n.var} (the snippet's name for this node's output)`);
  if (n.def_line != null) add("defined", lineLink(n.def_line, onLine), n.def_line !== n.line ? ` · first used at line ${n.line}` : "");
  if (n.tied && n.tied.length > 1) {
    add("tied", el("span", { class: "gt-tied" }, "tied"), ` one parameter under ${n.tied.length} paths: ${n.tied.join(" = ")}`);
  }
  const trained = optimizerNote(n, doc);
  if (trained) add("optimizer", trained);
  for (const m of frozenAround(doc, module)) add("frozen", `${m.path}: ${m.names.join(", ")} (requires_grad=False: no node, no .grad)`);
  const cutLine = n.cut && n.cut.line;
  const block = cutLine != null ? gradOffAt(doc, cutLine) : null;
  if (block) add("gradients off", lineLink(block.line, onLine), ` ${KIND_TEXT[block.kind] || block.kind}, ${spanText(block)}`);
}

/** What a code line says besides its nodes: the leaves it defines, and that gradients were off there. */
export function lineNotes(doc, line) {
  if (!doc) return [];
  const out = [];
  const defined = ((doc.graph && doc.graph.nodes) || []).filter((n) => n.def_line === line && n.name);
  if (defined.length) out.push(`defines ${defined.map((n) => (n.tied && n.tied.length > 1 ? `${n.name} (tied: ${n.tied.join(" = ")})` : n.name)).join(", ")}.`);
  const off = lineNote(doc, line);
  if (off) out.push(off);
  out.push(...foldedNotes(doc, line));
  out.push(...lineGradNotes(doc, line));  // what it did to .grad: analysis/grad-edits.js
  return out;
}

/** What a code line with no node says, when gradients were off there. */
export function lineNote(doc, line) {
  const b = gradOffAt(doc, line);
  return b ? `Gradients are off here (${gradOffText(b)}): no graph is recorded in ${spanText(b)}.` : null;
}

/**
 * The inspector's page before a click: what the run holds that the graph cannot show (frozen
 * parameters, blocks with gradients off), each with its link. Null when there is none.
 */
export function notInGraph(doc, onLine) {
  const frozen = frozenModules(doc);
  const blocks = gradOffBlocks(doc);
  const folded = foldedCalls(doc);
  if (!frozen.length && !blocks.length && !folded.length) return null;
  const box = el("section", { class: "gt-not-in-graph", "aria-label": "Not in the graph" }, el("h4", {}, "Not in the graph"));
  const ul = el("ul");
  for (const m of frozen) ul.append(el("li", {}, el("span", { class: "gt-frozen" }, "frozen"), ` ${m.path}: ${m.names.join(", ")} (requires_grad=False)`));
  for (const b of blocks) ul.append(el("li", {}, el("span", { class: "gt-nograd" }, "no graph"), ` ${spanText(b)}: ${KIND_TEXT[b.kind] || b.kind} at `, lineLink(b.line, onLine)));
  for (const f of folded) {
    ul.append(el("li", { title: foldedSentence(f) }, el("span", { class: `gt-folded-box gt-folded-${f.verdict}` }, `⊞ ${foldedTitle(f)}`),
      " torch's own check, folded, at ", f.line != null ? lineLink(f.line, onLine) : "an unknown line", f.message ? `: ${f.message}` : ""));
  }
  box.append(ul);
  return box;
}
