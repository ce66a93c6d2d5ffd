"""The tensor file's side of the document in bulk (NOTE [the tensor file's side in bulk] in
capture/cxx/stats.h): the core's one-call kernels give what their Python twins give, and a run
gives the same document and file bytes on both kernel sets, where a gradient is not finite too."""

from __future__ import annotations

import hashlib
import math
from typing import Any

import pytest
import torch
from safetensors.torch import load

from gradtrace.capture import native
from gradtrace.capture.candidates import FORWARD, Candidate
from gradtrace.capture.pycore import PyCore
from gradtrace.capture.tensorfile import write
from rundoc import run_captured

pytestmark = pytest.mark.skipif(native.core is None, reason="the C++ core is not built on this machine")


def _odd_tensors() -> list[torch.Tensor]:
    """Tensors of every kind the file and the stats meet: dtypes, a scalar, an empty one, a
    transpose, an expanded scalar, a lazily negated view, NaN and infinities."""
    torch.manual_seed(0)
    base = torch.randn(3, 5)
    return [
        base, base.t(), torch.tensor(2.5), torch.empty(0, 4), torch.tensor(1.0).expand(4, 3),
        torch.randn(6)._neg_view(), base.double(), base.half(), base.bfloat16(),
        torch.arange(12, dtype=torch.int64).view(3, 4), torch.tensor([True, False]),
        torch.randint(0, 200, (7,), dtype=torch.uint8), torch.tensor([1.0, float("nan"), 3.0]),
        torch.tensor([float("inf"), -1.0]),
        torch.randn(40, 30),  # large: stats only
    ]


def test_the_core_writes_the_file_the_python_writer_writes() -> None:
    ts = _odd_tensors()

    def kept() -> list[Candidate]:  # each write lets go of its candidates' tensors
        return [Candidate(f"n{i}.out0" if i % 2 else f"e{i}.gi0", t, t.numel() * t.element_size(), FORWARD)
                for i, t in enumerate(ts)]

    by_core, by_twin = kept(), kept()
    core, twin = write(by_core, in_core=True), write(by_twin, in_core=False)
    assert core == twin
    assert all(c.tensor is None for c in by_core + by_twin)
    back = load(core)  # safetensors itself reads it back
    assert set(back) == {c.key for c in by_core}
    for c, t in zip(by_core, ts, strict=True):
        want = t.resolve_neg()
        assert back[c.key].dtype == want.dtype and back[c.key].shape == want.shape
        bits = [x.contiguous().reshape(-1).view(torch.uint8) for x in (back[c.key], want)]
        assert torch.equal(*bits), c.key  # the same bits (NaN included)


def test_the_core_writes_the_stats_its_twin_writes_for_small_tensors() -> None:
    """Small tensors' stats are the same bytes on both paths (NOTE [same stats on both paths]
    in capture/values.py); large ones agree within float32 tolerance."""
    assert native.core is not None
    ts = _odd_tensors()
    core = native.core.Recorder().stats_json(ts)
    twin = PyCore().stats_json(ts)
    assert len(core) == len(twin) == len(ts)
    for t, a, b in zip(ts, core, twin, strict=True):
        if not a:  # only Python's encoder writes it (integer, bool, empty: Value::kind 3)
            continue
        if t.numel() <= native.core.VALUES_LIMIT:
            assert a == b, (t, a, b)
        else:
            assert a.split(b'"stats"')[0] == b.split(b'"stats"')[0]
    assert b'"norm":"inf"' in core[len(ts) - 2]
    assert b'"norm":"nan"' in core[len(ts) - 3]


GRAD_NAN = """import torch
w = torch.nn.Parameter(torch.randn(4, 4))
x = torch.randn(3, 4)
y = (x @ w).relu()
z = y.sqrt()          # sqrt at 0: an infinite gradient, then NaN through relu's zeros
z.sum().backward()
h = torch.randn(4, requires_grad=True)
h.register_hook(lambda g: g * 2)
(h * h).sum().backward()
"""

GRU = """import torch
from torch import nn
cell = nn.GRUCell(4, 8)
h = torch.zeros(1, 8)
for t in range(6):
    h = cell(torch.randn(1, 4), h)
h.pow(2).sum().backward()
"""


