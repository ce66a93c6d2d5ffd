/**
 * The page's calls to the service. Errors come back as {"error": {code, message, detail}}
 * (docs/CONTRACT.md); they are turned into ApiError with the message the server wrote.
 */
export class ApiError extends Error {
  constructor(status, code, message, detail) {
    super(message);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

async function post(path, body, signal) {
  let res;
  try {
    res = await fetch(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal });
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError(0, "network", `Could not reach the server: ${err.message}`);
  }
  let data = null;
  try { data = await res.json(); } catch { /* not JSON: handled below */ }
  if (!res.ok) {
    const e = (data && data.error) || {};
    throw new ApiError(res.status, e.code || `http_${res.status}`, e.message || `The server answered ${res.status}.`, e.detail);
  }
  if (data === null) throw new ApiError(res.status, "bad_json", "The server's answer was not JSON.");
  return data;
}

export function runSnippet({ code, device, seed, exercise }, signal) {
  return post("/api/runs", exercise ? { code, device, seed, exercise } : { code, device, seed }, signal);
}

/**
 * Share a run. A run the server still keeps is shared by its id (a few ms, nothing re-sent);
 * a document the server does not have (an expired run, an edited copy) is posted whole.
 */
export async function shareDocument(doc, { stored = true } = {}) {
  if (stored && doc.id && !doc.goals) {  // the stored run has no goals: a checked exercise is posted whole
    try {
      return await post("/api/shares", { run_id: doc.id });
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 404) throw err;
    }
  }
  return post("/api/shares", { document: doc });
}

/** Compare two runs (POST /api/compare): each side {run_id} | {share_id} | {document}. */
export function compareRuns(a, b, signal) {
  return post("/api/compare", { a, b }, signal);
}

/** Share both runs and get the compare page's link (POST /api/compare/links). */
export function compareLink(a, b) {
  return post("/api/compare/links", { a, b });
}

/** The service's URL of one node's explanation (index: the element's coordinates, or null for the first). */
export function explainUrl(docId, nodeId, index) {
  const q = new URLSearchParams({ node: nodeId });
  if (index && index.length) q.set("index", index.join(","));
  return `/api/runs/${encodeURIComponent(docId)}/explain?${q}`;
}

/** A gradient check of the shown run by the service that ran it (POST /api/runs/{id}/gradcheck). */
export async function checkOnService(doc, node, signal) {
  if (!doc.id) throw new Error("This run is not stored on the service: run it again to check it.");
  const body = node.every ? { target: { kind: "parameters" } } : { node: node.id };
  if (node.passIndex != null) body.pass_index = node.passIndex;
  const res = await fetch(`/api/runs/${encodeURIComponent(doc.id)}/gradcheck`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal,
  });
  const data = await res.json().catch(() => null);
  if (!res.ok) throw new Error((data && data.error && data.error.message) || `The server answered ${res.status}.`);
  return data;
}

/** One node's explanation by the service (GET /api/runs/{id}/explain). */
export async function explainOnService(doc, node, index, signal) {
  const res = await fetch(explainUrl(doc.id, node.id, index), { signal });
  const body = await res.json();
  if (!res.ok) throw new Error((body.error && body.error.message) || `HTTP ${res.status}`);
  return body;
}

/**
 * The service as a viewer's panels reach it: one object per viewer, in the panels' context
 * (NOTE [one panel shape] in ui/registry.js), so no panel imports a fetch helper. On the
 * playground page (`checks: true`) it is this service; a notebook widget answers from its
 * kernel (`checks` and `explain` are its functions); a saved HTML file explains from what it
 * carries and checks nothing. `check`/`explain` are null where nothing answers.
 * `tensors(doc)`: the document's tensor source (NOTE [tensor sources] in tensors/source.js),
 * or null; the page reads the run's or share's file, a saved file its own, a widget its kernel.
 * @param {{checks?: true|Function|null, explain?: Function|null, tensors?: Function|null}} opts
 */
export function service({ checks = null, explain = null, tensors = null } = {}) {
  const live = checks === true;
  return {
    live,  // a saved file or a widget cannot re-run a gradient check (ui/goals.js says so)
    check: live ? checkOnService : typeof checks === "function" ? checks : null,
    explain: live ? explainOnService : explain || null,
    tensors: tensors || null,
  };
}
