"""Comparing two runs: the request, the answer and the compare link, one pydantic schema for the
API, Python and the page.

``POST /api/compare`` answers a :class:`Comparison` as JSON, ``gradtrace.compare`` returns the
same object (with a notebook repr), and the compare page reads the same fields; the JSON
Schema in ``/openapi.json`` is generated from these classes. The comparison itself is worked out
in ``analysis/compare/``; the routes are ``api/compare.py``.

Node ids are the documents' own (``n12``); event indexes are positions in each document's
``events`` list, which is what the page's transport steps through.
"""

from __future__ import annotations

import html
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_ID = 64
"""The longest run or share id a compare request names."""

PairKey = Literal["line", "module", "op", "place"]
"""How a pair was made (NOTE [pairing nodes] in ``analysis/compare/align.py``); ``place``: a parameter
paired by its place among the parameters, under another name (renamed)."""
"""Which key paired two nodes (NOTE [pairing nodes] in ``analysis/compare/align.py``):
``line``: line, op, module call and occurrence; ``module``: op, module call and occurrence;
``op``: op and occurrence."""


class CompareSide(BaseModel):
    """One run of a comparison: exactly one of ``run_id``, ``share_id`` or ``document``."""

    model_config = ConfigDict(extra="forbid")

    run_id: str | None = Field(default=None, max_length=MAX_ID,
                               description="A stored run's id (runs are kept for the service's retention).")
    share_id: str | None = Field(default=None, max_length=MAX_ID,
                                 description="A share's id (shares are kept forever).")
    document: dict[str, Any] | None = Field(default=None, description="A whole run document, given inline.")


class CompareRequest(BaseModel):
    """``POST /api/compare`` and ``POST /api/compare/links``: run A and run B."""

    model_config = ConfigDict(extra="forbid")

    a: CompareSide = Field(description="Run A, the reference.")
    b: CompareSide = Field(description="Run B, compared with A.")


class CompareLink(BaseModel):
    """A compare page's link: both runs are shares, kept forever."""

    url: str = Field(description="The compare page's address: ``{base}/c/{a}..{b}``.")
    a: str = Field(description="Run A's share id.")
    b: str = Field(description="Run B's share id.")


