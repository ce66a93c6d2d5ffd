"""Snippet re-runs (what the service's gradcheck job does): the Cube, relu at 0, targets."""

from __future__ import annotations

import pytest

from gradcheck.cube import RIGHT_CUBE, WRONG_CUBE
from gradtrace.gradcheck import TargetError, TargetSpec, check_snippet
from gradtrace.gradcheck.job import run_gradcheck
from gradtrace.schema.gradcheck import GradcheckResult


def test_the_wrong_cube_fails_with_the_cube_node_as_suspect() -> None:
    r = check_snippet(WRONG_CUBE, TargetSpec(kind="leaf", name="x"))
    assert r.verdict == "fail" and r.failed == 2
    assert r.suspect is not None
    assert (r.suspect.name, r.suspect.occurrence, r.suspect.custom) == ("CubeBackward", 0, True)
    worst = r.worst_element()
    assert worst is not None and float(worst.rel_error) == pytest.approx(2 / 3, rel=1e-6)
    assert float(worst.analytic) == pytest.approx(float(worst.numeric) / 3, rel=1e-6)
    assert r.executions <= 2 * r.checked + 2 + 2 * 12
    assert r.dtype == "float64" and [x.code for x in r.reasons] == ["upcast"]


def test_the_right_cube_passes_by_leaf_and_by_the_function_inputs() -> None:
    assert check_snippet(RIGHT_CUBE, TargetSpec(kind="leaf", name="x")).verdict == "pass"
    by_fn = check_snippet(RIGHT_CUBE, TargetSpec(kind="function", name="CubeBackward", occurrence=0))
    assert by_fn.verdict == "pass" and by_fn.tensors[0].name == "x"
    assert check_snippet(WRONG_CUBE, TargetSpec(kind="function", name="Cube")).verdict == "fail"


def test_relu_at_zero_in_a_snippet_is_inconclusive_on_relu() -> None:
    r = check_snippet("x = torch.tensor([0.0, 1.5], requires_grad=True)\n(torch.relu(x) * 2).sum().backward()\n",
                      TargetSpec(kind="leaf", name="x"))
    assert r.verdict == "inconclusive"
    kink = next(x for x in r.reasons if x.code == "kink")
    assert kink.node == "ReluBackward0" and kink.occurrence == 0


def test_seeded_randomness_in_a_snippet_is_rerun_exactly_and_float32_values_are_kept() -> None:
    code = ("torch.manual_seed(3)\nw = torch.randn(5, requires_grad=True)\nnoise = torch.rand(5)\n"
            "(w.tanh() * noise).sum().backward()\n")
    r = check_snippet(code, TargetSpec(kind="leaf", name="w"), seed=11)
    assert r.verdict == "pass", r.summary()
    assert check_snippet(code, TargetSpec(kind="leaf", name="w"), seed=11).elements == r.elements


def test_a_snippet_that_is_random_without_a_seed_is_inconclusive() -> None:
    code = ("import os\nw = torch.ones(3, requires_grad=True)\n"
            "(w * int.from_bytes(os.urandom(2), 'big')).sum().backward()\n")
    r = check_snippet(code, TargetSpec(kind="leaf", name="w"))
    assert r.verdict == "inconclusive" and "nondeterministic_forward" in [x.code for x in r.reasons]


def test_bad_targets_are_target_errors_and_the_job_answers_them_as_errors() -> None:
    with pytest.raises(TargetError, match=r"no leaf named 'q'.*leaves: x"):
        check_snippet(RIGHT_CUBE, TargetSpec(kind="leaf", name="q"))
    with pytest.raises(TargetError, match="no parameter"):
        check_snippet(RIGHT_CUBE, TargetSpec(kind="parameters"))
    with pytest.raises(TargetError, match="called 1 time"):
        check_snippet(RIGHT_CUBE, TargetSpec(kind="function", name="Cube", occurrence=3))
    refused = GradcheckResult.model_validate_json(run_gradcheck({"code": RIGHT_CUBE,
                                                                 "target": {"kind": "leaf", "name": "q"}}))
    assert refused.status == "refused" and refused.message and "no leaf named 'q'" in refused.message
    refused = GradcheckResult.model_validate_json(run_gradcheck({"code": "x = (", "target": {"kind": "parameters"}}))
    assert refused.status == "refused" and "does not compile" in (refused.message or "")


def test_the_job_answers_a_result_and_errors_in_the_snippet_are_reasons() -> None:
    r = GradcheckResult.model_validate_json(run_gradcheck({"code": WRONG_CUBE, "seed": 0,
                                                           "target": {"kind": "leaf", "name": "x"}}))
    assert r.verdict == "fail"
    r = GradcheckResult.model_validate_json(run_gradcheck({"code": "raise ValueError('boom')",
                                                           "target": {"kind": "parameters"}}))
    assert r.verdict == "inconclusive" and r.reasons[-1].code == "program_error" and "boom" in r.reasons[-1].message
    r = GradcheckResult.model_validate_json(run_gradcheck({"code": "x = torch.ones(2, requires_grad=True)\n",
                                                           "target": {"kind": "leaf", "name": "x"}}))
    assert r.verdict == "inconclusive" and r.reasons[-1].code == "no_backward"


def test_max_elements_is_bounded() -> None:
    with pytest.raises(TargetError, match="between 1 and 512"):
        check_snippet(RIGHT_CUBE, TargetSpec(kind="leaf", name="x"), max_elements=513)


def test_the_notebook_repr_is_the_grid_and_raise_names_the_worst_element() -> None:
    r = check_snippet(WRONG_CUBE, TargetSpec(kind="leaf", name="x"))
    html = r._repr_html_()
    assert html.count("<tr") == 3 and "FAIL" in html and "CubeBackward" in html
    with pytest.raises(AssertionError, match=r"(?s)x\[\d\]: analytic 1, numeric 3 .*upcast"):
        r.raise_if_failed()
