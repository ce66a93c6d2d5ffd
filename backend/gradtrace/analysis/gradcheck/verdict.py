"""The gradient check's verdict, from numbers alone: tolerances, each element's judgement, the
verdict over all of them, and the words of the reasons and of the blame.

The check itself (``gradtrace/gradcheck/``) runs the snippet under torch and measures: analytic
values, finite differences, which node made what. Everything it then concludes is decided here,
torch-free, so the rule is written once for the backward and the forward check (NOTE [what a
verdict means] in ``schema/gradcheck.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gradtrace.analysis.nonfinite import trap_for
from gradtrace.schema.gradcheck import ElementCheck, GradcheckResult, Reason, Suspect, encode

FLOAT64 = (1e-6, 1e-5, 1e-3)
"""eps, atol, rtol in float64: ``torch.autograd.gradcheck``'s defaults, so verdicts agree."""
LOW_PRECISION = (1e-3, 1e-2, 1e-2)
"""The same for a program that could not be upcast (float32 and below)."""


def tolerances(dtype: str) -> tuple[float, float, float]:
    """eps, atol, rtol for a check computed in ``dtype``."""
    return FLOAT64 if dtype == "float64" else LOW_PRECISION


def judge_element(tensor: int, index: list[int], analytic: Sequence[float], numeric: Sequence[float],
                  left: Sequence[float], right: Sequence[float], atol: float, rtol: float) -> ElementCheck:
    """One checked element: per output row its analytic value, central and one-sided differences;
    the row shown is a finite failure first, then a non-finite analytic value, then the largest
    excess over the tolerance."""
    finite = [math.isfinite(a) for a in analytic]
    excess = [abs(a - n) - (atol + rtol * abs(n)) for a, n in zip(analytic, numeric, strict=True)]
    r = max(range(len(excess)), key=lambda i: (finite[i] and not excess[i] <= 0, not finite[i],
                                               math.isnan(excess[i]), excess[i]))
    a, n = analytic[r], numeric[r]
    err = abs(a - n)
    return ElementCheck(tensor=tensor, index=index, analytic=encode(a), numeric=encode(n),
                        left=encode(left[r]), right=encode(right[r]), abs_error=encode(err),
                        rel_error=encode(err / max(abs(n), atol)), ok=all(x <= 0 for x in excess),
                        kink=gap_says_kink(left[r], right[r], atol, rtol),
                        output=r if len(analytic) > 1 else None, nonfinite=not finite[r])


def gap_says_kink(left: float, right: float, atol: float, rtol: float) -> bool:
    """The one-sided differences disagree by more than rounding and curvature explain (checked
    at every element, whether or not the central difference agrees with the analytic value;
    the check confirms it at a larger step before believing it)."""
    return abs(left - right) > 10 * (atol + rtol * max(abs(left), abs(right)))


def kink_stays(e: ElementCheck, left: float, right: float) -> bool:
    """Whether ``e``'s gap between its one-sided differences stays (within a factor of three)
    at the larger step, where ``left`` and ``right`` were measured (NOTE [confirming a kink] in
    ``gradcheck/kinks.py``)."""
    gap = abs(float(e.left) - float(e.right))
    return gap > 0 and gap / 3 <= abs(left - right) <= 3 * gap


def lucky(elements: list[ElementCheck]) -> int:
    """Elements on a kink whose central difference agreed with the analytic value anyway."""
    return sum(1 for e in elements if e.kink and e.ok)


def failed(e: ElementCheck) -> bool:
    """Evidence of a wrong backward: outside the tolerance where the function is smooth and the
    analytic gradient is finite."""
    return not e.ok and not e.kink and not e.nonfinite


def verdict(elements: list[ElementCheck]) -> tuple[str, int | None]:
    """The verdict over the checked elements, and the worst one's position."""
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


