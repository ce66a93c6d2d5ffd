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
``gradcheck/forward.py``)."""
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

    kind: Literal["leaf", "parameters", "function"] = Field(description=(
        "`leaf`: one leaf by name; `parameters`: every parameter; `function`: the inputs of a custom Function's "
        "call."))
    name: str | None = Field(default=None, max_length=200, description=(
        "`leaf`: the leaf's name as the run shows it (`x`, `model.0.weight`); `function`: the Function's class name "
        "(`Cube`) or its node's name (`CubeBackward`)."))
    occurrence: int = Field(default=0, ge=0, le=100_000, description=(
        "`function`: which call of that Function, counted from 0 in the order they ran, within the checked backward "
        "pass's forward (the calls since the previous backward call)."))
    pass_index: int | None = Field(default=None, ge=0, le=1_000_000, description=(
        "Which backward call to check, counted from 0 in call order (the run document's `passes[].index`); None: the "
        "first (`0`), or for a node of a stored run the pass that follows the node."))


class GradcheckRequest(_Model):
    """``POST /api/runs/{id}/gradcheck``: a node of the run, or a target spelled out."""

    node: str | None = Field(default=None, max_length=64, description=(
        "A node id of the run: a leaf (or its AccumulateGrad) or a custom Function's node."))
    target: TargetSpec | None = Field(None, description=(
        "What to check, spelled out, when `node` is not given (`TargetSpec`)."))
    max_elements: int = Field(default=DEFAULT_MAX_ELEMENTS, ge=1, le=MAX_ELEMENTS, description=(
        "How many elements to perturb at most, sampled when the tensors hold more."))
    seed: int | None = Field(default=None, ge=0, le=2**63 - 1, description=(
        "Which elements to sample (default 0). The snippet itself re-runs under the run's seed."))
    pass_index: int | None = Field(default=None, ge=0, le=1_000_000, description=(
        "With `node`: which backward pass to check (`passes[].index`); by default the pass after the node's creation "
        "(a Function) or the first pass that reached it (a leaf)."))
    mode: Mode = Field("backward", description=(
        "`forward`: check a custom Function's `jvp` (the node must be one, or the target kind `function`); its call "
        "is counted from the snippet's start, not within a pass."))


class CodeGradcheckRequest(_Model):
    """``POST /api/gradcheck``: check a snippet without a stored run."""

    code: str = Field(description="The snippet to run and check; `torch`, `nn` and `F` are predefined.")
    target: TargetSpec = Field(description="What to check (`TargetSpec`).")
    seed: int = Field(default=0, ge=0, le=2**63 - 1, description=(
        "The seed the snippet runs with, which also chooses the sampled elements."))
    max_elements: int = Field(default=DEFAULT_MAX_ELEMENTS, ge=1, le=MAX_ELEMENTS, description=(
        "How many elements to perturb at most, sampled when the tensors hold more."))
    mode: Mode = Field("backward", description="`forward`: check the target Function's `jvp` (target kind `function`).")


class CheckedTensor(_Model):
    """One tensor whose elements were perturbed."""

    name: str = Field(description="The tensor's name as the run shows it (`x`, `model.0.weight`).")
    shape: list[int] = Field(description="Its shape.")
    dtype: str = Field(description="The dtype it was checked in (`float64` after an upcast).")
    numel: int = Field(description="How many elements it has.")
    checked: int = Field(description="How many of them were perturbed.")


class ElementCheck(_Model):
    """One perturbed element: autograd's value next to the finite differences."""

    tensor: int = Field(description="Index into `GradcheckResult.tensors`.")
    index: list[int] = Field(description="The element's index in its tensor.")
    analytic: Number = Field(description=(
        "What autograd computed for this element (backward) or the jvp gave (forward)."))
    numeric: Number = Field(description="The central difference `(f(x+h) - f(x-h)) / 2h`.")
    left: Number = Field(description="`(f(x) - f(x-h)) / h`.")
    right: Number = Field(description="`(f(x+h) - f(x)) / h`.")
    abs_error: Number = Field(description="`|analytic - numeric|`.")
    rel_error: Number = Field(description="`abs_error / max(|numeric|, atol)`.")
    ok: bool = Field(description="Whether the element is within the tolerances.")
    kink: bool = Field(description="Left and right differences disagree: the function has no derivative here.")
    output: int | None = Field(None, description=(
        "For a function with several outputs: the output element where the error is largest."))
    nonfinite: bool = Field(False, description=(
        "The analytic gradient is NaN or infinite here: reported, never judged as a wrong formula."))


