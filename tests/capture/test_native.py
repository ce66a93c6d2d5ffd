"""The C++ capture core against the Python recorder it accelerates (NOTE [why C++]).

Both paths must record the same run: same nodes, edges, events, passes and values, byte for
byte, except the stats of large tensors (float64 sums in C++, torch's float32 reductions in
Python), which must agree to float32 precision. The core's JSON writer must write numbers as
``json.dumps`` does, since document ids hash those bytes.
"""

from __future__ import annotations

import json
import math
import random
import struct
from typing import Any

import pytest
import torch

from conftest import Snippet, snippets
from gradtrace.capture import native
from gradtrace.schema import canonical_json, document_id
from rundoc import record_doc, run_captured, run_doc

core = native.core
SNIPPETS = snippets()


def test_the_core_is_built() -> None:
    # `make install` builds it (gradtrace.capture.build_native); the service relies on it
    assert native.available(), "the C++ capture core is missing: make native"


def _floats(n: int, rng: random.Random) -> list[float]:
    out = [0.1, 1e16, 1e15, 9.999999999999999e15, 1e-5, 1e-4, 9.9e-5, 5e-324, 1.7976931348623157e308,
           2.0, 100.0, 1e22, -3.25, 1 / 3, 2.0**53 + 2, -0.0, 123456789.0, 1.5e-7]
    for _ in range(n):
        out.append(struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0])
        out.append(struct.unpack("<f", rng.getrandbits(32).to_bytes(4, "little"))[0])
        out.append(rng.uniform(-10, 10) * 10.0 ** rng.randint(-30, 30))
    return [x for x in out if math.isfinite(x)]


def test_numbers_are_written_as_json_dumps_writes_them() -> None:
    assert core is not None
    for x in _floats(60_000, random.Random(7)):
        assert core.format_double(x) == json.dumps(x), x
    assert core.format_double(math.nan) == '"nan"'
    assert core.format_double(-math.inf) == '"-inf"'


def test_float32_numbers_are_written_shortest_and_exact() -> None:
    """NOTE [float32 values]: the fewest digits that read back as the same float32, and text
    json.dumps writes again as is (so ids stay hashes of canonical JSON)."""
    import numpy as np

    assert core is not None
    rng = random.Random(5)
    for _ in range(60_000):
        f = struct.unpack("<f", rng.getrandbits(32).to_bytes(4, "little"))[0]
        if not math.isfinite(f):
            continue
        text = core.format_float32(f)
        assert np.float32(float(text)) == np.float32(f), (f, text)
        assert json.dumps(float(text)) == text
        assert float(text) == float(str(np.float32(f)))  # numpy's shortest form, same number


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 1, 2), (40, 30)])
def test_a_value_is_encoded_as_python_encodes_it(dtype: torch.dtype, shape: tuple[int, ...]) -> None:
    from gradtrace.capture.values import encode

    assert core is not None
    t = (torch.randn(shape, generator=torch.Generator().manual_seed(3)) * 7).to(dtype)
    got = json.loads(core.encode_json(t))
    want = json.loads(canonical_json(encode(t)))
    assert got["shape"] == want["shape"] and got["dtype"] == want["dtype"]
    assert got["values"] == want["values"]
    if want["values"] is not None:  # small: the same sums, in the same order
        assert got["stats"] == want["stats"]
    else:
        for k in ("min", "max", "mean", "norm"):
            assert math.isclose(got["stats"][k], want["stats"][k], rel_tol=1e-5, abs_tol=1e-6)


def test_nan_and_inf_values() -> None:
    assert core is not None
    v = json.loads(core.encode_json(torch.tensor([1.0, math.nan, math.inf])))
    assert v["values"] == [1.0, "nan", "inf"]
    assert v["stats"] == {"min": "nan", "max": "nan", "mean": "nan", "norm": "nan"}
    big = json.loads(core.encode_json(torch.full((2000,), -math.inf)))
    assert big["values"] is None and big["stats"]["min"] == "-inf" and big["stats"]["norm"] == "inf"


