"""Why an op made the first NaN (or infinity) of the forward pass from inputs without one: cause,
trap and fix, read from the op and its inputs' recorded stats (``analysis/nonfinite/forward.py``).

NOTE [a forward cause only where it is certain]
    The forward producer made a NaN from inputs with none (or an infinity from finite inputs),
    which for most ops leaves one arithmetic that can have done it: ``a − b`` and ``a + b``
    make NaN only as inf − inf, ``a · b`` only as 0 × inf, a softmax only over a row holding
    +inf or every entry −inf, ``log`` only below 0 and ``sqrt`` only below 0, ``acos`` and
    ``asin`` only outside [−1, 1], a fractional power only of a negative base, ``exp`` an
    infinity only past float32's range. Where the op leaves more than one (a division: 0 / 0
    or inf / inf; an infinite quotient: x / 0 or an overflow) the inputs' stats decide (0 / 0
    where both are finite, inf / inf where both hold an infinity and one of them certainly
    holds no 0), and
    where they cannot, nothing is said rather than a guess: the entry keeps its plain "made it from
    inputs with no NaN". ``tests/analysis/test_forward_nonfinite.py`` holds each sentence to a
    program that makes it and to torch's own values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gradtrace.analysis.docview import TV, DocView
from gradtrace.analysis.numbers import flat, number

Trap = tuple[str, str | None, str | None]
"""(cause, trap, fix)."""

_LOGS = {"LogBackward0": "log", "Log2Backward0": "log2", "Log10Backward0": "log10"}
_SOFTMAX = {"SoftmaxBackward0": "softmax", "LogSoftmaxBackward0": "log_softmax", "SafeSoftmaxBackward0": "softmax"}
_PRODUCTS = {"MmBackward0", "AddmmBackward0", "BmmBackward0", "MvBackward0", "DotBackward0", "BaddbmmBackward0"}


def _input(view: DocView, fn: str, k: int) -> TV | None:
    """The recorded forward value of input ``k`` of ``fn``: a leaf's value, or the output of
    the function node that made it (the tensor file's stats are in the document)."""
    src = view.inputs.get(fn, {}).get(k)
    if src is None:
        return None
    leaf = view.leaf_of(src)
    if leaf is not None:
        return leaf.get("value")
    outs = (view.by_id.get(src) or {}).get("output") or []
    return outs[0] if len(outs) == 1 else None


def _stat(tv: TV | None, name: str) -> float | None:
    stats = (tv or {}).get("stats") or {}
    return number(stats.get(name))


def _has_zero(tv: TV | None) -> bool:
    """Whether ``tv`` certainly holds a 0 (its values say so, or its min or max is 0)."""
    values = flat(tv) if tv else None
    if values is not None:
        return any(x == 0 for x in values)
    return _stat(tv, "min") == 0 or _stat(tv, "max") == 0


def _holds(tv: TV | None, x: float) -> bool:
    """Whether ``tv`` certainly holds ``x`` (±inf: its min or max says so)."""
    values = flat(tv) if tv else None
    if values is not None:
        return any(v == x for v in values)
    return _stat(tv, "min") == x or _stat(tv, "max") == x


def _finite(tv: TV | None) -> bool:
    """Whether ``tv``'s stats show only finite values (NaN or ±inf shows in min or max)."""
    lo, hi = _stat(tv, "min"), _stat(tv, "max")
    return lo is not None and hi is not None and abs(lo) != float("inf") and abs(hi) != float("inf") \
        and lo == lo and hi == hi


def _num(x: float | None) -> str:
    return "?" if x is None else f"{x:.4g}"


def forward_trap(view: DocView, node: str, kind: str) -> Trap | None:
    """NOTE [a forward cause only where it is certain]: None where the op and the stats leave
    more than one arithmetic."""
    n: Mapping[str, Any] = view.by_id.get(node) or {}
    name = str(n.get("name"))
    a, b = _input(view, node, 0), _input(view, node, 1)
    lo = _stat(a, "min")
    if name in _LOGS:
        op = _LOGS[name]
        if kind == "nan" and lo is not None and lo < 0:
            return (f"{op} of a negative number (its input's least value is {_num(lo)})",
                    f"{op} is NaN below 0 and −inf at 0: a value that may reach 0 or go below it (a difference, "
                    "noise added, a probability computed by hand) needs a floor.",
                    f"y = torch.{op}(x.clamp_min(1e-12))")
        if kind == "inf" and _has_zero(a):
            return (f"{op}(0) = −inf", f"{op} of exactly 0 is −inf (a probability that underflowed, a clamp to 0).",
                    f"y = torch.{op}(x.clamp_min(1e-12))")
    if name == "SqrtBackward0" and kind == "nan" and lo is not None and lo < 0:
        return (f"sqrt of a negative number (its input's least value is {_num(lo)})",
                "a variance or squared distance computed by subtraction can round below 0.",
                "y = torch.sqrt(x.clamp_min(0) + 1e-12)")
    if name == "ExpBackward0" and kind == "inf":
        hi = _stat(a, "max")
        if hi is not None and hi > 88.72:
            return (f"exp overflows float32 above 88.72 (its input's largest value is {_num(hi)})",
                    "exp of a large logit is inf, and inf / inf is NaN after it: softmax by hand does this.",
                    "p = torch.softmax(logits, dim=-1)  # or logits - logits.amax(-1, keepdim=True) before exp")
    if name in _SOFTMAX and kind == "nan":
        op = _SOFTMAX[name]
        if _holds(a, float("inf")):
            return (f"{op} of a row holding +inf: inf − inf is NaN",
                    "a +inf in the scores (an overflow before it) turns softmax's row to NaN.", None)
        if _holds(a, float("-inf")):
            return (f"{op} of a row whose every entry is −inf: exp gives 0 everywhere and 0 / 0 is NaN",
                    "a mask that hides every position of a row (a padding mask over an empty sequence, a causal "
                    "mask shifted by one) leaves softmax nothing to normalise.",
                    "scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)  # not -inf")
    if kind == "nan" and name in ("SubBackward0", "RsubBackward0", "AddBackward0"):
        what = "inf + (−inf)" if name == "AddBackward0" else "inf − inf"
        return (f"{what}: both inputs are infinite there",
                "an overflow before it (exp, a power, a product of large values) meets another infinity.", None)
    if kind == "nan" and name == "MulBackward0":
        return ("0 × inf: one input is 0 where the other is infinite",
                "an infinity from an overflow before it, times a mask or a weight that is 0.", None)
    if kind == "nan" and name == "DivBackward0" and _finite(a) and _finite(b):  # not inf / inf: 0 / 0
        return ("0 / 0: numerator and denominator both 0",
                "a normalisation by a norm, a count or a standard deviation that is 0 (a constant input).",
                "y = x / d.clamp_min(1e-12)")
    if kind == "nan" and name == "DivBackward0" and _infinite(a) and _infinite(b) and (_no_zero(a) or _no_zero(b)):
        return ("inf / inf: numerator and denominator both infinite",
                "exp of a large value overflows float32 to inf, and dividing it by a sum that overflowed too is "
                "NaN: softmax written by hand does this.",
                "p = torch.softmax(logits, dim=-1)  # it subtracts the row's maximum first")
    if kind == "nan" and name in _ARC:
        op, hi = _ARC[name], _stat(a, "max")
        if (lo is not None and lo < -1) or (hi is not None and hi > 1):
            # nine digits: a value that rounded just past 1 would read "1" in four
            edge = f"largest value is {hi:.9g}" if hi is not None and hi > 1 else f"least value is {lo:.9g}"
            return (f"{op} of a value outside [−1, 1] (its input's {edge})",
                    "a cosine computed by hand (a dot product over the norms) can round just past ±1.",
                    f"y = torch.{op}(x.clamp(-1 + 1e-7, 1 - 1e-7))")
    if kind == "nan" and name == "PowBackward0" and lo is not None and lo < 0:
        exponent = number((n.get("saved_args") or {}).get("exponent"))
        if exponent is not None and exponent != int(exponent):
            return (f"a negative number to the fractional power {_num(exponent)} (its input's least value is "
                    f"{_num(lo)})",
                    "x ** 0.5 (or any fractional power) of a value that rounds below 0 is NaN.",
                    f"y = x.clamp_min(0) ** {_num(exponent)}")
    if kind == "nan" and name in _PRODUCTS:
        return _product(view, node)
    return None


_ARC = {"AcosBackward0": "acos", "AsinBackward0": "asin"}


def _infinite(tv: TV | None) -> bool:
    return _holds(tv, float("inf")) or _holds(tv, float("-inf"))


def _no_zero(tv: TV | None) -> bool:
    """Whether ``tv`` certainly holds no 0: its values say so, or its stats lie on one side of it."""
    values = flat(tv) if tv else None
    if values is not None:
        return all(x != 0 for x in values)
    lo, hi = _stat(tv, "min"), _stat(tv, "max")
    return (lo is not None and lo > 0) or (hi is not None and hi < 0)


_DIVERGED = ("weights or activations that grew without bound before it (a learning rate too high, a gradient "
             "not clipped): the run diverged.")


def _product(view: DocView, node: str) -> Trap | None:
    """A matrix product's NaN: an infinite input (0 × inf, inf − inf in its sums), or sums of
    finite products so large they overflow float32 first."""
    inputs = [_input(view, node, k) for k in range(3)]
    if any(_holds(t, s) for t in inputs for s in (float("inf"), float("-inf"))):
        return ("a matrix product with an infinite input: 0 × inf or inf − inf in its sums", _DIVERGED, None)
    largest = max((abs(x) for t in inputs for x in (_stat(t, "min"), _stat(t, "max")) if x is not None),
                  default=0.0)
    if largest > 1e30:  # a product of it with anything past 3.4e8 passes float32's 3.4e38
        return (f"a matrix product whose recorded inputs reach {_num(largest)}: sums of such products overflow "
                "float32 to ±inf, and inf − inf is NaN", _DIVERGED, None)
    return None
