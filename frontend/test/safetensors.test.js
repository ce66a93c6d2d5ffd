// The page's safetensors reader (src/tensors/safetensors.js): header, exact float16/bfloat16
// from their bits, int64 through BigInt, float32 printed as the shortest same float32; and the
// inspector's list of a node's tensors (src/tensors/keys.js).
import test from "node:test";
import assert from "node:assert/strict";
import { bf16, decodeTensor, exactText, f16, finiteStats, parseHeader, shortText, strides } from "../src/tensors/safetensors.js";
import { colourOf, histogram, TENSOR_COLOURS } from "../src/tensors/draw.js";

/** A safetensors file as the format says: u64 header length, JSON header, raw buffers. */
function file(tensors) {
  const header = {};
  let off = 0;
  for (const [key, dtype, shape, bytes] of tensors) { header[key] = { dtype, shape, data_offsets: [off, off + bytes.byteLength] }; off += bytes.byteLength; }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + off);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  let at = 8 + json.length;
  for (const [, , , bytes] of tensors) { out.set(bytes, at); at += bytes.byteLength; }
  return out;
}
const u8 = (typed) => new Uint8Array(typed.buffer);

test("float16 and bfloat16 decode exactly from their bits", () => {
  assert.equal(f16(0x3c00), 1);
  assert.equal(f16(0xc000), -2);
  assert.equal(f16(0x7bff), 65504);
  assert.equal(f16(0x0001), 2 ** -24);  // the smallest subnormal
  assert.equal(f16(0x3555), 0.333251953125);
  assert.equal(f16(0x7c00), Infinity);
  assert.equal(f16(0xfc00), -Infinity);
  assert.ok(Number.isNaN(f16(0x7e00)));
  assert.ok(Object.is(f16(0x8000), -0));
  assert.equal(bf16(0x3f80), 1);
  assert.equal(bf16(0x4049), 3.140625);
  assert.equal(bf16(0xff80), -Infinity);
  assert.ok(Number.isNaN(bf16(0x7fc0)));
});

test("a file's header gives absolute byte ranges, and each tensor decodes from its slice", () => {
  const a = new Float32Array([0.1, -2.5, NaN, Infinity, -Infinity, 3]);
  const b = new Uint16Array([0x3c00, 0x3555]);
  const c = new BigInt64Array([2n ** 62n + 1n, -5n]);
  const bytes = file([["n1.out0", "F32", [2, 3], u8(a)], ["e0.gi0", "F16", [2], u8(b)], ["n2.value", "I64", [2], u8(c)]]);
  const { tensors, headerBytes } = parseHeader(bytes);
  assert.deepEqual([...tensors.keys()], ["n1.out0", "e0.gi0", "n2.value"]);
  const t = tensors.get("e0.gi0");
  assert.equal(t.start, headerBytes + 24);
  assert.equal(t.end, headerBytes + 28);
  const x = decodeTensor("F32", [2, 3], bytes.subarray(tensors.get("n1.out0").start, tensors.get("n1.out0").end));
  assert.deepEqual([0, 1, 2, 3, 4, 5].map((i) => exactText(x, i)), ["0.1", "-2.5", "nan", "inf", "-inf", "3"]);
  const h = decodeTensor("F16", [2], bytes.subarray(t.start, t.end));  // starts at an odd offset of the buffer
  assert.equal(exactText(h, 1), "0.333251953125");
  const n = tensors.get("n2.value");
  const i = decodeTensor("I64", [2], bytes.subarray(n.start, n.end));
  assert.equal(exactText(i, 0), "4611686018427387905");
  assert.equal(exactText(i, 1), "-5");
});

test("a table cell shows four significant digits, an exponent outside 1e-3..1e5, and integers whole", () => {
  const x = decodeTensor("F32", [8], u8(new Float32Array([-0.04393714, 0.2563389, 123456.7, 1.5e-7, 0, NaN, -Infinity, 2])));
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => shortText(x, i)), ["-0.04394", "0.2563", "1.235e+5", "1.5e-7", "0", "nan", "-inf", "2"]);
  assert.equal(exactText(x, 0), "-0.04393714");  // the exact digits stay the cell's title
  const i = decodeTensor("I64", [1], u8(new BigInt64Array([2n ** 62n + 1n])));
  assert.equal(shortText(i, 0), "4611686018427387905");
  const b = decodeTensor("BOOL", [1], new Uint8Array([1]));
  assert.equal(shortText(b, 0), "True");
});

