"""Tests read a run's document as a parsed dict: this is their one edge onto capture's exit."""

from __future__ import annotations

from typing import Any

from gradtrace.capture import run_snippet


def run_doc(code: str, **kwargs: Any) -> dict[str, Any]:
    """``code`` recorded by :func:`gradtrace.capture.run_snippet` with ``kwargs``, its document
    parsed into a JSON-able dict with its ``id`` (what a client of the service reads)."""
    return run_snippet(code, **kwargs)