@pytest.mark.parametrize("code", [GRAD_NAN, GRU], ids=["grad-nan", "gru"])
def test_both_kernel_sets_give_the_same_document_and_file(code: str) -> None:
    core = run_captured(code, native=True, tensor_budget=64 << 20, seed=0)
    twin = run_captured(code, native=False, tensor_budget=64 << 20, seed=0)
    assert core.tensors is not None and twin.tensors is not None
    assert core.events == twin.events
    assert core.graph == twin.graph
    assert core.tensors == twin.tensors
    assert core.fields["tensors"]["sha256"] == hashlib.sha256(core.tensors).hexdigest()
    assert b'"key":"e' in core.events  # the events' keys are spliced in


def test_the_first_non_finite_gradient_is_found_on_both_kernel_sets() -> None:
    """``event_candidates``' first event whose gradient is not finite is the events' own:
    its gradients are in the file whatever the budget leaves out after them."""
    import orjson

    for is_native in (True, False):
        cap = run_captured(GRAD_NAN, native=is_native, tensor_budget=64 << 20, seed=0)
        events = orjson.loads(cap.events)
        first = next(i for i, e in enumerate(events) if e["phase"] == "backward" and any(
            tv is not None and isinstance(tv["stats"]["norm"], str)
            for tv in (e["grad_inputs"] or []) + (e["grad_outputs"] or [])))
        keys = {tv["key"] for tv in (events[first]["grad_inputs"] or []) + (events[first]["grad_outputs"] or [])
                if tv is not None and "key" in tv}
        assert keys, "the first non-finite gradient kept"
        norms = [tv["stats"]["norm"] for tv in events[first]["grad_inputs"] + events[first]["grad_outputs"]
                 if tv is not None]
        assert any(isinstance(n, str) or math.isinf(n) for n in norms)


def _beyond_range() -> list[torch.Tensor]:
    """Tensors whose stats leave their dtype's range: a float32 norm beyond float32 (small and
    large, either sign), one that overflows only on the way (1e30 over a million elements:
    norm 1e33), float16 ones whose norm is beyond float16 (the stats are float32: NOTE [float32
    values] in capture/values.py), a float64 norm beyond float64, and float32's largest number."""
    big32 = torch.finfo(torch.float32).max
    return [
        torch.full((4,), 3e38), torch.full((3, 2), -3e38), torch.full((2000,), 3e38),
        torch.full((1_000_000,), 1e30), torch.tensor([big32, -big32]),
        torch.full((4,), 60000.0, dtype=torch.float16), torch.full((2000,), 65504.0, dtype=torch.float16),
        torch.full((4,), 1e200, dtype=torch.float64), torch.full((4,), 3e38, dtype=torch.bfloat16),
        torch.full((2000,), -3e38), torch.full((2000,), 3e38, dtype=torch.bfloat16),
        torch.tensor([3e38, -3e38]).repeat(1000),  # a mean of 0 whose float32 sum overflows
    ]


def _odd_values() -> list[torch.Tensor]:
    """Small and large tensors of odd values the core writes itself: subnormals, norms that
    underflow on the way, signed zeros, NaN payloads, infinities of both signs, float16 and
    bfloat16 at their ends."""
    payloads = torch.tensor([0x7FC00001, -4194304, 0x7F800001], dtype=torch.int32).view(torch.float32)
    return [
        torch.tensor([1e-45, -1e-45, 1e-40]), torch.full((2000,), 1e-40), torch.full((2000,), 1e-30),
        torch.full((4,), 1e-30), torch.tensor([0.0, -0.0]), torch.tensor([-0.0, 0.0]),
        torch.full((3,), -0.0), torch.full((2000,), -0.0), torch.tensor(-0.0), payloads,
        payloads.repeat(700), torch.tensor([math.inf, -math.inf]), torch.tensor([math.inf, -math.inf]).repeat(600),
        torch.tensor([1e308, 1e308], dtype=torch.float64), torch.full((2000,), 1e308, dtype=torch.float64),
        torch.tensor([5e-324, -5e-324], dtype=torch.float64), torch.tensor([6e-8, -6e-8], dtype=torch.float16),
        torch.full((2000,), 6e-8, dtype=torch.float16), torch.full((2000,), -65504.0, dtype=torch.float16),
        torch.full((2000,), 1e-38, dtype=torch.bfloat16), torch.tensor([math.nan, 1.0], dtype=torch.float16),
        torch.cat([torch.tensor([3e38]), torch.full((1999,), 1e-30)]),
    ]


