"""One schema source: ``RunDocument``. What writes or checks documents elsewhere (the strict
validator, capture's defaults, the C++ core's keys) is derived from it (the strict validator's
twins and the core's ``cxx/keys.h``: here their use is checked) or held equal to it here, field
by field."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NotRequired, get_args, get_origin, get_type_hints

from pydantic import BaseModel
from typing_extensions import is_typeddict

import gradtrace.schema.document as models
import gradtrace.schema.fast as fast
from gradtrace.schema.document import written_defaults

CXX = Path(models.__file__).resolve().parent.parent / "capture" / "cxx"
PAIRS: dict[type[BaseModel], Any] = fast.STRICT  # NOTE [a strict twin generated from each model]


def _written(model: type[BaseModel]) -> list[str]:
    """The keys a full dump of ``model`` always has, sorted (the canonical order)."""
    return sorted(f.alias or n for n, f in model.model_fields.items() if f.exclude_if is None)


def _optional(model: type[BaseModel]) -> set[str]:
    return {f.alias or n for n, f in model.model_fields.items() if f.exclude_if is not None}


def _kinds(hint: Any) -> set[Any]:
    """The models (or TypedDicts) a type hint names, at any depth (lists, unions, Annotated)."""
    found: set[Any] = set()
    stack = [hint]
    while stack:
        h = stack.pop()
        if isinstance(h, type) and (issubclass(h, BaseModel) or is_typeddict(h)):
            found.add(h)
        stack.extend(get_args(h))
        value = getattr(h, "__value__", None)  # a TypeAliasType
        if value is not None and h not in found:
            found.add(h)
            stack.append(value)
    return {k for k in found if isinstance(k, type)}


def test_every_model_has_its_strict_twin() -> None:
    assert set(models._Model.__subclasses__()) | {models.RunDocument} >= set(PAIRS)
    assert set(models._Model.__subclasses__()) <= set(PAIRS)


def test_the_strict_validator_has_every_field_with_the_same_nested_kinds() -> None:
    twin = {strict: model for model, strict in PAIRS.items()}
    for model, strict in PAIRS.items():
        hints = get_type_hints(strict, vars(fast), include_extras=True)
        assert sorted(hints) == sorted(_written(model) + list(_optional(model))), model.__name__
        assert {k for k, h in hints.items() if get_origin(h) is NotRequired} == _optional(model)
        annotations = {f.alias or n: f.annotation for n, f in model.model_fields.items()}
        for key, hint in hints.items():
            got = {twin[k] for k in _kinds(hint) if k in twin}
            want = {k for k in _kinds(annotations[key]) if k in PAIRS}
            assert got == want, f"{model.__name__}.{key}: {got} != {want}"


def test_capture_fills_in_the_models_own_defaults() -> None:
    from gradtrace.capture import document

    assert written_defaults(models.Node) == document._NODE_DEFAULTS
    assert written_defaults(models.RunError) == document._ERROR_DEFAULTS
    assert set(written_defaults(models.Node)) == set(_written(models.Node)) - {"id", "kind"}


def _body(source: str, start: str, end: str) -> str:
    a = source.index(start)
    return source[a:source.index(end, a + len(start))]


def _spelled_out(source: str) -> str:
    """``source`` with each namespace alias of the generated keys (``namespace ek = keys::event;``)
    written as the namespace itself (``keys::event::``)."""
    for alias, space in re.findall(r"namespace (\w+) = keys::(\w+);", source):
        source = re.sub(rf"(?<![\w:]){alias}::", f"keys::{space}::", source)
    return source


def _written_keys(text: str) -> dict[str, list[str]]:
    """Namespace (model) → the keys ``text`` names from it, in order, each once."""
    out: dict[str, list[str]] = {}
    for space, key in re.findall(r"\bkeys::(\w+)::(\w+)", text):
        if key not in out.setdefault(space, []):
            out[space].append(key)
    return out


def _asserted(source: str) -> dict[str, list[str]]:
    """Namespace → the keys its ``static_assert(keys::in_order({...}))`` lists, in order."""
    out: dict[str, list[str]] = {}
    for listed in re.findall(r"static_assert\(keys::in_order\(\{(.*?)\}\)\)", source, re.S):
        for space, keys in _written_keys(listed).items():
            assert space not in out, f"two orders stated for {space}"
            out[space] = keys
    return out


WRITERS = {  # the C++ writers of the document's JSON: file, start and end of each
    "entries.h": ("void write_entry(", "\n}\n"),
    "events.h": ("std::pair<py::bytes, int64_t> events_json(", "\n}\n"),
    "recorder.h": ("py::bytes edges_json(", "\n  }\n"),
    "values.h": ("void write_value(", "\n}\n"),
}


def test_the_cores_writers_write_every_field_from_the_generated_keys_in_canonical_order() -> None:
    """NOTE [the core's keys come from the models] in schema/cxx_keys.py: each writer names its
    keys only through ``keys.h``, in the order its ``static_assert`` states (which the compiler
    checks against the models' sorted keys), and leaves out no field a full dump always has."""
    from gradtrace.schema.cxx_keys import CORE_WRITES, _snake

    spaces = {_snake(m.__name__): m for m in CORE_WRITES}
    seen: set[str] = set()
    for name, (start, end) in WRITERS.items():
        source = _spelled_out((CXX / name).read_text())
        body = _body(source, start, end)
        assert not re.search(r'\\"\w+\\":', body), f"{name}: a key spelled by hand, not from keys.h"
        asserted = _asserted(source)
        for space, used in _written_keys(body).items():
            model = spaces[space]
            assert used == sorted(used), f"{name}: {model.__name__} keys out of canonical order: {used}"
            assert used == asserted.get(space), f"{name}: writes {used}, its static_assert states {asserted.get(space)}"
            assert set(_written(model)) <= set(used), f"{name}: {model.__name__} fields the core leaves out: " \
                                                      f"{sorted(set(_written(model)) - set(used))}"
            seen.add(space)
    assert seen == set(spaces), f"models with generated keys that no writer uses: {set(spaces) - seen}"


def test_the_cores_saved_argument_list_limit_is_saved_pys() -> None:
    from gradtrace.capture.saved import ARG_LIST_LIMIT

    prelude = (CXX / "prelude.h").read_text()
    assert f"constexpr int64_t kArgListLimit = {ARG_LIST_LIMIT};" in prelude
