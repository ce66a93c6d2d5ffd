"""Golden run documents: the 15 lesson snippets and our own cases, compared byte for byte.

Regenerate after an intended change with ``GRADTRACE_REGEN_GOLDEN=1 pytest tests/capture``;
a mismatch shows a unified diff of the pretty-printed documents.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import EXAMPLES
from gradtrace.capture import run_snippet

CASES = Path(__file__).parent / "cases"
GOLDEN = Path(__file__).parent.parent / "golden"
REGEN = os.environ.get("GRADTRACE_REGEN_GOLDEN") == "1"

SNIPPETS = sorted(EXAMPLES.glob("*.py")) + sorted(CASES.glob("*.py"))


def pretty(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def golden_name(path: Path) -> str:
    return ("example_" if path.parent == EXAMPLES else "case_") + path.stem + ".json"


def test_all_fifteen_lesson_snippets_are_covered() -> None:
    assert len(sorted(EXAMPLES.glob("*.py"))) == 15


@pytest.mark.parametrize("path", SNIPPETS, ids=lambda p: p.stem)
def test_document_matches_golden(path: Path) -> None:
    doc = run_snippet(path.read_text(), seed=0, filename="<snippet>")
    got = pretty(doc)
    target = GOLDEN / golden_name(path)
    if REGEN or not target.exists():
        if not REGEN:
            pytest.fail(f"no golden document {target.name}; run with GRADTRACE_REGEN_GOLDEN=1")
        target.write_text(got)
        return
    want = target.read_text()
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            f"golden/{target.name}", "run_snippet", n=2))
        lines = diff.splitlines(True)
        more = f"... {len(lines) - 120} more diff lines\n" if len(lines) > 120 else ""
        shown = "".join(lines[:120]) + more
        pytest.fail(f"{path.name} differs from its golden document "
                    f"(GRADTRACE_REGEN_GOLDEN=1 to accept):\n{shown}")
