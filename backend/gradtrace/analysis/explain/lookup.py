"""Rules of ops that pick elements by a tensor the node saved: embedding (by ``indices``) and
``masked_fill`` (by ``mask``)."""

from __future__ import annotations

from gradtrace.analysis.explain.ops import Ctx, Rule, _operand
from gradtrace.analysis.explain.tensors import fmt, unravel


def _embedding(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_weight[r, c] = Σ grad_out[n, c] over the positions n whose index is r."""
    shape = ctx.in_shapes[i] or ()
    width = shape[-1] if shape else 1
    r, c = divmod(k, width)
    if r == int(ctx.arg("padding_idx", -1)):
        return f"0  (row {r} is padding_idx)", 0.0
    idx = ctx.saved["indices"]
    hits = [n for n in range(len(idx.values)) if int(idx.at(n)) == r]
    parts = [ctx.g.at(n * width + c) for n in hits]
    if not parts:
        return f"0  (no index is {r})", 0.0
    total = sum(parts)
    shown = " + ".join(fmt(p) for p in parts[:4]) + (" + …" if len(parts) > 4 else "")
    if ctx.arg("scale_grad_by_freq", False):
        return f"({shown}) / {len(parts)}", total / len(parts)
    return shown, total


def _masked_fill(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    masked = _operand(ctx, "mask", k) != 0
    g = ctx.g.at(k)
    return f"{fmt(g)} · [mask {'true' if masked else 'false'} at {list(unravel(k, ctx.g.shape))}]", 0.0 if masked else g


BACKWARD_RULES: dict[str, Rule] = {
    "EmbeddingBackward0": Rule(("grad_weight[r, c] = Σ grad_out[n, c] over the positions n with indices[n] = r "
                                "(0 for padding_idx; divided by their count with scale_grad_by_freq)",),
                               (("indices",),), _embedding, ("padding_idx",)),
    "MaskedFillBackward0": Rule(("grad_self = grad_out · [not mask]  (the filled elements get 0)",), (("mask",),),
                                _masked_fill),
}
