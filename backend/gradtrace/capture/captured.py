"""``CapturedDocument``: capture's one exit, the run document as capture built it.

NOTE [capture's one exit]
    Every recording leaves capture as one :class:`CapturedDocument`: :func:`run_snippet`
    returns it, and ``gradtrace.record``'s ``document()`` (the notebook's pydantic document) is
    built from it. It holds the document without its ``id``, the graph and the events as the
    canonical JSON the core wrote (NOTE [one document path] in capture/document.py), and the
    tensor file's bytes when the run kept one. Its readers take what they need from it: the
    sandbox child and the warm-ups write :meth:`~CapturedDocument.json_without_id` (the web
    process validates it and assigns the id: NOTE [who assigns the id]), the CLI writes
    :meth:`~CapturedDocument.canonical_with_id`, and the tests parse it at their own edge
    (``tests/rundoc.py``). Capture itself never parses its own bytes back into dicts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gradtrace.schema.canonical import canonical_json, canonical_with_id


@dataclass(frozen=True, slots=True)
class CapturedDocument:
    """A run document as capture built it (NOTE [capture's one exit]); read-only."""

    fields: dict[str, Any]
    """The document without its ``id``: every top-level field, ``graph`` and ``events`` their
    canonical JSON (:class:`~gradtrace.schema.canonical.CanonicalText`)."""
    tensors: bytes | None = None
    """The run's tensor file (safetensors bytes: docs/CONTRACT.md, "The tensor file"), which
    ``fields["tensors"]`` names; None when the run kept none."""

    @property
    def status(self) -> str:
        """The run's status (``ok``, ``error``, ``graph_limit``, ``output_limit``)."""
        return str(self.fields["status"])

    @property
    def graph(self) -> bytes:
        """The graph's canonical JSON, as the core wrote it."""
        return bytes(self.fields["graph"])

    @property
    def events(self) -> bytes:
        """The events' canonical JSON, as the core wrote it."""
        return bytes(self.fields["events"])

    def canonical_with_id(self) -> tuple[str, bytes]:
        """``(id, canonical JSON with that id)``: the id is the schema's, the hash of these bytes
        without it (:func:`gradtrace.schema.canonical.canonical_with_id`)."""
        return canonical_with_id(self.fields)

    def json_without_id(self) -> bytes:
        """The canonical JSON with an empty ``id``: what the sandbox child hands the web process,
        which validates it and gives it its id (NOTE [who assigns the id] in capture/document.py)."""
        return canonical_json({**self.fields, "id": ""})
