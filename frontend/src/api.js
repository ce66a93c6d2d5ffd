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