class MemoryTimeline(BaseModel):
    """Bytes of saved tensors alive at each step of one run (``analysis/compare/memory.py``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    live: list[int] = Field(description="``live[k]``: bytes alive after the first ``k`` events "
                                        "(``len(events) + 1`` values).")
    peak: int = Field(description="The largest value of ``live``.")
    peak_step: int = Field(description="The first step at which ``live`` reaches ``peak``.")
    recomputed: int = Field(description="Function nodes recomputed in the backward (checkpointed: "
                                        "``saved_unread``).")
    end: int = Field(description="Bytes still alive after the last event.")


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TensorDelta(_Result):
    """How far B's tensor is from A's."""

    max_abs: float | None = Field(default=None, description=(
        "Largest absolute difference of one element (``None`` when it cannot be known)."))
    rel_l2: float | None = Field(default=None, description=(
        "``‖b − a‖₂ / ‖a‖₂`` (``‖b‖₂`` when A's is 0; 0 when both are 0)."))
    exact: bool = Field(default=True, description=(
        "True when computed from every element; False when a tensor was too large to carry its "
        "values and the figures are lower bounds taken from the statistics (min, max, mean, norm)."))
    beyond_tolerance: bool = Field(default=False, description=(
        "True when the difference is beyond float32 tolerance (NOTE [goldens on any CPU] in "
        "``analysis/numbers.py``), or the shapes, dtypes or non-finite values differ."))


class NodePair(_Result):
    """A node of A and the node of B it was paired with."""

    a: str = Field(description="A's node id.")
    b: str = Field(description="B's node id.")
    key: PairKey = Field(description=(
        "Which key paired the two nodes (NOTE [pairing nodes] in ``analysis/compare/align.py``): "
        "``line``, ``module``, ``op`` or ``place`` (a renamed parameter)."))
    kind: Literal["function", "tensor"] = Field(description="Both nodes' kind.")
    name: str | None = Field(default=None, description="A's name for the node (op or tensor name).")
    name_b: str | None = Field(default=None, description=(
        "B's name, when it differs from A's (a renamed parameter: key ``place``)."))
    line_a: int | None = Field(default=None, description="The source line that made A's node.")
    line_b: int | None = Field(default=None, description="The source line that made B's node.")
    shape_a: list[int] | None = Field(default=None, description="A's tensor shape (tensor nodes).")
    shape_b: list[int] | None = Field(default=None, description="B's tensor shape (tensor nodes).")
    shape_changed: bool = Field(default=False, description="True when the two shapes differ.")
    value: TensorDelta | None = Field(default=None, description=(
        "How far B's value is from A's: tensor nodes with a recorded value in both runs."))
    grad: TensorDelta | None = Field(default=None, description=(
        "Tensor nodes: their ``.grad``; function nodes: the gradients they produced in every "
        "backward call, taken together (``AccumulateGrad``: the leaf's ``.grad`` after each one)."))


class OnlyNode(_Result):
    """A node one run has and the other has not."""

    id: str = Field(description="The node's id in its own run.")
    kind: Literal["function", "tensor"] = Field(description="The node's kind.")
    name: str | None = Field(default=None, description="The op's or tensor's name.")
    line: int | None = Field(default=None, description="The source line that made it.")
    module: str | None = Field(default=None, description="The module call it was made in (``model.fc1``).")


class BackwardOrder(_Result):
    """Whether B's backward passes visit the paired nodes in A's order."""

    same: bool = Field(description="True when every backward step visits the paired node.")
    first_difference: int | None = Field(default=None, description=(
        "The first backward step (0-based, counting backward events only) where they differ."))
    a_event: int | None = Field(default=None, description=(
        "That step's index in A's ``events`` (``None`` when A has fewer steps)."))
    b_event: int | None = Field(default=None, description=(
        "That step's index in B's ``events`` (``None`` when B has fewer steps)."))
    a_steps: int = Field(default=0, description="A's backward events.")
    b_steps: int = Field(default=0, description="B's backward events.")


class Divergence(_Result):
    """The earliest node, forward or backward, where a value or a gradient differs beyond
    tolerance."""

    phase: Literal["forward", "backward"] = Field(description="The phase the difference shows in.")
    a: str = Field(description="A's node id.")
    b: str = Field(description="B's node id.")
    name: str | None = Field(default=None, description="The node's name.")
    line_a: int | None = Field(default=None, description="The source line of A's node.")
    line_b: int | None = Field(default=None, description="The source line of B's node.")
    what: Literal["value", "shape", "grad_inputs", "grad_outputs", "grad"] = Field(description=(
        "What differs: a tensor's value or shape (forward); the gradients the node produced "
        "(``grad_inputs``), received (``grad_outputs``) or a leaf's accumulated ``grad`` (backward)."))
    a_event: int | None = Field(default=None, description=(
        "The event to step to in A (the node's backward call, or the forward event of the "
        "function that made the tensor)."))
    b_event: int | None = Field(default=None, description="The event to step to in B (as ``a_event``).")
    delta: TensorDelta | None = Field(default=None, description="How far B's tensor is from A's.")
    sentence: str = Field(description="The divergence in one sentence, in the run's own names.")


class RunRef(_Result):
    """One side of the comparison."""

    id: str = Field(description="The run document's id.")
    status: str = Field(description="The run's status (``ok``, ``error``, ...).")
    nodes: int = Field(description="Nodes in the run's graph.")
    events: int = Field(description="Events in the run's timeline.")
    seed: int | None = Field(default=None, description="The seed the run was recorded with.")
    device: str | None = Field(default=None, description="The device the run was recorded on.")


class Comparison(_Result):
    """What changed between run A and run B, in the graph and in the gradients."""

    a: RunRef = Field(description="Run A.")
    b: RunRef = Field(description="Run B.")
    pairs: list[NodePair] = Field(default_factory=list, description="Every node of A paired with one of B.")
    only_a: list[OnlyNode] = Field(default_factory=list, description="Nodes only A has.")
    only_b: list[OnlyNode] = Field(default_factory=list, description="Nodes only B has.")
    keys_used: dict[str, int] = Field(default_factory=dict, description=(
        "How many pairs each key made (``{\"line\": 40, \"module\": 3}``)."))
    backward_order: BackwardOrder = Field(description="Whether B's backward visits the pairs in A's order.")
    first_divergence: Divergence | None = Field(default=None, description=(
        "The earliest node where a value or a gradient differs beyond tolerance; ``None`` when none does."))
    steps: list[tuple[int | None, int | None]] = Field(default_factory=list, description=(
        "One timeline for both runs: ``(event of A, event of B)`` per step, ``None`` where one run "
        "has no such event (``analysis/compare/steps.py``). The compare page's transport walks it."))
    memory_a: MemoryTimeline = Field(description=(
        "Saved-tensor bytes alive at each step of run A (``analysis/compare/memory.py``)."))
    memory_b: MemoryTimeline = Field(description="Saved-tensor bytes alive at each step of run B.")
    same_structure: bool = Field(description=(
        "Every node paired, no shape changed and the backward order is the same."))
    summary: str = Field(description="The comparison in a few sentences.")

    def _repr_html_(self) -> str:
        rows = [f"<p>{html.escape(self.summary)}</p>"]
        if self.first_divergence is not None:
            rows.append(f"<p><b>First divergence</b>: {html.escape(self.first_divergence.sentence)}</p>")
        for label, nodes, colour in (("only in A", self.only_a, "#c0392b"), ("only in B", self.only_b, "#1e8449")):
            if nodes:
                items = ", ".join(html.escape(_node_words(n)) for n in nodes[:20])
                more = f" and {len(nodes) - 20} more" if len(nodes) > 20 else ""
                rows.append(f'<p><span style="color:{colour}">{label}</span>: {items}{more}</p>')
        return f'<div class="gradtrace-comparison">{"".join(rows)}</div>'

    def __str__(self) -> str:
        return self.summary


def _node_words(node: OnlyNode) -> str:
    where = f" (line {node.line})" if node.line is not None else ""
    return f"{node.name or node.kind}{where}"
