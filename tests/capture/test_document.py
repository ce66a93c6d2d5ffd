"""The document capture writes by hand is exactly what the pydantic schema would write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gradtrace.capture import document_json
from gradtrace.schema import RunDocument, canonical_json, document_id

GOLDEN = sorted((Path(__file__).parent.parent / "golden").glob("*.json"))


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_golden_document_is_a_fixed_point_of_the_schema(path: Path) -> None:
    doc = json.loads(path.read_text())
    again = RunDocument.model_validate(doc).model_dump(by_alias=True, mode="json")
    assert again == doc
    assert doc["id"] == document_id(doc)


def test_document_json_is_the_canonical_json_of_the_returned_document(run: Any) -> None:
    doc = run("x = torch.ones(2, requires_grad=True)\n(x * 3).sum().backward()\nprint('ok')\n")
    assert document_json(doc) == canonical_json(doc)
    assert json.loads(document_json(doc)) == doc
    doc["status"] = "crashed"  # changed afterwards: serialised afresh
    assert document_json(doc) == canonical_json(doc)
    assert document_json({"a": 1}) == canonical_json({"a": 1})
