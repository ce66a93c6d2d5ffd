"""``analysis/gradcheck/verdict.py`` (torch-free): the gradient check's verdict from numbers alone,
on elements made by hand. The check that measures them is tested against
``torch.autograd.gradcheck`` in ``tests/gradcheck/``."""

from __future__ import annotations

from gradtrace.analysis.gradcheck.verdict import (
    FLOAT64,
    judge_element,
    kink_stays,
    settle,
    tolerances,
    verdict,
)
from gradtrace.schema.gradcheck import Reason

_, ATOL, RTOL = FLOAT64


def test_tolerances_are_torchs_in_float64_and_looser_below() -> None:
    assert tolerances("float64") == (1e-6, 1e-5, 1e-3)
    assert all(low > high for low, high in zip(tolerances("float32"), tolerances("float64"), strict=True))


def test_an_agreeing_element_passes_and_a_disagreeing_one_fails_as_the_worst() -> None:
    good = judge_element(0, [1], [3.0], [3.0 + 1e-9], [3.0], [3.0], ATOL, RTOL)
    bad = judge_element(0, [2], [12.0], [8.0], [8.0], [8.0], ATOL, RTOL)
    assert good.ok and not good.kink and not good.nonfinite
    assert not bad.ok and not bad.kink and bad.rel_error == 0.5
    assert verdict([good]) == ("pass", 0)
    assert verdict([good, bad, good]) == ("fail", 1)


def test_a_kink_is_inconclusive_even_where_the_central_difference_agrees() -> None:
    """abs(x) at 0: the subgradient 0 equals the central difference, the sides say -1 and +1."""
    kink = judge_element(0, [], [0.0], [0.0], [-1.0], [1.0], ATOL, RTOL)
    assert kink.ok and kink.kink
    assert verdict([kink]) == ("inconclusive", 0)
    assert kink_stays(kink, -1.0, 1.0) and not kink_stays(kink, 0.5, 0.5)


def test_a_nonfinite_gradient_is_never_a_fail() -> None:
    nan = judge_element(0, [0], [float("nan")], [1.0], [1.0], [1.0], ATOL, RTOL)
    assert nan.nonfinite and nan.analytic == "nan"
    assert verdict([nan]) == ("inconclusive", 0)
    assert verdict([]) == ("inconclusive", None)


def test_settle_keeps_a_fail_through_a_cut_from_being_called_a_wrong_backward() -> None:
    reasons: list[Reason] = []
    assert settle("fail", reasons, overlapping=False, cuts=["detach", "detach"]) == "inconclusive"
    assert [r.code for r in reasons] == ["cut"] and reasons[0].message.count("detach") == 1
    assert settle("pass", [Reason(code="nondeterministic_backward", message="")], overlapping=False,
                  cuts=[]) == "inconclusive"
    assert settle("pass", [], overlapping=True, cuts=[]) == "inconclusive"
    assert settle("fail", [], overlapping=True, cuts=[]) == "fail"
