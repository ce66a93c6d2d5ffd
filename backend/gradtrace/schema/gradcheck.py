"""The result of a numerical gradient check: one schema for the API, Python and the page.

``gradtrace.gradcheck`` (in process) and the service's ``gradcheck`` job both answer a
:class:`GradcheckResult`; the page's check panel and the notebook repr read the same fields.
Numbers follow the run document's encoding (NOTE [encoding of awkward values] in
``schema/document.py``): NaN and the infinities are the strings ``"nan"``, ``"inf"``, ``"-inf"``.

NOTE [what a verdict means]
    ``pass``: every checked element's analytic gradient is within ``atol + rtol * |numeric|`` of
    the central difference (``torch.autograd.gradcheck``'s rule, with its float64 defaults).
    ``fail``: at least one element is outside it where the function is smooth (its left and
    right one-sided differences agree) and its analytic gradient is finite. ``inconclusive``:
    no element failed where the function is smooth, but the check could not decide: an element
    sits on a kink (found by its one-sided differences even where the central difference
    happens to agree, as for ``abs(x - 1)`` at 1), the program did not give the same answer
    twice, its backward is not deterministic, or it could not run at all. An element whose
    analytic gradient is NaN or infinite is no evidence about the backward's formula: it is
    said (``nonfinite_gradient``, with the node that made it) and the verdict is left to the
    finite elements. Each ``reasons`` entry says which, with a code and a sentence.
"""

from __future__ import annotations

import html
import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["pass", "fail", "inconclusive"]
ReasonCode = Literal[
    "upcast", "no_upcast", "kink", "nondeterministic_backward", "nondeterministic_forward",
    "step_below_resolution", "sampled", "overlapping_memory", "no_backward", "program_error",
    "backward_error", "no_gradient", "projected", "cut", "limit", "seeded", "nonfinite_gradient",
    "ignores_grad_output", "no_jvp", "jvp_error",
]
Mode = Literal["backward", "forward"]
"""``backward``: autograd's gradient (a vector-Jacobian product) against finite differences;
``forward``: a custom Function's ``jvp`` (forward-mode AD, a Jacobian-vector product) against
finite differences along the same direction (NOTE [checking a jvp] in
``capture/numcheck/forward.py``)."""
Number = float | str
MAX_ELEMENTS = 512
DEFAULT_MAX_ELEMENTS = 64


def encode(x: float) -> Number:
    """A float as the documents write it (non-finite values as strings)."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(x)


def decode(x: Number) -> float:
    return float(x)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TargetSpec(_Model):
    """What to check: a leaf by name, every parameter, or the inputs of a custom Function."""

    kind: Literal["leaf", "parameters", "function"]
    name: str | None = Field(default=None, max_length=200)
    """``leaf``: the leaf's name as the run shows it (``x``, ``model.0.weight``);
    ``function``: the Function's class name (``Cube``) or its node's name (``CubeBackward``)."""
    occurrence: int = Field(default=0, ge=0, le=100_000)
    """``function``: which call of that Function, counted from 0 in the order they ran, within
    the checked backward pass's forward (the calls since the previous backward call)."""
    pass_index: int | None = Field(default=None, ge=0, le=1_000_000)
    """Which backward call to check, counted from 0 in call order (the run document's
    ``passes[].index``); None: the first (``0``), or for a node of a stored run the pass that
    follows the node."""


class GradcheckRequest(_Model):
    """``POST /api/runs/{id}/gradcheck``: a node of the run, or a target spelled out."""

    node: str | None = Field(default=None, max_length=64)
    """A node id of the run: a leaf (or its AccumulateGrad) or a custom Function's node."""
    target: TargetSpec | None = None
    max_elements: int = Field(default=DEFAULT_MAX_ELEMENTS, ge=1, le=MAX_ELEMENTS)
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1)
    """Which elements to sample (default 0). The snippet itself re-runs under the run's seed."""
    pass_index: int | None = Field(default=None, ge=0, le=1_000_000)
    """With ``node``: which backward pass to check (``passes[].index``); by default the pass
    after the node's creation (a Function) or the first pass that reached it (a leaf)."""
    mode: Mode = "backward"
    """``forward``: check a custom Function's ``jvp`` (the node must be one, or the target kind
    ``function``); its call is counted from the snippet's start, not within a pass."""


