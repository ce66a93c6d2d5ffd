"""How far one recorded tensor is from another: max abs, relative L2, and whether that is
beyond float32 tolerance.

A document's tensor value (``schema.TensorValue``) carries every element when the tensor is
small and only statistics (min, max, mean, norm) when it is not. From full values the figures
are exact; from statistics they are lower bounds (``|Δmin|``, ``|Δmax|``, ``|Δmean|`` never
exceed the largest element difference, and ``|‖b‖ − ‖a‖| ≤ ‖b − a‖``) and say so
(``exact=False``).

The tolerance is the golden tests' (NOTE [goldens on any CPU] in ``analysis/numbers.py``):
an element may differ by ``REL`` of the larger tensor's largest magnitude, and never less than
``FLOOR`` of the largest gradient in the run, so a rerun on another CPU reads as no change.
"""

from __future__ import annotations

import math
from operator import mul
from typing import Any, NamedTuple

from gradtrace.analysis.numbers import FLOOR, REL, number


class RawDelta(NamedTuple):
    """A delta before it is judged (the run's tolerance floor is known only at the end)."""

    max_abs: float | None
    sum_sq_diff: float
    sum_sq_a: float
    sum_sq_b: float
    scale: float
    """The larger tensor's largest magnitude."""
    exact: bool
    mismatch: bool
    """Shapes, dtypes or non-finite elements differ: beyond any tolerance."""


MISMATCH = RawDelta(None, 0.0, 0.0, 0.0, 0.0, True, True)
_NO_STATS: dict[str, Any] = {}


def tensor_delta(a: dict[str, Any] | None, b: dict[str, Any] | None) -> RawDelta | None:
    """The difference of two ``TensorValue`` dicts; ``None`` when neither was recorded."""
    if a is None or b is None:
        return None if a is b else MISMATCH
    if a.get("shape") != b.get("shape") or a.get("dtype") != b.get("dtype"):
        return MISMATCH
    sa, sb = a.get("stats") or _NO_STATS, b.get("stats") or _NO_STATS
    va, vb = a.get("values"), b.get("values")
    lo_a, hi_a, mean_a, norm_a = sa.get("min"), sa.get("max"), sa.get("mean"), sa.get("norm")
    lo_b, hi_b, mean_b, norm_b = sb.get("min"), sb.get("max"), sb.get("mean"), sb.get("norm")
    if (type(lo_a) is float and type(hi_a) is float and type(mean_a) is float and type(norm_a) is float
            and type(lo_b) is float and type(hi_b) is float and type(mean_b) is float and type(norm_b) is float):
        # The common case, statistics all finite floats: no helper calls (GRU-200 has 8,600 of them).
        scale = max(-lo_a, hi_a, -lo_b, hi_b, 0.0)
        sq_a, sq_b = norm_a * norm_a, norm_b * norm_b
        if va is not None and vb is not None:
            if va == vb:  # one comparison in C: the common case of two runs that agree
                return RawDelta(0.0, 0.0, sq_a, sq_b, scale, True, False)
            return _from_values(_flat(va), _flat(vb), sq_a, sq_b, scale)
        gap = max(abs(lo_b - lo_a), abs(hi_b - hi_a), abs(mean_b - mean_a))
        return RawDelta(gap, (norm_b - norm_a) ** 2, sq_a, sq_b, scale, False, False)
    na, nb = _num(norm_a) or 0.0, _num(norm_b) or 0.0
    scale = max(magnitude(a), magnitude(b))
    if va is not None and vb is not None:
        if va == vb:
            return RawDelta(0.0, 0.0, na * na, nb * nb, scale, True, False)
        return _from_values(_flat(va), _flat(vb), na * na, nb * nb, scale)
    return _from_stats(sa, sb, na, nb, scale)


def combine(deltas: list[RawDelta]) -> RawDelta | None:
    """Several tensors (a node's gradients in and out, over its backward calls) as one."""
    if not deltas:
        return None
    if len(deltas) == 1:
        return deltas[0]
    maxes = [d.max_abs for d in deltas]
    return RawDelta(None if None in maxes else max(m for m in maxes if m is not None),
                    sum(d.sum_sq_diff for d in deltas), sum(d.sum_sq_a for d in deltas),
                    sum(d.sum_sq_b for d in deltas), max(d.scale for d in deltas),
                    all(d.exact for d in deltas), any(d.mismatch for d in deltas))


def beyond(delta: RawDelta, floor: float) -> bool:
    """Whether ``delta`` is beyond float32 tolerance, given the run's absolute ``floor``."""
    if delta.mismatch or delta.max_abs is None:
        return True
    return delta.max_abs > max(REL * delta.scale, floor)


