"""Exercise goals on ``POST /api/runs``: read them before the run, check them after it.

The goals come as lines or objects (``goals``), or as a lesson's exercise (``exercise``: its
goal lines, checked against its reference solution); they are read before anything runs, so a
malformed goal is a 422 that names it and costs no sandbox time. After the run,
``analysis/goals`` judges the document; the two things it cannot do alone are done here: the
reference run is fetched (a kept run, a share) or recorded (a lesson's solution, once per
lesson and seed: NOTE [reference runs are cached]), and a gradient-check goal runs a job of
kind ``gradcheck`` (``sandbox/kinds/gradcheck.py``).

The run is stored as it was recorded; the answer is that document with ``goals`` added
(docs/CONTRACT.md), so the run's id stays the run's and a share of the answer keeps its goals.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson
from fastapi import Request

from gradtrace.analysis.goals import check_goals, read_goals
from gradtrace.analysis.gradcheck import place_on_run
from gradtrace.api.jobs import new_job
from gradtrace.api.services import Services
from gradtrace.api.shares import find_share
from gradtrace.errors import InvalidRequest, NotFound
from gradtrace.jobs import GRADCHECK
from gradtrace.lessons import Lesson, lesson
from gradtrace.sandbox.kinds.gradcheck import GradcheckParams
from gradtrace.schema.goals import NEEDS_REFERENCE, Goal, GoalReport, GradcheckPasses, Reference
from gradtrace.schema.gradcheck import GradcheckResult, TargetSpec
from gradtrace.schema.requests import RunRequest
from gradtrace.storage.codec import load

GRADCHECK_ELEMENTS = 16
"""Elements a goal's gradient check nudges (an exercise's tensors are small)."""
GRADCHECK_TIME_SHARE = 0.6
"""As ``api/gradcheck.py``: of the sandbox's time limit, what the re-runs plan to use."""


@dataclass(frozen=True)
class GoalPlan:
    """What one request asks to check, read before the run."""

    goals: list[Goal]
    reference: Reference | None
    exercise: Lesson | None


def plan_goals(body: RunRequest) -> GoalPlan | None:
    """The request's goals, read and checked for sense; None when it asks for none."""
    if body.goals is None and body.exercise is None:
        return None
    found: Lesson | None = None
    if body.exercise is not None:
        try:
            found = lesson(body.exercise)
        except KeyError:
            raise InvalidRequest(f"no lesson {body.exercise!r} (GET /api/lessons lists them)",
                                 detail={"field": "exercise", "given": body.exercise}) from None
        if found.exercise is None:
            raise InvalidRequest(f"lesson {found.stem} has no exercise", detail={"field": "exercise"})
    given = found.exercise.goals if found is not None and found.exercise is not None else ()
    items: list[Any] = list(body.goals) if body.goals is not None else list(given)
    goals = read_goals(items)
    if not goals:
        raise InvalidRequest("goals is empty: give at least one goal", detail={"field": "goals"})
    reference = body.reference
    named = (reference.run_id, reference.share_id, reference.lesson) if reference is not None else ()
    if reference is not None and sum(v is not None for v in named) != 1:
        raise InvalidRequest("a reference is exactly one of run_id, share_id or lesson", detail={"field": "reference"})
    if reference is None and found is not None:
        reference = Reference(lesson=found.stem)
    needs = [k for k, g in enumerate(goals) if g.kind in NEEDS_REFERENCE]
    if needs and reference is None:
        raise InvalidRequest(f"goal {needs[0]} compares with a reference run: give reference "
                             '({"run_id"}, {"share_id"} or {"lesson"}) or an exercise',
                             detail={"field": "goals", "goal": needs[0]})
    if reference is not None and reference.lesson is not None:
        _reference_lesson(reference.lesson)  # a 422 now, not after the run
    return GoalPlan(goals=goals, reference=reference, exercise=found)