def _same(a: Any, b: Any, where: str, *, big: bool = False) -> None:
    """Equal, except the stats of large tensors (``values`` null): float32 precision there."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        large = "stats" in a and "values" in a and a["values"] is None and a.get("stats") is not None
        for k in a:
            if k == "id":
                continue
            _same(a[k], b[k], f"{where}.{k}", big=big or (large and k == "stats"))
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]", big=big)
    elif big and isinstance(a, float) and isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-7), (where, a, b)
    else:
        assert a == b, (where, a, b)


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.name)
def test_the_core_records_what_the_python_hooks_record(snippet: Snippet) -> None:
    code = snippet.code
    fast = run_doc(code, seed=0, native=True)
    slow = run_doc(code, seed=0, native=False)
    _same(fast, slow, "doc")


@pytest.mark.parametrize("snippet", SNIPPETS[::4], ids=lambda s: s.name)
def test_the_captured_bytes_are_the_canonical_json_of_the_document(snippet: Snippet) -> None:
    """Capture's exit (graph and events kept as the core's JSON) writes the bytes the schema's
    canonical JSON gives for the materialised document, and the same id."""
    code = snippet.code
    captured = run_captured(code, seed=0)
    assert "id" not in captured.fields  # NOTE [who assigns the id]: whoever writes it out
    _, body = captured.canonical_with_id()
    full = run_doc(code, seed=0)
    assert body == canonical_json(full)
    assert json.loads(body)["id"] == document_id(full) == full["id"]


def test_event_limit_in_the_core_stops_the_run() -> None:
    code = "x = torch.ones(3, requires_grad=True)\nfor _ in range(50):\n    (x * 2).sum().backward()\n"
    doc = run_doc(code, max_events=20)
    assert doc["status"] == "graph_limit"
    assert "event limit (20 events)" in doc["message"]
    assert sum(e["phase"] == "backward" for e in doc["events"]) == 20


@pytest.mark.parametrize("use_core", [True, False], ids=["core", "python"])
def test_the_hooks_are_gone_after_the_block(use_core: bool) -> None:
    """A graph kept past the block runs backward without the recorder (no event, no error)."""
    import gradtrace

    with gradtrace.record(native=use_core) as rec:
        x = torch.ones(3, requires_grad=True)
        y = (x * x).sum()
    assert native.is_native(rec.recorder.core) == use_core
    n_events = len(record_doc(rec)["events"])
    y.backward()
    assert torch.equal(x.grad, 2 * torch.ones(3))
    assert len(record_doc(rec)["events"]) == n_events


AWKWARD_NAMES = '''
class Größe(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.k = 3  # not a tensor: never read as a saved tensor
        return x * 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2

layers = nn.ModuleDict({'quote"back\\\\slash': nn.Linear(3, 3), 'tab\\tnew\\nline\\x01': nn.Linear(3, 3),
                        'ünï': nn.Linear(3, 3)})
x = torch.randn(2, 3, requires_grad=True)
h = x
for key in layers:
    h = Größe.apply(layers[key](h))
h.sum().backward()
'''


def test_the_cores_json_escapes_names_like_json_dumps() -> None:
    """NOTE [node entries in C++]: module paths and node names with quotes, backslashes,
    control characters and non-ASCII letters are written as ``json.dumps`` writes them."""
    captured = run_captured(AWKWARD_NAMES, seed=0)
    assert captured.status == "ok", captured.fields["error"]
    _, body = captured.canonical_with_id()
    full = run_doc(AWKWARD_NAMES, seed=0, native=False)
    assert body == canonical_json(full)
    modules = {n["module"] for n in json.loads(body)["graph"]["nodes"] if n["kind"] == "function"}
    assert {'layers.quote"back\\slash', "layers.tab\tnew\nline\x01", "layers.ünï"} <= modules
    names = {n["name"] for n in full["graph"]["nodes"]}
    assert "GrößeBackward" in names


def test_a_diagnosis_reads_the_cores_entries_back() -> None:
    """Entries kept in C++ are read back as dicts for an error's diagnosis, including which
    saved tensors the first backward freed (a second backward through a freed graph)."""
    code = ("x = torch.ones(3, requires_grad=True)\ny = (x.exp() * x).sum()\ny.backward()\n"
            "y.backward()\n")
    fast = run_doc(code, seed=0, native=True)
    slow = run_doc(code, seed=0, native=False)
    assert fast["status"] == "error" and fast["error"]["line"] == 4
    assert fast["error"] == slow["error"]
    freed = [s for n in fast["graph"]["nodes"] for s in n["saved"] if s["freed_after_pass"] == 0]
    assert freed, "the first pass freed the saved tensors"
    assert "freed after pass 0" in fast["error"]["detail"]


def test_a_view_of_a_big_gradient_has_its_own_shape_and_the_same_stats() -> None:
    """NOTE [same elements, other shape]: the stats of a transposed or reshaped big gradient
    are reused from the gradient whose memory it views; its shape is its own."""
    code = ("x = torch.randn(40, 60, requires_grad=True)\n"
            "y = (x.t().reshape(60, 40) * 3).sum()\ny.backward()\n")
    fast = run_doc(code, seed=0, native=True)
    slow = run_doc(code, seed=0, native=False)
    _same(fast, slow, "doc")
    grads = [v for e in fast["events"] if e["phase"] == "backward" for v in e["grad_inputs"]
             if v is not None and v["values"] is None and v["stats"]["max"] == 3.0]
    assert {(60, 40), (40, 60)} <= {tuple(v["shape"]) for v in grads}  # Mul's, then T's (a view)
    stats = {json.dumps(v["stats"], sort_keys=True) for v in grads}
    assert len(stats) == 1, "every view of 3 * ones has the same stats"
    assert grads[0]["stats"]["mean"] == 3.0


def test_the_line_tracer_is_the_cores_and_is_removed_after_the_block() -> None:
    """NOTE [a C line tracer]: with the core, lines are traced by its C function (no Python
    call per Python call); a nested record finds tracing taken and falls back to lines at
    discovery; nothing is left installed afterwards."""
    import sys

    import gradtrace

    assert sys.gettrace() is None
    with gradtrace.record(native=True) as outer:
        assert sys.gettrace() == "gradtrace line tracer (C)"
        x = torch.ones(2, requires_grad=True)
        with gradtrace.record() as inner:
            y, y_line = (x * 3).sum(), sys._getframe().f_lineno
        z, z_line = (x * 2).sum(), sys._getframe().f_lineno
    assert sys.gettrace() is None
    muls = [n["line"] for n in record_doc(outer)["graph"]["nodes"] if n["name"] == "MulBackward0"]
    assert muls == [y_line, z_line]
    assert [n["name"] for n in record_doc(inner)["graph"]["nodes"]].count("MulBackward0") == 1
    assert y.grad_fn is not None and z.grad_fn is not None


@pytest.mark.parametrize(("env", "expect"), [("python", False), ("native", True), ("", True)])
def test_the_kernel_set_is_chosen_by_gradtrace_kernels(env: str, expect: bool) -> None:
    """``make test`` runs tests/capture again with GRADTRACE_KERNELS=python: that run must
    really record on the Python twin (NOTE [one recorder, two kernel sets] in pycore.py)."""
    import os
    import subprocess
    import sys

    probe = ("import gradtrace\nfrom gradtrace.capture import native\n"
             "with gradtrace.record() as rec:\n    pass\n"
             "print(type(rec.recorder.core).__name__, native.is_native(rec.recorder.core))")
    out = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "GRADTRACE_KERNELS": env},
                         capture_output=True, text=True, timeout=120, check=True).stdout.split()
    assert out == (["Recorder", "True"] if expect else ["PyCore", "False"])
