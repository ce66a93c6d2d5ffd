/**
 * The notebook widget (anywidget's ESM contract: `export default { render }`): the viewer of
 * src/embed.js over a model that carries
 *   _doc       the run document, gzip-compressed canonical JSON, sent as a binary buffer
 *              (NOTE [documents through the comm] in backend/gradtrace/notebook/widget.py)
 *   step       the timeline step, both ways
 *   _selected  the selected node as {id, name, kind, line, module}, or null, both ways (Python
 *              sets {id} to select a node)
 *   run_url    a link to the run's page on a service, or ""
 *   height     CSS height of the viewer
 *   _check     the latest gradient check (schema/gradcheck.py's GradcheckResult), or null: the
 *              "Check gradient" button sends {type: "check", node} and Python answers here
 *   _explain   the latest "Explain this node" answer, {seq, answer} or {seq, error}: the panel
 *              sends {type: "explain", node, index, seq} and Python answers here
 * and the inspector's tensors, one by key: {type: "tensor", key, seq} to the kernel, answered
 * by a custom message with the tensor's raw bytes as its buffer (NOTE [tensors through the
 * comm] in backend/gradtrace/notebook/widget.py; tensors/source.js kernelSource).
 * Everything it needs ships in this one file: the page's modules, the layout worker's source
 * (started from a blob URL) and the page's CSS. No server, no CDN.
 */
import WORKER_SOURCE from "gt:layout-worker-source";
import CSS from "gt:viewer-css";
import { EmbeddedViewer, gunzipJson } from "../embed.js";
import { kernelSource } from "../tensors/source.js";

let workerUrl = null;
function layoutWorkerUrl() {
  workerUrl ??= URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "text/javascript" }));
  return workerUrl;
}

function bytesOf(v) {
  if (!v) return null;
  if (v instanceof DataView) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  return v;
}

async function render({ model, el }) {
  const host = document.createElement("div");
  host.className = "gradtrace-widget";
  host.style.display = "block";
  el.append(host);
  let pending = null; // the check the button asked for, answered through _check
  const checks = (doc, node) => new Promise((resolve, reject) => {
    pending = { resolve, reject };
    model.send({ type: "check", node: node.id, every: !!node.every });
  });
  // "Explain this node" asks the kernel (GradtraceWidget._on_msg), which answers through _explain
  // with the request's number: only the latest request's answer is taken.
  let asked = 0;
  let waiting = null;
  const explain = (doc, node, index) => new Promise((resolve, reject) => {
    asked += 1;
    waiting = { resolve, reject, seq: asked };
    model.send({ type: "explain", node: node.id, index: index || null, seq: asked });
  });
  const onExplain = () => {
    const got = model.get("_explain");
    if (!got || !waiting || got.seq !== waiting.seq) return;
    const w = waiting; waiting = null;
    if (got.error) w.reject(new Error(got.error)); else w.resolve(got.answer);
  };
  // The inspector's tensors: each request has its number, every answer is taken by its number.
  const asking = new Map();
  let tensorSeq = 0;
  const onCustom = (msg, buffers) => {
    if (!msg || msg.type !== "tensor" || !asking.has(msg.seq)) return;
    const w = asking.get(msg.seq); asking.delete(msg.seq);
    if (msg.error) w.reject(new Error(msg.error));
    else w.resolve({ dtype: msg.dtype, shape: msg.shape, bytes: bytesOf(buffers && buffers[0]) || new Uint8Array(0) });
  };
  let source = null;
  const tensors = (doc) => {
    if (!doc || !doc.tensors) return null;
    source ??= kernelSource((key) => new Promise((resolve, reject) => {
      tensorSeq += 1;
      asking.set(tensorSeq, { resolve, reject });
      model.send({ type: "tensor", key, seq: tensorSeq });
    }));
    return source;
  };
  const viewer = new EmbeddedViewer(host, {
    checks,
    explain,
    tensors,
    css: CSS,
    workerUrl: layoutWorkerUrl(),
    height: model.get("height"),
    onStep: (k) => { if (model.get("step") !== k) { model.set("step", k); model.save_changes(); } },
    onSelect: (sel) => { model.set("_selected", sel); model.save_changes(); },
  });
  // For tests and benchmarks: the viewer behind this output.
  host.gradtrace = viewer;
  const load = async () => {
    const bytes = bytesOf(model.get("_doc"));
    if (!bytes || !bytes.byteLength) return;
    const t0 = performance.now();
    const doc = await gunzipJson(bytes);
    source = null;  // a new document: its own tensors
    const timing = await viewer.load(doc, { step: model.get("step") >= 0 ? model.get("step") : null, runUrl: model.get("run_url") || null });
    if (timing) Object.assign(host.dataset, { loadMs: String(Math.round(performance.now() - t0)), drawnAt: String(Date.now()) });
    const sel = model.get("_selected");
    if (sel && sel.id) viewer.selectById(sel.id);
  };
  const onStep = () => { const k = model.get("step"); if (k >= 0 && k !== viewer.player.k) viewer.go(k); };
  const onSel = () => {
    const sel = model.get("_selected");
    if ((sel ? sel.id : null) !== viewer.selectedId()) viewer.selectById(sel ? sel.id : null);
  };
  const onCheck = () => {
    const result = model.get("_check");
    if (!result) return;
    if (pending) { const p = pending; pending = null; if (result.status === "refused") p.reject(new Error(result.message)); else p.resolve(result); }
    else if (viewer.viewer.panels.gradcheck && result.status !== "refused") viewer.viewer.panels.gradcheck.show(result); // checked from Python
  };
  model.on("change:_doc", load);
  model.on("change:step", onStep);
  model.on("change:_selected", onSel);
  model.on("change:_check", onCheck);
  model.on("change:_explain", onExplain);
  model.on("msg:custom", onCustom);
  await load();
  return () => {
    model.off("change:_doc", load);
    model.off("change:step", onStep);
    model.off("change:_selected", onSel);
    model.off("change:_check", onCheck);
    model.off("change:_explain", onExplain);
    model.off("msg:custom", onCustom);
    viewer.destroy();
  };
}

export default { render };
