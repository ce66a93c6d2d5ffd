"""Exercise goals: what a run must achieve, and what gradtrace found when it checked.

A goal is written by hand in a lesson file (one line: ``no hint grad-accumulated``; the grammar
is ``analysis/goals/parse.py``) or sent as JSON with ``POST /api/runs`` (``goals``: the same
lines, or these objects). Each kind is judged by gradtrace's own analysis of the run it just
recorded (``analysis/goals/check.py``); the gradient check needs a re-run in the sandbox, so
the service runs it (``api/goals.py``) and a saved file says it needs the service.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gradtrace.schema.base import _Model, _optional


def _name(description: str) -> Any:
    """A name a goal looks up in the run (a class, a leaf, a tensor node)."""
    return Field(min_length=1, max_length=200, description=description)


class _Goal(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NoHint(_Goal):
    kind: Literal["no_hint"] = Field("no_hint", description="`no_hint`: the run must not raise the hint `code`.")
    code: str = Field(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9-]*$", description=(
        "A hint's stable code (docs/CONTRACT.md, `Hint.code`): `grad-accumulated`."))


class GradcheckPasses(_Goal):
    kind: Literal["gradcheck"] = Field("gradcheck", description=(
        "`gradcheck`: the gradient check of `function` must pass."))
    function: str = _name("A custom `autograd.Function`'s class name (`Cube`) or a leaf's name (`x`).")
    target: Literal["function", "leaf"] = Field("function", description=(
        "`function`: a custom Function's class; `leaf`: a leaf tensor by name."))


class Finite(_Goal):
    kind: Literal["finite"] = Field("finite", description="`finite`: no NaN or infinity anywhere in the run.")


class GradEquals(_Goal):
    kind: Literal["grad_equals"] = Field("grad_equals", description=(
        "`grad_equals`: `tensor`'s gradients must equal the reference run's."))
    tensor: str = _name("A tensor node's name (`x`, `model.0.weight`): its `.grad` after every accumulation.")


class SameGraph(_Goal):
    kind: Literal["same_graph"] = Field("same_graph", description=(
        "`same_graph`: the graph must have the reference run's shape (ops and edges)."))


class PeakSavedBelow(_Goal):
    kind: Literal["peak_saved_below"] = Field("peak_saved_below", description=(
        "`peak_saved_below`: the peak of the memory saved for backward must stay below `bytes`."))
    bytes: int = Field(gt=0, le=2**62, description="The bound, in bytes, that peak must stay below.")


class LossBelow(_Goal):
    kind: Literal["loss_below"] = Field("loss_below", description=(
        "`loss_below`: the tensor the last backward pass started from must end below `value`."))
    value: float = Field(allow_inf_nan=False, description="The bound the loss must end below.")


Goal = Annotated[NoHint | GradcheckPasses | Finite | GradEquals | SameGraph | PeakSavedBelow | LossBelow,
                 Field(discriminator="kind")]
"""One goal; ``kind`` says which."""

NEEDS_REFERENCE = ("grad_equals", "same_graph")
"""The kinds judged against a reference run (a lesson's solution, a stored run or a share)."""


class Reference(BaseModel):
    """The run the comparing goals hold the learner's run against: exactly one of the three."""

    model_config = ConfigDict(extra="forbid")

    run_id: str | None = Field(default=None, max_length=64, description="A stored run's id.")
    share_id: str | None = Field(default=None, max_length=64, description="A share link's id.")
    lesson: str | None = Field(default=None, max_length=64, description=(
        "A lesson's id or stem: its exercise's reference solution, run by the service."))


GoalStatus = Literal["pass", "fail", "needs_service", "unknown"]


class GoalResult(_Model):
    """One goal as checked on one run."""

    goal: dict[str, object] = Field(description=(
        'the goal as an object: `{"kind": "no_hint", "code"}`, `{"kind": "gradcheck", "function", "target"}`, '
        '`{"kind": "finite"}`, `{"kind": "grad_equals", "tensor"}`, `{"kind": "same_graph"}`, '
        '`{"kind": "peak_saved_below", "bytes"}`, `{"kind": "loss_below", "value"}`'))
    text: str = Field(description="the goal as a teacher writes it (`no hint grad-accumulated`; README, \"Exercises\")")
    status: GoalStatus = Field(description=(
        "`pass`, `fail`, `needs_service` (a gradient check, which re-runs the snippet) or `unknown` (the run did not "
        "get far enough to tell)"))
    why: str = Field(description="one sentence with the run's names and numbers")
    node: str | None = Field(None, description="the node the verdict points at, or null")
    line: int | None = Field(None, description="its snippet line, or null")


class GoalReport(_Model):
    """The ``goals`` of a run document: every goal checked, in the order given."""

    results: list[GoalResult] = Field(description="every goal as checked, in the order given (`GoalResult`)")
    done: bool = Field(description="true when every goal passes and the run ended `ok`: the exercise is done")
    exercise: str | None = _optional("the lesson (its file stem) whose exercise these goals are")
