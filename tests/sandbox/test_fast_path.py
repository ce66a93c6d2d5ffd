"""The web process's fast path for job results accepts, refuses and writes exactly as the general one.

NOTE [fast path] in ``gradtrace/schema/fast.py``: documents as capture writes them are validated
by a strict TypeAdapter; everything else by ``RunDocument``; both are written by the schema's one
canonical writer (orjson). Here ``reference`` is the general path written the slow, obvious way
(``model_validate_json``, ``model_dump``, and ``json.dumps`` for the id and the bytes), and every
document, mutated or not, must come out of ``validate_result`` the same: refused by both, or
equal as dicts with the same id and byte-identical canonical JSON.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from floats import awkward_floats, stdlib_canonical
from gradtrace.collector import gc_paused
from gradtrace.jobs import Job, Limits
from gradtrace.sandbox.kinds.run import (
    _analyse,
    _memory_error_is_a_limit,
    _time_limit_error_is_a_timeout,
    validate_result,
)
from gradtrace.schema import RunDocument, canonical_json, document_id
from gradtrace.schema.canonical import ID_LENGTH, CanonicalDocument, canonical_with_id
from gradtrace.schema.fast import validate_strict_json
from gradtrace.storage.codec import encode_validated

TESTS = Path(__file__).resolve().parent.parent
DOCUMENTS = sorted([*(TESTS / "golden").glob("*.json"), *(TESTS / "fixtures" / "stored").glob("*.json")])
JOB = Job(code="x = torch.ones(2)\n", device="cpu", seed=7, limits=Limits())


def stdlib_id(doc: dict[str, Any]) -> str:
    """A document id computed the obvious way: json.dumps of everything but the id, hashed."""
    return hashlib.sha256(stdlib_canonical({k: v for k, v in doc.items() if k != "id"})).hexdigest()[:ID_LENGTH]


def reference(job: Job, raw: bytes | str) -> tuple[dict[str, Any], bytes] | None:
    """The general path, as ``validate_result`` was before the fast path (ids from json.dumps)."""
    try:
        doc = RunDocument.model_validate_json(raw).model_dump(mode="json", by_alias=True)
        doc["code"], doc["seed"], doc["device"] = job.code, job.seed, job.device
        _memory_error_is_a_limit(job, doc)
        _time_limit_error_is_a_timeout(job, doc)
        _analyse(doc)
        doc["id"] = stdlib_id(doc)
        return doc, stdlib_canonical(doc)
    except (ValueError, RecursionError, TypeError, UnicodeError, OverflowError):
        return None


def assert_same(raw: bytes | str, *, fast: bool | None = None) -> CanonicalDocument | None:
    """``validate_result`` agrees with the reference on ``raw``; ``fast`` says which path must take it."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if fast is not None:
        assert (validate_strict_json(data) is not None) == fast
    got = validate_result(JOB, data)
    want = reference(JOB, data)
    if want is None:
        assert got is None
        return None
    assert got is not None
    want_doc, want_raw = want
    assert dict(got) == want_doc
    assert got["id"] == want_doc["id"]
    assert got.canonical == want_raw
    assert encode_validated(got).raw == want_raw
    return got


def capture_bytes(doc: dict[str, Any]) -> bytes:
    """A document as a job sends it: the canonical JSON of its full model dump."""
    return canonical_json(RunDocument.model_validate(doc).model_dump(mode="json", by_alias=True))


def golden(name: str = "lesson_04_mlp_loss") -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((TESTS / "golden" / f"{name}.json").read_text())
    return doc


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.stem)
def test_every_golden_and_stored_document_takes_the_fast_path_and_gets_the_same_bytes(path: Path) -> None:
    assert_same(capture_bytes(json.loads(path.read_text())), fast=True)


def test_a_document_written_by_capture_is_stored_as_the_very_bytes_it_came_in() -> None:
    doc = RunDocument.model_validate(golden()).model_dump(mode="json", by_alias=True)
    doc.update(code=JOB.code, seed=JOB.seed, device=JOB.device)
    doc["id"] = document_id(doc)
    raw = canonical_json(doc)
    got = assert_same(raw, fast=True)
    assert got is not None and got.canonical == raw


