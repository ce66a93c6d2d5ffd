"""The result of comparing two runs: one pydantic schema for the API, Python and the page.

``POST /api/compare`` answers a :class:`Comparison` as JSON, ``gradtrace.compare`` returns the
same object (with a notebook repr), and the compare page reads the same fields; the JSON
Schema in ``/openapi.json`` is generated from these classes.

Node ids are the documents' own (``n12``); event indexes are positions in each document's
``events`` list, which is what the page's transport steps through.
"""

from __future__ import annotations

import html
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gradtrace.analysis.memory import MemoryTimeline

PairKey = Literal["line", "module", "op", "place"]
"""How a pair was made (NOTE [pairing nodes] in ``analysis/align.py``); ``place``: a parameter
paired by its place among the parameters, under another name (renamed)."""
"""Which key paired two nodes (NOTE [pairing nodes] in ``analysis/align.py``):
``line``: line, op, module call and occurrence; ``module``: op, module call and occurrence;
``op``: op and occurrence."""


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TensorDelta(_Result):
    """How far B's tensor is from A's."""

    max_abs: float | None = None
    """Largest absolute difference of one element (``None`` when it cannot be known)."""
    rel_l2: float | None = None
    """``‖b − a‖₂ / ‖a‖₂`` (``‖b‖₂`` when A's is 0; 0 when both are 0)."""
    exact: bool = True
    """True when computed from every element; False when a tensor was too large to carry its
    values and the figures are lower bounds taken from the statistics (min, max, mean, norm)."""
    beyond_tolerance: bool = False
    """True when the difference is beyond float32 tolerance (``analysis/docdiff.py``), or the
    shapes, dtypes or non-finite values differ."""


class NodePair(_Result):
    """A node of A and the node of B it was paired with."""

    a: str
    b: str
    key: PairKey
    kind: Literal["function", "tensor"]
    name: str | None = None
    name_b: str | None = None
    """B's name, when it differs from A's (a renamed parameter: key ``place``)."""
    line_a: int | None = None
    line_b: int | None = None
    shape_a: list[int] | None = None
    shape_b: list[int] | None = None
    shape_changed: bool = False
    value: TensorDelta | None = None
    """Tensor nodes with a recorded value in both runs."""
    grad: TensorDelta | None = None
    """Tensor nodes: their ``.grad``; function nodes: the gradients they produced in every
    backward call, taken together (``AccumulateGrad``: the leaf's ``.grad`` after each one)."""


class OnlyNode(_Result):
    """A node one run has and the other has not."""

    id: str
    kind: Literal["function", "tensor"]
    name: str | None = None
    line: int | None = None
    module: str | None = None


class BackwardOrder(_Result):
    """Whether B's backward passes visit the paired nodes in A's order."""

    same: bool
    first_difference: int | None = None
    """The first backward step (0-based, counting backward events only) where they differ."""
    a_event: int | None = None
    """That step's index in A's ``events`` (``None`` when A has fewer steps)."""
    b_event: int | None = None
    a_steps: int = 0
    b_steps: int = 0


class Divergence(_Result):
    """The earliest node, forward or backward, where a value or a gradient differs beyond
    tolerance."""

    phase: Literal["forward", "backward"]
    a: str
    b: str
    name: str | None = None
    line_a: int | None = None
    line_b: int | None = None
    what: Literal["value", "shape", "grad_inputs", "grad_outputs", "grad"]
    """What differs: a tensor's value or shape (forward); the gradients the node produced
    (``grad_inputs``), received (``grad_outputs``) or a leaf's accumulated ``grad`` (backward)."""
    a_event: int | None = None
    b_event: int | None = None
    """The events to step to in each run (the node's backward call, or the forward event of the
    function that made the tensor)."""
    delta: TensorDelta | None = None
    sentence: str


class RunRef(_Result):
    """One side of the comparison."""

    id: str
    status: str
    nodes: int
    events: int
    seed: int | None = None
    device: str | None = None


class Comparison(_Result):
    """What changed between run A and run B, in the graph and in the gradients."""

    a: RunRef
    b: RunRef
    pairs: list[NodePair] = Field(default_factory=list)
    only_a: list[OnlyNode] = Field(default_factory=list)
    only_b: list[OnlyNode] = Field(default_factory=list)
    keys_used: dict[str, int] = Field(default_factory=dict)
    """How many pairs each key made (``{"line": 40, "module": 3}``)."""
    backward_order: BackwardOrder
    first_divergence: Divergence | None = None
    steps: list[tuple[int | None, int | None]] = Field(default_factory=list)
    """One timeline for both runs: ``(event of A, event of B)`` per step, ``None`` where one run
    has no such event (``analysis/steps.py``). The compare page's transport walks it."""
    memory_a: MemoryTimeline
    memory_b: MemoryTimeline
    """Saved-tensor bytes alive at each step of each run (``analysis/memory.py``)."""
    same_structure: bool
    """Every node paired, no shape changed and the backward order is the same."""
    summary: str
    """The comparison in a few sentences."""

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
