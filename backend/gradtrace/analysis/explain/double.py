"""Rules of the nodes a backward pass with ``create_graph=True`` makes for the activations' and the
mean squared error's own backward ops (a gradient penalty, a Hessian-vector product, a
physics-informed derivative, second-order MAML): ``TanhBackwardBackward0`` is the node of
``tanh_backward(grad_output, output) = grad_output · (1 − output²)``, and its rule gives the
gradient of each of those two inputs.

NOTE [a backward op's own rule]
    Each such op is elementwise in ``grad_output`` and in the forward op's input (or output),
    so its rule is the product rule on that one formula: ``grad_grad_output`` is ``grad_out``
    times the forward op's local derivative (the same number the first pass multiplied by),
    and the other input's gradient is ``grad_out · grad_output`` times the local derivative's
    own derivative. ReLU's and leaky ReLU's local derivatives are constant where they are
    defined, so their second input gets zeros, which autograd passes on all the same. The
    operands are what the node saved: gradients and values made inside the backward pass, kept
    in the tensor file as the outputs of the nodes that pass made (docs/CONTRACT.md, "The
    tensor file"). The formulas are torch's (``derivatives.yaml``); tests/analysis/
    test_explain.py holds each to torch's ``.grad``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from gradtrace.analysis.explain.nn import _num
from gradtrace.analysis.explain.ops import Ctx, Rule, Unsupported, _operand, _summed
from gradtrace.analysis.explain.tensors import fmt, fmt_operand, numel
from gradtrace.analysis.local_derivatives import _exp

Local = Callable[[Ctx, int], tuple[str, float]]
"""An input's factor at output element ``j``: (how it is shown, its value)."""


def _rule(texts: tuple[str, ...], needs: tuple[tuple[str, ...], ...], locals_: tuple[Local, ...],
          args: tuple[str, ...] = ()) -> Rule:
    """``grad_in_i[k] = Σ_j grad_out[j] · local_i(j)`` over the output elements ``j`` that read
    input ``i``'s element ``k`` (one, or all of them for a 0-dim ``grad_output``)."""

    def elem(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
        def term(j: int) -> tuple[str, float]:
            g = ctx.g.at(j)
            shown, factor = locals_[i](ctx, j)
            return f"{fmt(g)} · {shown}", g * factor
        return _summed(ctx, i, k, term)

    return Rule(texts, needs, elem, args)


def _zero(ctx: Ctx, j: int) -> tuple[str, float]:
    return "0", 0.0


def _tanh(i: int) -> Local:
    def f(ctx: Ctx, j: int) -> tuple[str, float]:
        y = _operand(ctx, "output", j)
        if i == 0:  # (1 − output²)
            return f"(1 − {fmt_operand(y)}²)", 1.0 - y * y
        go = _operand(ctx, "grad_output", j)  # −2 · output · grad_output
        return f"(−2·{fmt_operand(y)}·{fmt_operand(go)})", -2.0 * y * go
    return f


def _sigmoid(i: int) -> Local:
    def f(ctx: Ctx, j: int) -> tuple[str, float]:
        y = _operand(ctx, "output", j)
        if i == 0:  # output · (1 − output)
            return f"{fmt_operand(y)}·(1 − {fmt_operand(y)})", y * (1.0 - y)
        go = _operand(ctx, "grad_output", j)  # grad_output · (1 − 2 · output)
        return f"{fmt_operand(go)}·(1 − 2·{fmt_operand(y)})", go * (1.0 - 2.0 * y)
    return f


def _leaky(ctx: Ctx, j: int) -> tuple[str, float]:
    x, slope = _operand(ctx, "self", j), _num(ctx.arg("negative_slope", 0.01))
    return (f"1  ({fmt(x)} > 0)", 1.0) if x > 0 else (f"{fmt(slope)}  ({fmt(x)} ≤ 0)", slope)


def _threshold(ctx: Ctx, j: int) -> tuple[str, float]:
    x, th = _operand(ctx, "self", j), _num(ctx.arg("threshold", 0))
    return (f"1  ({fmt(x)} > {fmt(th)})", 1.0) if x > th else (f"0  ({fmt(x)} ≤ {fmt(th)})", 0.0)


def _softplus(i: int) -> Local:
    def f(ctx: Ctx, j: int) -> tuple[str, float]:
        x, beta, th = _operand(ctx, "self", j), _num(ctx.arg("beta", 1)), _num(ctx.arg("threshold", 20))
        if x * beta > th:  # softplus is x there: a derivative of 1, whose own derivative is 0
            return (f"1  ({fmt(beta)}·{fmt(x)} > {fmt(th)})", 1.0) if i == 0 else ("0", 0.0)
        z = _exp(x * beta)
        s = z / (z + 1.0)
        if i == 0:
            return f"σ({fmt(beta)}·{fmt(x)})", s
        go = _operand(ctx, "grad_output", j)  # grad_output · β · σ · (1 − σ)
        return f"{fmt_operand(go)}·{fmt(beta)}·{fmt(s)}·(1 − {fmt(s)})", go * beta * s * (1.0 - s)
    return f


def _gelu(i: int) -> Local:
    def f(ctx: Ctx, j: int) -> tuple[str, float]:
        if ctx.arg("approximate", "none") != "none":
            raise Unsupported("the tanh approximation's second derivative is not written here")
        x = _operand(ctx, "self", j)
        pdf = math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
        if i == 0:  # Φ(x) + x · φ(x)
            cdf = 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))
            return f"gelu′({fmt(x)})", cdf + x * pdf
        go = _operand(ctx, "grad_output", j)  # grad_output · φ(x) · (2 − x²)
        return f"{fmt_operand(go)}·φ({fmt(x)})·(2 − {fmt_operand(x)}²)", go * pdf * (2.0 - x * x)
    return f


