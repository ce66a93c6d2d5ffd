"""One checked element: the finite differences next to the analytic value, measured here and
judged by ``analysis/gradcheck/verdict.py`` (NOTE [what a verdict means] in ``schema/gradcheck.py``)."""

from __future__ import annotations

from typing import Any

import torch

from gradtrace.analysis.gradcheck.verdict import judge_element
from gradtrace.gradcheck.probe import Nudge
from gradtrace.schema.gradcheck import ElementCheck


def nudge(t: Any, k: int, h: float) -> Nudge:
    delta = torch.zeros(t.tensor.shape, dtype=torch.float64)
    delta.view(-1)[k] = h
    return Nudge(t.kind, t.key, delta)


def element(ti: int, t: Any, k: int, analytic: list[float], fp: torch.Tensor, fm: torch.Tensor,
            centre: torch.Tensor, hp: float, hm: float, atol: float, rtol: float) -> ElementCheck:
    """Element ``k`` of target ``ti``: its differences from the rows at ``x + hp`` and ``x - hm``."""
    numeric = ((fp - fm) / (hp + hm)).tolist()
    right = ((fp - centre) / hp).tolist()
    left = ((centre - fm) / hm).tolist()
    index = list(torch.unravel_index(torch.tensor(k), t.tensor.shape)) if t.tensor.dim() else []
    return judge_element(ti, [int(i) for i in index], analytic, numeric, left, right, atol, rtol)
