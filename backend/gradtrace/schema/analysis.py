"""What the analysis (:mod:`gradtrace.analysis`) found in a run: part of the run document.

Computed once, from the document itself, where the document is built
(:func:`gradtrace.capture.document.build_document`), and only read after that: by the page, the
widget, saved HTML and Python. The page never re-derives any of it (one rule, one side).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gradtrace.schema.base import _Model, _optional

Severity = Literal["error", "warning", "info"]


class Evidence(_Model):
    """One fact a hint rests on, as the user would read it (``shape``, ``[3, 1]``)."""

    label: str
    value: str


class Hint(_Model):
    """A likely mistake, said once, with what shows it and how to fix it."""

    code: str
    """A stable identifier (``grad-accumulated``): what tests and the page key on."""
    severity: Severity
    title: str
    message: str
    """What happened, in one or two sentences with the run's own names and numbers."""
    line: int | None = None
    nodes: list[str] = Field(default_factory=list)
    """Ids of the nodes it concerns, most relevant first (the page's "show on graph")."""
    evidence: list[Evidence] = Field(default_factory=list)
    fix: str
    """The fix, written as code."""
    lesson: str | None = None
    """The lesson that teaches it (a file stem of ``gradtrace/lessons/snippets``)."""


class NonFinite(_Model):
    """The first NaN (or infinity) of a run, in one direction, and the node that made it.

    The producer is the first node whose output holds a non-finite value while everything it
    received was finite; the nodes after it that only carried the value on are ``passed_on``.
    """

    phase: Literal["forward", "backward"]
    kind: Literal["nan", "inf"]
    node: str
    """The producer's id."""
    name: str | None = None
    line: int | None = None
    pass_: int | None = Field(default=None, alias="pass")
    event: int | None = None
    """Index of the producer's event in ``events`` (the step the page jumps to)."""
    output: int | None = None
    """Which of the producer's outputs (backward: its ``grad_inputs``) first holds it."""
    elements: list[int] = Field(default_factory=list)
    """Flat indices of the non-finite elements, when the values were recorded (at most 8)."""
    count: int | None = None
    """How many elements are non-finite, when the values were recorded."""
    cause: str | None = None
    """The arithmetic that made it, when it can be told (``0 × inf``)."""
    passed_on: list[str] = Field(default_factory=list)
    """Ids of the nodes that only carried it on, in order (at most 50)."""
    sentence: str
    trap: str | None = None
    """The pattern behind it, when known (``where``: the unselected branch's gradient)."""
    fix: str | None = _optional()


class GradOffBlock(_Model):
    """Lines of the snippet that run with gradients off: no graph is recorded there."""

    kind: Literal["no_grad", "inference_mode", "set_grad_enabled"]
    line: int
    """The ``with`` statement (or the decorator) that turns gradients off."""
    start: int
    end: int
    """The first and last line of its body."""


class Starved(_Model):
    """A leaf or parameter that ends the run with no gradient, and what starved it
    (``analysis/starved.py``)."""

    name: str
    node: str | None = None
    """Its tensor node, when the graph has one (a frozen parameter has none)."""
    reason: Literal["unused", "cut", "frozen"]
    line: int | None = None
    """The cut's line, or where the leaf was defined."""
    detail: str


class Analysis(_Model):
    """Everything the analysis says about one run."""

    badge: str | None = None
    """A short addition to the run's status ("x.grad has NaN"), when there is something to say."""
    nonfinite: list[NonFinite] = Field(default_factory=list)
    """The first non-finite value forward, then backward (each when there is one)."""
    hints: list[Hint] = Field(default_factory=list)
    grad_off: list[GradOffBlock] | None = _optional()
    """Blocks of the code under ``torch.no_grad()`` / ``inference_mode()`` /
    ``set_grad_enabled(False)``, in source order (the code pane marks them); absent when none."""
    starved: list[Starved] | None = _optional()
    """Every leaf and parameter that ends with no gradient, with what starved it (unused, cut,
    frozen); absent when none does or no backward ran."""
