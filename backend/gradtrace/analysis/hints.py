"""Hints: likely mistakes in a run, each told with its evidence and its fix."""

from __future__ import annotations

from typing import Any

from gradtrace.analysis.docview import DocView


def find_hints(view: DocView) -> list[dict[str, Any]]:
    return []
