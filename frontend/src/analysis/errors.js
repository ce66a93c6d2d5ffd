/**
 * Errors where they happened: which nodes and lines a run's error concerns, and what to write
 * next to each. Pure functions of the indexed document (no DOM), used by the viewer to mark
 * the graph and the code, by the inspector for saved tensors, and by the results panel.
 *
 * NOTE [in-place hazards]
 *   Autograd raises the error in backward, at the `backward()` line, on the node that saved
 *   the tensor; the cause is elsewhere: the in-place op that bumped the tensor's version after
 *   it was saved. The document says so with `error.node` (the saver), `inplace_line`,
 *   `inplace_op`/`inplace_node` (the changer) and both versions. When the changer made no
 *   node of its own, it is the function node made at `inplace_line`.
 *
 * NOTE [errors inside modules]
 *   A shape error in `nn.Sequential` happens inside a module that made no node (it failed
 *   before). The document names that module, its class, the op and the shapes it got; the
 *   mark goes on the last node made before the error, the one whose output the module got.
 */
import { passNo } from "./format.js";

/** Everything the page marks for `index.doc.error`; empty fields when there is no error. */
export function errorMarks(index) {
  const err = index.doc.error;
  const out = { nodes: [], lines: { error: null, cause: null }, inplace: null, module: null, sentence: "" };
  if (!err) return out;
  out.lines.error = err.line ?? null;
  const versions = parseVersions(err);
  if (err.inplace_line != null || err.inplace_op || versions) {
    const saver = err.node != null && index.idx.has(err.node) ? index.idx.get(err.node) : -1;
    const changer = inplaceNode(index, err, saver);
    const savedName = err.saved_name || null;
    out.lines.cause = err.inplace_line ?? (changer >= 0 ? index.nodes[changer].line ?? null : null);
    const opName = err.inplace_op || null;
    out.inplace = { saver, changer, savedName, op: opName, line: out.lines.cause, ...versions };
    const v = versions ? ` (v${versions.saved} → v${versions.current})` : "";
    if (saver >= 0) out.nodes.push({ ref: saver, text: `⚠ saved ${savedName ? `'${savedName}'` : "tensor"} changed${v}` });
    if (changer >= 0) {
      out.nodes.push({ ref: changer, text: `✎ ${opName ? `${opName} ` : ""}changed it${out.lines.cause != null ? ` (line ${out.lines.cause})` : ""}` });
    }
    return out;
  }
  const shapes = err.shapes || parseShapes(err.message);
  if (err.module || err.shapes || err.op) {
    out.module = { path: err.module || null, type: err.module_type || null, op: err.op || null, shapes };
  }
  const at = err.node != null && index.idx.has(err.node) ? index.idx.get(err.node) : lastMade(index);
  if (at >= 0) {
    // `text` null: the renderer writes its own "⚠ RuntimeError (line 7)".
    let text = null;
    if (out.module && out.module.path) {
      text = `⚠ ${out.module.path}${out.module.type ? ` (${out.module.type})` : ""} raised next`;
      if (shapes && shapes.length) text += `: got ${shapes.map(fmtShape).join(", ")}`;
    }
    out.nodes.push({ ref: at, text });
  }
  return out;
}

export function fmtShape(s) { return `[${s.join(", ")}]`; }

/** Saved and current version of the tensor an in-place op changed, or null. */
export function parseVersions(err) {
  return err.saved_version != null && err.current_version != null ? { saved: err.saved_version, current: err.current_version } : null;
}

/** Shapes from torch's matmul message ("(3x8 and 5x2)"), for documents without `shapes`. */
export function parseShapes(message) {
  const m = /\((\d+(?:x\d+)*) and (\d+(?:x\d+)*)\)/.exec(message || "");
  return m ? [m[1], m[2]].map((s) => s.split("x").map(Number)) : null;
}

function inplaceNode(index, err, saver) {
  if (err.inplace_node != null && index.idx.has(err.inplace_node)) return index.idx.get(err.inplace_node);
  if (err.inplace_line == null) return -1;
  // The first function node made at the in-place line after the saver.
  let best = -1;
  index.nodes.forEach((n, i) => {
    if (n.kind !== "function" || n.line !== err.inplace_line || i === saver) return;
    if (saver >= 0 && (n.seq ?? 0) < (index.nodes[saver].seq ?? 0)) return;
    if (best < 0 || (n.seq ?? i) < (index.nodes[best].seq ?? best)) best = i;
  });
  return best;
}

/** The last function node the run made (highest seq), or −1. */
function lastMade(index) {
  let best = -1;
  index.nodes.forEach((n, i) => {
    if (n.kind === "function" && n.name !== "AccumulateGrad" && (best < 0 || (n.seq ?? i) > (index.nodes[best].seq ?? best))) best = i;
  });
  return best;
}

/**
 * The state of a saved tensor for the inspector: an in-place hazard's saved tensor is not
 * "held" but changed (autograd refused it); else held, or freed after a pass.
 */
export function savedState(marks, ref, saved, passEnd, k) {
  const ip = marks.inplace;
  if (ip && ip.saver === ref && (!ip.savedName || ip.savedName === saved.name)) {
    const v = ip.saved != null ? `: saved at version ${ip.saved}, now at version ${ip.current}` : "";
    return `changed in place${ip.line != null ? ` at line ${ip.line}` : ""}${v}; backward refused it`;
  }
  if (saved.freed_after_pass == null) return "held";
  const end = passEnd(saved.freed_after_pass);
  return end != null && k >= end ? `freed after pass ${passNo(saved.freed_after_pass)}` : `held until pass ${passNo(saved.freed_after_pass)} ends`;
}
