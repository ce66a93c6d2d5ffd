"""The leaves' value steps (capture/valuesteps.py) compared later, in one go (NOTE [comparing
later, in one go]): the same steps as comparing at every look, against torch's own numbers,
whatever waits; a leaf whose data changes dtype starts again without losing what it did."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

import gradtrace
from gradtrace.capture import native, valueleaves, valuesteps


def _steps(doc: Any) -> dict[str, list[dict[str, Any]]]:
    return {str(n.name): [s.model_dump() for s in n.value_steps] for n in doc.graph.nodes if n.value_steps}


def sgd_by_hand(width: int) -> tuple[Any, dict[str, list[tuple[float, float]]]]:
    """Six steps of ``p -= lr * p.grad`` (no version bump) on two leaves; torch's ‖w‖ and ‖Δw‖."""
    torch.manual_seed(3)
    truth: dict[str, list[tuple[float, float]]] = {"W": [], "b": []}
    with gradtrace.record(tensor_budget=0) as rec:
        W = torch.randn(width, width, requires_grad=True)
        b = torch.zeros(width, requires_grad=True)
        x = torch.randn(4, width)
        for _ in range(6):
            loss = torch.tanh(x @ W + b).pow(2).mean()
            W.grad = b.grad = None
            loss.backward()
            with torch.no_grad():
                for name, p in (("W", W), ("b", b)):
                    before = p.detach().clone()
                    p.data -= 0.3 * p.grad
                    truth[name].append((float(before.norm()), float((p - before).norm())))
    return rec.document(), truth


@pytest.mark.parametrize("pending", [valuesteps.PENDING_BYTES, 0], ids=["waiting", "at-every-look"])
def test_steps_equal_torchs_whether_they_wait_or_not(monkeypatch: pytest.MonkeyPatch, pending: int) -> None:
    monkeypatch.setattr(valuesteps, "PENDING_BYTES", pending)
    doc, truth = sgd_by_hand(8)
    steps = _steps(doc)
    assert [s["at"] for s in steps["W"]] == [1, 2, 3, 4, 5, 6]
    for name in ("W", "b"):
        for s, (norm, delta) in zip(steps[name], truth[name], strict=True):
            assert math.isclose(s["norm"], norm, rel_tol=1e-6, abs_tol=1e-12)
            assert math.isclose(s["delta"], delta, rel_tol=1e-6)


def test_waiting_and_comparing_at_every_look_write_the_same_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    waiting, _ = sgd_by_hand(8)
    monkeypatch.setattr(valuesteps, "PENDING_BYTES", 0)
    every, _ = sgd_by_hand(8)
    assert _steps(waiting) == _steps(every)  # the same norms of the same values, bit for bit
    assert waiting.analysis.dynamics.model_dump() == every.analysis.dynamics.model_dump()


