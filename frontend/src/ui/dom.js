/**
 * One element builder for the panels (inspector, explain, definitions, gradient check).
 * Attributes are set as attributes and children appended as nodes or text, never parsed as HTML:
 * everything a panel shows comes from a run document, that is from user code.
 */

/** `<tag attrs…>children…</tag>`; an `onclick` attribute becomes a click listener, null children are skipped. */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "onclick") e.addEventListener("click", v); else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

/**
 * A sentence whose `code` spans (analysis/words.js quotes the snippet between backticks) read
 * as code, not as raw backticks: text and `<code>` nodes, never parsed as HTML.
 */
export function withCode(text) {
  return String(text).split(/`([^`\n]+)`/).map((part, i) => (i % 2 ? el("code", {}, part) : part)).filter((p) => p !== "");
}

/** The element marked `data-gt="name"` inside root (or root itself), or null (NOTE [mountable viewer] in app/viewer.js). */
export function part(root, name) {
  if (root.dataset && root.dataset.gt === name) return root;
  return root.querySelector(`[data-gt="${name}"]`);
}

/**
 * Resolves once the page has drawn the next frame (NOTE [the looked-at tensor first] in
 * ui/tensors.js): a requestAnimationFrame, then a task, so that what follows runs after that
 * frame's paint. A page that draws no frames (a hidden tab) goes on after `capMs`.
 */
export function afterFrame(capMs = 100) {
  return new Promise((resolve) => {
    let done = false;
    const go = () => { if (!done) { done = true; setTimeout(resolve, 0); } };
    if (globalThis.requestAnimationFrame) requestAnimationFrame(go);
    setTimeout(go, capMs);
  });
}
