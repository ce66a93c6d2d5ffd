/**
 * The compare page's pure parts: one cursor over both runs, the node tints, memory at a step.
 * It only reads the comparison the service computed (backend/gradtrace/analysis/compare/documents.py:
 * `steps`, `pairs`, `only_a`, `only_b`, `first_divergence`, `memory_a`, `memory_b`); no rule
 * of the comparison is restated here.
 *
 * Cursor c (0 ≤ c ≤ steps.length) means "the first c steps of the comparison happened". A
 * step is [event of A | null, event of B | null]; a viewer's step k means "its first k events
 * happened", so a side at event e is at step e + 1, and a side with null stays where it was.
 */

export const ONLY_A = "#e03131";
export const ONLY_B = "#2f9e44";

/** viewer steps of A and B at every cursor: {a: Int32Array, b: Int32Array} of steps.length + 1. */
export function cursorTable(steps) {
  const n = steps.length;
  const a = new Int32Array(n + 1), b = new Int32Array(n + 1);
  for (let c = 1; c <= n; c++) {
    const [ea, eb] = steps[c - 1];
    a[c] = ea == null ? a[c - 1] : ea + 1;
    b[c] = eb == null ? b[c - 1] : eb + 1;
  }
  return { a, b };
}

/** The cursor right after event `ev` of one side ("a" or "b") happened, or -1. */
export function cursorOfEvent(steps, side, ev) {
  if (ev == null) return -1;
  const i = side === "a" ? 0 : 1;
  for (let c = 0; c < steps.length; c++) if (steps[c][i] === ev) return c + 1;
  return -1;
}

/** The cursor of the first divergence (its step in A, else in B), or -1 when there is none. */
export function divergenceCursor(cmp) {
  const d = cmp.first_divergence;
  if (!d) return -1;
  const c = cursorOfEvent(cmp.steps, "a", d.a_event);
  return c >= 0 ? c : Math.max(cursorOfEvent(cmp.steps, "b", d.b_event), 0);
}

/**
 * A matched node's tint from its gradient delta: none within tolerance, else amber to deep
 * orange as the relative L2 change grows from 1e-4 to 1 (log scale); alpha grows with it.
 */
export function gradTint(delta) {
  if (!delta || !delta.beyond_tolerance) return null;
  const r = delta.rel_l2 == null ? 1 : delta.rel_l2;
  const t = Math.max(0, Math.min(1, (Math.log10(Math.max(r, 1e-6)) + 4) / 4));
  const hue = Math.round(45 - 30 * t);  // 45° amber → 15° orange-red
  return `hsla(${hue}, 95%, 50%, ${(0.45 + 0.5 * t).toFixed(2)})`;
}

/** {a: Map(node id → colour), b: Map}: only-A red, only-B green, matched by gradient delta. */
export function tintMaps(cmp) {
  const a = new Map(), b = new Map();
  for (const n of cmp.only_a) a.set(n.id, ONLY_A);
  for (const n of cmp.only_b) b.set(n.id, ONLY_B);
  for (const p of cmp.pairs) {
    const colour = gradTint(p.grad) || (p.value && p.value.beyond_tolerance ? gradTint(p.value) : null)
      || (p.shape_changed ? ONLY_A : null);
    if (colour) { a.set(p.a, colour); b.set(p.b, colour); }
  }
  return { a, b };
}

/** The paired node of `id` on the other side ("a" → B's id), or null. */
export function pairedId(cmp, side, id) {
  for (const p of cmp.pairs) {
    if (side === "a" && p.a === id) return p.b;
    if (side === "b" && p.b === id) return p.a;
  }
  return null;
}

/** Saved-tensor bytes alive in A and B at cursor c. */
export function memoryAt(cmp, table, c) {
  return { a: cmp.memory_a.live[table.a[c]] ?? 0, b: cmp.memory_b.live[table.b[c]] ?? 0 };
}

/** Bytes as a person reads them. */
export function fmtSize(n) {
  if (n >= 1 << 20) return `${(n / (1 << 20)).toPrecision(3)} MB`;
  if (n >= 1 << 10) return `${(n / (1 << 10)).toPrecision(3)} KB`;
  return `${n} bytes`;
}
