"""The document capture writes by hand is exactly what the pydantic schema would write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gradtrace.schema import RunDocument, document_id

GOLDEN = sorted((Path(__file__).parent.parent / "golden").glob("*.json"))


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_golden_document_is_a_fixed_point_of_the_schema(path: Path) -> None:
    doc = json.loads(path.read_text())
    again = RunDocument.model_validate(doc).model_dump(by_alias=True, mode="json")
    assert again == doc
    assert doc["id"] == document_id(doc)
