"""Rules of elementwise activations: SiLU, softplus, ELU, CELU, hardtanh (ReLU6), log-sigmoid,
rsqrt, reciprocal, log1p, clamp with a maximum only, the shrinks, threshold, sign, GLU, xlogy, and
the elementwise functions of ``torch`` (log2, exp2, expm1, the inverse and hyperbolic trigonometric
functions, erf, the roundings, logit, sinc, nan_to_num, hardsigmoid).

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
from gradtrace.analysis.local_derivatives import LOCAL_DERIVATIVES, _div, _exp


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


def _of(saved: str, text: str, shown: Callable[[float], str], fn: Callable[[float], float]) -> Rule:
    """``grad_self = grad_out · f(saved)``, elementwise, for a function of the saved input (or result)."""
    return _unary(f"grad_self = grad_out · {text}", (saved,), _f(saved, shown, fn))


def _constant(text: str, c: float) -> Rule:
    return _unary(f"grad_self = grad_out · {text}", (), lambda ctx, k: (text, c))


def _zero(text: str) -> Rule:
    """A piecewise-constant function: zeros, whatever grad_out holds (torch's zeros_like(grad))."""
    return Rule((f"grad_self = 0  ({text})",), ((),), lambda ctx, i, k: ("0", 0.0))


_SQRT_PI = math.sqrt(math.pi)


def _sinc(x: float) -> float:
    """d/dx sin(πx)/(πx) = (cos(πx)·πx − sin(πx)) / (πx²), 0 at 0."""
    if x == 0:
        return 0.0
    px = math.pi * x
    return (math.cos(px) * px - math.sin(px)) / (px * x)


def _logit(ctx: Ctx, k: int) -> tuple[str, float]:
    """d/dx log(x / (1 − x)) = 1 / (x · (1 − x)); with eps, 0 outside [eps, 1 − eps]."""
    x, eps = ctx.saved["self"].at(k), ctx.arg("eps")
    if eps is not None and not _num(eps) <= x <= 1 - _num(eps):
        return f"0  ({fmt(x)} outside [eps, 1 − eps])", 0.0
    return f"1/({fmt(x)}·(1 − {fmt(x)}))", _div(1.0, x * (1.0 - x))


def _pair(f: Callable[[float, float], tuple[str, float]]) -> Callable[[Ctx, int], tuple[str, float]]:
    """A binary op's factor at output element ``j`` from its saved ``self`` and ``other`` (broadcast)."""
    return lambda ctx, j: f(_operand(ctx, "self", j), _operand(ctx, "other", j))


def _atan2(i: int) -> Callable[[Ctx, int], tuple[str, float]]:
    def f(x: float, y: float) -> tuple[str, float]:  # atan2(self = x, other = y)
        r = x * x + y * y
        if i == 0:
            return f"{fmt_operand(y)}/({fmt_operand(x)}² + {fmt_operand(y)}²)", _div(y, r)
        return f"−{fmt_operand(x)}/({fmt_operand(x)}² + {fmt_operand(y)}²)", _div(-x, r)
    return _pair(f)


def _hypot(i: int) -> Callable[[Ctx, int], tuple[str, float]]:
    def f(ctx: Ctx, j: int) -> tuple[str, float]:
        v, r = _operand(ctx, "self" if i == 0 else "other", j), _operand(ctx, "result", j)
        return f"{fmt_operand(v)}/{fmt(r)}", _div(v, r)
    return f


def _logaddexp(i: int) -> Callable[[Ctx, int], tuple[str, float]]:
    def f(x: float, y: float) -> tuple[str, float]:
        a, b = (x, y) if i == 0 else (y, x)  # 1 / (1 + exp(other − self)) for self
        return f"1/(1 + exp({fmt(b)} − {fmt_operand(a)}))", 1.0 / (1.0 + _exp(b - a))
    return _pair(f)


def _lerp(i: int, scalar: bool) -> Callable[[Ctx, int], tuple[str, float]]:
    """lerp(self, end, weight) = self + weight · (end − self)."""
    def f(ctx: Ctx, j: int) -> tuple[str, float]:
        w = _num(ctx.arg("weight")) if scalar else _operand(ctx, "weight", j)
        if i == 0:
            return f"(1 − {fmt(w)})", 1.0 - w
        if i == 1:
            return fmt(w), w
        a, b = _operand(ctx, "self", j), _operand(ctx, "end", j)
        return f"({fmt(b)} − {fmt_operand(a)})", b - a
    return f


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
    "Log2Backward0": _local("Log2Backward0", "1/(self · ln 2)"),
    "Log10Backward0": _local("Log10Backward0", "1/(self · ln 10)"),
    "AsinBackward0": _local("AsinBackward0", "1/√(1 − self²)"),
    "AcosBackward0": _local("AcosBackward0", "−1/√(1 − self²)"),
    "AtanhBackward0": _local("AtanhBackward0", "1/(1 − self²)"),
    "AcoshBackward0": _local("AcoshBackward0", "1/√(self² − 1)"),
    "AtanBackward0": _of("self", "1/(1 + self²)", lambda x: f"1/(1 + {fmt_operand(x)}²)",
                         lambda x: 1.0 / (1.0 + x * x)),
    "AsinhBackward0": _of("self", "1/√(self² + 1)", lambda x: f"1/√({fmt_operand(x)}² + 1)",
                          lambda x: 1.0 / math.sqrt(x * x + 1.0)),
    "SinhBackward0": _of("self", "cosh(self)", lambda x: f"cosh({fmt(x)})", math.cosh),
    "CoshBackward0": _of("self", "sinh(self)", lambda x: f"sinh({fmt(x)})", math.sinh),
    "TanBackward0": _of("result", "(1 + result²)  (result = tan(self))", lambda y: f"(1 + {fmt_operand(y)}²)",
                        lambda y: 1.0 + y * y),
    "Exp2Backward0": _of("result", "result · ln 2  (result = 2^self)", lambda y: f"{fmt(y)}·ln 2",
                         lambda y: y * math.log(2.0)),
    "Expm1Backward0": _of("result", "(result + 1)  (result = exp(self) − 1)", lambda y: f"({fmt(y)} + 1)",
                          lambda y: y + 1.0),
    "ErfBackward0": _of("self", "2/√π · exp(−self²)", lambda x: f"2/√π·exp(−{fmt_operand(x)}²)",
                        lambda x: 2.0 / _SQRT_PI * _exp(-x * x)),
    "ErfcBackward0": _of("self", "−2/√π · exp(−self²)", lambda x: f"−2/√π·exp(−{fmt_operand(x)}²)",
                         lambda x: -2.0 / _SQRT_PI * _exp(-x * x)),
    "SincBackward0": _of("self", "(cos(π·self)·π·self − sin(π·self)) / (π·self²)  (0 at 0)",
                         lambda x: f"sinc′({fmt(x)})", _sinc),
    "NanToNumBackward0": _of("self", "[self is finite]", lambda x: f"[{fmt(x)} finite]",
                             lambda x: 1.0 if math.isfinite(x) else 0.0),
    "HardsigmoidBackward0": _of("self", "(1/6 if −3 < self < 3 else 0)", lambda x: f"[−3 < {fmt(x)} < 3]/6",
                                lambda x: 1.0 / 6.0 if -3.0 < x < 3.0 else 0.0),
    # eps is an optional argument: a node without it (None, not recorded) has none
    "LogitBackward0": _unary("grad_self = grad_out / (self · (1 − self))  (0 outside [eps, 1 − eps] when eps is "
                             "given)", ("self",), _logit),
    "Deg2RadBackward0": _constant("π/180", math.pi / 180.0),
    "Rad2DegBackward0": _constant("180/π", 180.0 / math.pi),
    "FracBackward0": _constant("1", 1.0),
    "FloorBackward0": _zero("floor is flat between the integers"),
    "CeilBackward0": _zero("ceil is flat between the integers"),
    "RoundBackward0": _zero("round is flat between its steps"),
    "TruncBackward0": _zero("trunc is flat between the integers"),
    "Atan2Backward0": _binary(("grad_self = grad_out · other / (self² + other²)",
                               "grad_other = grad_out · (−self) / (self² + other²)"),
                              (("self", "other"), ("self", "other")), (_atan2(0), _atan2(1))),
    "HypotBackward0": _binary(("grad_self = grad_out · self / result", "grad_other = grad_out · other / result"),
                              (("self", "result"), ("other", "result")), (_hypot(0), _hypot(1))),
    "LogaddexpBackward0": _binary(("grad_self = grad_out / (1 + exp(other − self))",
                                   "grad_other = grad_out / (1 + exp(self − other))"),
                                  (("self", "other"), ("self", "other")), (_logaddexp(0), _logaddexp(1))),
    "LerpBackward0": _binary(("grad_self = grad_out · (1 − weight)", "grad_end = grad_out · weight"),
                             ((), ()), (_lerp(0, True), _lerp(1, True)), ("weight",)),
    "LerpBackward1": Rule(("grad_self = grad_out · (1 − weight)", "grad_end = grad_out · weight",
                           "grad_weight = grad_out · (end − self)"),
                          (("weight",), ("weight",), ("self", "end")),
                          _binary(("", ""), ((),), (_lerp(0, False), _lerp(1, False), _lerp(2, False))).elem),
    # zeros, not grad_out · 0: an infinite grad_out still passes 0 (torch's zeros_like(grad))
    "SignBackward0": Rule(("grad_self = 0  (sign is flat wherever it is defined)",), ((),),
                          lambda ctx, i, k: ("0", 0.0)),
    "GluBackward0": Rule(("grad_self = grad_out · σ(b) on the first half a, grad_out · a · σ(b) · (1 − σ(b)) on "
                          "the second half b  (self split in two along dim)",), (("self",),), _glu, ("dim",)),
    "XlogyBackward0": _binary(("grad_self = grad_out · log(other)  (0 where self = 0 and other ≤ 0)",
                               "grad_other = grad_out · self / other"),
                              (("self", "other"), ("self", "other")), (_xlogy(0), _xlogy(1))),
}
