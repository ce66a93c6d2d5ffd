/**
 * Export → HTML on the page: the same self-contained file as `doc.save_html()` in Python
 * (backend/gradtrace/notebook/html.py), from the same template (static/standalone.html) and
 * the same script (dist/standalone.js): the run as gzip-compressed base64 JSON, the viewer
 * inline. The file opens offline and plays the whole run.
 */
async function gzipBase64(text) {
  const stream = new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"));
  const bytes = new Uint8Array(await new Response(stream).arrayBuffer());
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/** Bytes of tensors a saved file carries at most (carried_tensors.py TENSOR_BUDGET). */
export const TENSOR_BUDGET = 8 << 20;

function base64(bytes) {
  let bin = "";
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/** The saved file's `gt-tensors` element with the run's whole tensor file, or null. */
async function carriedTensorFile(doc) {
  const file = doc.tensors;
  if (!doc.id || !file || !file.bytes) return null;
  const info = { budget_bytes: TENSOR_BUDGET, count: file.count, bytes: file.bytes, left_out_count: 0, left_out_bytes: 0 };
  if (file.bytes > TENSOR_BUDGET) {
    return `<script type="application/octet-stream+base64" id="gt-tensors" data-info="${escapeHtml(JSON.stringify({ ...info, count: 0, bytes: 0, left_out_count: file.count, left_out_bytes: file.bytes }))}"></script>`;
  }
  const res = await fetch(`/api/runs/${encodeURIComponent(doc.id)}/tensors.safetensors`).catch(() => null);
  if (!res || !res.ok) return null;
  const bytes = new Uint8Array(await res.arrayBuffer());
  return `<script type="application/octet-stream+base64" id="gt-tensors" data-info="${escapeHtml(JSON.stringify(info))}">${base64(bytes)}</script>`;
}

const escapeHtml = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

/**
 * The HTML text of the standalone file for `doc`, as a Blob. `view` is a share link's query
 * (app/link.js): the file opens at that step, selection, folds and camera. `title` names it.
 */
export async function toStandaloneHtml(doc, { version = "", view = "", title = null } = {}) {
  const text = (url, what) => fetch(new URL(url, import.meta.url)).then((r) => { if (!r.ok) throw new Error(`${what}: ${r.status}`); return r.text(); });
  // The file's own policy (NOTE [saved file policy] in frontend/standalone-csp.mjs).
  const [template, script, csp] = await Promise.all([text("../static/standalone.html", "template"),
    text("./standalone.js", "viewer script"), text("./standalone-csp.txt", "policy")]);
  const fill = { CSP: escapeHtml(csp.trim()), VERSION: escapeHtml(version), TITLE: escapeHtml(title || `gradtrace · run ${doc.id || ""}`.trim()),
    PAYLOAD: await gzipBase64(JSON.stringify(doc)), SCRIPT: script.replaceAll("</script", "<\\/script") };
  let html = template.replace(/@(CSP|VERSION|TITLE|PAYLOAD|SCRIPT)@/g, (_, k) => fill[k]);
  // The view travels as a query string in its own element (read by standalone.js); a text/plain
  // script is data, never run, so the file's policy needs no hash for it.
  // The service's explanations of the run's nodes, carried as a saved file carries them
  // (backend/gradtrace/notebook/html.py with_explanations): data, never run.
  const bundle = doc.id ? await fetch(`/api/runs/${encodeURIComponent(doc.id)}/explanations`).then((r) => (r.ok ? r.text() : null)).catch(() => null) : null;
  if (bundle) html = html.replace('<script type="application/gzip+base64" id="gt-run">', `<script type="application/gzip+base64" id="gt-explain">${await gzipBase64(bundle)}</script>\n<script type="application/gzip+base64" id="gt-run">`);
  // The run's tensor file, whole, when it is within the saved file's budget (NOTE [tensors
  // carried offline] in backend/gradtrace/notebook/carried_tensors.py; doc.save_html cuts a
  // larger one down, the page carries none and its inspector says so).
  const tensors = await carriedTensorFile(doc);
  if (tensors) html = html.replace('<script type="application/gzip+base64" id="gt-run">', `${tensors}\n<script type="application/gzip+base64" id="gt-run">`);
  // A script element's text is raw (no entity is decoded in it), so the query goes in as it is:
  // URLSearchParams writes no "<", and none could end the element early.
  if (view) html = html.replace('<script type="application/gzip+base64"', `<script type="text/plain" id="gt-view">${view.replaceAll("<", "%3C")}</script>\n<script type="application/gzip+base64"`);
  return new Blob([html], { type: "text/html" });
}
