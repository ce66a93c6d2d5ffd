/**
 * The inspector: what a clicked node is (name, module, line, output shape/dtype/device),
 * what it saved for backward (bytes, freed or held), the gradients at the current step, and
 * for leaves their `.grad` and its history across passes. Built with textContent only: the
 * document comes from user code and is never parsed as HTML.
 */
import { KINDS } from "../graph/document.js";
import { fmtBytes, fmtTensorLong } from "./format.js";

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "onclick") e.addEventListener("click", v); else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

function row(dl, term, value) {
  if (value == null || value === "") return;
  dl.append(el("dt", {}, term), el("dd", {}, value));
}

function tensorBlock(title, tv) {
  return el("div", { class: "gt-tensor" }, el("h4", {}, title), el("pre", {}, fmtTensorLong(tv)));
}

export class Inspector {
  /** @param {{onLine: (line:number)=>void, onExpand: (v:number)=>void}} cb */
  constructor(root, cb) {
    this.root = root;
    this.body = root.querySelector(`[data-gt="inspector-body"]`);
    this.cb = cb;
  }

  clear(text = "Click a node to inspect it, or a code line to find the nodes it created.") {
    this.body.replaceChildren(el("p", { class: "gt-hint" }, text));
  }

  showLine(line, vnodes, names, onPick) {
    const list = el("ul", { class: "gt-line-nodes" });
    vnodes.forEach((v, i) => list.append(el("li", {}, el("button", { type: "button", onclick: () => onPick(v) }, names[i]))));
    this.body.replaceChildren(el("h3", {}, `Line ${line}`),
      el("p", {}, vnodes.length ? `created ${vnodes.length} node${vnodes.length > 1 ? "s" : ""}:` : "created no autograd node."), list);
  }

  show(scene, v, k) {
    const vn = scene.view.vnodes[v];
    const index = scene.index;
    if (vn.fold) {
      const what = vn.single ? "This unit" : `${vn.hi - vn.lo + 1} ${vn.unitKind === "call" ? `calls of ${vn.unitNoun}` : "iterations"}`;
      this.body.replaceChildren(el("h3", {}, vn.label), el("p", {}, `${what}, folded: ${vn.refs.length} nodes, steps ${vn.firstStep}–${vn.lastStep}.`),
        el("button", { type: "button", onclick: () => this.cb.onExpand(v) }, vn.single ? "Open it" : "Show them one by one"));
      return;
    }
    if (vn.kind === "group") {
      this.body.replaceChildren(el("h3", {}, vn.label), el("p", {}, `${vn.repeat ? "Repeated blocks" : "Module"} ${vn.module}, collapsed: ${vn.refs.length} nodes.`),
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
    row(dl, n.kind === "function" ? "output" : "tensor", [n.shape ? `[${n.shape.join(", ")}]` : null, n.dtype, n.device].filter(Boolean).join(" · "));
    if (n.created_in_pass != null) row(dl, "created in", `backward pass ${n.created_in_pass} (create_graph=True)`);
    if (n.cut) row(dl, "cut", `${n.cut.kind}${n.cut.line != null ? ` at line ${n.cut.line}` : ""}`);
    if (vn.proxy) row(dl, "drawn", "as one copy per use (shared leaf)");
    if (index.errorNode === i && index.doc.error) row(dl, "error", `${index.doc.error.type}: ${index.doc.error.message}`);
    const parts = [el("h3", {}, vn.label), dl];

    if (n.saved && n.saved.length) {
      const t = el("table", { class: "gt-saved" }, el("caption", {}, `Saved for backward · ${fmtBytes(n.saved_bytes)}`),
        el("tr", {}, el("th", {}, "name"), el("th", {}, "shape"), el("th", {}, "bytes"), el("th", {}, "state")));
      for (const s of n.saved) {
        const end = s.freed_after_pass != null ? tl.passEnd(s.freed_after_pass) : null;
        const freed = s.freed_after_pass == null ? "held"
          : end != null && k >= end ? `freed after pass ${s.freed_after_pass}`
            : `held until pass ${s.freed_after_pass} ends`;
        t.append(el("tr", {}, el("td", {}, s.name), el("td", {}, s.shape ? `[${s.shape.join(", ")}] ${s.dtype || ""}` : "—"),
          el("td", {}, fmtBytes(s.bytes)), el("td", {}, freed)));
      }
      parts.push(t);
    }
    if (n.value) parts.push(tensorBlock("value", n.value));
    const step = tl.lastBackward(i, k);
    if (step != null) {
      const ev = tl.event(step);
      parts.push(el("p", { class: "gt-hint" }, `backward pass ${tl.passAt(step)}, step ${step}` +
        (ev.changed_by_hook ? " · a hook changed this gradient" : "")));
      (ev.grad_outputs || []).forEach((g, j) => g && parts.push(tensorBlock(`grad_outputs[${j}] (flowing in)`, g)));
      (ev.grad_inputs || []).forEach((g, j) => g && parts.push(tensorBlock(`grad_inputs[${j}] (flowing out)`, g)));
    }
    const leaf = index.kind[i] === "acc" ? index.leafOfAcc.get(i) : i;
    const g = leaf != null ? tl.leafGradAt(leaf, k) : null;
    if (g) parts.push(tensorBlock(`.grad at this step (after ${g.count} accumulation${g.count > 1 ? "s" : ""})`, g.value));
    else if (n.grad && k >= tl.N) parts.push(tensorBlock(".grad at the end", n.grad));
    const hist = leaf != null ? index.nodes[leaf].grad_history || [] : [];
    if (hist.length > 1) {
      const ol = el("ol", { class: "gt-history", "aria-label": ".grad history" });
      hist.forEach((h) => ol.append(el("li", {}, el("pre", {}, fmtTensorLong(h)))));
      parts.push(el("h4", {}, ".grad after each accumulation"), ol);
    }
    this.body.replaceChildren(...parts);
  }
}
