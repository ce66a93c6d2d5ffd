"""One schema source: ``RunDocument``. What writes or checks documents elsewhere (the strict
validator, capture's defaults, the C++ core's hand-ordered keys) is derived from it (the strict
validator's twins: here their derivation is checked) or held equal to it here, field by field."""

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


def _keys(text: str) -> list[str]:
    """The keys a C++ writer writes, in order (each once: both arms of a ``?:`` name it)."""
    return list(dict.fromkeys(re.findall(r'\\"(\w+)\\":', text)))


def _body(source: str, start: str, end: str) -> str:
    a = source.index(start)
    return source[a:source.index(end, a + len(start))]


def _without(text: str, start: str, end: str) -> tuple[str, str]:
    """(``text`` less the part from ``start`` to ``end``, that part)."""
    part = _body(text, start, end)
    return text.replace(part, ""), part


def test_the_cores_node_entries_write_the_models_fields_in_canonical_order() -> None:
    source = (CXX / "entries.h").read_text()
    meta = _body(source, "void write_meta(", "\n}\n").split("return;", 1)[1]  # a known output
    meta_keys = sorted(set(_keys(meta)))
    entry = _body(source, "void write_entry(", "\n}\n").replace("write_meta(out, first);", meta)
    entry = entry.replace("write_meta(out, &e.outs[i]);", meta)
    entry, outputs = _without(entry, '"outputs\\":[', "out.push_back(']');")
    entry, saved = _without(entry, 'out += "{\\"bytes\\":', "out.push_back('}');")
    node = _keys(entry)
    assert node == sorted(node), f"keys out of canonical order: {node}"
    assert set(node) - set(_written(models.Node)) <= _optional(models.Node)
    assert set(_written(models.Node)) - set(node) == set(), "a field the core leaves out"
    assert [*meta_keys, "shape"] == _written(models.OutputMeta) == sorted(set(_keys(outputs)) - {"outputs"})
    saved_keys = _keys(saved)  # the written fields and, when present, the optional value
    assert saved_keys == sorted(saved_keys), f"keys out of canonical order: {saved_keys}"
    assert [k for k in saved_keys if k not in _optional(models.SavedTensor)] == _written(models.SavedTensor)
    assert set(saved_keys) - set(_written(models.SavedTensor)) == _optional(models.SavedTensor)


def test_the_cores_events_edges_and_values_write_the_models_fields_in_canonical_order() -> None:
    events = (CXX / "events.h").read_text()
    forward = _body(events, "if (ev.pass < 0) {", "continue;")  # a forward event
    assert _keys(forward) == _written(models.Event)
    backward = _body(events, "out += ev.hc_n ?", 'out += ",\\"phase\\":\\"backward\\"}";') + '\\"phase\\":'
    backward, changes = _without(backward, '"hook_changes\\":[', "out.push_back(']');")
    assert _keys(backward) == _written(models.Event), _keys(backward)
    assert sorted(set(_keys(changes)) - {"hook_changes"}) == _written(models.HookChange)
    edges = _body((CXX / "recorder.h").read_text(), "py::bytes edges_json(", "return")
    assert _keys(edges) == _written(models.Edge)
    value = _body((CXX / "values.h").read_text(), "void write_value(", "\n}\n")
    stats = _body(value, '\\"stats\\":{', '},')
    assert _keys(value.replace(stats, '\\"stats\\":')) == _written(models.TensorValue)
    assert _keys(stats) == ["stats", *_written(models.TensorStats)]


def test_the_cores_saved_argument_list_limit_is_saved_pys() -> None:
    from gradtrace.capture.saved import ARG_LIST_LIMIT

    prelude = (CXX / "prelude.h").read_text()
    assert f"constexpr int64_t kArgListLimit = {ARG_LIST_LIMIT};" in prelude
