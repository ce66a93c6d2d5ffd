"""The schema's canonical writer (orjson) gives exactly the bytes ``json.dumps`` gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from floats import awkward_floats, stdlib_canonical
from gradtrace.schema import canonical_json
from gradtrace.schema.canonical import TensorValueDict

GOLDEN = sorted((Path(__file__).parent.parent / "golden").glob("*.json"))
TV_KEYS = {"shape", "dtype", "values", "stats"}


def as_recorded(doc: Any) -> Any:
    """A parsed document with its TensorValues as the recorder makes them (TensorValueDict)."""
    root: list[Any] = [doc]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        parent, key = stack.pop()
        item = parent[key]
        if isinstance(item, dict):
            if item.keys() >= TV_KEYS:
                item = parent[key] = TensorValueDict(item)
            stack.extend((item, k) for k in item)
        elif isinstance(item, list):
            stack.extend((item, i) for i in range(len(item)))
    return root[0]


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_golden_documents_serialise_to_the_same_bytes(path: Path) -> None:
    doc = as_recorded(json.loads(path.read_text()))
    assert canonical_json(doc) == stdlib_canonical(doc)


def test_tensor_values_with_floats_of_every_magnitude_serialise_to_the_same_bytes() -> None:
    xs = awkward_floats(20_000)
    values = [xs[i:i + 10] for i in range(0, len(xs), 10)]
    tvs = [TensorValueDict(shape=[len(row)], dtype="float64", values=row,
                           stats={"min": min(row), "max": max(row), "mean": row[0], "norm": row[-1]})
           for row in values]
    tvs.append(TensorValueDict(shape=[2, 2], dtype="complex64", values=[[[1e-7, -3e-5], [2.5, "nan"]],
                                                                        [["inf", "-inf"], [0.0, 1e22]]],
                               stats=None))
    tvs.append(TensorValueDict(shape=[], dtype="float32", values=1.5e-05, stats={"min": 1e-9}))
    doc = {"events": [{"grad_inputs": tvs[i:i + 3], "grad": tvs[i]} for i in range(len(tvs))]}
    assert canonical_json(doc) == stdlib_canonical(doc)


def test_number_like_text_outside_tensor_values_is_left_alone(run: Any) -> None:
    code = ("x = torch.tensor([1e-7, 3e-5, 2e20, -4e-9], requires_grad=True)\n"
            "y = (x * 1e-3).sum()\n"
            "y.backward()\n"
            "print('[1e-5,0.00001,1e-9]', {'a': 0.00002}, '-0.000015}')\n")
    doc = run(code)
    assert "[1e-5,0.00001,1e-9]" in doc["stdout"]
    assert canonical_json(doc) == stdlib_canonical(doc)


def test_documents_orjson_refuses_fall_back_to_json() -> None:
    doc = {"a": {1: "integer key"}, "b": TensorValueDict(shape=[], dtype="float32", values=1e-7)}
    assert canonical_json(doc) == stdlib_canonical(doc)


def test_plain_floats_outside_tensor_values_are_written_as_repr_writes_them() -> None:
    """A model dump (the general path) holds plain floats: the same writer gives the same bytes,
    and text that only looks like a small float is left as it is."""
    xs = awkward_floats(5_000, seed=3)
    doc = {"values": [xs[i:i + 7] for i in range(0, len(xs), 7)], "stdout": 'e-5, 0.00001] 1e-9} "\\',
           "nested": {"b": [1e-5, "0.00002", {"c": -3e-7}], "a": 0.00001}}
    assert canonical_json(doc) == stdlib_canonical(doc)


def test_the_cores_canonical_text_is_written_as_it_is_and_hashed_where_it_lies() -> None:
    """NOTE [canonical JSON with orjson]: the core's graph and events (CanonicalText) are neither
    searched nor re-spelled, and the id is the hash of exactly the bytes written."""
    import hashlib

    from gradtrace.schema.canonical import ID_LENGTH, CanonicalText, canonical_with_id

    events = CanonicalText(b'[{"x":1e-05}]')
    doc = {"events": events, "stdout": "é \x01", "b": [TensorValueDict(shape=[], dtype="f", values=1e-7)]}
    text = canonical_json(doc)
    assert text == stdlib_canonical({**doc, "events": [{"x": 1e-05}]})
    doc_id, with_id = canonical_with_id(doc)
    assert doc_id == hashlib.sha256(text).hexdigest()[:ID_LENGTH]
    assert with_id == stdlib_canonical({**doc, "events": [{"x": 1e-05}], "id": doc_id})
