"""How a hint is written: one constructor, so every rule writes every field the schema has."""

from __future__ import annotations

from typing import Any


def hint(code: str, severity: str, title: str, message: str, *, line: int | None,
         nodes: list[str], evidence: list[tuple[str, str]], fix: str,
         lesson: str | None = None) -> dict[str, Any]:
    """A :class:`~gradtrace.schema.analysis.Hint` as the schema writes it."""
    return {"code": code, "severity": severity, "title": title, "message": message, "line": line,
            "nodes": nodes, "evidence": [{"label": k, "value": v} for k, v in evidence],
            "fix": fix, "lesson": lesson}


def shape(s: Any) -> str:
    """``[3, 1]`` as the page writes a shape; a scalar is ``[]``."""
    return "[" + ", ".join(str(d) for d in s) + "]" if isinstance(s, list) else "?"
