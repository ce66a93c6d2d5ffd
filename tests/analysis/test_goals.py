"""The goal lines and the torch-free checker, on the golden documents (no service, no torch)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from gradtrace.analysis.goals import check_goals, goal_text, parse_goal, read_goals
from gradtrace.errors import InvalidRequest
from gradtrace.lessons import all_lessons

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def _golden(name: str) -> dict[str, Any]:
    return dict(json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8")))


LINES = ["no hint grad-accumulated", "gradient check passes on Cube", "gradient check passes on leaf x",
         "no non-finite value", "x.grad equals the reference", "model.0.weight.grad equals the reference",
         "same graph as the reference", "peak saved bytes below 8192", "loss below 0.97", "loss below -2"]


@pytest.mark.parametrize("line", LINES)
def test_every_line_round_trips(line: str) -> None:
    goal = parse_goal(line)
    assert goal_text(goal) == line
    assert parse_goal(f"-   {line.replace(' ', '  ')}  ") == goal  # a list item, spaced as typed


def test_units_and_spellings() -> None:
    assert parse_goal("peak saved bytes below 8 KiB").bytes == 8192  # type: ignore[union-attr]
    assert parse_goal("the peak saved-tensor bytes is below 1.5 MiB").bytes == 3 << 19  # type: ignore[union-attr]
    assert parse_goal("The loss after the loop is below 0.5") == parse_goal("loss below 0.5")
    assert parse_goal("`x.grad` equals the reference run's") == parse_goal("x.grad equals the reference")


@pytest.mark.parametrize("line", ["no hint", "x.grad is small", "peak saved bytes below 12 parsecs",
                                  "loss below nan", "peak saved bytes below 0", ""])
def test_a_malformed_line_is_refused_by_name(line: str) -> None:
    with pytest.raises(InvalidRequest) as err:
        read_goals(["no non-finite value", line])
    assert "goal 1" in err.value.message and repr(line.strip()) in err.value.message


def test_every_lessons_goals_parse() -> None:
    for item in all_lessons():
        assert item.exercise is not None, item.stem
        assert read_goals(list(item.exercise.goals)), item.stem


def test_a_run_against_itself_passes_the_comparing_goals() -> None:
    doc = _golden("lesson_09_accumulating_grads")
    goals = read_goals(["w.grad equals the reference", "same graph as the reference", "no non-finite value"])
    report = check_goals(doc, goals, reference=copy.deepcopy(doc))
    assert [r.status for r in report.results] == ["pass", "pass", "pass"] and report.done


def test_the_lesson_code_itself_fails_the_hint_goal_where_the_hint_is_its_point() -> None:
    doc = _golden("lesson_09_accumulating_grads")
    if not (doc.get("analysis") or {}).get("hints"):
        from gradtrace.analysis.run import analyze
        doc["analysis"] = analyze(doc)
    report = check_goals(doc, read_goals(["no hint grad-accumulated"]))
    (result,) = report.results
    assert result.status == "fail" and result.line is not None and result.node is not None
    assert not report.done


def test_non_finite_points_at_the_node_that_made_it() -> None:
    doc = _golden("case_nan_and_inf")
    if "analysis" not in doc:
        from gradtrace.analysis.run import analyze
        doc["analysis"] = analyze(doc)
    (result,) = check_goals(doc, read_goals(["no non-finite value"])).results
    first = doc["analysis"]["nonfinite"][0]
    assert result.status == "fail" and result.node == first["node"] and result.line == first["line"]


def test_a_gradcheck_goal_without_the_service_says_it_needs_it() -> None:
    doc = _golden("case_custom_function")
    (result,) = check_goals(doc, read_goals(["gradient check passes on Cube"])).results
    assert result.status == "needs_service" and "service" in result.why


def test_peak_and_loss_bounds_on_lesson_12() -> None:
    doc = _golden("lesson_12_checkpoint_memory")
    ok, tight = check_goals(doc, read_goals(["peak saved bytes below 1 MiB", "peak saved bytes below 16"])).results
    assert ok.status == "pass" and tight.status == "fail" and tight.node is not None
    low, high = check_goals(doc, read_goals(["loss below 1e9", "loss below -1"])).results
    assert low.status == "pass" and high.status == "fail"
