"""One entry point: a run document in, its :class:`~gradtrace.schema.analysis.Analysis` out."""

from __future__ import annotations

from typing import Any

from gradtrace.analysis.docview import Doc, DocView
from gradtrace.analysis.gradoff import grad_off_blocks
from gradtrace.analysis.hints import find_hints
from gradtrace.analysis.nonfinite import badge, first_nonfinite


def analyze(doc: Doc) -> dict[str, Any] | None:
    """The ``analysis`` field of ``doc`` as JSON (what the schema writes), or None when there
    is nothing to say (the field is then left out, and documents without findings do not
    change)."""
    view = DocView(doc)
    found: dict[str, Any] = {"badge": badge(view), "nonfinite": first_nonfinite(view),
                             "hints": find_hints(view)}
    blocks = grad_off_blocks(doc.get("code"))  # NOTE [blocks with gradients off] in gradoff.py
    if blocks:
        found["grad_off"] = blocks
    elif found["badge"] is None and not found["nonfinite"] and not found["hints"]:
        return None
    return found
