/**
 * The inspector: what a clicked node is (name, module, line, output shape/dtype/device),
 * what it saved for backward (bytes, freed or held, and the values of small saved tensors), the gradients at the current step, and
 * for leaves their `.grad` and its history across passes. Built with textContent only: the
 * document comes from user code and is never parsed as HTML.
 */
import { KINDS } from "../graph/document.js";
import { lineNodes } from "../graph/view.js";
import { fmtNum } from "../graph/values.js";
import { savedState } from "../analysis/errors.js";
import { fmtBytes, fmtTensorLong, passNo } from "../analysis/format.js";
import { gradEdits } from "../analysis/grad-edits.js";
import { accumulationsAt } from "../analysis/accumulations.js";
import { errorSentence } from "../analysis/words.js";
import { definitionRows, frozenNote, lineNotes, notInGraph } from "./definitions.js";
import { stepOfNode, stepSentence, tangentNotes, tangentsSection } from "./tangents.js";
import { afterFrame, el } from "./dom.js";
import { whenDrawn } from "./tensors.js";

/** The longest the sections below the tensors wait for the first tensor to be drawn. */
const REST_WAIT_MS = 1000;

function row(dl, term, value) {
  if (value == null || value === "") return;
  dl.append(el("dt", {}, term), el("dd", {}, value));
}

function tensorBlock(title, tv) {
  return el("div", { class: "gt-tensor" }, el("h4", {}, title), el("pre", {}, fmtTensorLong(tv)));
}

export class Inspector {
  /** @param {{onLine: (line:number)=>void, onExpand: (v:number)=>void, extra?: (node:object)=>HTMLElement|null}} cb */
  constructor(root, cb) {
    this.root = root;
    this.body = root.querySelector(`[data-gt="inspector-body"]`);
    this.cb = cb;
    this.ctx = { words: null, errors: null };
  }

  /** The document's sentences (analysis/words.js) and error marks (analysis/errors.js), once per document. */
  setContext(ctx) { this.ctx = { ...this.ctx, ...ctx }; }

  clear(text = "Click a node to inspect it, or a code line to find the nodes it created.") {
    // what the graph cannot show (frozen parameters, blocks with gradients off): ui/definitions.js
    const extra = this.ctx.doc ? notInGraph(this.ctx.doc, (line) => this.cb.onLine(line)) : null;
    const tangents = this.ctx.doc ? tangentsSection(this.ctx.doc, (line) => this.cb.onLine(line)) : null;  // ui/tangents.js
    this.body.replaceChildren(...[el("p", { class: "gt-hint" }, text), extra, tangents].filter(Boolean));
  }

  showLine(line, vnodes, names, onPick) {
    const list = el("ul", { class: "gt-line-nodes" });
    vnodes.forEach((v, i) => list.append(el("li", {}, el("button", { type: "button", onclick: () => onPick(v) }, names[i]))));
    this.body.replaceChildren(el("h3", {}, `Line ${line}`),
      el("p", {}, vnodes.length ? `created ${vnodes.length} node${vnodes.length > 1 ? "s" : ""}:` : "created no autograd node."), list,
      ...lineNotes(this.ctx.doc, line).map((t) => el("p", { class: "gt-nograd-note" }, t)),  // ui/definitions.js
      ...tangentNotes(this.ctx.doc, line).map((t) => el("p", { class: "gt-tangent-note" }, t)));  // ui/tangents.js
  }

