"""Rules of the elementwise losses: MSE, smooth L1, Huber, binary cross-entropy (on probabilities
and on logits), each with its ``reduction`` (0 none, 1 mean, 2 sum: ``saved_args``).

``grad_self[k] = grad_out · ∂ℓ/∂self[k]`` (divided by the number of elements for mean), where
the received gradient is one number unless the reduction is none; ``grad_target`` likewise with
``∂ℓ/∂target``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from gradtrace.analysis.explain.nn import _num
from gradtrace.analysis.explain.ops import Ctx, NotKept, Rule
from gradtrace.analysis.explain.tensors import broadcast_index, fmt, numel
from gradtrace.analysis.local_derivatives import _sigmoid

Local = Callable[[Ctx, int, int, float, float], tuple[str, float]]
"""(ctx, input, element, self, target) → the shown factor and ∂ℓ/∂input there."""


def _opt(ctx: Ctx, name: str, k: int, shape: tuple[int, ...]) -> float:
    """An optional saved tensor (weight, pos_weight) broadcast to the loss's input; 1 when absent."""
    if name not in ctx.names:
        return 1.0
    if name not in ctx.saved:
        raise NotKept(name)
    t = ctx.saved[name]
    return t.at(broadcast_index(k, shape, t.shape) if t.shape != shape else k)


def _loss(texts: tuple[str, str], local: Local, args: tuple[str, ...] = ()) -> Rule:
    def elem(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
        shape = ctx.in_shapes[i] or ctx.saved["self"].shape
        reduction = int(ctx.arg("reduction", 1))
        g = ctx.g.at(k) if reduction == 0 and ctx.g.shape else ctx.g.at(0)
        shown, d = local(ctx, i, k, ctx.saved["self"].at(k), ctx.saved["target"].at(k))
        if reduction == 1:
            n = numel(shape)
            return f"{fmt(g)} · {shown} / {n}", g * d / n
        return f"{fmt(g)} · {shown}", g * d

    needs = (("self", "target"), ("self", "target"))
    return Rule(texts, needs, elem, ("reduction", *args))


def _mse(ctx: Ctx, i: int, k: int, x: float, t: float) -> tuple[str, float]:
    sign = "" if i == 0 else "−"
    return f"{sign}2·({fmt(x)} − {fmt(t)})", (2.0 if i == 0 else -2.0) * (x - t)


def _smooth_l1(param: str, huber: bool) -> Local:
    def f(ctx: Ctx, i: int, k: int, x: float, t: float) -> tuple[str, float]:
        b = _num(ctx.arg(param, 1.0))
        d = x - t
        if abs(d) < b or (huber and abs(d) == b):
            v, shown = (d, f"({fmt(x)} − {fmt(t)})") if huber else (d / b, f"({fmt(x)} − {fmt(t)})/{fmt(b)}")
        else:
            v = math.copysign(b if huber else 1.0, d) if d else 0.0
            shown = f"{fmt(v)}  (|{fmt(d)}| ≥ {fmt(b)})"
        return (shown, v) if i == 0 else (f"−{shown}", -v)
    return f


def _bce_logits(ctx: Ctx, i: int, k: int, x: float, t: float) -> tuple[str, float]:
    """ℓ = −w·(p·t·log σ(x) + (1 − t)·log σ(−x)): ∂/∂x = w·((1 + (p − 1)·t)·σ(x) − p·t),
    ∂/∂t = −w·(p·log σ(x) − log σ(−x))."""
    shape = ctx.saved["self"].shape
    w, p = _opt(ctx, "weight", k, shape), _opt(ctx, "pos_weight", k, shape)
    s = _sigmoid(x)
    if i == 0:
        return (f"{fmt(w)}·((1 + ({fmt(p)} − 1)·{fmt(t)})·σ({fmt(x)}) − {fmt(p)}·{fmt(t)})",
                w * ((1 + (p - 1) * t) * s - p * t))
    lsp, lsn = _log_sigmoid(x), _log_sigmoid(-x)
    return f"−{fmt(w)}·({fmt(p)}·logσ({fmt(x)}) − logσ({fmt(-x)}))", -w * (p * lsp - lsn)


def _log_sigmoid(x: float) -> float:
    return -math.log1p(math.exp(-x)) if x >= 0 else x - math.log1p(math.exp(x))


_EPS = 1e-12
"""binary_cross_entropy's floor under x·(1 − x) in its gradient (aten's BinaryCrossEntropy kernel)."""


def _bce(ctx: Ctx, i: int, k: int, x: float, t: float) -> tuple[str, float]:
    """ℓ = −w·(t·log x + (1 − t)·log(1 − x)): ∂/∂x = w·(x − t) / max(x·(1 − x), ε),
    ∂/∂t = w·(log(1 − x) − log x) (±inf at x = 0 or 1, as torch gives)."""
    w = _opt(ctx, "weight", k, ctx.saved["self"].shape)
    if i == 0:
        return f"{fmt(w)}·({fmt(x)} − {fmt(t)}) / ({fmt(x)}·(1 − {fmt(x)}))", w * (x - t) / max(x * (1 - x), _EPS)
    lx = math.log(x) if x > 0 else -math.inf if x == 0 else math.nan
    l1 = math.log1p(-x) if x < 1 else -math.inf if x == 1 else math.nan
    return f"{fmt(w)}·(log(1 − {fmt(x)}) − log({fmt(x)}))", w * (l1 - lx)


def _soft_margin(ctx: Ctx, i: int, k: int, x: float, t: float) -> tuple[str, float]:
    """ℓ = log(1 + exp(−t·x)): ∂/∂x = −t · σ(−t·x) (torch has no gradient for the target)."""
    return f"(−{fmt(t)} · σ({fmt(-t * x)}))", -t * _sigmoid(-t * x)


_RED = " (/ numel for mean)"
BACKWARD_RULES: dict[str, Rule] = {
    "MseLossBackward0": _loss(("grad_self = grad_out · 2 · (self − target)" + _RED,
                               "grad_target = −grad_out · 2 · (self − target)" + _RED), _mse),
    "SmoothL1LossBackward0": _loss(("grad_self = grad_out · ((self − target)/beta if |self − target| < beta "
                                    "else sign(self − target))" + _RED,
                                    "grad_target = −grad_self's factor · grad_out" + _RED),
                                   _smooth_l1("beta", False), ("beta",)),
    "HuberLossBackward0": _loss(("grad_self = grad_out · clamp(self − target, −delta, delta)" + _RED,
                                 "grad_target = −grad_out · clamp(self − target, −delta, delta)" + _RED),
                                _smooth_l1("delta", True), ("delta",)),
    "BinaryCrossEntropyWithLogitsBackward0": _loss(
        ("grad_self = grad_out · weight · ((1 + (pos_weight − 1) · target) · σ(self) − pos_weight · target)" + _RED,
         "grad_target = −grad_out · weight · (pos_weight · logσ(self) − logσ(−self))" + _RED), _bce_logits),
    "SoftMarginLossBackward0": Rule(("grad_self = grad_out · (−target · σ(−target · self))" + _RED,),
                                    (("self", "target"),), _loss(("", ""), _soft_margin).elem, ("reduction",)),
    "BinaryCrossEntropyBackward0": _loss(
        ("grad_self = grad_out · weight · (self − target) / (self · (1 − self))" + _RED,
         "grad_target = grad_out · weight · (log(1 − self) − log(self))" + _RED), _bce),
}
