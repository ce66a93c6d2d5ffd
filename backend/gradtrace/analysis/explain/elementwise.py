"""Rules of elementwise activations: SiLU, softplus, ELU, CELU, hardtanh (ReLU6), log-sigmoid,
rsqrt, reciprocal, log1p, clamp with a maximum only, the shrinks, threshold, sign, GLU and xlogy.

Where the local derivative is a function of the input alone it comes from
:data:`gradtrace.analysis.local_derivatives.LOCAL_DERIVATIVES` (the first-NaN explanation reads
the same one); those that read an argument (softplus's beta, ELU's alpha) are written here.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from gradtrace.analysis.explain.nn import _clamp, _num
from gradtrace.analysis.explain.ops import Ctx, Rule, _binary, _f, _operand, _unary
from gradtrace.analysis.explain.tensors import fmt, fmt_operand, ravel, unravel
from gradtrace.analysis.local_derivatives import LOCAL_DERIVATIVES, _exp


def _softplus(ctx: Ctx, k: int) -> tuple[str, float]:
    """d/dx log(1 + exp(βx))/β = σ(βx), or 1 where βx > threshold (softplus is x there)."""
    x, beta, threshold = ctx.saved["self"].at(k), _num(ctx.arg("beta", 1)), _num(ctx.arg("threshold", 20))
    if x * beta > threshold:
        return f"1  ({fmt(beta)}·{fmt(x)} > {fmt(threshold)})", 1.0
    z = _exp(x * beta)
    return f"σ({fmt(beta)}·{fmt(x)})", z / (z + 1.0)


def _elu(ctx: Ctx, k: int) -> tuple[str, float]:
    x = ctx.saved["self"].at(k)
    alpha, scale, in_scale = (_num(ctx.arg(a, 1)) for a in ("alpha", "scale", "input_scale"))
    if x > 0:
        return fmt(scale), scale
    return (f"{fmt(in_scale)}·{fmt(alpha)}·{fmt(scale)}·exp({fmt(in_scale)}·{fmt(x)})",
            in_scale * alpha * scale * _exp(x * in_scale))


def _hardtanh(ctx: Ctx, k: int) -> tuple[str, float]:
    x, lo, hi = ctx.saved["self"].at(k), _num(ctx.arg("min_val", -1)), _num(ctx.arg("max_val", 1))
    inside = lo < x < hi
    return f"[{fmt(lo)} < {fmt(x)} < {fmt(hi)}]", 1.0 if inside else 0.0


def _prelu(i: int) -> Callable[[Ctx, int], tuple[str, float]]:
    def f(ctx: Ctx, j: int) -> tuple[str, float]:
        x = _operand(ctx, "self", j)
        if x > 0:
            return ("1", 1.0) if i == 0 else ("0", 0.0)
        if i == 0:
            w = _operand(ctx, "weight", j)
            return fmt(w), w
        return fmt(x), x
    return f


def _celu(ctx: Ctx, k: int) -> tuple[str, float]:
    """celu(x) = max(0, x) + min(0, α·(exp(x/α) − 1)): 1 above 0, exp(x/α) at or below it."""
    x, alpha = ctx.saved["self"].at(k), _num(ctx.arg("alpha", 1))
    if x > 0:
        return "1", 1.0
    return f"exp({fmt(x)}/{fmt(alpha)})", _exp(x / alpha)


def _outside(arg: str, default: float, symmetric: bool) -> Callable[[Ctx, int], tuple[str, float]]:
    """1 where ``self`` is past the argument (|self| > lambd for the shrinks, self > threshold),
    else 0: the kernels' ``self ≤ …`` masks."""
    def f(ctx: Ctx, k: int) -> tuple[str, float]:
        x, a = ctx.saved["self"].at(k), _num(ctx.arg(arg, default))
        past = abs(x) > a if symmetric else x > a
        shown = f"[|{fmt(x)}| > {fmt(a)}]" if symmetric else f"[{fmt(x)} > {fmt(a)}]"
        return shown, 1.0 if past else 0.0
    return f