def _stats(text: bytes) -> dict[str, object]:
    import orjson

    stats = orjson.loads(text)["stats"]
    assert isinstance(stats, dict)
    return stats


@pytest.mark.parametrize("make", [_beyond_range, _odd_values], ids=["beyond-range", "odd-values"])
def test_stats_of_odd_values_are_the_same_on_both_kernel_sets(make: Any) -> None:
    """NOTE [stats beyond the dtype's range] in capture/values.py: a norm beyond float32 is
    "inf" on both kernel sets, as ``torch.linalg.vector_norm`` gives it in float32; one that
    overflows or underflows only on the way is the norm, as float64 gives it."""
    assert native.core is not None
    ts = make()
    core = native.core.Recorder().stats_json(ts)
    twin = PyCore().stats_json(ts)
    for t, a, b in zip(ts, core, twin, strict=True):
        assert a, t.dtype  # the core writes every one of them itself
        if t.numel() <= native.core.VALUES_LIMIT:
            assert a == b, (t.shape, t.dtype, a, b)
        sa, sb = _stats(a), _stats(b)
        for name in ("min", "max", "mean", "norm"):
            x, y = sa[name], sb[name]
            if isinstance(x, str) or isinstance(y, str):
                assert x == y, (t.shape, t.dtype, name, x, y)
            else:
                assert isinstance(x, float) and isinstance(y, float)
                assert math.isclose(x, y, rel_tol=1e-6), (t.shape, t.dtype, name, x, y)
        truth = torch.linalg.vector_norm(t.double()).item()
        if t.isnan().any():
            assert sa["norm"] == "nan"
        elif t.dtype == torch.float64 and 0 < truth < 1e-150:
            assert sa["norm"] == 0.0  # float64's own squares underflow, on both kernel sets
        elif t.dtype in (torch.float32, torch.bfloat16) and truth > torch.finfo(torch.float32).max:
            assert sa["norm"] == "inf" and torch.linalg.vector_norm(t).isinf()  # torch's own
        elif math.isinf(truth):
            assert sa["norm"] == "inf"
        else:
            tol = 0.0 if t.dtype == torch.float64 else 2e-45  # float32 subnormals have fewer digits
            assert isinstance(sa["norm"], float) and math.isclose(sa["norm"], truth, rel_tol=1e-6, abs_tol=tol)
    if make is _beyond_range:
        assert _stats(core[3])["norm"] == 1e33 and torch.linalg.vector_norm(ts[3]).isinf()
        assert _stats(core[1])["min"] == -3e38 and _stats(core[1])["norm"] == "inf"
        assert _stats(core[-1])["mean"] == 0.0 and _stats(core[-3])["mean"] == -3e38


BEYOND = """import torch
w = torch.full((4,), 3e38, requires_grad=True)
y = w * 1.0                      # a forward output whose norm is beyond float32
(y * torch.full((4,), 3e38)).sum().backward()   # w's gradient: 3e38 each, norm beyond float32
v = torch.ones(1_000_000, requires_grad=True)
(v * 1e30).sum().backward()      # a large gradient whose norm (1e33) overflows only on the way
h = torch.full((4,), 60000.0, dtype=torch.float16, requires_grad=True)
(h * 1.0).sum().backward()
u = torch.ones(2000, requires_grad=True)
(u * 1e-30).sum().backward()     # a gradient whose norm (4.5e-29) underflows only on the way
"""


