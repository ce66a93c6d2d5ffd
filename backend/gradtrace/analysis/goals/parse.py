"""Goals as a teacher writes them: one line each, in a lesson file or a request.

NOTE [the goal lines]
    The lines read like the sentences the page shows, so a teacher can write them by hand
    (README, "Exercises"). Case and a leading ``-`` do not matter; ``the`` is optional:

    ========================================  ==========================================
    ``no hint grad-accumulated``              :class:`~gradtrace.schema.goals.NoHint`
    ``gradient check passes on Cube``         a custom Function (``on leaf x``: a leaf)
    ``no non-finite value``                   no NaN or infinity, forward or backward
    ``x.grad equals the reference``           ``.grad`` after every accumulation
    ``same graph as the reference``           the nodes pair one to one
    ``peak saved bytes below 40000``          also ``40 KiB``, ``1.5 MiB``
    ``loss below 0.5``                        the root of the last backward pass
    ========================================  ==========================================

    A line that matches none of them is refused with its text (a 422 that names it).
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import TypeAdapter, ValidationError

from gradtrace.errors import InvalidRequest
from gradtrace.schema.goals import (
    Finite,
    Goal,
    GradcheckPasses,
    GradEquals,
    LossBelow,
    NoHint,
    PeakSavedBelow,
    SameGraph,
)

_NAME = r"([A-Za-z_][A-Za-z0-9_.]*)"
_NUMBER = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)"
_UNITS = {"": 1, "b": 1, "bytes": 1, "kb": 1000, "kib": 1024, "mb": 10**6, "mib": 1 << 20}
_PATTERNS: list[tuple[re.Pattern[str], Any]] = [
    (re.compile(r"no hint ([a-z][a-z0-9-]*)"), lambda m: NoHint(code=m[1])),
    (re.compile(r"(?:the )?grad(?:ient )?check passes on leaf " + _NAME, re.I),
     lambda m: GradcheckPasses(function=m[1], target="leaf")),
    (re.compile(r"(?:the )?grad(?:ient )?check passes on " + _NAME, re.I),
     lambda m: GradcheckPasses(function=m[1])),
    (re.compile(r"no non-finite values?|no nan or inf(?:inity)?"), lambda m: Finite()),
    (re.compile(r"`?" + _NAME + r"\.grad`? equals the reference(?: run)?(?:'s)?", re.I),
     lambda m: GradEquals(tensor=m[1])),
    (re.compile(r"(?:the )?same graph as the reference(?: run)?(?:'s)?"), lambda m: SameGraph()),
    (re.compile(r"(?:the )?peak saved(?:-tensor)? bytes (?:is )?below " + _NUMBER + r" ?([a-z]*)"),
     lambda m: PeakSavedBelow(bytes=_bytes(m[1], m[2]))),
    (re.compile(r"(?:the )?(?:final )?loss (?:after the loop )?(?:is )?below " + _NUMBER),
     lambda m: LossBelow(value=float(m[1]))),
]


def _bytes(number: str, unit: str) -> int:
    if unit not in _UNITS:
        raise ValueError(f"unknown unit {unit!r} (bytes, KiB, MiB, kB or MB)")
    value = float(number) * _UNITS[unit]
    if not math.isfinite(value) or value <= 0 or value >= 2**62:
        raise ValueError("the bound must be a positive number of bytes")
    return int(value)


def parse_goal(line: str) -> Goal:
    """The goal one line says; :class:`InvalidRequest` naming the line when it says none."""
    text = " ".join(line.strip().lstrip("-*").split())
    lowered = text.lower()
    for pattern, build in _PATTERNS:
        subject = text if pattern.flags & re.I else lowered
        m = pattern.fullmatch(subject)
        if m is None:
            continue
        try:
            goal: Goal = build(m)
        except (ValueError, ValidationError) as exc:
            raise _refused(line, str(exc).splitlines()[0]) from exc
        return goal
    raise _refused(line, "it is none of the goals gradtrace checks (README, \"Exercises\")")


def goal_text(goal: Goal) -> str:
    """The line that says ``goal`` (``parse_goal(goal_text(g)) == g``)."""
    if isinstance(goal, NoHint):
        return f"no hint {goal.code}"
    if isinstance(goal, GradcheckPasses):
        return f"gradient check passes on {'leaf ' if goal.target == 'leaf' else ''}{goal.function}"
    if isinstance(goal, Finite):
        return "no non-finite value"
    if isinstance(goal, GradEquals):
        return f"{goal.tensor}.grad equals the reference"
    if isinstance(goal, SameGraph):
        return "same graph as the reference"
    if isinstance(goal, PeakSavedBelow):
        return f"peak saved bytes below {goal.bytes}"
    assert isinstance(goal, LossBelow)
    return f"loss below {goal.value:g}"


_ADAPTER: TypeAdapter[Goal] = TypeAdapter(Goal)


def read_goals(items: list[Any]) -> list[Goal]:
    """Goals from a request: each a line (see the module's NOTE) or a goal object."""
    if len(items) > MAX_GOALS:
        raise InvalidRequest(f"at most {MAX_GOALS} goals", detail={"field": "goals", "count": len(items)})
    out: list[Goal] = []
    for k, item in enumerate(items):
        if isinstance(item, str):
            if len(item) > 300:
                raise _refused(item[:80] + "…", "a goal line is at most 300 characters", k)
            out.append(parse_goal_at(item, k))
            continue
        try:
            out.append(_ADAPTER.validate_python(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            raise InvalidRequest(f"goal {k} is malformed: {where + ': ' if where else ''}{first.get('msg')}",
                                 detail={"field": "goals", "goal": k, "given": _short(item)}) from exc
    return out


def parse_goal_at(line: str, k: int) -> Goal:
    try:
        return parse_goal(line)
    except InvalidRequest as exc:
        raise _refused(line, str(exc.detail.get("why")) if isinstance(exc.detail, dict) else "", k) from exc


MAX_GOALS = 32


def _refused(line: str, why: str, k: int | None = None) -> InvalidRequest:
    name = f"goal {k} " if k is not None else "the goal "
    return InvalidRequest(f"{name}{line.strip()!r} is malformed: {why}",
                          detail={"field": "goals", "goal": k, "given": line.strip(), "why": why})


def _short(item: Any) -> Any:
    text = repr(item)
    return item if len(text) <= 200 else text[:200] + "…"
