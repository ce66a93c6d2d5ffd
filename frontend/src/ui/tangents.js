/**
 * Forward-mode AD as the document records it (`RunDocument.tangents`, docs/CONTRACT.md
 * `ForwardTangent`): a forward pass carrying tangents, step by step, each with its primal and
 * tangent values (NOTE [forward-mode AD] in backend/gradtrace/capture/tangents.py). No backward
 * pass is involved, so these are not timeline steps: the inspector lists them, a code line says
 * the tangents it carried, and a graph node made by the same call shows its tangent.
 * Read only; text only (the document comes from user code).
 */
import { el } from "./dom.js";
import { fmtTensorLong, fmtTensorShort } from "../graph/values.js";

const SHOWN = 60;

/** The steps, [] when the run used no forward-mode AD. */
export function tangentSteps(doc) {
  return (doc && doc.tangents) || [];
}

/** "#2 mul → y" */
export function stepLabel(s) {
  return `#${s.index} ${s.op}${s.name ? ` → ${s.name}` : ""}`;
}

/** One step's sentence: what it computed and the tangent it carried forward. */
export function stepSentence(s) {
  const from = s.inputs.length ? ` from ${s.inputs.map((i) => `#${i}`).join(", ")}` : "";
  const what = s.op === "make_dual" ? "made a dual tensor" : `computed ${s.op}${from}`;
  return `${stepLabel(s)}: ${what}; tangent ${fmtTensorShort(s.tangent, 6)} (primal ${fmtTensorShort(s.primal, 6)}).`;
}

/** What a code line says about the tangents its calls carried. */
export function tangentNotes(doc, line) {
  const steps = tangentSteps(doc).filter((s) => s.line === line);
  if (!steps.length) return [];
  return [`Forward-mode AD here: ${steps.length} call${steps.length > 1 ? "s" : ""} carried a tangent.`, ...steps.slice(0, 8).map(stepSentence)];
}

/** The step a graph node's call also was, or null. */
export function stepOfNode(doc, id) {
  return tangentSteps(doc).find((s) => s.node === id) || null;
}

/** The inspector's section before a click: the forward pass carrying tangents, or null. */
export function tangentsSection(doc, onLine) {
  const steps = tangentSteps(doc);
  if (!steps.length) return null;
  const box = el("section", { class: "gt-tangents", "aria-label": "Forward-mode AD" },
    el("h4", {}, "Forward pass carrying tangents (forward-mode AD)"),
    el("p", { class: "gt-muted" }, "Each op computed its tangent as it ran (its forward formula): no backward pass walks these."));
  const ol = el("ol", { start: "0" });
  for (const s of steps.slice(0, SHOWN)) {
    const link = s.line != null ? el("button", { type: "button", class: "gt-link", onclick: () => onLine(s.line) }, `line ${s.line}`) : null;
    ol.append(el("li", { title: `primal: ${fmtTensorLong(s.primal)}\ntangent: ${fmtTensorLong(s.tangent)}` },
      el("code", {}, stepLabel(s).replace(/^#\d+ /, "")), s.inputs.length ? ` ← ${s.inputs.map((i) => `#${i}`).join(", ")}` : "",
      link ? " · " : "", link, el("br"), `tangent ${fmtTensorShort(s.tangent, 6)}`, el("span", { class: "gt-muted" }, ` · primal ${fmtTensorShort(s.primal, 6)}`)));
  }
  box.append(ol);
  const more = steps.length - SHOWN + ((doc && doc.tangents_more) || 0);
  if (more > 0) box.append(el("p", { class: "gt-muted" }, `and ${more.toLocaleString("en")} more steps.`));
  return box;
}