class Reason(_Model):
    code: ReasonCode = Field(description="A stable identifier of the reason (`upcast`, `kink`, `no_jvp`, ...).")
    message: str = Field(description="One sentence saying it.")
    node: str | None = Field(None, description="A node's name (`ReluBackward0`) when the reason belongs to one.")
    node_id: str | None = Field(None, description=(
        "That node's id in the run document, when the check was made on a stored run."))
    occurrence: int | None = Field(None, description=(
        "Which node of that name, counted from 0 in creation order, when it belongs to one."))


class Suspect(_Model):
    """The node whose backward disagrees with the finite differences of its own forward."""

    name: str = Field(description="The node's name (`CubeBackward`).")
    occurrence: int = Field(0, description="Which node of that name, counted from 0 in creation order.")
    node_id: str | None = Field(None, description=(
        "Its id in the run document, when the check was made on a stored run."))
    custom: bool = Field(description=(
        "A `torch.autograd.Function` whose class the checked code defines (not one of torch's)."))
    message: str = Field(description="One sentence saying why it is suspected.")


SCHEMA_VERSION = 1


class GradcheckResult(_Model):
    verdict: Verdict = Field(description="`pass`, `fail` or `inconclusive` (`reasons` say why).")
    mode: Mode = Field("backward", description=(
        "What was checked: the backward (gradients) or a Function's jvp (tangents)."))
    dtype: str = Field("float64", description="The dtype the check computed in.")
    eps: float = Field(1e-6, description="The finite-difference step.")
    atol: float = Field(1e-5, description="The absolute tolerance.")
    rtol: float = Field(1e-3, description="The relative tolerance.")
    seed: int = Field(0, description="The seed that chose the sampled elements.")
    max_elements: int = Field(DEFAULT_MAX_ELEMENTS, description="How many elements were to be perturbed at most.")
    tensors: list[CheckedTensor] = Field(default_factory=list, description=(
        "Every tensor whose elements were perturbed (`CheckedTensor`)."))
    elements: list[ElementCheck] = Field(default_factory=list, description="Every perturbed element (`ElementCheck`).")
    worst: int | None = Field(None, description=(
        "Index into `elements` of the element with the largest relative error (failed elements first)."))
    checked: int = Field(0, description="How many elements were perturbed.")
    failed: int = Field(0, description="How many of them are outside the tolerances.")
    kinks: int = Field(0, description="How many of them sit at a kink (left and right differences disagree).")
    total: int = Field(0, description="Elements in all checked tensors (`checked` of them were perturbed).")
    reasons: list[Reason] = Field(default_factory=list, description=(
        "Why the verdict is what it is, and what the check did to get there (`Reason`)."))
    suspect: Suspect | None = Field(None, description=(
        "The node whose backward disagrees with its own forward, when the check failed (`Suspect`)."))
    pass_index: int = Field(0, description="The backward call that was checked, counted from 0 (`passes[].index`).")
    pass_count: int | None = Field(None, description=(
        "How many backward passes the stored run made (set for a check of a stored run)."))
    pass_line: int | None = Field(None, description="The line of the checked backward call (a check of a stored run).")
    iteration: int | None = Field(None, description=(
        "Which call of that line it was, counted from 1 (the loop's iteration)."))
    executions: int = Field(0, description=(
        "How many times the program ran (baseline, centre, two per element, the suspect search)."))
    seconds: float = Field(0.0, description="How long the check took, in seconds.")
    # -- as the service answers it (a sandbox job's result, NOTE [adding a job kind] in jobs.py)
    kind: Literal["gradcheck"] = Field("gradcheck", description="The job kind: always `gradcheck`.")
    id: str = Field("", description="Content id of the canonical JSON (set by the service).")
    schema_version: int = Field(SCHEMA_VERSION, description="The schema this answer follows.")
    status: Literal["ok", "refused", "timeout", "memory_limit", "output_limit", "crashed"] = Field("ok", description=(
        "`ok` when the check ran to its verdict; a limit the sandbox enforced otherwise (then the verdict is "
        "`inconclusive` and `message` says which); `refused`: the target is not in the program (the API answers 422 "
        "with `message`)."))
    message: str | None = Field(None, description=(
        "A sentence for the user when the check was refused or hit a limit, or null."))
    run_id: str | None = Field(None, description="The stored run whose snippet was re-run.")

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
