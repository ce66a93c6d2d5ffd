"""Rules of elementwise activations: SiLU, softplus, ELU, hardtanh (ReLU6), log-sigmoid, rsqrt,
reciprocal, log1p and clamp with a maximum only.

Where the local derivative is a function of the input alone it comes from
:data:`gradtrace.analysis.local_derivatives.LOCAL_DERIVATIVES` (the first-NaN explanation reads
the same one); those that read an argument (softplus's beta, ELU's alpha) are written here.
"""

from __future__ import annotations

from collections.abc import Callable

from gradtrace.analysis.explain.nn import _clamp, _num
from gradtrace.analysis.explain.ops import Ctx, Rule, _binary, _f, _operand, _unary
from gradtrace.analysis.explain.tensors import fmt, fmt_operand
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
}