def _tensor_values(doc: Any) -> list[dict[str, Any]]:
    found, stack = [], [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if {"shape", "dtype", "values", "stats"} <= item.keys():
                found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def test_floats_of_every_magnitude_are_written_as_repr_writes_them() -> None:
    doc = golden()
    xs = awkward_floats(5000, seed=11)
    tvs = _tensor_values(doc)
    for i, tv in enumerate(tvs):
        row = xs[i * 40:(i + 1) * 40] or [1e-7]
        tv["values"] = [row[:20], row[20:]] if len(row) == 40 else row
        tv["stats"] = {"min": min(row), "max": max(row), "mean": row[0], "norm": row[-1]}
    assert assert_same(capture_bytes(doc), fast=True) is not None


def test_text_of_every_kind_is_written_as_json_dumps_writes_it() -> None:
    doc = golden()
    text = "".join(chr(c) for c in range(0, 0x250)) + "\u2028\u2029\ufeff😀 e-5, 0.00001] 1e-09} \"\\"
    doc["stdout"] = text
    doc["message"] = text[::-1]
    doc["graph"]["nodes"][0]["name"] = "1e-5,"
    doc["graph"]["nodes"][0]["module"] = "0.00001]"
    assert assert_same(capture_bytes(doc), fast=True) is not None
    job = Job(code=text, seed=2**40, device="cpu")
    got = validate_result(job, capture_bytes(doc))
    want = reference(job, capture_bytes(doc))
    assert got is not None and want is not None and got.canonical == want[1]


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def go(doc: dict[str, Any]) -> None:
        target: Any = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return go


def _drop(path: tuple[Any, ...]) -> Callable[[dict[str, Any]], None]:
    def go(doc: dict[str, Any]) -> None:
        target: Any = doc
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return go


def _first_tv(doc: dict[str, Any]) -> dict[str, Any]:
    return _tensor_values(doc)[0]


def _tv(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda doc: _first_tv(doc).__setitem__(key, value)


NODE = ("graph", "nodes", 0)
EVENT = ("events", 0)
MUTATIONS: dict[str, Callable[[dict[str, Any]], None]] = {
    # refused by both
    "bad status": _set(("status",), "exploded"),
    "status null": _set(("status",), None),
    "no status": _drop(("status",)),
    "no id": _drop(("id",)),
    "kind unknown": _set((*NODE, "kind"), "operator"),
    "phase unknown": _set((*EVENT, "phase"), "sideways"),
    "shape of strings": _tv("shape", ["2"]),
    "schema_version 0": _set(("schema_version",), 0),
    "schema_version huge": _set(("schema_version",), 2**31),
    "graph a list": _set(("graph",), []),
    "nodes not a list": _set(("graph", "nodes"), {"a": 1}),
    "node without id": _drop((*NODE, "id")),
    "edge without target": _drop(("graph", "edges", 0, "target")),
    # accepted by both, the general way (not a fixed point of the schema)
    "extra field": _set(("from_the_future",), {"b": [1, 2.5e-7, "nan"], "a": None}),
    "extra node field": _set((*NODE, "colour"), 1e-9),
    "extra tv field": _tv("colour", 0.00001),
    "omitted default": _drop(("stdout_truncated",)),
    "omitted node default": _drop((*NODE, "saved")),
    "null optional addition": _set((*NODE, "outputs"), None),
    "null stale": _tv("stale", None),
    "line as text": _set((*NODE, "line"), "3"),
    "line as float": _set((*NODE, "line"), 3.0),
    "line as bool": _set((*NODE, "line"), True),
    "bool as int": _set(("stdout_truncated",), 1),
    "stat as free text": _tv("stats", {"min": "tiny, 1e-5]", "max": 1, "mean": 1, "norm": None}),
    "stat as bool": _tv("stats", {"min": True, "max": 1, "mean": 1, "norm": None}),
    "values as free text": _tv("values", ["0.00001]", "x"]),
    "values a dict": _tv("values", {"a": 1e-6}),
    "odd dtype": _tv("dtype", "float 1e-5,"),
    "long dtype": _tv("dtype", "f" * 65),
    "empty stats": _tv("stats", {}),
    "pass by field name": lambda doc: doc["events"][0].__setitem__("pass_", doc["events"][0].pop("pass")),
    # accepted by both, on the fast path
    "stale false": _tv("stale", False),
    "tiny values": _tv("values", [[1e-7, -2.5e-5], [0.0, -0.0]]),
    "bool values": _tv("values", [True, False]),
    "int values": _tv("values", [[1, -2], [3, 2**62]]),
    "int beyond 64 bits in values": _tv("values", [2**70]),
    "int beyond 64 bits in a stat": _tv("stats", {"min": -(2**80), "max": 1, "mean": 1, "norm": 1}),
    "special values": _tv("values", ["nan", "inf", "-inf", 1.5]),
    "scalar values": _tv("values", 2.5e-8),
    "no values": _tv("values", None),
    "no stats": _tv("stats", None),
    "deep values": _tv("values", [[[[[[[[1.0]]]]]]]]),
    "optional additions present": lambda doc: (
        _set((*NODE, "outputs"), [{"shape": [1], "dtype": "float32", "device": "cpu"}])(doc),
        _set((*NODE, "roles"), ["leaf", "root"])(doc), _set((*NODE, "saved_unread"), True)(doc),
        _set((*NODE, "saved_args"), {"approximate": "tanh", "dim": -1, "dims": [2, 0, 1], "exponent": 0.5,
                                     "keepdim": False, "other": "-inf"})(doc),
        _set(("graph", "edges", 0, "cut"), True)(doc),
        _set(("recorder_errors",), {"count": 1, "first": ["boom"]})(doc)),
}
MUTATIONS["saved arg not a short name"] = _set((*NODE, "saved_args"), {"rounding_mode": "a b"})
MUTATIONS["saved arg a list of floats"] = _set((*NODE, "saved_args"), {"dims": [0.5]})
FAST = {"stale false", "tiny values", "bool values", "int values", "int beyond 64 bits in values",
        "int beyond 64 bits in a stat",
        "special values", "scalar values", "no values", "no stats", "deep values",
        "optional additions present"}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutated_documents_are_accepted_or_refused_as_by_the_general_path(name: str) -> None:
    doc = copy.deepcopy(golden())
    MUTATIONS[name](doc)
    raw = json.dumps(doc, ensure_ascii=False, allow_nan=False)
    fast = name in FAST
    assert_same(raw, fast=fast if fast or reference(JOB, raw) is None else False)


@pytest.mark.parametrize("raw", [
    b"", b"null", b"[]", b"{}", b"not json", b'{"status": "ok", "id": "x"', b"\xff\xfe{}",
    b'{"status": "ok", "id": "x", "stdout": "\\ud800"}',
])
def test_what_is_not_a_document_is_refused(raw: bytes) -> None:
    assert validate_result(JOB, raw) is None


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_non_finite_float_is_refused_wherever_it_is(token: str) -> None:
    raw = capture_bytes(golden())
    tv_stat = b'"norm":'
    at = raw.index(tv_stat) + len(tv_stat)
    end = min(i for i in (raw.find(b"}", at), raw.find(b",", at)) if i >= 0)
    bad = raw[:at] + token.encode() + raw[end:]
    assert validate_strict_json(bad) is None
    assert validate_result(JOB, bad) is None and reference(JOB, bad) is None


def test_duplicate_keys_are_read_as_the_general_path_reads_them() -> None:
    raw = capture_bytes(golden())
    assert_same(raw[:-1] + b',"status":"error"}')
    assert_same(raw[:-1] + b',"stdout":"again"}')


def test_the_id_of_a_strict_document_matches_json_dumps_after_the_sandbox_sets_fields() -> None:
    doc = validate_strict_json(capture_bytes(golden("case_nan_and_inf")))
    assert doc is not None
    doc.update(code="print('é')\n", seed=None, device="cuda", status="timeout", message="Stopped.")
    plain = json.loads(json.dumps(doc))
    assert canonical_with_id(doc) == (stdlib_id(plain), stdlib_canonical({**plain, "id": stdlib_id(plain)}))


def test_a_carried_encoding_is_not_used_once_the_document_was_changed() -> None:
    got = validate_result(JOB, capture_bytes(golden()))
    assert got is not None and got.canonical_for() is not None
    got["stdout"] = "changed"
    assert got.canonical_for() is None
    enc = encode_validated(got)
    new_id = stdlib_id(got)
    assert new_id != got["id"] and new_id == document_id(got)
    assert enc.doc_id == new_id and enc.raw == stdlib_canonical({**got, "id": new_id})


def test_the_collector_pause_nests_across_threads_and_restores_the_state() -> None:
    import gc
    import threading

    assert gc.isenabled()
    barrier = threading.Barrier(4)

    def work() -> None:
        with gc_paused():
            barrier.wait()
            assert not gc.isenabled()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_what_the_real_sandbox_answers_takes_the_fast_path(pool: Any) -> None:
    """Capture writes fixed points of the schema, so ordinary results never take the slow path."""
    from gradtrace.sandbox.kinds.run import VALIDATED

    before = dict(VALIDATED)
    snippets = ["x = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()\n",
                "x = torch.tensor([1e-7, 3e-5], requires_grad=True)\nprint(x)\n(x * x).sum().backward()\n",
                "lin = nn.Linear(3, 2)\nlin(torch.randn(4, 3)).pow(2).mean().backward()\nraise ValueError('boom')\n"]
    for code in snippets:
        assert pool.run(code)["status"] in ("ok", "error")
    assert VALIDATED["strict"] == before["strict"] + len(snippets)
    assert VALIDATED["general"] == before["general"]


def test_the_strict_schema_mirrors_every_model_of_the_document_field_for_field() -> None:
    """A field added to a model must be added to the fast path too (NOTE [fast path]): a new
    defaulted field missing there would be missing from fast-path documents and change ids."""
    from typing import NotRequired, get_origin, get_type_hints

    from gradtrace.schema import document as models
    from gradtrace.schema import fast

    pairs = fast.STRICT  # NOTE [a strict twin generated from each model]
    assert set(models._Model.__subclasses__()) == set(pairs)
    for model, strict in pairs.items():
        omitted = {f.alias or name for name, f in model.model_fields.items() if f.exclude_if is not None}
        written = {f.alias or name for name, f in model.model_fields.items()} - omitted
        hints = get_type_hints(strict, vars(fast), include_extras=True)
        assert {k for k, h in hints.items() if get_origin(h) is not NotRequired} == written, model.__name__
        assert {k for k, h in hints.items() if get_origin(h) is NotRequired} == omitted, model.__name__