  show(scene, v, k) {
    const vn = scene.view.vnodes[v];
    const index = scene.index;
    if (vn.fold) {
      const what = vn.single ? "This unit" : `${vn.hi - vn.lo + 1} ${vn.unitKind === "call" ? `calls of ${vn.unitNoun}` : vn.unitKind === "block" ? `blocks (${vn.unitNoun})` : "iterations"}`;
      this.body.replaceChildren(el("h3", {}, vn.label), el("p", {}, `${what}, folded: ${vn.refs.length} nodes, steps ${vn.firstStep}–${vn.lastStep}.`),
        el("button", { type: "button", onclick: () => this.cb.onExpand(v) }, vn.single || vn.lo === vn.hi ? "Expand it" : `Expand: one box per ${vn.unitKind === "call" ? "call" : vn.unitKind === "block" ? "block" : "iteration"}`));
      return;
    }
    if (vn.kind === "group") {
      const frozen = frozenNote(index.doc, vn.module);  // ui/definitions.js
      this.body.replaceChildren(el("h3", {}, vn.label), el("p", {}, `${vn.repeat ? "Repeated blocks" : "Module"} ${vn.module}, collapsed: ${vn.refs.length} nodes.`),
        ...(frozen ? [el("p", { class: "gt-nograd-note" }, frozen)] : []),
        el("button", { type: "button", onclick: () => this.cb.onExpand(v) }, vn.repeat ? "Show the blocks" : `Expand ${vn.module}`));
      return;
    }
    const i = vn.refs[0];
    const n = index.nodes[i];
    const tl = scene.timeline;
    const dl = el("dl");
    row(dl, "kind", KINDS[index.kind[i]]);
    row(dl, "id", n.id);
    row(dl, "module", index.module[i]);
    if (n.line != null) {
      dl.append(el("dt", {}, "line"), el("dd", {}, el("button", { type: "button", class: "gt-link", onclick: () => this.cb.onLine(n.line) }, `line ${n.line}`)));
    }
    definitionRows(dl, n, index.doc, index.module[i], (line) => this.cb.onLine(line));  // ui/definitions.js
    const fwStep = stepOfNode(index.doc, n.id);  // ui/tangents.js: forward-mode AD through this call
    if (fwStep) dl.append(el("dt", {}, "tangent"), el("dd", {}, `${stepSentence(fwStep)} `, el("pre", { class: "gt-value" }, fmtTensorLong(fwStep.tangent))));
    row(dl, n.kind === "function" ? "output" : "tensor", [n.shape ? `[${n.shape.join(", ")}]` : null, n.dtype, n.device].filter(Boolean).join(" · "));
    if (n.created_in_pass != null) row(dl, "created in", `backward ${passNo(n.created_in_pass)}, building a graph (create_graph=True)`);
    if (n.cut) row(dl, "cut", `${n.cut.kind}${n.cut.line != null ? ` at line ${n.cut.line}` : ""}`);
    if (vn.proxy) row(dl, "drawn", "as one copy per use (shared leaf)");
    const errs = this.ctx.errors;
    const mark = errs ? errs.nodes.find((m) => m.ref === i) : null;
    if (mark && mark.finding) row(dl, mark.finding, mark.text.replace(/^\S+ /, ""));  // ui/findings.js
    else if (mark && mark.text && this.ctx.words) row(dl, "error", `${mark.text.replace(/^\S+ /, "")}. ${errorSentence(this.ctx.words)}`);
    else if (index.errorNode === i && index.doc.error) row(dl, "error", `${index.doc.error.type}: ${index.doc.error.message}`);
    const parts = [el("h3", {}, vn.label), dl];
    const extra = this.cb.extra ? this.cb.extra(n) : null; // e.g. the gradient check's button
    if (extra) parts.push(extra);
    const drawn = whenDrawn(extra);
    if (!drawn) { this.body.replaceChildren(...parts, ...this.rest(scene, i, k)); return; }
    // below the tensors, once the first is drawn (NOTE [the looked-at tensor first] in ui/tensors.js)
    this.body.replaceChildren(...parts);
    const late = new Promise((r) => setTimeout(r, REST_WAIT_MS));  // a read that hangs does not hold them back
    Promise.race([drawn, late]).then(() => afterFrame()).then(() => { if (parts[0].isConnected) this.body.append(...this.rest(scene, i, k)); });
  }

  /** The sections below the panels' ones: saved for backward, the values and gradients as text, `.grad` and its history. */
  rest(scene, i, k) {
    const index = scene.index, n = index.nodes[i], tl = scene.timeline, errs = this.ctx.errors;
    const parts = [];
    if (n.saved && n.saved.length) {
      const t = el("table", { class: "gt-saved" }, el("caption", {}, `Saved for backward · ${fmtBytes(n.saved_bytes)}`),
        el("tr", {}, el("th", {}, "name"), el("th", {}, "shape"), el("th", {}, "bytes"), el("th", {}, "state")));
      for (const s of n.saved) {
        const freed = savedState(errs || { inplace: null }, i, s, (p) => tl.passEnd(p), k);
        t.append(el("tr", {}, el("td", {}, s.name), el("td", {}, s.shape ? `[${s.shape.join(", ")}] ${s.dtype || ""}` : "—"),
          el("td", {}, fmtBytes(s.bytes)), el("td", {}, freed)));
      }
      parts.push(t);
      // small saved tensors carry their value as saved (docs/CONTRACT.md, "saved")
      for (const s of n.saved) if (s.value) parts.push(tensorBlock(`${s.name}, as saved for backward`, s.value));
    }
    if (n.value) parts.push(tensorBlock("value", n.value));
    const step = tl.lastBackward(i, k);
    if (step != null) {
      const ev = tl.event(step);
      parts.push(el("p", { class: "gt-hint" }, `backward pass ${passNo(tl.passAt(step))}, step ${step}` +
        (ev.changed_by_hook ? " · a hook changed this gradient" : "")));
      (ev.grad_outputs || []).forEach((g, j) => g && parts.push(tensorBlock(`grad_outputs[${j}] (flowing in)`, g)));
      (ev.grad_inputs || []).forEach((g, j) => g && parts.push(tensorBlock(`grad_inputs[${j}] (flowing out)`, g)));
    }
    const leaf = index.kind[i] === "acc" ? index.leafOfAcc.get(i) : i;
    const g = leaf != null ? tl.leafGradAt(leaf, k) : null;
    const words = this.ctx.words;
    if (g) {
      const acc = words ? accumulationsAt(words, leaf, k) : { count: g.count, total: g.count, reset: null };
      const edit = g.edited ? gradEdits(index.doc) : null;  // NOTE [the last step after an edit] in analysis/grad-edits.js
      const mine = edit ? edit.edits.find((x) => x.id === index.nodes[leaf].id) : null;
      const then = mine ? `, then ${mine.effect} outside autograd${edit.line != null ? ` at line ${edit.line}` : ""}` : "";
      parts.push(tensorBlock(`.grad at this step (${accumulationText(acc)}${then})`, g.value));
    } else if (n.grad && k >= tl.N) parts.push(tensorBlock(".grad at the end", n.grad));
    const hist = leaf != null ? index.nodes[leaf].grad_history || [] : [];
    if (hist.length > 1) {
      const resetAt = new Map();
      if (words) for (const [ev, r] of words.resets) if (index.leafOfAcc.get(tl.evNode[ev]) === leaf) resetAt.set(r.at, r);
      const ol = el("ol", { class: "gt-history", "aria-label": ".grad history" });
      const edits = index.nodes[leaf].grad_edits || [];
      hist.forEach((h, j) => {
        const r = resetAt.get(j);
        if (r) ol.append(el("li", { class: "gt-reset" }, `.grad ${resetText(r)}`));
        ol.append(el("li", { value: String(j + 1) }, el("pre", {}, fmtTensorLong(h))));  // notes between take no number
        let before = h;
        for (const e of edits) {
          if (e.at !== j + 1) continue;
          ol.append(el("li", { class: "gt-edit" }, `.grad ${editText(e, before)}`, e.value ? el("pre", {}, fmtTensorLong(e.value)) : ""));
          before = e.value || before;
        }
      });
      const counts = [];
      if (resetAt.size) counts.push(`cleared ${resetAt.size} time${resetAt.size > 1 ? "s" : ""}`);
      if (edits.length) counts.push(`edited ${edits.length} time${edits.length > 1 ? "s" : ""}`);
      const title = `.grad after each accumulation${counts.length ? ` (${counts.join(", ")})` : ""}`;
      parts.push(el("h4", {}, title), ol);
    }
    return parts;
  }
}