async def goals_answer(request: Request, svc: Services, plan: GoalPlan, raw: bytes, *, seed: int | None,
                       device: str) -> bytes:
    """The run document ``raw`` with its ``goals`` checked and added."""
    doc = orjson.loads(raw)
    reference = None
    if plan.reference is not None and any(g.kind in NEEDS_REFERENCE for g in plan.goals):
        reference = await _reference(request, svc, plan.reference, seed=seed, device=device)
    gradchecks: dict[int, dict[str, Any]] = {}
    for k, goal in enumerate(plan.goals):
        if isinstance(goal, GradcheckPasses):
            gradchecks[k] = await _gradcheck(request, svc, doc, goal, seed=seed)
    report: GoalReport = check_goals(doc, plan.goals, reference=reference, gradchecks=gradchecks,
                                     exercise=plan.exercise.stem if plan.exercise else None)
    extra = orjson.dumps(report.model_dump(mode="json", exclude_none=False))
    body = raw.rstrip()
    return body[:-1] + b',"goals":' + extra + b"}"


def _reference_lesson(key: str) -> Lesson:
    try:
        found = lesson(key)
    except KeyError:
        raise InvalidRequest(f"no lesson {key!r} to take a reference from", detail={"field": "reference"}) from None
    if found.exercise is None:
        raise InvalidRequest(f"lesson {found.stem} has no reference solution", detail={"field": "reference"})
    return found


_CACHE: OrderedDict[tuple[str, int | None, str], dict[str, Any]] = OrderedDict()
_CACHE_SIZE = 64
"""NOTE [reference runs are cached]: a lesson's solution is the same code every time, and the
page checks an exercise on every run, so its recorded document is kept per (lesson, seed,
device), a few dozen at most (each a few KiB to a few hundred)."""


async def _reference(request: Request, svc: Services, ref: Reference, *, seed: int | None,
                     device: str) -> dict[str, Any]:
    if ref.run_id is not None:
        return load(svc.require_kept_run(ref.run_id, instead="give a share_id as the reference"))
    if ref.share_id is not None:
        try:
            return load(find_share(svc, ref.share_id))
        except NotFound as exc:
            raise InvalidRequest(f"no share {ref.share_id!r} to take a reference from",
                                 detail={"field": "reference"}) from exc
    assert ref.lesson is not None
    found = _reference_lesson(ref.lesson)
    key = (found.stem, seed, device)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    assert found.exercise is not None
    job = new_job(request, svc, code=found.exercise.solution, device=device, seed=seed)
    result = await svc.require_runner().run(job)
    doc: dict[str, Any] = orjson.loads(result.canonical)
    if doc.get("status") == "ok":  # a timeout on a loaded machine is not kept
        _CACHE[key] = doc
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return doc


async def _gradcheck(request: Request, svc: Services, doc: dict[str, Any], goal: GradcheckPasses, *,
                     seed: int | None) -> dict[str, Any]:
    target = TargetSpec(kind=goal.target, name=goal.function, occurrence=0)
    job = new_job(request, svc, code=str(doc.get("code") or ""), device="cpu", seed=seed, kind=GRADCHECK,
                  params=GradcheckParams(target=target, max_elements=GRADCHECK_ELEMENTS, sample_seed=0,
                                         time_budget_s=GRADCHECK_TIME_SHARE * svc.limits.timeout_s))
    answer = await svc.require_runner().run(job)
    result = GradcheckResult.model_validate_json(answer.canonical)
    if result.status == "refused":
        return {"verdict": "fail", "message": f"{goal.function} is not in the program: {result.message or ''}".strip()}
    place_on_run(doc, result)
    out = result.model_dump(mode="json")
    suspect = out.get("suspect") or {}
    if suspect.get("node_id"):
        node = next((n for n in doc["graph"]["nodes"] if n.get("id") == suspect["node_id"]), None)
        suspect["line"] = node.get("line") if node else None
    return out
