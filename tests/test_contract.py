"""docs/CONTRACT.md's field tables and the C++ core's keys are what the models generate.

A field's meaning is written once, as its ``description=`` in ``backend/gradtrace/schema/``; the
tables (NOTE [the contract's tables come from the models] in schema/contract_doc.py) and
``capture/cxx/keys.h`` (NOTE [the core's keys come from the models] in schema/cxx_keys.py) are
generated from the models and committed. These tests fail when a committed copy differs.
"""

from __future__ import annotations

import difflib
import re

import pytest
from pydantic import BaseModel

from gradtrace.schema import contract_doc, cxx_keys
from gradtrace.schema.document import RunDocument


def _diff(committed: str, generated: str, path: str) -> str:
    return "".join(difflib.unified_diff(committed.splitlines(True), generated.splitlines(True),
                                        f"{path} (committed)", f"{path} (generated)", n=1))


def test_contract_md_is_what_the_models_generate() -> None:
    committed = contract_doc.CONTRACT.read_text(encoding="utf-8")
    generated = contract_doc.render(committed)
    assert generated == committed, (f"docs/CONTRACT.md is not what the models generate; regenerate it with "
                                    f"`{contract_doc.REGENERATE}`:\n" + _diff(committed, generated, "docs/CONTRACT.md"))


def test_cxx_keys_header_is_what_the_models_generate() -> None:
    committed = cxx_keys.HEADER.read_text(encoding="utf-8")
    generated = cxx_keys.render()
    assert generated == committed, (f"capture/cxx/keys.h is not what the models generate; regenerate it with "
                                    f"`{cxx_keys.REGENERATE}`:\n" + _diff(committed, generated, "keys.h"))


def test_every_model_of_the_document_has_its_table_once() -> None:
    text = contract_doc.CONTRACT.read_text(encoding="utf-8")
    tables = re.findall(r"^<!-- fields of (\w+) -->$", text, re.M)
    assert sorted(tables) == sorted(contract_doc.document_models()), "a model without a table, or one twice"
    for name in tables:
        assert re.search(rf"^## `{name}`\n(?:(?!^## ).*\n)*?<!-- fields of {name} -->", text, re.M), \
            f"the table of {name} is not under its heading"


def test_a_field_without_a_description_is_refused_by_name() -> None:
    class Bare(BaseModel):
        undocumented: int = 0

    with pytest.raises(ValueError, match=r"Bare\.undocumented has no description"):
        contract_doc.table(Bare)


def test_a_new_field_needs_only_its_description_and_a_new_model_gets_a_section() -> None:
    """What a new field and a new model look like in the generated contract and header."""
    from pydantic import Field

    from gradtrace.schema.base import _optional

    class Extra(BaseModel):  # not a _Model: tests/capture/test_schema_source.py lists those
        """A model the document has just come to hold."""

        size: int = Field(description="how big it is")

    class Grown(RunDocument):
        extra: Extra | None = _optional("the new model, when there is one")

    Grown.__name__ = "RunDocument"
    text = contract_doc.CONTRACT.read_text(encoding="utf-8")
    grown = contract_doc.render(text, contract_doc.document_models(Grown))
    assert "| `extra` | *optional*: the new model, when there is one |" in grown
    assert grown.endswith("## `Extra`\n\nA model the document has just come to hold.\n\n<!-- fields of Extra -->\n"
                          "| field | meaning |\n| --- | --- |\n| `size` | how big it is |\n<!-- end of fields -->\n")
    assert grown.replace("| `extra` | *optional*: the new model, when there is one |\n", "").startswith(
        text.rstrip("\n")), "only the row and the section are new"
    header = cxx_keys.render((Grown,))
    keys = sorted(f.alias or n for n, f in Grown.model_fields.items())
    assert f'inline constexpr Key extra{{"{{\\"extra\\":", ",\\"extra\\":", {keys.index("extra")}}};' in header
