/**
 * The self-contained HTML file (`doc.save_html(...)`, Export → HTML on the page): mounts the
 * viewer of src/embed.js on `#gradtrace` and plays the run embedded in the same file as
 * gzip-compressed, base64-encoded JSON (`<script type="application/gzip+base64" id="gt-run">`).
 * The layout worker's source and the CSS are in this bundle: the file opens offline.
 */
import WORKER_SOURCE from "gt:layout-worker-source";
import CSS from "gt:viewer-css";
import { decodeView } from "./app/link.js";
import { fromCarried } from "./ui/explain.js";
import { bytesSource } from "./tensors/source.js";
import { EmbeddedViewer, gunzipJson } from "./embed.js";

function base64Bytes(text) {
  const bin = atob(text.replace(/\s+/g, ""));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// NOTE [saved file in a narrow window]: the file is the whole window, as the page is, so below
// 900 px it takes the page's narrow arrangement (static/app.css, NOTE [narrow windows]): the
// inspector under the code and the graph the whole height of its column, with a one-row
// toolbar that scrolls. A notebook's column keeps the widget's own (src/widget/viewer.css).
const SAVED_CSS = `
@container (max-width: 900px) {
  .gt-viewer .gt-main { grid-template-columns: minmax(200px, 32%) minmax(0, 1fr); grid-template-rows: minmax(0, 1fr) minmax(120px, 40%);
    grid-template-areas: "code graph" "inspector graph"; }
  .gt-viewer .gt-inspector { border-top: 1px solid var(--border); border-right: 1px solid var(--border); }
  .gt-viewer .gt-toolbar { flex-wrap: nowrap; overflow-x: auto; }
  .gt-viewer .gt-toolbar > * { flex: none; }
}
.gt-keys { flex-shrink: 0; }`;

/**
 * The tensors the file carries (NOTE [tensors carried offline] in
 * backend/gradtrace/notebook/carried_tensors.py), read when a node is inspected; a tensor left
 * out says the file's budget.
 */
function carriedTensors() {
  const carried = document.getElementById("gt-tensors");
  if (!carried) return null;
  let source = null;
  const info = JSON.parse(carried.dataset.info || "{}");
  const why = info.left_out_count
    ? `this saved file left it out: it carries ${info.count} tensors within its ${Math.round(info.budget_bytes / 1048576 * 10) / 10} MiB budget, ${info.left_out_count} left out; open the run on a gradtrace service for every number`
    : "this saved file does not carry it";
  return (doc) => {
    if (!doc || !doc.tensors) return null;
    source ??= carried.textContent.trim() ? bytesSource(base64Bytes(carried.textContent), new Map(), why)
      : { where: "file", read: () => Promise.reject(new Error(why)) };  // over the budget: none carried
    return source;
  };
}

async function main() {
  const host = document.getElementById("gradtrace");
  const workerUrl = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "text/javascript" }));
  // The explanations the file carries (backend/gradtrace/notebook/html.py), when it has them.
  const carried = document.getElementById("gt-explain");
  const explain = carried ? fromCarried(await gunzipJson(base64Bytes(carried.textContent))) : undefined;
  const viewer = new EmbeddedViewer(host, { css: CSS + SAVED_CSS, workerUrl, height: "calc(100vh - 42px)", explain, tensors: carriedTensors() });
  window.gradtrace = { viewer };
  const el = document.getElementById("gt-run");
  const doc = await gunzipJson(base64Bytes(el.textContent));
  // Export → HTML on the page writes the view it was saved from (app/link.js).
  const viewEl = document.getElementById("gt-view");
  // (a file whose query was written HTML-escaped reads the same: "&amp;" is "&" there)
  const query = viewEl ? viewEl.textContent.trim().replaceAll("&amp;", "&") : "";
  const view = viewEl ? decodeView(query) : null;
  if (viewEl && viewer.viewer.panels.predict) viewer.viewer.panels.predict.fromQuery(query);  // a teacher's questions
  window.gradtrace.timing = await viewer.load(doc, { step: view ? view.step : null, view });
}

main().catch((err) => {
  document.body.append(Object.assign(document.createElement("pre"), { textContent: `gradtrace could not open this run: ${err.message}` }));
  console.error(err);
});
