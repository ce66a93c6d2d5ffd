/**
 * torch's own gradient checks the snippet called (`RunDocument.folded`, docs/CONTRACT.md
 * `FoldedCall`): each is one box on the line that called it, with its verdict, never nodes of
 * the graph or passes of the timeline (NOTE [torch's own checks are folded] in
 * backend/gradtrace/capture/folded.py). Read only; text only (the document comes from user code).
 */

const VERDICT = { passed: "passed ✓", failed: "failed ✗", raised: "raised ✗" };

/** The folded checks, [] when none. */
export function foldedCalls(doc) {
  return (doc && doc.folded) || [];
}

/** "gradcheck" from "torch.autograd.gradcheck". */
function shortName(api) {
  return String(api).split(".").pop();
}

/** "gradcheck passed ✓ (3 calls)" */
export function foldedTitle(f) {
  const calls = f.calls > 1 ? ` (${f.calls} calls)` : "";
  return `${shortName(f.api)} ${VERDICT[f.verdict] || f.verdict}${calls}`;
}

/** The sentence for a folded check: what it is, its verdict, what is not shown. */
export function foldedSentence(f) {
  const nodes = f.nodes === 1 ? "1 autograd node" : `${(f.nodes || 0).toLocaleString("en")} autograd nodes`;
  const why = f.message ? ` torch says: ${f.message}` : "";
  return `${f.api} ran here: ${VERDICT[f.verdict] || f.verdict}. torch's own check, folded: its ${nodes} and backward passes are not the snippet's graph.${why}`;
}

/** The code pane's boxes: [{line, text, verdict}] (ui/editor.js). */
export function foldedMarks(doc) {
  return foldedCalls(doc).filter((f) => f.line != null).map((f) => ({ line: f.line, text: foldedTitle(f), verdict: f.verdict, title: foldedSentence(f) }));
}

/** What a code line says about the checks it called. */
export function foldedNotes(doc, line) {
  return foldedCalls(doc).filter((f) => f.line === line).map(foldedSentence);
}
