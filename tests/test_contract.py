"""docs/CONTRACT.md lists exactly the fields of the schema, model by model."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from gradtrace.schema import document

CONTRACT = Path(__file__).resolve().parent.parent / "docs" / "CONTRACT.md"
_SECTION = re.compile(r"^## `(\w+)`\s*$")
_ROW = re.compile(r"^\| `(\w+)` \|")


def documented() -> dict[str, list[str]]:
    """Model name → the fields its table lists, in order."""
    tables: dict[str, list[str]] = {}
    current: str | None = None
    for line in CONTRACT.read_text(encoding="utf-8").splitlines():
        if m := _SECTION.match(line):
            current = m.group(1)
            tables[current] = []
        elif line.startswith("## "):
            current = None
        elif current and (m := _ROW.match(line)):
            tables[current].append(m.group(1))
    return tables


def schema_models() -> dict[str, type[BaseModel]]:
    """Every model reachable from RunDocument."""
    found: dict[str, type[BaseModel]] = {}
    todo: list[type[BaseModel]] = [document.RunDocument]
    while todo:
        model = todo.pop()
        if model.__name__ in found:
            continue
        found[model.__name__] = model
        for field in model.model_fields.values():
            todo.extend(_models_in(field.annotation))
    return found


def _models_in(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in getattr(annotation, "__args__", ()) for m in _models_in(arg)]


def test_every_model_of_the_schema_has_a_table_and_every_table_a_model() -> None:
    assert set(documented()) == set(schema_models())


def test_each_table_lists_exactly_its_models_fields() -> None:
    models = schema_models()
    for name, fields in documented().items():
        want = [f.alias or n for n, f in models[name].model_fields.items()]
        assert sorted(fields) == sorted(want), f"docs/CONTRACT.md, `{name}`: {fields} vs the schema's {want}"
        assert len(fields) == len(set(fields)), f"`{name}` lists a field twice"


def test_optional_additions_are_marked_optional() -> None:
    text = CONTRACT.read_text(encoding="utf-8")
    for name, model in schema_models().items():
        for field_name, field in model.model_fields.items():
            if field.exclude_if is None:
                continue
            row = re.search(rf"^\| `{field.alias or field_name}` \| \*optional\*", _section(text, name), re.M)
            assert row, f"`{name}.{field_name}` is left out when absent: mark it *optional*"


def _section(text: str, name: str) -> str:
    start = text.index(f"## `{name}`")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None]
