/**
 * The page's side of the layout worker: one request at a time wins (a newer request makes
 * older answers stale), with an in-thread fallback when workers are unavailable.
 */
import { layered } from "./layered.js";

export class LayoutClient {
  constructor(workerUrl) {
    this.seq = 0;
    this.pending = new Map();
    try {
      this.worker = new Worker(workerUrl);
      this.worker.onmessage = (ev) => this._answer(ev.data);
      this.worker.onerror = (ev) => { ev.preventDefault(); this._failAll(ev.message || "layout worker failed"); this.worker = null; };
    } catch {
      this.worker = null;
    }
  }

  /** Lay out {w, h, src, dst}; resolves to the layered() result plus `ms`, or rejects with the error. */
  layout(graph, opts) {
    const id = ++this.seq;
    if (!this.worker) {
      const t0 = performance.now();
      return Promise.resolve({ ...layered(graph, opts), ms: performance.now() - t0 });
    }
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, graph, opts });
    });
  }

  _answer({ id, result, ms, error }) {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    if (error) p.reject(new Error(error)); else p.resolve({ ...result, ms });
  }

  _failAll(message) {
    for (const p of this.pending.values()) p.reject(new Error(message));
    this.pending.clear();
  }
}