test("bad bytes are a clear error, not a wrong tensor", () => {
  assert.throws(() => parseHeader(new Uint8Array(4)), /shorter than its 8-byte header/);
  const bytes = new Uint8Array(16);
  new DataView(bytes.buffer).setBigUint64(0, 1000n, true);
  assert.throws(() => parseHeader(bytes), /its header says 1000 bytes/);
  assert.throws(() => decodeTensor("F32", [3], new Uint8Array(8)), /needs 12 bytes, got 8/);
  assert.throws(() => decodeTensor("C64", [1], new Uint8Array(8)), /cannot read dtype C64/);
});

test("statistics, histogram and colours set NaN and Inf apart from the scale", () => {
  const v = new Float64Array([0, 1, -1, NaN, Infinity, -Infinity, 0.5]);
  const st = finiteStats(v);
  assert.deepEqual([st.min, st.max, st.nan, st.pinf, st.ninf, st.zeros, st.finite], [-1, 1, 1, 1, 1, 1, 4]);
  assert.deepEqual(histogram(v, -1, 1, 4), [1, 0, 1, 2]);
  assert.deepEqual(colourOf(NaN, 1), TENSOR_COLOURS.nan);
  assert.deepEqual(colourOf(Infinity, 1), TENSOR_COLOURS.pinf);
  assert.deepEqual(colourOf(-Infinity, 1), TENSOR_COLOURS.ninf);
  assert.deepEqual(colourOf(1, 1), TENSOR_COLOURS.pos);
  assert.deepEqual(colourOf(-1, 1), TENSOR_COLOURS.neg);
  assert.deepEqual(colourOf(0, 1), TENSOR_COLOURS.zero);
  assert.deepEqual(strides([2, 3, 4]), [12, 4, 1]);
});

// A recorded loop (fixtures/tensors_loop.json: two steps of `w -= 0.1 * w.grad` on
// relu(x @ w).sum()), its tensors listed per node and step.
import { readFileSync } from "node:fs";
import { pageModel } from "../src/app/model.js";
import { nodeTensors } from "../src/tensors/keys.js";
import { nodeStatistic, tintOf } from "../src/ui/colour-by.js";

const loop = JSON.parse(readFileSync(new URL("./fixtures/tensors_loop.json", import.meta.url), "utf8"));

