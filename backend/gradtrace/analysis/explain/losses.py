"""Rules of the elementwise losses: MSE, smooth L1, Huber, binary cross-entropy (on probabilities
and on logits), soft margin, each with its ``reduction`` (0 none, 1 mean, 2 sum: ``saved_args``);
and of the two margin losses over classes (multi-class and multi-label).

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


def _row(ctx: Ctx, k: int) -> tuple[int, int, int, float]:
    """(sample, class, classes, received gradient) of element ``k`` of a margin loss's input
    ([N, C], or [C] for one sample); the gradient is the sample's for reduction none, else the
    one number, divided by N for mean."""
    shape = ctx.saved["self"].shape
    classes = shape[-1] if shape else 1  # a 0-dim input: one class
    n, c = divmod(k, classes)
    samples = shape[0] if len(shape) == 2 else 1
    reduction = int(ctx.arg("reduction", 1))
    g = ctx.g.at(n) if reduction == 0 and ctx.g.shape else ctx.g.at(0)
    return n, c, classes, g / samples if reduction == 1 else g


def _multi_margin(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """ℓ_n = Σ_{j ≠ y} w[y] · max(0, margin − x[y] + x[j])^p / C: x[j] gets w[y] · p · term^(p−1) / C
    where the term is positive, x[y] minus the sum of those."""
    n, c, classes, g = _row(ctx, k)
    x, y = ctx.saved["self"], int(ctx.saved["target"].at(n))
    margin, p = _num(ctx.arg("margin", 1.0)), int(ctx.arg("p", 1))
    w = ctx.saved["weight"].at(y) if "weight" in ctx.saved else 1.0
    if "weight" in ctx.names and "weight" not in ctx.saved:
        raise NotKept("weight")

    def part(j: int) -> float:
        term = margin - x.at(n * classes + y) + x.at(n * classes + j)
        return 0.0 if term <= 0 else w * p * term ** (p - 1) / classes

    if c != y:
        d = part(c)
        return f"{fmt(g)} · {fmt(d)}  (margin term {'> 0' if d else '≤ 0'})", g * d
    parts = [part(j) for j in range(classes) if j != y]
    return f"{fmt(g)} · −({' + '.join(fmt(v) for v in parts[:4])}{' + …' if len(parts) > 4 else ''})", \
        -g * math.fsum(parts)


def _multilabel_margin(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """ℓ_n = Σ_{j in the target list} Σ_{i not a target} max(0, 1 − (x[j] − x[i])) / C, the list
    read up to its first −1 (a class listed twice counts twice, as torch's loop does): a target
    class loses 1/C per listing for each non-target class within the margin of it, a non-target
    class gains 1/C for each listed target it is within the margin of."""
    n, c, classes, g = _row(ctx, k)
    x = ctx.saved["self"]
    row = [int(ctx.saved["target"].at(n * classes + q)) for q in range(classes)]
    listed = row[:row.index(-1)] if -1 in row else row
    targets = set(listed)

    def within(j: int, q: int) -> bool:
        return 1.0 - (x.at(n * classes + j) - x.at(n * classes + q)) > 0

    if c in targets:
        hits = listed.count(c) * sum(within(c, q) for q in range(classes) if q not in targets)
        return f"{fmt(g)} · (−{hits}/{classes})", -g * hits / classes
    hits = sum(within(j, c) for j in listed)
    return f"{fmt(g)} · ({hits}/{classes})", g * hits / classes


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
    "MultiMarginLossBackward0": Rule(
        ("grad_self = grad_out · (weight[y] · p · max(0, margin − self[y] + self[j])^(p−1) / C for a class j ≠ y, "
         "minus their sum for the target y)  (/ N for mean)",), (("self", "target"),), _multi_margin,
        ("margin", "p", "reduction")),
    "MultilabelMarginLossBackward0": Rule(
        ("grad_self = grad_out · (−(non-target classes within 1 of it)/C for a target class, (target classes it "
         "is within 1 of)/C for any other)  (/ N for mean)",), (("self", "target"),), _multilabel_margin,
        ("reduction",)),
    "BinaryCrossEntropyBackward0": _loss(
        ("grad_self = grad_out · weight · (self − target) / (self · (1 − self))" + _RED,
         "grad_target = grad_out · weight · (log(1 − self) − log(self))" + _RED), _bce),
}
