"""Golden run documents for every lesson and capture case, compared as NOTE [goldens on any CPU]
(``tests/docdiff.py``) says: structure exactly, floats within float32 tolerance, no id.

Regenerate after an intended change with ``GRADTRACE_REGEN_GOLDEN=1 pytest tests/capture/test_golden.py``.
``make test`` runs this file a second time under ``ATEN_CPU_CAPABILITY=default`` (torch's plain
kernels), so a golden that only holds for one processor's kernels fails on every machine.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from conftest import LESSONS, Snippet, snippets
from docdiff import differences
from rundoc import run_doc

GOLDEN = Path(__file__).parent.parent / "golden"
REGEN = os.environ.get("GRADTRACE_REGEN_GOLDEN") == "1"
SNIPPETS = snippets()


def pretty(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def golden_path(snippet: Snippet) -> Path:
    return GOLDEN / (("lesson_" if snippet.is_lesson else "case_") + snippet.name + ".json")


def test_every_lesson_and_case_has_a_golden_and_no_golden_is_stale() -> None:
    assert len(LESSONS) == 15
    expected = {golden_path(s).name for s in SNIPPETS}
    assert {p.name for p in GOLDEN.glob("*.json")} == expected


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.name)
def test_document_matches_golden(snippet: Snippet) -> None:
    doc = run_doc(snippet.code, seed=0, filename="<snippet>")
    target = golden_path(snippet)
    if REGEN:
        target.write_text(pretty(doc))
        return
    if not target.exists():
        pytest.fail(f"no golden document {target.name}; run with GRADTRACE_REGEN_GOLDEN=1")
    diffs = differences(json.loads(target.read_text()), json.loads(pretty(doc)))
    assert not diffs, (f"{snippet.name} differs from golden/{target.name} "
                       f"(GRADTRACE_REGEN_GOLDEN=1 to accept):\n" + "\n".join(diffs))