test("a node's tensors at a step: its output, the gradients at its last backward step, a leaf's .grad then and its values", () => {
  const m = pageModel(loop);
  const i = m.index.idx.get("n6"), tl = m.timeline;  // the second MmBackward0
  const end = nodeTensors(m.index, tl, i, tl.N);
  assert.equal(end[0].key, "n6.out0");
  assert.match(end[0].title, /^output/);
  const step = tl.lastBackward(i, tl.N);
  assert.ok(end.some((t) => t.key === `e${step - 1}.go0` && /flowing in/.test(t.title)));
  assert.ok(end.some((t) => t.key && t.key.startsWith(`e${step - 1}.gi`) && /flowing out/.test(t.title)));
  assert.deepEqual(nodeTensors(m.index, tl, i, 0).map((t) => t.key), ["n6.out0"]);  // before any backward
  const w = m.index.idx.get("n4");
  const keys = (k) => nodeTensors(m.index, tl, w, k).map((t) => t.key);
  // .grad at a step: what the AccumulateGrad event of that accumulation wrote (its key e{i}.grad)
  const accs = tl.events.flatMap((e, j) => (e.node === "n0" && e.phase === "backward" ? [j] : []));
  assert.equal(accs.length, 2);
  assert.deepEqual(keys(tl.N), [`e${accs[1]}.grad`, "n4.value", "n4.end"]);
  assert.deepEqual(keys(accs[0] + 1), [`e${accs[0]}.grad`, "n4.value", "n4.end"]);
  assert.deepEqual(keys(0), ["n4.value", "n4.end"]);
  // a value without a key says why
  const bare = { ...loop, tensors: undefined };
  const b = pageModel(bare);
  const item = nodeTensors(b.index, b.timeline, b.index.idx.get("n6"), 0)[0];
  assert.equal(item.key, "n6.out0");  // the key is the TensorValue's; the file's absence is the source's to say
  // an output the recording let go of (the budget): no TensorValue, the file's left_out names it
  const nodes = loop.graph.nodes.map((n) => (n.id === "n6" ? { ...n, output: null } : n));
  const gone = pageModel({ ...loop, graph: { ...loop.graph, nodes },
    tensors: { ...loop.tensors, left_out: [{ key: "n6.out0", reason: "budget", bytes: 64 }], left_out_count: 1 } });
  const first = nodeTensors(gone.index, gone.timeline, gone.index.idx.get("n6"), 0)[0];
  assert.match(first.title, /^output/);
  assert.equal(first.key, null);
  assert.equal(first.why, "not kept: past the run's byte budget");
  // a value the file could not hold (a sparse .grad, a complex output): its own reason, in words
  const w4 = loop.graph.nodes.find((n) => n.id === "n4");
  const odd = pageModel({ ...loop, graph: { ...loop.graph, nodes: loop.graph.nodes.map((n) => (n.id === "n4" ? { ...n, value: { ...w4.value, key: null } } : n)) },
    tensors: { ...loop.tensors, left_out: [{ key: "n6.out0", reason: "budget", bytes: 64 }, { key: "n4.value", reason: "dtype", bytes: 0 }], left_out_count: 2 } });
  const start = nodeTensors(odd.index, odd.timeline, odd.index.idx.get("n4"), 0).find((t) => t.title === "value at the start");
  assert.equal(start.key, null);
  assert.match(start.why, /^not kept: a dtype or layout a safetensors file cannot hold \(complex, sparse/);
  // one the file does not list: the file's reasons together
  const unlisted = pageModel({ ...loop, graph: odd.index.doc.graph, tensors: { ...loop.tensors, left_out: [], left_out_count: 3 } });
  const why = nodeTensors(unlisted.index, unlisted.timeline, unlisted.index.idx.get("n4"), 0).find((t) => t.title === "value at the start").why;
  assert.equal(why, "not kept: 3 tensors were left out of this run's file (reasons not listed)");
});

test("colour by a statistic reads the document's stats: ‖value‖, ‖grad‖, and zeros from inline values", () => {
  const m = pageModel(loop);
  const at = (id, stat) => nodeStatistic(m.index, m.timeline, m.index.idx.get(id), stat);
  const w = loop.graph.nodes.find((n) => n.id === "n4");
  assert.equal(at("n4", "value"), Number(w.value.stats.norm));
  assert.equal(at("n4", "grad"), Number(w.grad.stats.norm));
  const mm = loop.graph.nodes.find((n) => n.id === "n6");
  assert.equal(at("n6", "value"), Number(mm.output[0].stats.norm));
  const flat = [w.grad.values].flat(Infinity);
  assert.equal(at("n4", "zeros"), flat.filter((x) => x === 0).length / flat.length);
  assert.equal(at("n4", "nothing"), null);
  const scene = { view: { vnodes: m.index.nodes.map((_, r) => ({ refs: [r] })) } };
  const { tint, shown } = tintOf(m, scene, "grad");
  assert.equal(tint.size, shown);
  assert.ok(shown >= 5);
});

test("the heatmap's fast painter gives colourOf's colours", async () => {
  const { paint } = await import("../src/tensors/draw.js");
  const v = new Float64Array([0, 0.3, -0.7, 2, -5, NaN, Infinity, -Infinity, 1e-9]);
  const px = new Uint8ClampedArray(v.length * 4);
  paint(px, v, 0, v.length, 1);
  v.forEach((x, i) => assert.deepEqual([...px.subarray(4 * i, 4 * i + 3)], colourOf(x, 1), String(x)));
  assert.ok([...px].every((c, i) => i % 4 !== 3 || c === 255));
});
