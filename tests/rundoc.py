"""Tests read a run's document as a parsed dict: this is their one edge onto capture's exit.

Capture answers every recording with one :class:`~gradtrace.capture.CapturedDocument` (NOTE
[capture's one exit] in capture/captured.py): the document without its id, its graph and
events the core's canonical JSON. What the tests read is what a client of the service reads:
that document with its id, parsed. It is parsed here, once, from the bytes the id was hashed
from, and carries them (:class:`~gradtrace.schema.canonical.CanonicalDocument`), so storage
and the widget take them as they are.
"""

from __future__ import annotations

from typing import Any

import orjson

from gradtrace.capture import CapturedDocument, record, run_snippet
from gradtrace.collector import gc_paused
from gradtrace.schema.canonical import CanonicalDocument


def parsed(captured: CapturedDocument) -> CanonicalDocument:
    """``captured`` as a JSON-able dict with its ``id``, its graph and events parsed from the
    core's JSON, carrying its canonical bytes."""
    doc_id, body = captured.canonical_with_id()
    with gc_paused(settle=True):  # NOTE [gc while building documents] in gradtrace/collector.py
        doc = {**captured.fields, "graph": orjson.loads(captured.graph),
               "events": orjson.loads(captured.events), "id": doc_id}
    return CanonicalDocument(doc, body)


def run_captured(code: str, **kwargs: Any) -> CapturedDocument:
    """``code`` recorded by :func:`gradtrace.capture.run_snippet` with ``kwargs``: capture's
    exit as it is, for a test that reads its bytes (what the sandbox child and the CLI write)."""
    return run_snippet(code, **kwargs)


def run_doc(code: str, **kwargs: Any) -> CanonicalDocument:
    """``code`` recorded by :func:`gradtrace.capture.run_snippet` with ``kwargs``, its document
    parsed into a JSON-able dict with its ``id`` (what a client of the service reads)."""
    return parsed(run_captured(code, **kwargs))


def captured_of(rec: record, **fields: Any) -> CapturedDocument:
    """What a ``gradtrace.record`` block that has run hands out (``fields`` override the
    document's top-level fields, as :func:`~gradtrace.capture.run_snippet` sets its own)."""
    return rec._captured(**fields)


def record_doc(rec: record, **fields: Any) -> CanonicalDocument:
    """The document of a ``gradtrace.record`` block that has run, parsed as :func:`run_doc`'s
    (its analysis computed now, as the service's is)."""
    return parsed(captured_of(rec, **fields))
