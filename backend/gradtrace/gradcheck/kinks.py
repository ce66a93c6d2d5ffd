"""A kink the central difference hides: ``abs(x - 1)`` at exactly 1 has the subgradient 0,
which equals the central difference ``(1 - 1) / 2h``; only the one-sided differences (−1 and
+1) show that no derivative exists there.

NOTE [confirming a kink]
    One-sided differences also disagree on a smooth function, by ``h · f''`` (curvature) or by
    rounding (about ``ε|f| / h``). A kink's gap does not depend on the step; curvature's grows
    with it and rounding's shrinks. So an element whose gap is large while the central
    difference agrees is measured again at ten times the step (two more executions, only for
    such elements): a gap that stays within a factor of three is a kink.
"""

from __future__ import annotations

import torch

from gradtrace.analysis.gradcheck.verdict import kink_stays
from gradtrace.schema.gradcheck import ElementCheck


def confirmed(e: ElementCheck, fp: torch.Tensor, fm: torch.Tensor, centre: torch.Tensor, h: float) -> bool:
    """Whether the gap between ``e``'s one-sided differences stays at step ``h`` (NOTE [confirming a kink])."""
    r = e.output or 0
    return kink_stays(e, float((centre[r] - fm[r]) / h), float((fp[r] - centre[r]) / h))