def settle(verdict: str, reasons: list[Reason], *, overlapping: bool, cuts: list[str]) -> str:
    """The verdict once the reasons are known: a pass is inconclusive when the backward was
    nondeterministic or a target's elements share memory; a fail is inconclusive (with the
    reason added) when the result also depends on the target through a cut autograd leaves out."""
    if any(r.code == "nondeterministic_backward" for r in reasons) or overlapping:
        verdict = "inconclusive" if verdict == "pass" else verdict
    if verdict == "fail" and cuts:
        verdict = "inconclusive"
        reasons.append(Reason(code="cut", message=f"the result also depends on the target through "
                              f"{', '.join(sorted(set(cuts)))}, which autograd leaves out by design "
                              "while finite differences include it: the two cannot agree here"))
    return verdict


def kink_reason(result: GradcheckResult, node: str | None, occurrence: int | None) -> Reason:
    """The backward check's ``kink`` reason, naming the kink-prone node when one was found."""
    where = f" at {node}" if node is not None else ""
    n = lucky(result.elements)
    return Reason(code="kink", node=node, occurrence=occurrence,
                  message=f"{result.kinks} element(s) sit on a kink{where}: the left and right differences "
                          "disagree (an input exactly at 0, a tie or a bound), so no derivative exists there"
                          + (f"; at {n} of them the central difference matches the analytic value only by luck "
                             "(the subgradient torch picks equals the mean of the two slopes)" if n else ""))


def forward_kink_reason(kinks: int) -> Reason:
    """The forward check's ``kink`` reason."""
    return Reason(code="kink", message=f"{kinks} element(s) sit on a kink: the left and right "
                  "differences disagree, so no derivative exists there")


def nonfinite_reason(shown: list[str], node: str | None, occurrence: int | None, direct: list[str],
                     near: list[str], *, nan: bool) -> Reason:
    """The ``nonfinite_gradient`` reason: the elements ``shown`` (``name[index]``), the node whose
    backward made the value (with its consumers ``direct`` and ``near`` naming the pattern,
    ``analysis/nonfinite/traps.py``)."""
    more = f" and {len(shown) - 4} more" if len(shown) > 4 else ""
    message = f"the analytic gradient is {'NaN' if nan else 'infinite'} at {', '.join(shown[:4])}{more}"
    if node is not None:
        message += f": {node}'s backward made it"
        trap = trap_for(node, direct, near)
        if trap is not None:
            message += f" ({trap.cause}). {trap.trap} Fix: {'; '.join(trap.fix.splitlines())}."
        else:
            message += "."
    message += (" That is where the function has no finite derivative, not a wrong backward formula: "
                "the verdict rests on the finite elements")
    return Reason(code="nonfinite_gradient", message=message, node=node, occurrence=occurrence)


def ignores_grad_output(result: GradcheckResult, node: str | None, occurrence: int | None, custom: bool) -> None:
    """Fail ``result``: a zero ``grad_output`` gave a non-zero gradient (made first by ``node``
    when one could be told)."""
    result.verdict = "fail"
    result.reasons.append(Reason(code="ignores_grad_output", node=node, occurrence=occurrence,
                                 message=f"{node or 'the backward'} returns a non-zero gradient when it receives "
                                         "zero: it does not multiply by grad_output (torch.autograd.gradcheck: "
                                         "\"backward not multiplied by grad_output\")"))
    if node is not None:
        result.suspect = Suspect(name=node, occurrence=occurrence or 0, custom=custom,
                                 message="it returns a gradient when it receives zero: its backward ignores "
                                         "grad_output")


def blame(node: str, occurrence: int, custom: bool) -> Suspect:
    """The node whose backward is wrong: right gradient at its output, wrong at its input."""
    return Suspect(name=node, occurrence=occurrence, custom=custom,
                   message="the gradient reaching its output agrees with the finite differences, "
                           "the gradient it passes to its input does not: its backward is wrong")


def search_gave_up(checks: int) -> Reason:
    """The suspect search ran out of its ``checks`` node checks."""
    return Reason(code="program_error", message=f"the suspect search stopped after "
                  f"{checks} node checks without isolating one node")


def blame_jvp(function: str, occurrence: int, custom: bool) -> Suspect:
    """The custom Function (class ``function``) whose ``jvp`` disagrees with its own forward."""
    return Suspect(name=function + "Backward", occurrence=occurrence, custom=custom,
                   message=f"its jvp's tangent disagrees with the finite differences of its own forward "
                           f"along the same direction: {function}.jvp is wrong")
