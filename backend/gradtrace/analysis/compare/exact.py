"""Deltas from every element: two runs' tensor files read where the documents carry only stats.

NOTE [exact deltas from the tensor files]
    A document carries a large tensor's statistics only; their differences are lower bounds
    (``analysis/compare/deltas.py``), blind to a change that keeps min, max, mean and norm. When
    both runs kept the tensor in their tensor files (docs/CONTRACT.md, "The tensor file"), the
    delta is computed from every element instead, read by range (NOTE [judges read the tensor
    file by range] in ``analysis/kept.py``), so only the tensors on the way to the first
    divergence are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from gradtrace.analysis.compare import deltas as dl
from gradtrace.analysis.kept import KeptTensors


class Measure:
    """Deltas of two runs' tensor values, from their files where both hold them."""

    def __init__(self, a: KeptTensors | None, b: KeptTensors | None) -> None:
        self.a, self.b = a, b

    def delta(self, x: Mapping[str, Any] | None, y: Mapping[str, Any] | None) -> dl.RawDelta | None:
        rough = dl.tensor_delta(x, y)  # type: ignore[arg-type]
        if rough is None or rough.mismatch or (rough.exact and rough.max_abs is not None) \
                or self.a is None or self.b is None or x is None or y is None:
            return rough
        xa, yb = self.a.array(x.get("key")), self.b.array(y.get("key"))
        if xa is None or yb is None or xa.size != yb.size:
            return rough
        return _from_arrays(xa, yb, rough.scale)

    def many(self, xs: list[Any] | None, ys: list[Any] | None) -> dl.RawDelta | None:
        xs, ys = xs or [], ys or []
        if len(xs) != len(ys):
            return dl.MISMATCH
        return dl.combine([d for x, y in zip(xs, ys, strict=True) if (d := self.delta(x, y)) is not None])


def _from_arrays(x: np.ndarray, y: np.ndarray, scale: float) -> dl.RawDelta:
    fx, fy = np.isfinite(x), np.isfinite(y)
    both = fx & fy
    odd = ~both & ~((x == y) | (np.isnan(x) & np.isnan(y)))
    diff = y[both] - x[both]
    sq_a = float(np.dot(x[fx], x[fx]))
    sq_b = float(np.dot(y[fy], y[fy]))
    worst = float(np.abs(diff).max()) if diff.size else 0.0
    mismatch = bool(odd.any())
    return dl.RawDelta(None if mismatch else worst, float(np.dot(diff, diff)), sq_a, sq_b, scale, True, mismatch)