class CodeGradcheckRequest(_Model):
    """``POST /api/gradcheck``: check a snippet without a stored run."""

    code: str
    target: TargetSpec
    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    max_elements: int = Field(default=DEFAULT_MAX_ELEMENTS, ge=1, le=MAX_ELEMENTS)
    mode: Mode = "backward"
    """``forward``: check the target Function's ``jvp`` (target kind ``function``)."""


class CheckedTensor(_Model):
    """One tensor whose elements were perturbed."""

    name: str
    shape: list[int]
    dtype: str
    """The dtype it was checked in (``float64`` after an upcast)."""
    numel: int
    checked: int


class ElementCheck(_Model):
    """One perturbed element: autograd's value next to the finite differences."""

    tensor: int
    """Index into :attr:`GradcheckResult.tensors`."""
    index: list[int]
    analytic: Number
    numeric: Number
    """The central difference ``(f(x+h) - f(x-h)) / 2h``."""
    left: Number
    """``(f(x) - f(x-h)) / h``."""
    right: Number
    """``(f(x+h) - f(x)) / h``."""
    abs_error: Number
    rel_error: Number
    """``abs_error / max(|numeric|, atol)``."""
    ok: bool
    kink: bool
    """Left and right differences disagree: the function has no derivative here."""
    output: int | None = None
    """For a function with several outputs: the output element where the error is largest."""
    nonfinite: bool = False
    """The analytic gradient is NaN or infinite here: reported, never judged as a wrong formula."""


class Reason(_Model):
    code: ReasonCode
    message: str
    node: str | None = None
    """A node's name (``ReluBackward0``) when the reason belongs to one."""
    node_id: str | None = None
    """That node's id in the run document, when the check was made on a stored run."""
    occurrence: int | None = None


class Suspect(_Model):
    """The node whose backward disagrees with the finite differences of its own forward."""

    name: str
    occurrence: int = 0
    """Which node of that name, counted from 0 in creation order."""
    node_id: str | None = None
    custom: bool
    """A ``torch.autograd.Function`` whose class the checked code defines (not one of torch's)."""
    message: str


SCHEMA_VERSION = 1


