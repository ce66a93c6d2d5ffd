/**
 * The layout Web Worker: receives {id, graph, opts}, answers {id, result, ms} or {id, error}.
 * Layout never runs on the page's thread, so a 20k-node graph cannot freeze the page.
 */
import { layered } from "./layered.js";

self.onmessage = (ev) => {
  const { id, graph, opts } = ev.data;
  const t0 = performance.now();
  try {
    const result = layered(graph, opts);
    self.postMessage({ id, result, ms: performance.now() - t0 }, [result.x.buffer, result.y.buffer]);
  } catch (err) {
    self.postMessage({ id, error: String((err && err.message) || err) });
  }
};