def test_leaves_past_the_bound_are_compared_at_every_look(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(valuesteps, "PENDING_BYTES", 4 * 48 * 48 + 100)  # W's copy waits once, not twice
    doc, truth = sgd_by_hand(48)
    steps = _steps(doc)
    assert len(steps["W"]) == 6
    for s, (norm, delta) in zip(steps["W"], truth["W"], strict=True):
        assert math.isclose(s["norm"], norm, rel_tol=1e-6) and math.isclose(s["delta"], delta, rel_tol=1e-6)


def test_a_leaf_whose_data_changes_dtype_keeps_its_steps_and_starts_again() -> None:
    torch.manual_seed(0)
    with gradtrace.record(tensor_budget=0) as rec:
        w = torch.randn(3, requires_grad=True)
        for _ in range(2):
            (w * w).sum().backward()
            with torch.no_grad():
                w -= 0.1 * w.grad
            w.grad = None
        w.data = w.data.double()  # another dtype (``model.double()``): the steps so far stay
        for _ in range(2):
            (w * w).sum().backward()
            with torch.no_grad():
                w -= 0.1 * w.grad
            w.grad = None
    (steps,) = [s for s in _steps(rec.document()).values()]
    # the float64 copy's own first step is seen after its second backward
    assert [s["at"] for s in steps] == [1, 3, 4]
    assert all(s["delta"] > 0 for s in steps)


def _by_hand(setup: str) -> tuple[Any, dict[str, list[tuple[float, float]]]]:
    """Five SGD steps on leaves that each take another path of NOTE [one copy per look]:
    ``joined``: two float32 leaves, one copy for both; ``mixed``: a float64 leaf beside them,
    a copy each; ``strided``: a transposed (non-contiguous) leaf, a copy each; ``moved``: a
    leaf whose data is replaced (``p.data = ...``) at every step, so its view is taken again;
    ``bfloat16``: two leaves numpy cannot see, one copy for both through torch (NOTE [a loop's
    look in one check])."""
    torch.manual_seed(5)
    truth: dict[str, list[tuple[float, float]]] = {}
    with gradtrace.record(tensor_budget=0) as rec:
        W = torch.randn(6, 6, requires_grad=True)
        b = torch.randn(6, requires_grad=True)
        if setup == "mixed":
            b = torch.randn(6, dtype=torch.float64, requires_grad=True)
        if setup == "strided":
            W = torch.randn(6, 5).t().requires_grad_()
        if setup == "bfloat16":
            W = W.detach().bfloat16().requires_grad_()
            b = b.detach().bfloat16().requires_grad_()
        x = torch.randn(4, W.shape[0])
        named = {"W": W, "b": b}
        for _ in range(5):
            loss = torch.tanh(x.to(W.dtype) @ W + b.to(W.dtype)).pow(2).mean()
            W.grad = b.grad = None
            loss.backward()
            with torch.no_grad():
                for name, p in named.items():
                    before = p.detach().clone()
                    if setup == "moved" and name == "W":
                        p.data = p.data - 0.3 * p.grad  # new storage, same shape
                    else:
                        p.data -= 0.3 * p.grad
                    truth.setdefault(name, []).append((float(before.norm()), float((p - before).norm())))
    return rec.document(), truth


@pytest.mark.parametrize("setup", ["joined", "mixed", "strided", "moved", "bfloat16"])
def test_one_copy_per_look_gives_torchs_steps_whatever_the_leaves(setup: str) -> None:
    doc, truth = _by_hand(setup)
    steps = _steps(doc)
    tol = 1e-2 if setup == "bfloat16" else 1e-6  # bfloat16's 8 bits of mantissa
    for name in ("W", "b"):
        assert [s["at"] for s in steps[name]] == [1, 2, 3, 4, 5]
        for s, (norm, delta) in zip(steps[name], truth[name], strict=True):
            assert math.isclose(s["norm"], norm, rel_tol=tol)
            assert math.isclose(s["delta"], delta, rel_tol=tol)


def test_the_dynamics_switched_off_leave_no_steps_no_series_and_the_same_graph() -> None:
    docs = {}
    for on in (True, False):
        torch.manual_seed(3)
        with gradtrace.record(tensor_budget=1 << 20, dynamics=on) as rec:
            model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            x = torch.randn(16, 3)
            for _ in range(4):
                opt.zero_grad()
                model(x).pow(2).mean().backward()
                opt.step()
        docs[on] = rec.document()
    assert _steps(docs[True]) and not _steps(docs[False])
    assert docs[True].analysis.dynamics is not None
    assert docs[False].analysis is None or docs[False].analysis.dynamics is None

    def graph(doc: Any) -> list[dict[str, Any]]:
        return [n.model_dump(exclude={"value_steps"}) for n in doc.graph.nodes]
    assert graph(docs[True]) == graph(docs[False])
    with pytest.raises(ValueError, match="dynamics must be True or False"):
        gradtrace.record(dynamics="no")  # type: ignore[arg-type]


@pytest.mark.parametrize("setup", ["joined", "moved"])
def test_a_loops_looks_compared_as_one_grid_write_the_same_steps_bit_for_bit(
        monkeypatch: pytest.MonkeyPatch, setup: str) -> None:
    grid, _ = _by_hand(setup)  # NOTE [the looks of a loop as one grid]
    monkeypatch.setattr(valuesteps, "GRID_MAX", 0)  # every leaf too wide: one pair at a time
    pairs, _ = _by_hand(setup)
    assert _steps(grid) == _steps(pairs)
    assert grid.analysis.dynamics.model_dump() == pairs.analysis.dynamics.model_dump()


@pytest.mark.skipif(native.core is None, reason="the C++ core is not built on this machine")
def test_the_cores_float32_values_are_its_twins() -> None:
    """The norms' float32 text read back (cxx/valuesteps.h) is numpy's, ``float(str(np.float32(x)))``,
    over every float32 scale, the subnormals, both zeros and the values past float32's range."""
    assert native.core is not None
    rng = np.random.default_rng(0)
    xs = (rng.standard_normal(20000) * 10.0 ** rng.integers(-46, 40, 20000)).tolist()
    xs += [0.0, -0.0, 1e-45, 1.4e-45, 7e-46, 3.4028235e38, 3.4028236e38, 1e300, 0.1, 1 / 3,
           math.nan, math.inf, -math.inf]
    with np.errstate(over="ignore"):
        twin = valueleaves.f32_twin(xs)
    core = native.core.float32_values(xs)
    assert len(core) == len(twin)
    for x, a, b in zip(xs, core, twin, strict=True):
        assert (a == b and math.copysign(1, a) == math.copysign(1, b)) or (math.isnan(a) and math.isnan(b)), x


@pytest.mark.skipif(native.core is None, reason="the C++ core is not built on this machine")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_the_cores_look_in_one_call_is_its_twins_check_and_copy(dtype: torch.dtype) -> None:
    """NOTE [a loop's look in one check]: the core's ``LeafGroup`` takes the look its Python twin
    takes (the same leaves, data and layout: their values joined bit for bit, ``at`` each
    history's length less one) and refuses every look the twin goes leaf by leaf for."""
    assert native.core is not None
    leaves = [torch.randn(3, 4).to(dtype).requires_grad_(), torch.randn(5).to(dtype).requires_grad_()]
    docs: list[dict[str, Any]] = [{"grad_history": [1, 2, 3]}, {"grad_history": [1]}]
    group = native.core.LeafGroup(leaves)
    hit = group.look(list(zip(leaves, docs, strict=True)))
    assert hit is not None
    whole, ats = hit
    assert ats == [2, 0] and whole.dtype == dtype and not whole.requires_grad
    assert torch.equal(whole, torch.cat([t.detach().reshape(-1) for t in leaves]))
    with torch.no_grad():
        leaves[0].mul_(2)  # a step in place: the same look, the new values
    assert torch.equal(group.look(list(zip(leaves, docs, strict=True)))[0][:12], leaves[0].detach().reshape(-1))
    other = leaves[0].detach().clone().requires_grad_()
    assert group.look([(other, docs[0]), (leaves[1], docs[1])]) is None       # another leaf
    assert group.look([(leaves[0], docs[0])]) is None                         # one less
    assert group.look([(leaves[1], docs[1]), (leaves[0], docs[0])]) is None  # another order
    assert group.look([(leaves[0], docs[0]), (leaves[1], {})]) is None       # no history: leaf by leaf
    leaves[1].data = torch.randn(5).to(dtype)                                 # its data moved
    assert group.look(list(zip(leaves, docs, strict=True))) is None
    with pytest.raises(ValueError):
        native.core.LeafGroup([leaves[0], torch.randn(2, dtype=torch.float16)])  # two dtypes
    with pytest.raises(ValueError):
        native.core.LeafGroup([torch.randn(4, 3).t()])  # not contiguous