class GradcheckResult(_Model):
    verdict: Verdict
    mode: Mode = "backward"
    """What was checked: the backward (gradients) or a Function's jvp (tangents)."""
    dtype: str = "float64"
    """The dtype the check computed in."""
    eps: float = 1e-6
    atol: float = 1e-5
    rtol: float = 1e-3
    seed: int = 0
    """The seed that chose the sampled elements."""
    max_elements: int = DEFAULT_MAX_ELEMENTS
    tensors: list[CheckedTensor] = Field(default_factory=list)
    elements: list[ElementCheck] = Field(default_factory=list)
    worst: int | None = None
    """Index into :attr:`elements` of the element with the largest relative error (failed
    elements first)."""
    checked: int = 0
    failed: int = 0
    kinks: int = 0
    total: int = 0
    """Elements in all checked tensors (``checked`` of them were perturbed)."""
    reasons: list[Reason] = Field(default_factory=list)
    suspect: Suspect | None = None
    pass_index: int = 0
    """The backward call that was checked, counted from 0 (``passes[].index``)."""
    pass_count: int | None = None
    """How many backward passes the stored run made (set for a check of a stored run)."""
    pass_line: int | None = None
    """The line of the checked backward call (a check of a stored run)."""
    iteration: int | None = None
    """Which call of that line it was, counted from 1 (the loop's iteration)."""
    executions: int = 0
    """How many times the program ran (baseline, centre, two per element, the suspect search)."""
    seconds: float = 0.0
    # -- as the service answers it (a sandbox job's result, NOTE [adding a job kind] in jobs.py)
    kind: Literal["gradcheck"] = "gradcheck"
    id: str = ""
    """Content id of the canonical JSON (set by the service)."""
    schema_version: int = SCHEMA_VERSION
    status: Literal["ok", "refused", "timeout", "memory_limit", "output_limit", "crashed"] = "ok"
    """``ok`` when the check ran to its verdict; a limit the sandbox enforced otherwise (then the
    verdict is ``inconclusive`` and ``message`` says which); ``refused``: the target is not in
    the program (the API answers 422 with ``message``)."""
    message: str | None = None
    run_id: str | None = None
    """The stored run whose snippet was re-run."""

    # -- in Python -------------------------------------------------------------------------

    def worst_element(self) -> ElementCheck | None:
        return self.elements[self.worst] if self.worst is not None else None

    def describe_worst(self) -> str:
        e = self.worst_element()
        if e is None:
            return "no element was checked"
        t = self.tensors[e.tensor]
        return (f"{t.name}{e.index}: analytic {_fmt(e.analytic)}, numeric {_fmt(e.numeric)} "
                f"(relative error {_fmt(e.rel_error)})")

    def describe_pass(self) -> str:
        """``checked backward 4 of 20 (line 7, iteration 4)``: which backward the check checked,
        counted from 1 as the page's timeline counts them (``pass_index`` is 3)."""
        of = f" of {self.pass_count}" if self.pass_count is not None else ""
        where = [f"line {self.pass_line}"] if self.pass_line is not None else []
        if self.iteration is not None:
            where.append(f"iteration {self.iteration}")
        return f"checked backward {self.pass_index + 1}{of}" + (f" ({', '.join(where)})" if where else "")

    def summary(self) -> str:
        what = "gradcheck" if self.mode == "backward" else "gradcheck (forward mode, jvp)"
        lines = [f"{what}: {self.verdict} ({self.checked} of {self.total} elements checked in "
                 f"{self.dtype}, {self.failed} failed, {self.kinks} on a kink)"]
        if self.mode == "backward":
            lines.append(self.describe_pass())
        if self.elements:
            lines.append("worst: " + self.describe_worst())
        if self.suspect is not None:
            mine = ", a Function your code defines" if self.suspect.custom else ""
            lines.append(f"suspect: {self.suspect.name} ({self.suspect.message}{mine})")
        lines += [f"{r.code}: {r.message}" for r in self.reasons]
        return "\n".join(lines)

    def raise_if_failed(self) -> None:
        """Raise :class:`GradcheckFailed` when the verdict is ``fail``; its message names the
        worst element, both values and the reasons."""
        if self.verdict == "fail":
            raise GradcheckFailed(self.summary(), result=self)

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        """The notebook's view: the verdict, the reasons and the per-element grid."""
        colour = {"pass": "#1a7f37", "fail": "#cf222e", "inconclusive": "#9a6700"}[self.verdict]
        rows = []
        for i, e in enumerate(self.elements):
            mark = "kink" if e.kink else ("ok" if e.ok else "FAIL")
            style = ' style="font-weight:bold;background:#fff3cd"' if i == self.worst else ""
            cells = [self.tensors[e.tensor].name + str(e.index), _fmt(e.analytic), _fmt(e.numeric),
                     _fmt(e.left), _fmt(e.right), _fmt(e.abs_error), _fmt(e.rel_error), mark]
            rows.append(f"<tr{style}>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
        head = "".join(f"<th>{h}</th>" for h in ("element", "analytic", "numeric", "left", "right",
                                                 "abs error", "rel error", ""))
        reasons = "".join(f"<li><code>{html.escape(r.code)}</code> {html.escape(r.message)}</li>"
                          for r in self.reasons)
        suspect = (f"<p>suspect: <b>{html.escape(self.suspect.name)}</b> — {html.escape(self.suspect.message)}</p>"
                   if self.suspect else "")
        return (f'<div class="gradtrace-gradcheck"><p><span style="color:#fff;background:{colour};'
                f'padding:1px 8px;border-radius:9px">{self.verdict}</span> {self.checked} of '
                f"{self.total} elements in {self.dtype}, {self.failed} failed</p>{suspect}"
                f"<ul>{reasons}</ul><table><tr>{head}</tr>{''.join(rows)}</table></div>")


class GradcheckFailed(AssertionError):
    """Raised by :meth:`GradcheckResult.raise_if_failed`."""

    def __init__(self, message: str, *, result: GradcheckResult) -> None:
        super().__init__(message)
        self.result = result


def _fmt(x: Number) -> str:
    return x if isinstance(x, str) else f"{x:.6g}"
