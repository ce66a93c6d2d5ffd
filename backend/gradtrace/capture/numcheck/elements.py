"""One checked element: the finite differences next to the analytic value, and the verdict
over all of them (NOTE [what a verdict means] in ``schema/gradcheck.py``)."""

from __future__ import annotations

import math
from typing import Any

import torch

from gradtrace.capture.numcheck.probe import Nudge
from gradtrace.schema.gradcheck import ElementCheck, encode


def nudge(t: Any, k: int, h: float) -> Nudge:
    delta = torch.zeros(t.tensor.shape, dtype=torch.float64)
    delta.view(-1)[k] = h
    return Nudge(t.kind, t.key, delta)


def element(ti: int, t: Any, k: int, analytic: list[float], fp: torch.Tensor, fm: torch.Tensor,
             centre: torch.Tensor, hp: float, hm: float, atol: float, rtol: float) -> ElementCheck:
    numeric = ((fp - fm) / (hp + hm)).tolist()
    right = ((fp - centre) / hp).tolist()
    left = ((centre - fm) / hm).tolist()
    finite = [math.isfinite(a) for a in analytic]
    excess = [abs(a - n) - (atol + rtol * abs(n)) for a, n in zip(analytic, numeric, strict=True)]
    # the row to show: a finite failure first, then a non-finite analytic value, then the largest
    r = max(range(len(excess)), key=lambda i: (finite[i] and not excess[i] <= 0, not finite[i],
                                               math.isnan(excess[i]), excess[i]))
    a, n = analytic[r], numeric[r]
    err = abs(a - n)
    ok = all(x <= 0 for x in excess)
    index = list(torch.unravel_index(torch.tensor(k), t.tensor.shape)) if t.tensor.dim() else []
    return ElementCheck(tensor=ti, index=[int(i) for i in index], analytic=encode(a), numeric=encode(n),
                        left=encode(left[r]), right=encode(right[r]), abs_error=encode(err),
                        rel_error=encode(err / max(abs(n), atol)), ok=ok,
                        kink=gap_says_kink(left[r], right[r], atol, rtol),
                        output=r if len(analytic) > 1 else None, nonfinite=not finite[r])


def gap_says_kink(left: float, right: float, atol: float, rtol: float) -> bool:
    """The one-sided differences disagree by more than rounding and curvature explain (checked
    at every element, whether or not the central difference agrees with the analytic value;
    the engine confirms it at a larger step before believing it)."""
    gap = abs(left - right)
    return gap > 10 * (atol + rtol * max(abs(left), abs(right)))


def verdict(elements: list[ElementCheck]) -> tuple[str, int | None]:
    if not elements:
        return "inconclusive", None
    def badness(i: int) -> tuple[int, float]:
        e = elements[i]
        rel = float(e.rel_error)
        rank = 3 if failed(e) else 2 if e.kink else 1 if e.nonfinite else 0
        return (rank, -1.0 if math.isnan(rel) else rel)
    worst = max(range(len(elements)), key=badness)
    if any(failed(e) for e in elements):
        return "fail", worst
    if any(e.kink for e in elements) or all(e.nonfinite for e in elements):
        return "inconclusive", worst
    return "pass", worst


def failed(e: ElementCheck) -> bool:
    """Evidence of a wrong backward: outside the tolerance where the function is smooth and the
    analytic gradient is finite."""
    return not e.ok and not e.kink and not e.nonfinite
