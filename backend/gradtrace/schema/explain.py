""""Explain this node": a backward node's local rule per input, worked out at one element.

``analysis/explain/node.py`` writes it from a stored document; ``GET /api/runs/{id}/explain`` answers
it and the page's explain panel (``frontend/src/ui/explain.js``) only reads it. Numbers follow
the run document's encoding (NOTE [encoding of awkward values] in ``schema/document.py``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from gradtrace.schema.document import SavedArg

Number = float | str


class ExplainedInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input_nr: int
    rule: str
    """The local rule, in the op's names: ``grad_self = grad_out · other``."""
    shape: list[int] | None = None
    """The shape of the gradient this input receives."""
    index: list[int] | None = None
    """The element of this input's gradient the instance is for."""
    instance: str | None = None
    """The rule with the recorded numbers: ``0.3 · 2 = 0.6``."""
    value: Number | None = None
    recorded: Number | None = None
    """What backward actually passed on at that element (``grad_inputs``)."""
    note: str | None = None
    """Why there is no instance (no gradient passed, an operand's values not kept)."""


class Explanation(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    node: str
    op: str
    known: bool
    """Whether the op's rule is in the catalogue (``analysis/explain/ops.py``)."""
    pass_: int | None = Field(default=None, alias="pass")
    """The backward pass explained (the last that ran the node unless asked)."""
    inputs: list[ExplainedInput] = []
    note: str | None = None
    args: dict[str, SavedArg] | None = None
    """The node's saved non-tensor arguments, which its rule reads (``{"exponent": 2}``: ``saved_args``)."""
