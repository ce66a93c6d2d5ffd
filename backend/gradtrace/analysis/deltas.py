"""How far one recorded tensor is from another: max abs, relative L2, and whether that is
beyond float32 tolerance.

A document's tensor value (``schema.TensorValue``) carries every element when the tensor is
small and only statistics (min, max, mean, norm) when it is not. From full values the figures
are exact; from statistics they are lower bounds (``|Δmin|``, ``|Δmax|``, ``|Δmean|`` never
exceed the largest element difference, and ``|‖b‖ − ‖a‖| ≤ ‖b − a‖``) and say so
(``exact=False``).

The tolerance is the golden tests' (NOTE [goldens on any CPU] in ``analysis/docdiff.py``):
an element may differ by ``REL`` of the larger tensor's largest magnitude, and never less than
``FLOOR`` of the largest gradient in the run, so a rerun on another CPU reads as no change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gradtrace.analysis.docdiff import FLOOR, REL


@dataclass(frozen=True, slots=True)
class RawDelta:
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


ZERO = RawDelta(0.0, 0.0, 0.0, 0.0, 0.0, True, False)


def tensor_delta(a: dict[str, Any] | None, b: dict[str, Any] | None) -> RawDelta | None:
    """The difference of two ``TensorValue`` dicts; ``None`` when neither was recorded."""
    if a is None and b is None:
        return None
    if a is None or b is None or a.get("shape") != b.get("shape") or a.get("dtype") != b.get("dtype"):
        return RawDelta(None, 0.0, 0.0, 0.0, 0.0, True, True)
    va, vb = a.get("values"), b.get("values")
    if va is not None and vb is not None:
        return _from_values(va, vb)
    return _from_stats(a.get("stats") or {}, b.get("stats") or {})


def combine(deltas: list[RawDelta]) -> RawDelta | None:
    """Several tensors (a node's gradients in and out, over its backward calls) as one."""
    if not deltas:
        return None
    if len(deltas) == 1:
        return deltas[0]
    maxes = [d.max_abs for d in deltas]
    return RawDelta(None if any(m is None for m in maxes) else max(m for m in maxes if m is not None),
                    sum(d.sum_sq_diff for d in deltas), sum(d.sum_sq_a for d in deltas),
                    sum(d.sum_sq_b for d in deltas), max(d.scale for d in deltas),
                    all(d.exact for d in deltas), any(d.mismatch for d in deltas))


def beyond(delta: RawDelta, floor: float) -> bool:
    """Whether ``delta`` is beyond float32 tolerance, given the run's absolute ``floor``."""
    if delta.mismatch:
        return True
    if delta.max_abs is None:
        return True
    return delta.max_abs > max(REL * delta.scale, floor)


def floor_of(largest_gradient: float) -> float:
    """The absolute tolerance of a run whose largest gradient is ``largest_gradient``."""
    return FLOOR * largest_gradient


def rel_l2(delta: RawDelta) -> float | None:
    if delta.mismatch and delta.max_abs is None and not delta.sum_sq_a:
        return None
    norm = math.sqrt(delta.sum_sq_a) or math.sqrt(delta.sum_sq_b)
    diff = math.sqrt(delta.sum_sq_diff)
    if not norm:
        return 0.0 if not diff else None
    return diff / norm


def magnitude(value: dict[str, Any] | None) -> float:
    """The largest magnitude of a tensor value, from its statistics (0 when unknown)."""
    stats = (value or {}).get("stats") or {}
    mags = [abs(v) for k in ("min", "max") if isinstance(v := stats.get(k), int | float)
            and not isinstance(v, bool) and math.isfinite(v)]
    return max(mags, default=0.0)


def _as_array(values: Any) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Every element as float64 (``"nan"``/``"inf"`` strings as floats, complex as pairs)."""
    try:
        return np.asarray(values, dtype=np.float64).ravel()
    except (ValueError, TypeError):
        return np.asarray(list(_flatten(values)), dtype=np.float64)


def _flatten(values: Any) -> Any:
    if isinstance(values, list):
        for v in values:
            yield from _flatten(v)
    elif isinstance(values, str):
        yield float(values) if values in ("nan", "inf", "-inf") else math.nan
    elif isinstance(values, bool | int | float):
        yield float(values)
    else:
        yield math.nan


def _from_values(va: Any, vb: Any) -> RawDelta:
    a, b = _as_array(va), _as_array(vb)
    if a.shape != b.shape:
        return RawDelta(None, 0.0, 0.0, 0.0, 0.0, True, True)
    if a.size == 0:
        return ZERO
    fa, fb = np.isfinite(a), np.isfinite(b)
    mismatch = bool((fa != fb).any())
    if not mismatch and not fa.all():  # the same places are non-finite: are they the same?
        na, nb = a[~fa], b[~fb]
        mismatch = bool(((na != nb) & ~(np.isnan(na) & np.isnan(nb))).any())
    both = fa & fb
    a, b = a[both], b[both]
    if a.size == 0:
        return RawDelta(None if mismatch else 0.0, 0.0, 0.0, 0.0, 0.0, True, mismatch)
    diff = b - a
    scale = float(max(np.abs(a).max(), np.abs(b).max()))
    return RawDelta(None if mismatch else float(np.abs(diff).max()), float(diff @ diff), float(a @ a),
                    float(b @ b), scale, True, mismatch)


def _from_stats(sa: dict[str, Any], sb: dict[str, Any]) -> RawDelta:
    def num(stats: dict[str, Any], key: str) -> float | None:
        v = stats.get(key)
        return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None

    gaps: list[float] = []
    for key in ("min", "max", "mean"):
        x, y = num(sa, key), num(sb, key)
        if x is not None and y is not None and math.isfinite(x) and math.isfinite(y):
            gaps.append(abs(y - x))
        elif sa.get(key) != sb.get(key):
            return RawDelta(None, 0.0, 0.0, 0.0, 0.0, False, True)
    na, nb = num(sa, "norm") or 0.0, num(sb, "norm") or 0.0
    scale = max(abs(v) for v in (num(sa, "min"), num(sa, "max"), num(sb, "min"), num(sb, "max"), 0.0)
                if v is not None and math.isfinite(v))
    return RawDelta(max(gaps, default=0.0), (nb - na) ** 2, na * na, nb * nb, scale, False, False)
