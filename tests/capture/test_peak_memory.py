"""Peak memory while recording with a tensor file stays within the budget plus a stated
constant (NOTE [held within the budget] and NOTE [each tensor let go once written] in
capture/tensorfile.py), on both kernel sets: the core's own high-water mark of the bytes it
holds, and the process's peak resident memory against the same run without tensors."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from safetensors.numpy import load

import gradtrace
from capture.peak_child import peak
from gradtrace.capture.tensorfile import PEAK_CONSTANT

NATIVE = [True, False]


def _rnn(native: bool, budget: int) -> Any:
    """An RNN over input slices: each ``xs[t]`` that ``addmm`` saves is a tensor no node made
    (NOTE [saved tensors from no node] in capture/saved.py)."""
    torch.manual_seed(0)
    with gradtrace.record(native=native, tensor_budget=budget) as rec:
        cell = torch.nn.RNNCell(64, 128)
        h = torch.zeros(16, 128)
        xs = torch.randn(40, 16, 64)
        for t in range(40):
            h = cell(xs[t], h)
        h.pow(2).mean().backward()
    return rec


@pytest.mark.parametrize("native", NATIVE, ids=["core", "python"])
def test_what_is_held_never_passes_the_budget_saved_tensors_included(native: bool) -> None:
    full = _rnn(native, 64 << 20)
    data = full.document().tensor_bytes()
    assert data is not None
    sizes = {k: v.nbytes for k, v in load(data).items()}
    saved = {k for k in sizes if ".s" in k}
    assert len(saved) >= 40  # every xs[t] addmm saved (and the first h)
    # with room for everything, the high-water mark counts every held tensor, the saved ones too
    assert full.recorder.core.held_peak() >= sum(sizes[k] for k in saved) + sum(
        v for k, v in sizes.items() if k.startswith("e") and k.endswith(".grad"))
    budget = 64 << 10
    assert sum(sizes.values()) > 10 * budget  # the run's tensors pass the budget many times over
    rec = _rnn(native, budget)
    held = rec.recorder.core.held_peak()
    assert budget // 2 < held <= budget
    doc = rec.document()
    assert doc.tensors is not None
    assert saved - set(load(doc.tensor_bytes()))  # past the budget (the reasons: ``budget`` alone)
    assert {x.reason for x in doc.tensors.left_out} == {"budget"}
    # the same tensors left out on both kernel sets, the same file
    other = _rnn(not native, budget)
    assert other.recorder.core.held_peak() == held
    again = other.document()
    assert again.tensors is not None and again.tensor_bytes() == doc.tensor_bytes()
    assert [x.key for x in again.tensors.left_out] == [x.key for x in doc.tensors.left_out]


@pytest.mark.parametrize("native", NATIVE, ids=["core", "python"])
def test_a_gradient_lets_go_of_saved_tensors_as_of_forward_values(native: bool) -> None:
    """Saved tensors no node made rank with the forward values: where the budget holds the
    gradients and little more, a gradient lets go of them (the last held first)."""
    full = _rnn(native, 64 << 20).document()
    data = full.tensor_bytes()
    assert data is not None
    sizes = {k: v.nbytes for k, v in load(data).items()}
    leaves = {n.id for n in full.graph.nodes if n.role == "leaf"}
    first = {k for k in sizes if k.split(".")[0] in leaves or k.startswith("e")}
    budget = sum(sizes[k] for k in first)
    rec = _rnn(native, budget)
    assert rec.recorder.core.held_peak() <= budget
    doc = rec.document()
    kept = set(load(doc.tensor_bytes()))
    assert {k for k in first if k.startswith("e")} <= kept
    saved = {k for k in sizes if ".s" in k}
    assert saved and not saved & kept


def test_a_second_document_is_the_first_though_the_tensors_were_let_go() -> None:
    """NOTE [each tensor let go once written] in capture/tensorfile.py: the file holds the
    tensors once written; a second ``rec.document()`` of the run reuses it."""
    for native in NATIVE:
        rec = _rnn(native, 1 << 20)
        one, two = rec.document(), rec.document()
        assert one.tensor_bytes() == two.tensor_bytes() and one.id == two.id
        assert one.tensors is not None and one.tensors.count > 0
        key = next(iter(load(one.tensor_bytes())))
        assert torch.equal(one.tensor(key), two.tensor(key))


BUDGET = 128 << 20
NOISE_MIB = 32
"""Runs of the same program in fresh processes differ in peak resident memory by tens of MiB
(the allocator's layout, when the collector runs): the check allows that beyond the stated
``PEAK_CONSTANT``. Holding the file beside what is held would pass it by the budget."""


@pytest.mark.slow
@pytest.mark.parametrize("kernels", ["core", "python"])
def test_peak_resident_memory_stays_within_the_budget_plus_a_constant(kernels: str) -> None:
    """A fresh process per run (its ``VmHWM``): the wide MLP's tensors pass 128 MiB many times
    over; with the file, the peak stays within the run's without one plus the budget and a
    constant (held and file together would be twice the budget)."""
    with_ = peak("wide", BUDGET, kernels)
    without = peak("wide", "none", kernels)
    assert with_["held_peak"] <= BUDGET and with_["file_bytes"] > BUDGET // 2
    extra = with_["peak_mib"] - without["peak_mib"]
    assert extra <= (BUDGET >> 20) + (PEAK_CONSTANT >> 20) + NOISE_MIB, (with_, without)
