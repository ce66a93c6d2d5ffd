"""Saved-tensor memory over time (``analysis/compare/memory.py``) and checkpointing compared with
itself switched off, on the checkpoint lesson."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from conftest import lesson_code
from gradtrace.analysis.compare import compare_documents, memory_timeline
from rundoc import run_doc

CHECKPOINTED = lesson_code("12_checkpoint_memory")
PLAIN = CHECKPOINTED.replace("checkpoint(block, h, use_reentrant=False)", "block(h)")


@pytest.fixture(autouse=True)
def one_thread() -> Any:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_checkpointing_lowers_the_peak_and_only_the_checkpointed_run_recomputes() -> None:
    assert PLAIN != CHECKPOINTED
    a, b = run_doc(CHECKPOINTED, seed=0), run_doc(PLAIN, seed=0)
    c = compare_documents(a, b)
    assert c.memory_a.peak < c.memory_b.peak
    assert c.memory_a.recomputed > 0 and c.memory_b.recomputed == 0
    # 4 blocks of Linear + Tanh: the plain run saves each block's input and tanh's output
    assert c.memory_b.peak - c.memory_a.peak >= 4 * 16 * 64 * 4
    assert "A keeps" in c.summary and "less alive than B" in c.summary and "A recomputes" in c.summary
    # the same gradients either way: checkpointing changes memory, not the maths
    x = next(p for p in c.pairs if p.name == "x")
    assert x.grad is not None and not x.grad.beyond_tolerance


@pytest.mark.parametrize("code", [CHECKPOINTED, PLAIN, lesson_code("04_mlp_loss")],
                         ids=["checkpointed", "plain", "mlp"])
def test_live_saved_bytes_are_zero_after_a_backward_without_retain_graph(code: str) -> None:
    doc = run_doc(code, seed=0)
    m = memory_timeline(doc)
    assert len(m.live) == len(doc["events"]) + 1 and m.live[0] == 0
    assert m.end == 0 and m.peak > 0
    last_forward = max(k for k, e in enumerate(doc["events"]) if e["phase"] == "forward") + 1
    assert m.peak == m.live[last_forward]  # all alive when the forward ends


def test_retained_graph_keeps_its_saved_tensors_alive() -> None:
    code = "x = torch.randn(8, requires_grad=True)\ny = (x.exp() * x).sum()\ny.backward(retain_graph=True)\n"
    m = memory_timeline(run_doc(code, seed=0))
    assert m.end == m.peak > 0
