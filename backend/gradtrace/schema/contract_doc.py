"""docs/CONTRACT.md's field tables, generated from the models' ``description=``.

``python -m gradtrace.schema.contract_doc`` (``make contract``) rewrites every table between a
``<!-- fields of Model -->`` marker and ``<!-- end of fields -->`` and keeps the prose around
them; ``--check`` only says whether the committed file is what it would write
(``tests/test_contract.py`` compares the same way).

NOTE [the contract's tables come from the models]
    A field's meaning is written once, as its ``description=``: ``/openapi.json`` serves it and
    the tables here are made from it, one row per field in the model's order, an addition left
    out of the JSON when absent (``_optional``) marked *optional*. A new field therefore needs
    only its description. A model the run document comes to hold that has no table yet gets a
    section of its own at the end (its docstring, then its table), to be moved and given prose
    by hand; a table whose model the document no longer holds is an error.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from pydantic import BaseModel

from gradtrace.schema.document import RunDocument

CONTRACT = Path(__file__).resolve().parents[3] / "docs" / "CONTRACT.md"
REGENERATE = "make contract  (or: python -m gradtrace.schema.contract_doc)"
_BLOCK = re.compile(r"<!-- fields of (\w+) -->\n.*?<!-- end of fields -->", re.S)


def document_models(root: type[BaseModel] = RunDocument) -> dict[str, type[BaseModel]]:
    """Every model the run document holds, by name, in the order they are first reached
    (breadth first, fields in declaration order)."""
    found: dict[str, type[BaseModel]] = {}
    todo: list[type[BaseModel]] = [root]
    while todo:
        model = todo.pop(0)
        if model.__name__ in found:
            continue
        found[model.__name__] = model
        for field in model.model_fields.values():
            todo.extend(models_in(field.annotation))
    return found


def models_in(annotation: object) -> list[type[BaseModel]]:
    """The models an annotation names, however nested (``list[X] | None``, ``dict[str, X]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in getattr(annotation, "__args__", ()) for m in models_in(arg)]


def table(model: type[BaseModel]) -> str:
    """The marked field table of ``model``."""
    rows = [f"<!-- fields of {model.__name__} -->", "| field | meaning |", "| --- | --- |"]
    for name, field in model.model_fields.items():
        if not field.description:
            raise ValueError(f"{model.__name__}.{name} has no description=: write one in backend/gradtrace/schema/")
        meaning = " ".join(field.description.split()).replace("|", "\\|")
        optional = "*optional*: " if field.exclude_if is not None else ""
        rows.append(f"| `{field.alias or name}` | {optional}{meaning} |")
    rows.append("<!-- end of fields -->")
    return "\n".join(rows)


def render(text: str, models: dict[str, type[BaseModel]] | None = None) -> str:
    """``text`` (CONTRACT.md) with every table generated afresh and a section appended for each
    model that has none."""
    models = document_models() if models is None else models
    seen: list[str] = []

    def fill(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in models:
            raise ValueError(f"docs/CONTRACT.md has a table for {name}, which the run document no longer "
                             "holds: remove its section")
        seen.append(name)
        return table(models[name])

    out = _BLOCK.sub(fill, text)
    for name, model in models.items():
        if name not in seen:
            doc = " ".join((model.__doc__ or "").split("\n\n")[0].split())
            out = out.rstrip("\n") + f"\n\n## `{name}`\n\n" + (f"{doc}\n\n" if doc else "") + table(model) + "\n"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether docs/CONTRACT.md is up to date")
    args = parser.parse_args(argv)
    text = CONTRACT.read_text(encoding="utf-8")
    new = render(text)
    if args.check:
        if new != text:
            print(f"docs/CONTRACT.md differs from the models; regenerate it: {REGENERATE}", file=sys.stderr)
            return 1
        return 0
    if new != text:
        CONTRACT.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
