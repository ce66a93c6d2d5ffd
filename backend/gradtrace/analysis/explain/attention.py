"""The rule of fused scaled dot-product attention (``F.scaled_dot_product_attention`` on the CPU:
``ScaledDotProductFlashAttentionForCpuBackward0``), worked out from the saved query, key and value.

With ``S = scale · Q Kᵀ`` (causal: ``S[i, j] = −inf`` for ``j > i``), ``P = softmax(S)`` by rows
and ``out = P V``, backward is ``dP = grad_out Vᵀ``, ``dS = P ∘ (dP − rowsum(grad_out ∘ out))``
and ``grad_query = scale · dS K``, ``grad_key = scale · dSᵀ Q``, ``grad_value = Pᵀ grad_out``;
the rows of ``P`` are recomputed here in float64 from the saved inputs (the saved ``logsumexp`` and
``output`` are the same numbers in float32). A mask, dropout or grouped heads are not written
here: such a node says so instead of a number.
"""

from __future__ import annotations

import math

from gradtrace.analysis.explain.nn import _num
from gradtrace.analysis.explain.ops import Ctx, Rule, Unsupported
from gradtrace.analysis.explain.tensors import Flat, fmt


class _Heads:
    """One (batch, head) slice of the saved query, key and value and of the received gradient."""

    def __init__(self, ctx: Ctx, b: int) -> None:
        self.memo = ctx.memo
        self.q, self.k, self.v, self.g = ctx.saved["query"], ctx.saved["key"], ctx.saved["value"], ctx.g
        self.n_q, self.e = self.q.shape[-2], self.q.shape[-1]
        self.n_k, self.ev = self.k.shape[-2], self.v.shape[-1]
        self.b = b
        scale = ctx.arg("scale")
        self.scale = 1.0 / math.sqrt(self.e) if scale is None else _num(scale)
        self.causal = bool(ctx.arg("is_causal", False))

    def _at(self, t: Flat, rows: int, width: int, r: int, c: int) -> float:
        return t.at((self.b * rows + r) * width + c)

    def row(self, i: int) -> list[float]:
        """Row ``i`` of P (0 where the causal mask hides a key)."""
        key = ("P", self.b, i)
        if key not in self.memo:
            self.memo[key] = self._row(i)
        found: list[float] = self.memo[key]
        return found

    def _row(self, i: int) -> list[float]:
        s = [self.scale * math.fsum(self._at(self.q, self.n_q, self.e, i, d) * self._at(self.k, self.n_k, self.e, j, d)
                                    for d in range(self.e)) if not (self.causal and j > i) else -math.inf
             for j in range(self.n_k)]
        top = max(s)
        ex = [math.exp(x - top) if x != -math.inf else 0.0 for x in s]
        total = math.fsum(ex)
        return [x / total for x in ex]

    def ds_row(self, i: int) -> tuple[list[float], list[float]]:
        """Row ``i`` of P and of dS."""
        key = ("dS", self.b, i)
        if key not in self.memo:
            self.memo[key] = self._ds_row(i)
        found: tuple[list[float], list[float]] = self.memo[key]
        return found

    def _ds_row(self, i: int) -> tuple[list[float], list[float]]:
        p = self.row(i)
        dp = [math.fsum(self._at(self.g, self.n_q, self.ev, i, e) * self._at(self.v, self.n_k, self.ev, j, e)
                        for e in range(self.ev)) for j in range(self.n_k)]
        mean = math.fsum(a * b for a, b in zip(p, dp, strict=True))
        return p, [a * (b - mean) for a, b in zip(p, dp, strict=True)]


def _terms(parts: list[tuple[float, float]], scale: float | None) -> tuple[str, float]:
    total = math.fsum(a * b for a, b in parts)
    shown = " + ".join(f"{fmt(a)}·{fmt(b)}" for a, b in parts[:3]) + (" + …" if len(parts) > 3 else "")
    if scale is None:
        return shown, total
    return f"{fmt(scale)} · ({shown})", scale * total


def _attention(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    if float(_num(ctx.arg("dropout_p", 0.0))) != 0.0 or "attn_mask" in ctx.names:
        raise Unsupported("this rule is written here without dropout or an attention mask")
    q, key = ctx.saved["query"], ctx.saved["key"]
    if q.shape[:-2] != key.shape[:-2]:
        raise Unsupported("grouped heads (fewer key heads than query heads) are not written here")
    shape = ctx.in_shapes[i] or ()
    rows, width = shape[-2], shape[-1]
    b, rest = divmod(k, rows * width)
    r, c = divmod(rest, width)
    h = _Heads(ctx, b)
    if i == 0:  # grad_query[r, c] = scale · Σ_j dS[r, j] · K[j, c]
        _, ds = h.ds_row(r)
        return _terms([(ds[j], h._at(h.k, h.n_k, h.e, j, c)) for j in range(h.n_k)], h.scale)
    if i == 1:  # grad_key[r, c] = scale · Σ_i dS[i, r] · Q[i, c]
        return _terms([(h.ds_row(n)[1][r], h._at(h.q, h.n_q, h.e, n, c)) for n in range(h.n_q)], h.scale)
    # grad_value[r, c] = Σ_i P[i, r] · grad_out[i, c]
    return _terms([(h.row(n)[r], h._at(h.g, h.n_q, h.ev, n, c)) for n in range(h.n_q)], None)


_NEEDS = ("query", "key", "value")
BACKWARD_RULES: dict[str, Rule] = {
    "ScaledDotProductFlashAttentionForCpuBackward0": Rule(
        ("grad_query = scale · dS key,  dS = P ∘ (grad_out valueᵀ − rowsum(P ∘ grad_out valueᵀ)),  "
         "P = softmax(scale · query keyᵀ)  (causal: future keys masked)",
         "grad_key = scale · dSᵀ query", "grad_value = Pᵀ grad_out"),
        (_NEEDS, _NEEDS, _NEEDS[:2]), _attention, ("is_causal", "dropout_p")),
}
