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

    input_nr: int = Field(description="Which entry of the node's `next_functions` this input is.")
    rule: str = Field(description="The local rule, in the op's names: `grad_self = grad_out · other`.")
    shape: list[int] | None = Field(None, description="The shape of the gradient this input receives.")
    index: list[int] | None = Field(None, description="The element of this input's gradient the instance is for.")
    instance: str | None = Field(None, description="The rule with the recorded numbers: `0.3 · 2 = 0.6`.")
    value: Number | None = Field(None, description=(
        "The instance's result at that element: what the rule says backward passes on."))
    recorded: Number | None = Field(None, description=(
        "What backward actually passed on at that element (`grad_inputs`)."))
    note: str | None = Field(None, description=(
        "Why there is no instance (no gradient passed, an operand's values not kept)."))
    cancels: str | None = Field(None, description=(
        "Why `value` and `recorded` differ when the rule's terms cancel to about 0 and float32 rounding decides "
        "the digits (a convolution's bias before batch norm), or null."))


class Explanation(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    node: str = Field(description="The explained node's id.")
    op: str = Field(description="The op the node's rule is for (`mul`, `tanh`).")
    known: bool = Field(description="Whether the op's rule is in the catalogue (`analysis/explain/ops.py`).")
    pass_: int | None = Field(default=None, alias="pass", description=(
        "The backward pass explained (the last that ran the node unless asked)."))
    inputs: list[ExplainedInput] = Field(default_factory=list, description=(
        "One local rule per input of the node, in `next_functions` order."))
    note: str | None = Field(None, description=(
        "Why the node has no worked-out rule (an op outside the catalogue, no backward ran it), or null."))
    args: dict[str, SavedArg] | None = Field(None, description=(
        "The node's saved non-tensor arguments, which its rule reads (`{\"exponent\": 2}`: `saved_args`)."))
