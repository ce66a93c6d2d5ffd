/**
 * Where a viewer's tensors come from: one interface, three sources.
 *
 * NOTE [tensor sources]
 *   A source is `{where, read(key) -> Promise<tensor>, prepare()}` (tensor: safetensors.js decodeTensor's
 *   `{dtype, shape, values, big}` plus its `key`). Reads are cached by key, a failed one is not.
 *   - `rangeSource(base)`: the service. The index (`GET {base}/tensors`) once, then one HTTP
 *     Range request per tensor on `{base}/tensors.safetensors` (docs/CONTRACT.md, "The tensor
 *     file"): only the tensors looked at are fetched, so the page's first frame never waits
 *     for the tensor file. `prepare()` asks for the index alone: the inspector calls it when
 *     the page is idle after drawing a run's graph (ui/tensors.js). A look before the index
 *     has arrived asks for the tensor by its key (`GET {base}/tensors/{key}`: its bytes, with
 *     its dtype and shape in `X-Tensor-Dtype` / `X-Tensor-Shape`), so every first look is one
 *     round trip, never the index and then its Range in a row (NOTE [one round trip for the
 *     first look] in backend/gradtrace/api/tensor_keys.py).
 *   - `bytesSource(bytes, leftOut)`: a saved HTML file carries a safetensors file of its own
 *     (backend/gradtrace/notebook/html.py, within the size budget it states); a key it left
 *     out answers why.
 *   - `kernelSource(ask)`: the notebook widget asks its kernel for one tensor by key
 *     (src/widget/index.js, backend/gradtrace/notebook/widget.py) and gets the tensor's raw
 *     bytes in the message's buffer.
 *   `prefetch(keys)` starts reading tensors that are likely to be looked at next (NOTE [fetched
 *   on hover] in ui/tensors.js); only the service's source does anything, and only for keys
 *   of at most PREFETCH_BYTES in all: the first look then finds its bytes on their way.
 *   Each tensor read carries `timing` (ms): `fetch` (the index and its bytes arriving, 0 for
 *   bytes in memory) and `decode`; the inspector adds its drawing (ui/tensors.js, data-*-ms),
 *   which bench/bench_tensor_page.py reports split.
 */
import { decodeTensor, parseHeader } from "./safetensors.js";

/** `decode()`'s tensor with its `timing`: fetched from `t0` until now, then decoded. */
function timed(t0, decode) {
  const t1 = performance.now();
  const t = decode();
  t.timing = { fetch: t1 - t0, decode: performance.now() - t1 };
  return t;
}

/** Bytes one prefetch asks for at most (four 256×256 float32 tensors). */
export const PREFETCH_BYTES = 1 << 20;

function cached(where, load, prepare = () => {}, plan = null) {
  const memo = new Map();
  return {
    where,
    prepare,
    prefetch(keys) {
      if (!plan) return;
      const todo = keys.filter((k) => !memo.has(k));
      if (todo.length) plan(todo).then((ok) => { for (const k of ok) this.read(k).catch(() => { /* said at the look */ }); }, () => {});
    },
    read(key) {
      let p = memo.get(key);
      if (!p) {
        p = load(key).then((t) => ({ key, ...t }));
        memo.set(key, p);
        p.catch(() => memo.delete(key));
        if (memo.size > 256) memo.delete(memo.keys().next().value);  // the oldest look
      }
      return p;
    },
  };
}

async function failure(res, what) {
  let msg = `${what}: the server answered ${res.status}`;
  try { const e = (await res.json()).error; if (e && e.message) msg = e.message; } catch { /* not JSON */ }
  return new Error(msg);
}