def _same(a: object, b: object, where: str = "") -> None:
    """``a`` and ``b`` (parsed documents' parts) equal, but a large tensor's finite stats within
    float32 tolerance (NOTE [same stats on both paths] in capture/values.py)."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        large = "stats" in a and a.get("values") is None and math.prod(a.get("shape") or [0]) > 1000
        for k in a:
            if large and k == "stats" and isinstance(a[k], dict) and isinstance(b[k], dict):
                for name, x in a[k].items():
                    y = b[k][name]
                    ok = x == y if isinstance(x, str) or isinstance(y, str) else math.isclose(x, y, rel_tol=1e-6)
                    assert ok, (where, name, x, y)
            else:
                _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    else:
        assert a == b, (where, a, b)


ODD = """import torch
for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
    x = torch.tensor([1e-45, -0.0, 0.0, 1e-40, 2.5, -7.25, 65504.0, 1e-7], dtype=dt, requires_grad=True)
    (x * torch.tensor([1e-45, -1.0, -0.0, 1.0, 3e38, 1e-30, 2.0, 6e-8], dtype=dt)).sum().backward()
    z = torch.tensor([float("nan"), 1.0, -0.0], dtype=dt, requires_grad=True)
    (z * torch.tensor([-0.0, -0.0, 5e-324], dtype=dt)).sum().backward()
    e = torch.zeros(0, 3, dtype=dt, requires_grad=True)
    (e * 2).sum().backward()
    w = torch.full((3000,), 1e-30, dtype=dt, requires_grad=True)
    (w * -0.0).sum().backward()
    (w * 3e38).sum().backward()
"""


@pytest.mark.parametrize("code", [BEYOND, ODD], ids=["beyond-float32", "odd-values"])
def test_a_run_with_odd_values_gives_the_same_document_on_both_kernel_sets(code: str) -> None:
    """Subnormals, signed zeros, NaN, empty tensors and norms beyond float32 as forward outputs,
    gradients and leaves' ``.grad``, in every floating dtype the core writes itself."""
    import orjson

    core = run_captured(code, native=True, tensor_budget=64 << 20, seed=0)
    twin = run_captured(code, native=False, tensor_budget=64 << 20, seed=0)
    assert core.status == twin.status == "ok"
    _same(orjson.loads(core.events), orjson.loads(twin.events), "events")
    _same(orjson.loads(core.graph), orjson.loads(twin.graph), "graph")
    assert core.tensors == twin.tensors
    if code is not BEYOND:
        return
    norms = [tv["stats"]["norm"] for e in orjson.loads(core.events) if e["phase"] == "backward"
             for tv in (e["grad_inputs"] or []) + (e["grad_outputs"] or []) if tv is not None]
    assert "inf" in norms  # w's gradient
    assert any(isinstance(n, float) and math.isclose(n, 1e33, rel_tol=1e-6) for n in norms)  # v's
    assert any(isinstance(n, float) and math.isclose(n, 2000 ** 0.5 * 1e-30, rel_tol=1e-6) for n in norms)


PER_SAMPLE_GRADS = """import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap
torch.manual_seed(0)
model = nn.Linear(4, 2)
params = {k: v.detach() for k, v in model.named_parameters()}
def loss_fn(p, x, y):
    return F.cross_entropy(functional_call(model, p, (x.unsqueeze(0),)), y.unsqueeze(0))
x, y = torch.randn(6, 4), torch.randint(0, 2, (6,))
per_sample = vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, x, y)
F.cross_entropy(model(x), y).backward()
"""


def test_a_transforms_gradients_are_left_out_as_such_on_both_kernel_sets() -> None:
    """Per-sample gradients (``vmap(grad(...))``, Opacus' way): the gradients flowing inside
    the transform are functorch wrappers, with no memory of their own and their level gone when
    the file is written: left out with the reason ``transform`` (``kKeptTransform`` in
    cxx/values.h), not ``dtype``; the program's own backward afterwards is kept whole."""
    runs = [run_captured(PER_SAMPLE_GRADS, native=n, tensor_budget=64 << 20, seed=0) for n in (True, False)]
    for cap in runs:
        left = cap.fields["tensors"]["left_out"]
        assert left and {x["reason"] for x in left} == {"transform"}, left
    assert runs[0].events == runs[1].events and runs[0].tensors == runs[1].tensors
    assert runs[0].fields["tensors"]["left_out"] == runs[1].fields["tensors"]["left_out"]
