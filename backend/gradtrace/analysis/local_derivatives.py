"""Local derivatives of elementwise one-input backward nodes, as plain float functions.

``LOCAL_DERIVATIVES[name](x)`` is d out / d x of the forward op at input ``x``, so that the gradient a node
``name`` sends to its input is ``grad_out * LOCAL_DERIVATIVES[name](x)`` element by element (what
:mod:`gradtrace.analysis.nonfinite` uses to say *why* a gradient became NaN: ``0 × inf``).
Python's math raises where IEEE arithmetic gives inf or nan; :func:`local_derivative` gives the IEEE answer
as torch computes it (``tests/analysis/test_local_derivatives.py`` checks each one against torch).
"""

from __future__ import annotations

import math
from collections.abc import Callable

_INF = math.inf
_NAN = math.nan


def _div(a: float, b: float) -> float:
    """IEEE division: ``a / 0`` is ±inf (nan for ``0 / 0``), as in torch."""
    if b == 0:
        if a == 0 or math.isnan(a):
            return _NAN
        return math.copysign(_INF, a) * math.copysign(1.0, b)
    return a / b


def _sqrt(x: float) -> float:
    return _NAN if x < 0 else math.sqrt(x)


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return _INF


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + _exp(-x)) if x >= 0 else _exp(x) / (1.0 + _exp(x))


def _mish(x: float) -> float:
    """d/dx x · tanh(softplus(x)) = tanh(sp) + x · σ(x) · (1 − tanh(sp)²)."""
    t = math.tanh(x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x)))
    return t + x * _sigmoid(x) * (1.0 - t * t)


def _hardswish(x: float) -> float:
    """d/dx x · relu6(x + 3) / 6: 0 up to −3, x/3 + ½ below 3, then 1 (aten's hardswish_backward)."""
    return 0.0 if x <= -3.0 else x / 3.0 + 0.5 if x < 3.0 else 1.0


LOCAL_DERIVATIVES: dict[str, Callable[[float], float]] = {
    "SqrtBackward0": lambda x: _div(1.0, 2.0 * _sqrt(x)),
    "RsqrtBackward0": lambda x: _NAN if x < 0 else _div(-0.5, x * _sqrt(x)),
    "LogBackward0": lambda x: _div(1.0, x),
    "Log2Backward0": lambda x: _div(1.0, x * math.log(2.0)),
    "Log10Backward0": lambda x: _div(1.0, x * math.log(10.0)),
    "Log1PBackward0": lambda x: _div(1.0, 1.0 + x),
    "ReciprocalBackward0": lambda x: _div(-1.0, x * x),
    "ExpBackward0": _exp,
    "Exp2Backward0": lambda x: math.log(2.0) * (_INF if x > 1023 else 2.0 ** x),
    "Expm1Backward0": _exp,
    "SinBackward0": math.cos,
    "CosBackward0": lambda x: -math.sin(x),
    "TanhBackward0": lambda x: 1.0 - math.tanh(x) ** 2,
    "SigmoidBackward0": lambda x: _sigmoid(x) * (1.0 - _sigmoid(x)),
    "AsinBackward0": lambda x: _div(1.0, _sqrt(1.0 - x * x)),
    "AcosBackward0": lambda x: -_div(1.0, _sqrt(1.0 - x * x)),
    "AtanhBackward0": lambda x: _div(1.0, 1.0 - x * x),
    "AcoshBackward0": lambda x: _div(1.0, _sqrt(x * x - 1.0)),
    "AbsBackward0": lambda x: 0.0 if x == 0 else math.copysign(1.0, x),
    "NegBackward0": lambda x: -1.0,
    "SiluBackward0": lambda x: _sigmoid(x) * (1.0 + x * (1.0 - _sigmoid(x))),
    "LogSigmoidBackward0": lambda x: _sigmoid(-x),
    "MishBackward0": _mish,
    "HardswishBackward0": _hardswish,
}


def local_derivative(name: str, x: float) -> float | None:
    """``LOCAL_DERIVATIVES[name](x)``, or None when ``name`` has no rule here."""
    rule = LOCAL_DERIVATIVES.get(name)
    if rule is None:
        return None
    if math.isnan(x):
        return _NAN
    try:
        return rule(x)
    except (OverflowError, ValueError):
        return _NAN
