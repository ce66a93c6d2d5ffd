/**
 * Reading a safetensors file (docs/CONTRACT.md, "The tensor file") without a library: an
 * 8-byte little-endian header length N, N bytes of JSON header, then the raw little-endian
 * buffers, offsets relative to byte 8+N. Pure functions on bytes, so node:test checks them
 * (test/safetensors.test.js) against files Python's `safetensors` wrote.
 *
 * NOTE [exact numbers]
 *   A tensor decodes to a Float64Array: every float16, bfloat16 and float32 is exactly a double
 *   (float16 and bfloat16 are decoded from their bits, no rounding), so the page shows the
 *   number torch stored. int64/uint64 also keep a BigInt64Array/BigUint64Array (`big`), since a
 *   double cannot hold every one: the hover shows those digits.
 */

/** Bytes per element of each safetensors dtype the page reads. */
export const DTYPE_BYTES = { F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, U64: 8, I32: 4, U32: 4, I16: 2, U16: 2, I8: 1, U8: 1, BOOL: 1 };

/** The header of a whole file (or of its first bytes, when they hold the header): every tensor
 * by key with its dtype, shape and absolute byte range (end exclusive), and `headerBytes` (8+N). */
export function parseHeader(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < 8) throw new Error("not a safetensors file: shorter than its 8-byte header length");
  const n = Number(view.getBigUint64(0, true));
  if (n > bytes.byteLength - 8) throw new Error(`not a safetensors file: its header says ${n} bytes, the file has ${bytes.byteLength - 8}`);
  const json = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  const tensors = new Map();
  for (const [key, t] of Object.entries(json)) {
    if (key === "__metadata__") continue;
    tensors.set(key, { key, dtype: t.dtype, shape: t.shape, start: 8 + n + t.data_offsets[0], end: 8 + n + t.data_offsets[1] });
  }
  return { headerBytes: 8 + n, tensors, metadata: json.__metadata__ || null };
}

/** One float16 (its 16 bits) as a number, exactly. */
export function f16(h) {
  const sign = h & 0x8000 ? -1 : 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * (1024 + frac) * 2 ** (exp - 25);
}

const scratch = new DataView(new ArrayBuffer(4));
/** One bfloat16 (its 16 bits) as a number, exactly: the top half of a float32. */
export function bf16(h) {
  scratch.setUint32(0, h << 16 >>> 0, true);
  return scratch.getFloat32(0, true);
}

/**
 * The numbers of one tensor from its raw little-endian bytes: `{dtype, shape, values, big}`.
 * `values` a Float64Array in row-major order, `big` the 64-bit integers as BigInts or null.
 */
export function decodeTensor(dtype, shape, raw) {
  const size = DTYPE_BYTES[dtype];
  if (!size) throw new Error(`the page cannot read dtype ${dtype}`);
  const count = shape.reduce((a, b) => a * b, 1);
  if (raw.byteLength !== count * size) throw new Error(`${dtype}${JSON.stringify(shape)} needs ${count * size} bytes, got ${raw.byteLength}`);
  // a view of the bytes where they are aligned for the typed array (a Range answer's are);
  // a copy only where a slice of a whole file starts off its element size
  const aligned = raw.byteOffset % size === 0;
  const buf = aligned ? raw.buffer : raw.slice().buffer, at = aligned ? raw.byteOffset : 0;
  const values = new Float64Array(count);
  let big = null;
  if (dtype === "F16" || dtype === "BF16") {
    const u = new Uint16Array(buf, at, count);
    const f = dtype === "F16" ? f16 : bf16;
    for (let i = 0; i < count; i++) values[i] = f(u[i]);
  } else if (dtype === "I64" || dtype === "U64") {
    // `big` is kept (the hover's digits): its own copy, so it does not hold a whole file's buffer
    big = dtype === "I64" ? new BigInt64Array(buf.slice(at, at + count * 8)) : new BigUint64Array(buf.slice(at, at + count * 8));
    for (let i = 0; i < count; i++) values[i] = Number(big[i]);
  } else {
    const Typed = { F64: Float64Array, F32: Float32Array, I32: Int32Array, U32: Uint32Array, I16: Int16Array, U16: Uint16Array,
      I8: Int8Array, U8: Uint8Array, BOOL: Uint8Array }[dtype];
    values.set(new Typed(buf, at, count));
  }
  return { dtype, shape, values, big };
}

/** The shortest decimal that reads back as the same float32 (how numpy prints it). */
function shortestF32(x) {
  for (let p = 1; p <= 9; p++) {
    const s = x.toPrecision(p);
    if (Math.fround(Number(s)) === x) return String(Number(s));
  }
  return String(x);
}

/**
 * Element `i` of a decoded tensor as its digits: the stored number exactly (float16/bfloat16
 * and float64: the double's shortest form; float32: the shortest form that is the same
 * float32), `nan`, `inf`, `-inf`; a 64-bit integer from its BigInt.
 */
export function exactText(t, i) {
  if (t.big) return t.big[i].toString();
  const x = t.values[i];
  if (Number.isNaN(x)) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  if (t.dtype === "BOOL") return x ? "True" : "False";
  return t.dtype === "F32" ? shortestF32(x) : String(x);
}

/**
 * Element `i` as a table cell shows it: a float to four significant digits (an exponent below
 * 1e-3 or from 1e5), what `exactText` gives for anything else; the exact digits stay a hover away.
 */
export function shortText(t, i) {
  const x = t.values[i];
  if (t.big || t.dtype === "BOOL" || !Number.isFinite(x) || !t.dtype.startsWith("F") && !t.dtype.startsWith("BF")) return exactText(t, i);
  if (x === 0) return Object.is(x, -0) ? "-0" : "0";
  const a = Math.abs(x);
  return a >= 1e-3 && a < 1e5 ? String(+x.toPrecision(4)) : x.toExponential(3).replace(/\.?0+e/, "e");
}

/** Row-major strides of a shape. */
export function strides(shape) {
  const s = new Array(shape.length).fill(1);
  for (let d = shape.length - 2; d >= 0; d--) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

/** Statistics of the finite values and the counts of NaN, +Inf, -Inf (the histogram's). */
export function finiteStats(values) {
  let min = Infinity, max = -Infinity, nan = 0, pinf = 0, ninf = 0, zeros = 0, sq = 0;
  for (let i = 0; i < values.length; i++) {
    const x = values[i];
    if (Number.isNaN(x)) nan++;
    else if (x === Infinity) pinf++;
    else if (x === -Infinity) ninf++;
    else {
      if (x < min) min = x;
      if (x > max) max = x;
      if (x === 0) zeros++;
      sq += x * x;
    }
  }
  return { min, max, nan, pinf, ninf, zeros, norm: Math.sqrt(sq), finite: values.length - nan - pinf - ninf };
}