def _glu(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """glu(self) = a · σ(b), a and b the two halves of self along dim: grad_a = grad_out · σ(b),
    grad_b = grad_out · a · σ(b) · (1 − σ(b))."""
    x = ctx.saved["self"]
    shape = x.shape
    d = int(ctx.arg("dim", -1))
    d = d + len(shape) if d < 0 else d
    half = shape[d] // 2
    coords = list(unravel(k, shape))
    second = coords[d] >= half
    coords[d] -= half if second else 0
    out_shape = tuple(half if j == d else n for j, n in enumerate(shape))
    a_at = coords.copy()
    b_at = coords.copy()
    b_at[d] += half
    a, b = x.at(ravel(tuple(a_at), shape)), x.at(ravel(tuple(b_at), shape))
    g = ctx.g.at(ravel(tuple(coords), out_shape))
    s = 1.0 / (1.0 + _exp(-b))
    if not second:
        return f"{fmt(g)} · σ({fmt(b)})", g * s
    return f"{fmt(g)} · {fmt_operand(a)} · σ({fmt(b)}) · (1 − σ({fmt(b)}))", g * a * s * (1.0 - s)


def _xlogy(i: int) -> Callable[[Ctx, int], tuple[str, float]]:
    """xlogy(x, y) = x · log(y) (0 where x = 0): ∂/∂x = log(y) (0 where x = 0 and y ≤ 0), ∂/∂y = x / y."""
    def f(ctx: Ctx, j: int) -> tuple[str, float]:
        x, y = _operand(ctx, "self", j), _operand(ctx, "other", j)
        if i == 0:
            if x == 0 and y <= 0:
                return "0  (self = 0, other ≤ 0)", 0.0
            return f"log({fmt(y)})", math.log(y) if y > 0 else (-math.inf if y == 0 else math.nan)
        return f"{fmt_operand(x)}/{fmt_operand(y)}", _div(x, y)
    return f


def _div(x: float, y: float) -> float:
    if y != 0:
        return x / y
    return math.nan if x == 0 else math.copysign(math.inf, x)


def _local(name: str, text: str) -> Rule:
    """A one-input op whose derivative is ``LOCAL_DERIVATIVES[name]`` of its saved input."""
    return _unary(f"grad_self = grad_out · {text}", ("self",),
                  _f("self", lambda x: f"{text.split('(')[0]}({fmt(x)})", LOCAL_DERIVATIVES[name]))


BACKWARD_RULES: dict[str, Rule] = {
    "SiluBackward0": _local("SiluBackward0", "silu′(self)  (σ(self) · (1 + self · (1 − σ(self))))"),
    "LogSigmoidBackward0": _local("LogSigmoidBackward0", "σ(−self)"),
    "MishBackward0": _local("MishBackward0", "mish′(self)  (tanh(softplus(self)) + self · σ(self) · "
                                             "(1 − tanh²(softplus(self))))"),
    "HardswishBackward0": _local("HardswishBackward0", "hardswish′(self)  (0 if self ≤ −3, self/3 + ½ if "
                                                       "self < 3, else 1)"),
    "PreluKernelBackward0": _binary(("grad_self = grad_out · (1 if self > 0 else weight)",
                                     "grad_weight = Σ grad_out · (0 if self > 0 else self)  (over what it scaled)"),
                                    (("self", "weight"), ("self",)), (_prelu(0), _prelu(1))),
    "Log1PBackward0": _unary("grad_self = grad_out / (1 + self)", ("self",),
                             _f("self", lambda x: f"1/(1 + {fmt(x)})", LOCAL_DERIVATIVES["Log1PBackward0"])),
    "RsqrtBackward0": _unary("grad_self = grad_out · (−½ · result³)  (result = self^(−½))", ("result",),
                             _f("result", lambda y: f"(−½·{fmt(y)}³)", lambda y: -0.5 * y * y * y)),
    "ReciprocalBackward0": _unary("grad_self = grad_out · (−result²)  (result = 1/self)", ("result",),
                                  _f("result", lambda y: f"(−{fmt_operand(y)}²)", lambda y: -y * y)),
    "SoftplusBackward0": _unary("grad_self = grad_out · σ(beta · self)  (1 where beta · self > threshold)",
                                ("self",), _softplus, ("beta", "threshold")),
    "EluBackward0": _unary("grad_self = grad_out · (scale if self > 0 else "
                           "input_scale · alpha · scale · exp(input_scale · self))", ("self",), _elu,
                           ("alpha", "scale", "input_scale")),
    "HardtanhBackward0": _unary("grad_self = grad_out · [min_val < self < max_val]", ("self",), _hardtanh,
                                ("min_val", "max_val")),
    "ClampMaxBackward0": _unary("grad_self = grad_out · [self ≤ max]", ("self",), _clamp, ("max",)),
    "CeluBackward0": _unary("grad_self = grad_out · (1 if self > 0 else exp(self / alpha))", ("self",), _celu,
                            ("alpha",)),
    "HardshrinkBackward0": _unary("grad_self = grad_out · [|self| > lambd]", ("self",), _outside("lambd", 0.5, True),
                                  ("lambd",)),
    "SoftshrinkBackward0": _unary("grad_self = grad_out · [|self| > lambd]", ("self",), _outside("lambd", 0.5, True),
                                  ("lambd",)),
    "ThresholdBackward0": _unary("grad_self = grad_out · [self > threshold]", ("self",),
                                 _outside("threshold", 0.0, False), ("threshold",)),
    # zeros, not grad_out · 0: an infinite grad_out still passes 0 (torch's zeros_like(grad))
    "SignBackward0": Rule(("grad_self = 0  (sign is flat wherever it is defined)",), ((),),
                          lambda ctx, i, k: ("0", 0.0)),
    "GluBackward0": Rule(("grad_self = grad_out · σ(b) on the first half a, grad_out · a · σ(b) · (1 − σ(b)) on "
                          "the second half b  (self split in two along dim)",), (("self",),), _glu, ("dim",)),
    "XlogyBackward0": _binary(("grad_self = grad_out · log(other)  (0 where self = 0 and other ≤ 0)",
                               "grad_other = grad_out · self / other"),
                              (("self", "other"), ("self", "other")), (_xlogy(0), _xlogy(1))),
}