def floor_of(largest_gradient: float) -> float:
    """The absolute tolerance of a run whose largest gradient is ``largest_gradient``."""
    return FLOOR * largest_gradient


def rel_l2(delta: RawDelta) -> float | None:
    """``‖b − a‖ / ‖a‖`` (``‖b‖`` when A's is 0); ``None`` when it cannot be known."""
    if delta.mismatch and delta.max_abs is None and not delta.sum_sq_diff:
        return None
    norm = math.sqrt(delta.sum_sq_a) or math.sqrt(delta.sum_sq_b)
    diff = math.sqrt(delta.sum_sq_diff)
    if not norm:
        return 0.0 if not diff else None
    return diff / norm


def magnitude(value: dict[str, Any] | None) -> float:
    """The largest finite magnitude of a tensor value, from its statistics (0 when unknown)."""
    if not value:
        return 0.0
    stats = value.get("stats")
    if not stats:
        return 0.0
    lo, hi = _num(stats.get("min")), _num(stats.get("max"))
    return max(abs(lo) if lo is not None and math.isfinite(lo) else 0.0,
               abs(hi) if hi is not None and math.isfinite(hi) else 0.0)


def _num(v: Any) -> float | None:
    """A JSON number as a float (``None`` for the strings ``"nan"``/``"inf"``, and anything else:
    unlike :func:`~gradtrace.analysis.numbers.number`, a non-finite statistic is compared as
    written, and two type checks keep this cheap on every pair of statistics)."""
    t = type(v)
    if t is float:
        return v  # type: ignore[no-any-return]
    if t is int:
        return float(v)
    return None


def _flat(values: Any) -> list[Any]:
    """A nested list of elements, flat (complex elements as their two parts), as written: unlike
    :func:`~gradtrace.analysis.numbers.flatten`, nothing is converted, so the common case of plain
    numbers is subtracted at once and only a run with ``"nan"``/``"inf"`` strings takes the careful
    path."""
    if not isinstance(values, list):
        return [values]
    if not values or type(values[0]) is not list:
        return values
    if all(type(row) is list and (not row or type(row[0]) is not list) for row in values):
        return [x for row in values for x in row]
    return [x for row in values for x in _flat(row)]


def _element(v: Any) -> float:
    x = number(v)
    return math.nan if x is None else x


def _from_values(fa: list[Any], fb: list[Any], sq_a: float, sq_b: float, scale: float) -> RawDelta:
    if len(fa) != len(fb):
        return MISMATCH
    if not fa:
        return RawDelta(0.0, 0.0, 0.0, 0.0, 0.0, True, False)
    try:  # the common case: every element a plain number (bools subtract as 0/1)
        diffs = [y - x for x, y in zip(fa, fb, strict=True)]
    except TypeError:  # non-finite elements are strings ("nan", "inf"): the careful path
        return _from_values_with_nonfinite([_element(x) for x in fa], [_element(y) for y in fb], sq_a, sq_b, scale)
    return RawDelta(float(max(map(abs, diffs))), float(sum(map(mul, diffs, diffs))), sq_a, sq_b, scale, True, False)


def _from_values_with_nonfinite(fa: list[float], fb: list[float], sq_a: float, sq_b: float,
                                scale: float) -> RawDelta:
    mismatch = False
    diffs: list[float] = []
    for x, y in zip(fa, fb, strict=True):
        if math.isfinite(x) and math.isfinite(y):
            diffs.append(y - x)
        elif not (x == y or (math.isnan(x) and math.isnan(y))):
            mismatch = True
    worst = max(map(abs, diffs), default=0.0)
    return RawDelta(None if mismatch else worst, sum(map(mul, diffs, diffs)), sq_a, sq_b, scale, True, mismatch)


def _from_stats(sa: dict[str, Any], sb: dict[str, Any], na: float, nb: float, scale: float) -> RawDelta:
    """Lower bounds from the statistics (see the module docstring)."""
    gaps: list[float] = []
    for key in ("min", "max", "mean"):
        x, y = _num(sa.get(key)), _num(sb.get(key))
        if x is not None and y is not None and math.isfinite(x) and math.isfinite(y):
            gaps.append(abs(y - x))
        elif sa.get(key) != sb.get(key):
            return RawDelta(None, 0.0, na * na, nb * nb, scale, False, True)
    return RawDelta(max(gaps, default=0.0), (nb - na) ** 2, na * na, nb * nb, scale, False, False)
