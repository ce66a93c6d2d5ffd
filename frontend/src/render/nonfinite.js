/**
 * Edges whose gradient holds a NaN or an infinity (graph/values.js gradMagnitude's `nonfinite`):
 * thick, dashed, in the error colour, so that they never read as the thin grey of "no
 * gradient" (NaN has no sign and no size to colour and width it by).
 */

/** Stroke the edges `trace` draws as one dashed path. */
export function strokeNonfinite(ctx, trace, px, color) {
  ctx.beginPath();
  trace();
  ctx.lineWidth = 4 * px;
  ctx.setLineDash([6 * px, 3 * px]);
  ctx.strokeStyle = color;
  ctx.stroke();
  ctx.setLineDash([]);
}