/** The service's tensor file of a run (`/api/runs/{id}`) or a share (`/api/shares/{id}`). */
export function rangeSource(base) {
  let index = null, known = null;
  const entries = () => {
    index ??= fetch(`${base}/tensors`).then(async (res) => {
      if (!res.ok) throw Object.assign(await failure(res, "the tensor index"), { status: res.status });
      const body = await res.json();
      return (known = new Map(body.tensors.map((t) => [t.key, t])));
    });
    // an answer (no file kept: 404) stands for the document's life; a failed connection is asked again
    index.catch((err) => { if (!err.status) index = null; });
    return index;
  };
  const prepare = () => { entries().catch(() => { /* asked again, and answered, at the first look */ }); };
  const ask = (t) => fetch(`${base}/tensors.safetensors`, { headers: { Range: `bytes=${t.start}-${t.end - 1}` } });
  /** The tensor by its key alone: `null` when the answer does not say its dtype and shape. */
  const byKey = async (key, t0) => {
    const res = await fetch(`${base}/tensors/${encodeURIComponent(key)}`);
    if (!res.ok) throw await failure(res, `tensor ${key}`);
    const dtype = res.headers.get("X-Tensor-Dtype"), shape = res.headers.get("X-Tensor-Shape");
    if (!dtype || !shape) return null;
    const bytes = new Uint8Array(await res.arrayBuffer());
    return timed(t0, () => decodeTensor(dtype, JSON.parse(shape), bytes));
  };
  const source = cached("service", (key) => {
    const t0 = performance.now();
    if (!known) return byKey(key, t0).then((t) => t || load(key, t0));
    return load(key, t0);
  }, prepare, async (keys) => {
    const all = await entries();
    const found = keys.filter((k) => all.has(k));
    const bytes = found.reduce((a, k) => a + all.get(k).end - all.get(k).start, 0);
    return bytes <= PREFETCH_BYTES ? found : [];
  });
  // whether the index has arrived: a look now reads by Range, before it by key (tests read it)
  return Object.defineProperty(source, "indexed", { get: () => known !== null });

  /** The tensor through the index and one Range request. */
  function load(key, t0) {
    // With the index in hand the request goes out now, not once the task that asked (a
    // selection building the whole inspector) has ended: its answer travels meanwhile.
    const early = known && known.get(key);
    const asked = early && early.end > early.start ? ask(early) : null;
    return (async () => {
      const t = early || (await entries()).get(key);
      if (!t) throw new Error(`the run's tensor file has no ${key}`);
      let bytes = new Uint8Array(0);
      if (t.end > t.start) {
        const res = await (asked || ask(t));
        if (res.status !== 206 && !res.ok) throw await failure(res, `tensor ${key}`);
        bytes = new Uint8Array(await res.arrayBuffer());
        if (res.status === 200) bytes = bytes.subarray(t.start, t.end);  // a server that ignored the Range
      }
      return timed(t0, () => decodeTensor(t.dtype, t.shape, bytes));
    })();
  }
}

/** A whole safetensors file in memory (a saved HTML file's). `leftOut`: key → why it is not there. */
export function bytesSource(bytes, leftOut = new Map(), why = "this file does not carry it") {
  const { tensors } = parseHeader(bytes);
  return cached("file", async (key) => {
    const t = tensors.get(key);
    if (!t) throw new Error(leftOut.get(key) || why);
    return timed(performance.now(), () => decodeTensor(t.dtype, t.shape, bytes.subarray(t.start, t.end)));
  });
}

/** The notebook kernel: `ask(key)` answers `{dtype, shape, bytes}` (the tensor's raw bytes). */
export function kernelSource(ask) {
  return cached("kernel", async (key) => {
    const t0 = performance.now();
    const t = await ask(key);
    return timed(t0, () => decodeTensor(t.dtype, t.shape, t.bytes));
  });
}

/** The playground's sources: a run's file, or a share's (`shareOf(doc)`: the share's id when the page shows that share's document). */
export function serviceTensors(shareOf = () => null) {
  const sources = new Map();
  return (doc) => {
    if (!doc || !doc.id || !doc.tensors) return null;
    const share = shareOf(doc);
    const base = share ? `/api/shares/${encodeURIComponent(share)}` : `/api/runs/${encodeURIComponent(doc.id)}`;
    if (!sources.has(base)) sources.set(base, rangeSource(base));
    return sources.get(base);
  };
}
