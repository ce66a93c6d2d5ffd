"""docs/CONTRACT.md's enumerations and the documents agree: every value a field can take in the
schema (a ``Literal``) is listed in its row, and every value the stored documents hold is one
the contract lists."""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path

from gradtrace.schema.contract_doc import CONTRACT
from gradtrace.schema.contract_doc import document_models as schema_models

GOLDEN = Path(__file__).resolve().parent / "golden"
_TOKEN = re.compile(r"`([^`]+)`")


def rows() -> dict[tuple[str, str], str]:
    """(model, field) → the row's meaning column."""
    out: dict[tuple[str, str], str] = {}
    current: str | None = None
    for line in CONTRACT.read_text(encoding="utf-8").splitlines():
        if m := re.match(r"^## `(\w+)`\s*$", line):
            current = m.group(1)
        elif line.startswith("## "):
            current = None
        elif current and (m := re.match(r"^\| `(\w+)` \| (.*) \|$", line)):
            out[(current, m.group(1))] = m.group(2)
    return out


def listed(meaning: str) -> set[str]:
    return set(_TOKEN.findall(meaning))


def _literals(annotation: object) -> set[str]:
    if typing.get_origin(annotation) is typing.Literal:
        return {str(a) for a in typing.get_args(annotation)}
    return {v for a in typing.get_args(annotation) for v in _literals(a)}


def test_every_literal_value_of_the_schema_is_in_its_row() -> None:
    table = rows()
    checked = 0
    for name, model in schema_models().items():
        for field_name, field in model.model_fields.items():
            values = _literals(field.annotation)
            if not values:
                continue
            meaning = table[(name, field.alias or field_name)]
            missing = values - listed(meaning)
            assert not missing, f"docs/CONTRACT.md `{name}.{field_name}` does not list {sorted(missing)}"
            checked += 1
    assert checked >= 6  # status, kind, phase, api, ... really were compared


def test_the_pass_api_row_is_exactly_the_schemas_enumeration() -> None:
    from gradtrace.schema.document import BackwardPass

    assert listed(rows()[("BackwardPass", "api")]) == _literals(BackwardPass.model_fields["api"].annotation)


def test_stored_documents_use_only_the_contracts_values() -> None:
    """The golden documents (what capture really writes) against the contract's rows."""
    table = rows()
    apis = listed(table[("BackwardPass", "api")])
    hint_codes = listed(table[("Hint", "code")])
    statuses = listed(table[("RunDocument", "status")])
    seen_api: set[str] = set()
    files = sorted(GOLDEN.glob("*.json"))
    assert files
    for path in files:
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert doc["status"] in statuses, path.name
        for p in doc.get("passes", []):
            assert p["api"] in apis, f"{path.name}: pass api {p['api']!r} is not in docs/CONTRACT.md"
            seen_api.add(p["api"])
        for h in (doc.get("analysis") or {}).get("hints", []):
            assert h["code"] in hint_codes, f"{path.name}: hint {h['code']!r} is not in docs/CONTRACT.md"
    assert {"Tensor.backward", "torch.autograd.grad"} <= seen_api