/** "after 3 accumulations", or "1 accumulation since zero_grad() cleared it at line 9 · 20 in all". */
export function accumulationText({ count, total, reset }) {
  const n = `${count} accumulation${count === 1 ? "" : "s"}`;
  if (!reset) return `after ${n}`;
  return `${n} since .grad was ${resetText(reset)} · ${total} in all`;
}

/** "changed in place at line 12 (norm × 1.53e-5)": a Node.grad_edits entry, its effect from
 * the norms before and after it. */
function editText(e, before) {
  const a = e.value && e.value.stats ? Number(e.value.stats.norm) : NaN;
  const b = before && before.stats ? Number(before.stats.norm) : NaN;
  const effect = a === 0 ? "zeroed" : Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `norm × ${fmtNum(a / b)}` : "";
  const where = e.in_backward ? `inside the backward${e.line != null ? ` at line ${e.line}` : ""} (a hook)` : e.line != null ? `at line ${e.line}` : "";
  return `changed in place${where ? ` ${where}` : ""}${effect ? ` (${effect})` : ""}`;
}

function resetText(r) {
  const how = r.kind === "zero" ? "zeroed" : r.kind === "none" ? "set to None" : "cleared";
  return `${how}${r.line != null ? ` at line ${r.line}` : ""}`;
}

/**
 * The inspector as a viewer panel (NOTE [one panel shape] in ui/registry.js): it shows the
 * selection (a node, or the nodes a code line made) at the current step. Another panel adds a
 * section for the selected node by answering `inspect(model, node)` (the gradient check's
 * button, Explain), side by side in registry order.
 */
export const inspectorPanel = {
  id: "inspector",
  mount(ctx) {
    const root = ctx.part("inspector");
    if (!root) return null;
    const inspector = new Inspector(root, { onLine: (line) => ctx.onLine(line), onExpand: (v) => ctx.openGroup(v),
      extra: (node) => sideBySide(Object.values(ctx.panels).map((p) => (p.inspect ? p.inspect(ctx.model, node) : null))) });
    inspector.clear();
    inspector.update = (model, st, changed) => {
      const { v, line } = st.selection;
      if (changed.includes("document")) { inspector.setContext({ words: model.words, errors: model.errors, doc: model.doc }); inspector.clear(); return; }
      if (changed.includes("selection")) {
        if (v >= 0) inspector.show(ctx.scene, v, st.step);
        else if (line != null) {
          const vs = lineNodes(model.index, ctx.scene.view, line);
          inspector.showLine(line, vs, vs.map((u) => ctx.scene.view.vnodes[u].label), (u) => ctx.selectNode(u));
        } else inspector.clear();
      } else if ((changed.includes("step") || changed.includes("playing")) && ctx.scene && v >= 0 && !st.playing) inspector.show(ctx.scene, v, st.step);
    };
    return inspector;
  },
};

/** The inspector's extras side by side (each may be null). */
function sideBySide(parts) {
  const kept = parts.filter(Boolean);
  if (kept.length < 2) return kept[0] || null;
  const box = document.createElement("div");
  box.append(...kept);
  return box;
}