def _elu(i: int) -> Local:
    def f(ctx: Ctx, j: int) -> tuple[str, float]:
        if ctx.arg("is_result", False):
            raise Unsupported("an ELU saved by its result (in place) is not written here")
        x = _operand(ctx, "self_or_result", j)
        alpha, scale, in_scale = (_num(ctx.arg(a, 1)) for a in ("alpha", "scale", "input_scale"))
        if x > 0:
            return (fmt(scale), scale) if i == 0 else (f"0  ({fmt(x)} > 0)", 0.0)
        e = _exp(x * in_scale)
        if i == 0:
            shown = f"{fmt(in_scale)}·{fmt(alpha)}·{fmt(scale)}·exp({fmt(in_scale)}·{fmt(x)})"
            return shown, in_scale * alpha * scale * e
        go = _operand(ctx, "grad_output", j)
        return (f"{fmt_operand(go)}·{fmt(in_scale)}²·{fmt(alpha)}·{fmt(scale)}·exp({fmt(in_scale)}·{fmt(x)})",
                go * in_scale * in_scale * alpha * scale * e)
    return f


_MEAN, _SUM = 1, 2
"""``reduction`` as the node saves it (``at::Reduction``: 0 none, 1 mean, 2 sum)."""


def _mse(i: int) -> Local:
    def f(ctx: Ctx, j: int) -> tuple[str, float]:
        reduction = int(ctx.arg("reduction", _MEAN))
        n = numel(ctx.saved["self"].shape) if reduction == _MEAN else 1
        x, t = _operand(ctx, "self", j), _operand(ctx, "target", j)
        scale = "" if n == 1 else f"/{n}"
        if i == 0:  # 2 · (self − target) / N
            return f"2·({fmt(x)} − {fmt_operand(t)}){scale}", 2.0 * (x - t) / n
        go = _operand(ctx, "grad_output", j)  # ± 2 · grad_output / N
        sign = 1.0 if i == 1 else -1.0
        return f"{'' if i == 1 else '−'}2·{fmt_operand(go)}{scale}", sign * 2.0 * go / n
    return f


_GO = "grad_output"
BACKWARD_RULES: dict[str, Rule] = {
    "TanhBackwardBackward0": _rule(
        ("grad_grad_output = grad_out · (1 − output²)", "grad_output = grad_out · (−2 · output · grad_output)"),
        ((_GO, "output"),), (_tanh(0), _tanh(1))),
    "SigmoidBackwardBackward0": _rule(
        ("grad_grad_output = grad_out · output · (1 − output)",
         "grad_output = grad_out · grad_output · (1 − 2 · output)"),
        ((_GO, "output"),), (_sigmoid(0), _sigmoid(1))),
    "LeakyReluBackwardBackward0": _rule(
        ("grad_grad_output = grad_out · (1 if self > 0 else negative_slope)",
         "grad_self = 0  (leaky ReLU's slope does not change with self)"),
        (("self",), ()), (_leaky, _zero), ("negative_slope",)),
    "ThresholdBackwardBackward0": _rule(
        ("grad_grad_output = grad_out · [self > threshold]", "grad_self = 0  (ReLU's slope does not change with self)"),
        (("self",), ()), (_threshold, _zero), ("threshold",)),
    "SoftplusBackwardBackward0": _rule(
        ("grad_grad_output = grad_out · σ(beta · self)  (1 where beta · self > threshold)",
         "grad_self = grad_out · grad_output · beta · σ(beta · self) · (1 − σ(beta · self))  (0 where beta · self "
         "> threshold)"),
        ((_GO, "self"),), (_softplus(0), _softplus(1)), ("beta", "threshold")),
    "GeluBackwardBackward0": _rule(
        ("grad_grad_output = grad_out · gelu′(self)  (Φ(self) + self · φ(self))",
         "grad_self = grad_out · grad_output · φ(self) · (2 − self²)"),
        ((_GO, "self"),), (_gelu(0), _gelu(1)), ("approximate",)),
    "EluBackwardBackward0": _rule(
        ("grad_grad_output = grad_out · (scale if self > 0 else input_scale · alpha · scale · exp(input_scale · self))",
         "grad_self_or_result = grad_out · grad_output · (0 if self > 0 else input_scale² · alpha · scale · "
         "exp(input_scale · self))"),
        ((_GO, "self_or_result"),), (_elu(0), _elu(1)), ("alpha", "scale", "input_scale", "is_result")),
    "MseLossBackwardBackward0": _rule(
        ("grad_grad_output = Σ grad_out · 2 · (self − target) / N  (N: the elements when the loss is a mean, else 1)",
         "grad_self = grad_out · 2 · grad_output / N", "grad_target = −grad_out · 2 · grad_output / N"),
        ((_GO, "self", "target"),), (_mse(0), _mse(1), _mse(2)), ("reduction",)),
}
