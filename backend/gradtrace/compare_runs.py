"""``gradtrace.compare(a, b)``: what changed from run A to run B, in Python.

Each run may be a document (a ``RunDocument``, its dict or its JSON), a recording (the
``with gradtrace.record() as rec:`` block's ``rec``), or the id of a share or a kept run on a
service (``client=gradtrace.Client(url)``: the service compares, ``POST /api/compare``). The
answer is the :class:`~gradtrace.schema.compare.Comparison` the API and the compare page
read; in a notebook it shows its summary, first divergence and the nodes only one run has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from gradtrace.analysis.compare import compare_documents
from gradtrace.analysis.kept import KeptTensors
from gradtrace.notebook.documents import tensor_bytes_of
from gradtrace.schema import RunDocument
from gradtrace.schema.compare import Comparison

if TYPE_CHECKING:
    from gradtrace.client import Client


def compare(a: Any, b: Any, *, client: Client | None = None) -> Comparison:
    """Compare run A with run B (see the module docstring)."""
    if isinstance(a, str) and isinstance(b, str) and not _is_json(a) and not _is_json(b):
        if client is None:
            raise ValueError("run ids name runs on a service: pass client=gradtrace.Client(url)")
        return client.compare(a, b)
    # NOTE [every number, on both sides]: a recording or a document in this process holds its
    # tensor file; compare reads it as the service reads a stored run's, so the first
    # divergence is the first op whose numbers differ, not the first whose stats do
    return compare_documents(document_of(a, client), document_of(b, client),
                             tensors_a=_tensors_of(a), tensors_b=_tensors_of(b))


def _tensors_of(run: Any) -> KeptTensors | None:
    """The tensor file of a recording or of a document in this process, or None."""
    if isinstance(run, dict | str | bytes | bytearray):
        return None
    document = getattr(run, "document", None)
    data = tensor_bytes_of(document() if callable(document) else run)
    return KeptTensors.from_bytes(data) if data else None


def document_of(run: Any, client: Client | None = None) -> dict[str, Any]:
    """A run as its document dict (JSON-shaped, events' ``pass`` by its alias)."""
    if isinstance(run, dict):
        return run
    if isinstance(run, bytes | bytearray) or (isinstance(run, str) and _is_json(run)):
        doc = orjson.loads(run)
        if not isinstance(doc, dict):
            raise ValueError("the JSON is not a run document (an object)")
        return doc
    if isinstance(run, str):
        if client is None:
            raise ValueError(f"{run!r} is not a document: a run id needs client=gradtrace.Client(url)")
        return client.get_share(run).model_dump(mode="json", by_alias=True)
    if isinstance(run, RunDocument):
        return run.model_dump(mode="json", by_alias=True)
    document = getattr(run, "document", None)
    if callable(document):  # a recording: gradtrace.record()
        return document_of(document(), client)
    raise TypeError(f"compare() takes run documents, recordings or run ids, not {type(run).__name__}")


def _is_json(text: str) -> bool:
    return text.lstrip()[:1] == "{"
