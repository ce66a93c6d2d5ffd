"""Exercise goals: what a run must achieve, and what gradtrace found when it checked.

A goal is written by hand in a lesson file (one line: ``no hint grad-accumulated``; the grammar
is ``analysis/goals/parse.py``) or sent as JSON with ``POST /api/runs`` (``goals``: the same
lines, or these objects). Each kind is judged by gradtrace's own analysis of the run it just
recorded (``analysis/goals/check.py``); the gradient check needs a re-run in the sandbox, so
the service runs it (``api/goals.py``) and a saved file says it needs the service.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from gradtrace.schema.base import _Model, _optional

_NAME = Field(min_length=1, max_length=200)


class _Goal(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NoHint(_Goal):
    kind: Literal["no_hint"] = "no_hint"
    code: str = Field(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9-]*$")
    """A hint's stable code (docs/CONTRACT.md, ``Hint.code``): ``grad-accumulated``."""


class GradcheckPasses(_Goal):
    kind: Literal["gradcheck"] = "gradcheck"
    function: str = _NAME
    """A custom ``autograd.Function``'s class name (``Cube``) or a leaf's name (``x``)."""
    target: Literal["function", "leaf"] = "function"


class Finite(_Goal):
    kind: Literal["finite"] = "finite"


class GradEquals(_Goal):
    kind: Literal["grad_equals"] = "grad_equals"
    tensor: str = _NAME
    """A tensor node's name (``x``, ``model.0.weight``): its ``.grad`` after every accumulation."""


class SameGraph(_Goal):
    kind: Literal["same_graph"] = "same_graph"


class PeakSavedBelow(_Goal):
    kind: Literal["peak_saved_below"] = "peak_saved_below"
    bytes: int = Field(gt=0, le=2**62)


class LossBelow(_Goal):
    kind: Literal["loss_below"] = "loss_below"
    value: float = Field(allow_inf_nan=False)


Goal = Annotated[NoHint | GradcheckPasses | Finite | GradEquals | SameGraph | PeakSavedBelow | LossBelow,
                 Field(discriminator="kind")]
"""One goal; ``kind`` says which."""

NEEDS_REFERENCE = ("grad_equals", "same_graph")
"""The kinds judged against a reference run (a lesson's solution, a stored run or a share)."""


class Reference(BaseModel):
    """The run the comparing goals hold the learner's run against: exactly one of the three."""

    model_config = ConfigDict(extra="forbid")

    run_id: str | None = Field(default=None, max_length=64)
    share_id: str | None = Field(default=None, max_length=64)
    lesson: str | None = Field(default=None, max_length=64)
    """A lesson's id or stem: its exercise's reference solution, run by the service."""


GoalStatus = Literal["pass", "fail", "needs_service", "unknown"]


class GoalResult(_Model):
    """One goal as checked on one run."""

    goal: dict[str, object]
    """The goal as an object (``{"kind": "no_hint", "code": "grad-accumulated"}``)."""
    text: str
    """The goal as a teacher writes it (``no hint grad-accumulated``)."""
    status: GoalStatus
    """``needs_service``: a gradient check that only the service can run (a saved file);
    ``unknown``: the run did not get far enough to tell (it raised before backward, say)."""
    why: str
    """One sentence with the run's own names and numbers."""
    node: str | None = None
    """The node the verdict points at (a failing goal's culprit), when there is one."""
    line: int | None = None
    """Its snippet line."""


class GoalReport(_Model):
    """The ``goals`` of a run document: every goal checked, in the order given."""

    results: list[GoalResult]
    done: bool
    """True when every goal passes: the exercise is done."""
    exercise: str | None = _optional()
    """The lesson whose exercise these goals are (a lesson's stem), when they came from one."""
