"""``Node.grad_resets``: where a leaf's ``.grad`` was cleared between accumulations (NOTE [grad
resets] in capture/resets.py), on both recorders."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import lesson_code

from .test_module_calls import ADAM

BOTH = pytest.mark.parametrize("native", [False, True], ids=["python", "core"])


def _leaves(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["name"]: n for n in doc["graph"]["nodes"] if n["kind"] == "tensor" and n["role"] == "leaf"}


@BOTH
def test_zero_grad_in_an_adam_loop_is_a_reset_each_step(run: Any, native: bool) -> None:
    doc = run(ADAM, native=native)
    leaves = _leaves(doc)
    assert set(leaves) == {"model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"}
    for leaf in leaves.values():
        assert len(leaf["grad_history"]) == 20
        # opt.zero_grad() (line 7) before steps 1..19; the one before step 0 clears nothing
        assert leaf["grad_resets"] == [{"at": k, "kind": "none", "line": 7} for k in range(1, 20)]


@BOTH
def test_every_way_of_clearing(run: Any, native: bool) -> None:
    code = """\
w = torch.tensor([1.0, 2.0], requires_grad=True)
lin = nn.Linear(2, 1)
(w * 2).sum().backward()
w.grad = None
(w * 3).sum().backward()
w.grad.zero_()
(w * 4).sum().backward()
(w * 5).sum().backward()
lin(w).sum().backward()
lin.zero_grad(set_to_none=False)
lin(w).sum().backward()
lin.zero_grad()
lin(w).sum().backward()
w.grad.mul_(0.5)
(w * 6).sum().backward()
"""
    doc = run(code, native=native)
    assert doc["status"] == "ok"
    leaves = _leaves(doc)
    w = leaves["w"]
    assert len(w["grad_history"]) == 8
    # line 8 accumulates on top (no reset); w.grad.mul_(0.5) scales, which is no reset
    assert w["grad_resets"] == [{"at": 1, "kind": "none", "line": 4}, {"at": 2, "kind": "zero", "line": 6}]
    for name in ("lin.weight", "lin.bias"):
        assert leaves[name]["grad_resets"] == [{"at": 1, "kind": "zero", "line": 10},
                                              {"at": 2, "kind": "none", "line": 12}]
    # the values tell the same story: after a reset the history starts afresh
    assert w["grad_history"][1]["values"] == [3.0, 3.0]
    assert w["grad_history"][2]["values"] == [4.0, 4.0]
    assert w["grad_history"][3]["values"] == [9.0, 9.0]


@BOTH
def test_forgetting_to_clear_has_no_reset(run: Any, native: bool) -> None:
    doc = run(lesson_code("09_accumulating_grads"), native=native)
    (w,) = _leaves(doc).values()
    assert len(w["grad_history"]) == 3
    assert "grad_resets" not in w


@BOTH
def test_a_reset_after_the_last_accumulation_is_not_written(run: Any, native: bool) -> None:
    code = """\
w = torch.tensor([1.0], requires_grad=True)
(w * 2).sum().backward()
w.grad = None
torch.autograd.grad((w * 3).sum(), [w])
"""
    doc = run(code, native=native)
    assert "grad_resets" not in _leaves(doc)["w"]


@BOTH
def test_record_block_sees_resets(native: bool) -> None:
    import torch

    import gradtrace

    w = torch.tensor([1.0, 2.0], requires_grad=True)
    with gradtrace.record(native=native) as rec:
        for _ in range(3):
            w.grad = None
            (w * w).sum().backward()
    doc = rec.document()
    (leaf,) = [n for n in doc.graph.nodes if n.kind == "tensor" and n.role == "leaf"]
    assert leaf.grad_resets is not None
    assert [(r.at, r.kind) for r in leaf.grad_resets] == [(1, "none"), (2, "none")]
    assert all(r.line is not None for r in leaf.grad_resets)


@BOTH
def test_optimizers_zeroing_in_place_foreach_or_not(run: Any, native: bool) -> None:
    code = """\
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 1))
for opt in (torch.optim.Adam(model.parameters(), foreach=True),
            torch.optim.SGD(model.parameters(), lr=0.1, foreach=False)):
    for _ in range(2):
        opt.zero_grad(set_to_none=False)
        model(torch.ones(2, 3)).sum().backward()
        opt.step()
"""
    leaves = _leaves(run(code, native=native))
    assert len(leaves) == 4
    for leaf in leaves.values():
        assert leaf["grad_resets"] == [{"at": k, "kind": "zero", "line": 6} for k in (1, 2, 3)]
