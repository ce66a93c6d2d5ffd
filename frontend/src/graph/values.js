/**
 * How tensor values read on screen: small tensors in full, big ones as shape and stats.
 * Values follow the document's encoding (NaN/±inf arrive as the strings "nan", "inf", "-inf").
 */

export function fmtNum(v) {
  if (typeof v === "string") return v;
  if (typeof v === "boolean") return v ? "True" : "False";
  if (Array.isArray(v)) return `${fmtNum(v[0])}${Number(v[1]) < 0 ? "-" : "+"}${fmtNum(Math.abs(Number(v[1])))}j`;
  if (typeof v !== "number") return String(v);
  if (Number.isInteger(v) && Math.abs(v) < 1e6) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(2);
  return String(Number(v.toPrecision(4)));
}

export function numel(shape) {
  return (shape || []).reduce((p, q) => p * q, 1);
}

function nested(values, budget) {
  if (!Array.isArray(values) || (values.length === 2 && typeof values[0] === "number" && budget.complex)) return fmtNum(values);
  const parts = [];
  for (const v of values) {
    if (budget.left <= 0) { parts.push("…"); break; }
    if (!Array.isArray(v)) budget.left--;
    parts.push(nested(v, budget));
  }
  return `[${parts.join(", ")}]`;
}

/** A short text for a node or an edge label: the values if at most `max` elements, else stats. */
export function fmtTensorShort(tv, max = 4, withShape = true) {
  if (!tv) return "";
  const count = numel(tv.shape);
  if (tv.values != null && count <= max) {
    return tv.shape.length === 0 ? fmtNum(tv.values) : nested(tv.values, { left: max, complex: String(tv.dtype).includes("complex") });
  }
  const s = tv.stats;
  // One element whose values were left out (the document's values budget): its mean is its
  // value, sign included; its norm would drop the sign (‖34.85‖ for -34.85).
  if (s && s.mean != null && count === 1 && !String(tv.dtype).includes("complex")) {
    return tv.shape.length === 0 || !withShape ? fmtNum(s.mean) : `[${fmtNum(s.mean)}] ${tv.shape.join("×")}`;
  }
  if (s && s.norm != null) return withShape ? `‖${fmtNum(s.norm)}‖ ${tv.shape.join("×")}` : `‖${fmtNum(s.norm)}‖`;
  return tv.shape.join("×");
}

/** The full text for the inspector: values (up to 1,000 elements) and stats. */
export function fmtTensorLong(tv) {
  if (!tv) return "—";
  const head = `${tv.shape.length ? tv.shape.join("×") : "scalar"} ${tv.dtype}`;
  const s = tv.stats;
  const stats = s ? `min ${fmtNum(s.min)} · max ${fmtNum(s.max)} · mean ${fmtNum(s.mean)} · norm ${fmtNum(s.norm)}` : "";
  const values = tv.values != null
    ? nested(tv.values, { left: 1000, complex: String(tv.dtype).includes("complex") })
    : "(too big to show in full)";
  return `${head}\n${values}\n${stats}`.trim();
}

/** A scalar summary of a gradient for colour and width: its mean (sign) and norm (size). */
export function gradMagnitude(tv) {
  if (!tv) return { sign: 0, size: 0 };
  const s = tv.stats || {};
  const mean = typeof s.mean === "number" ? s.mean : Number(s.mean);
  const norm = typeof s.norm === "number" ? s.norm : Number(s.norm);
  let sign = Number.isFinite(mean) ? Math.sign(mean) : 0;
  if (!sign && typeof tv.values === "number") sign = Math.sign(tv.values);
  // NaN or inf anywhere makes the min or the max the string "nan", "inf" or "-inf".
  const nonfinite = typeof s.min === "string" || typeof s.max === "string" || typeof tv.values === "string";
  return { sign, size: Number.isFinite(norm) ? Math.abs(norm) : 0, nonfinite };
}

export function fmtBytes(b) {
  if (b == null) return "—";
  if (b < 1024) return `${b} B`;
  if (b < 1024 * 1024) return `${(b / 1024).toFixed(1)} KiB`;
  return `${(b / 1024 / 1024).toFixed(1)} MiB`;
}
