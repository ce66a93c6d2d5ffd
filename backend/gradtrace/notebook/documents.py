"""Turn what a user hands to ``show()`` or ``save_html()`` into one run document (a dict) and
its compressed bytes.

Accepted: a ``RunDocument`` (from ``rec.document()`` or ``Client.run()``), a ``gradtrace.record``
block that has run, a document dict, or a document's JSON text/bytes.
"""

from __future__ import annotations

import gzip
import linecache
from typing import Any

import orjson

from gradtrace.schema import RunDocument, canonical_json
from gradtrace.schema.canonical import CanonicalDocument

GZIP_LEVEL = 6
"""NOTE [documents through the comm]: gzip at level 6 shrinks a GRU-200 document (≈4 MB of
JSON) about sevenfold in ≈60 ms; the browser inflates it with its native DecompressionStream."""


def _recorded(obj: Any) -> Any:
    """``obj``, or for a ``gradtrace.record`` block that has run, its ``document()`` (capture
    imports torch: found by its method, not its class), showing the code of the file or cell
    it ran in."""
    if isinstance(obj, RunDocument | dict | str | bytes | bytearray | memoryview):
        return obj
    document = getattr(obj, "document", None)
    return document(code=_source_of(obj)) if callable(document) else obj


def as_document(obj: Any) -> dict[str, Any]:
    """The run document behind ``obj`` as a JSON-able dict (see the module docstring)."""
    obj = _recorded(obj)
    if isinstance(obj, RunDocument):
        as_json_dict = getattr(obj, "as_json_dict", None)  # NotebookRunDocument: no models built
        return as_json_dict() if callable(as_json_dict) else obj.model_dump(mode="json", by_alias=True)
    if isinstance(obj, dict):
        return obj
    if isinstance(obj, str | bytes | bytearray | memoryview):
        data = orjson.loads(bytes(obj) if not isinstance(obj, str) else obj)
        if not isinstance(data, dict):
            raise TypeError("a run document's JSON must be an object")
        return data
    raise TypeError(f"gradtrace shows a RunDocument, a gradtrace.record block, a document dict or "
                    f"its JSON, not {type(obj).__name__}")


def _source_of(rec: Any) -> str | None:
    """The text of the file or notebook cell the block ran in (IPython keeps cells in linecache),
    so the code pane shows the lines the nodes point at."""
    try:
        filename = rec.recorder.filename
    except (AttributeError, RuntimeError):
        return None
    lines = linecache.getlines(filename)
    return "".join(lines) if lines else None


class ShownDocument:
    """A document as the widget and the saved page send it: its canonical JSON, and the dict
    parsed from those bytes only when Python reads it (the widget's ``selected``).

    NOTE [one document path] (in capture/document.py): a ``rec.document()`` (also the cell
    magic's, and a record block's own) is sent as the bytes it was hashed from, and a
    :class:`~gradtrace.schema.canonical.CanonicalDocument` as the bytes it carries; neither is
    hashed, parsed or written again to be shown."""

    def __init__(self, body: bytes, doc: dict[str, Any] | None = None) -> None:
        self.body = body
        self._doc = doc

    @property
    def doc(self) -> dict[str, Any]:
        if self._doc is None:
            self._doc = orjson.loads(self.body)
        return self._doc

    def compressed(self) -> bytes:
        return gzip.compress(self.body, compresslevel=GZIP_LEVEL, mtime=0)


def shown_document(obj: Any) -> ShownDocument:
    """What ``obj`` (anything :func:`as_document` takes) shows, as its canonical JSON."""
    obj = _recorded(obj)
    if isinstance(obj, RunDocument):
        written = getattr(obj, "canonical_json", None)  # NotebookRunDocument: no models built
        if callable(written):
            return ShownDocument(written())
    doc = as_document(obj)
    body = doc.canonical_for() if isinstance(doc, CanonicalDocument) else None
    return ShownDocument(body if body is not None else canonical_json(doc), doc)


def compressed(doc: dict[str, Any]) -> bytes:
    """The document's canonical JSON, gzip-compressed (mtime 0: the same bytes each time); the
    bytes a :class:`CanonicalDocument` carries are used as they are."""
    body = doc.canonical_for() if isinstance(doc, CanonicalDocument) else None
    return gzip.compress(body if body is not None else canonical_json(doc), compresslevel=GZIP_LEVEL,
                         mtime=0)


def tensor_bytes_of(obj: Any) -> bytes | None:
    """The tensor file (safetensors bytes) behind what ``show()`` was handed: a document's
    (``doc.tensor_bytes()``) or a ``gradtrace.record`` block's, else None."""
    tensor_bytes = getattr(obj, "tensor_bytes", None)
    if callable(tensor_bytes):
        data = tensor_bytes()
        return data if isinstance(data, bytes) else None
    try:
        kept = obj.recorder.tensor_file
    except (AttributeError, RuntimeError):
        return None
    data = getattr(kept, "data", None)
    return data if isinstance(data, bytes) else None
