"""``gradtrace.record``: the public in-process API for notebooks."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import gradtrace
from gradtrace.capture import warm_up
from gradtrace.schema import RunDocument


def _installed() -> tuple[int, int, int, object]:
    from torch.nn.modules import module as m

    return (len(m._global_forward_hooks), len(m._global_forward_pre_hooks),
            len(torch.overrides._get_current_function_mode_stack()), sys.gettrace())


def test_record_block_gives_a_validated_document_with_lines_of_this_file() -> None:
    with gradtrace.record() as rec:
        x = torch.tensor(2.0, requires_grad=True)
        y = x * x + 3 * x
        y.backward()
    here = sys._getframe().f_lineno
    doc = rec.document()
    assert isinstance(doc, RunDocument)
    assert doc.status == "ok"
    names = [n.name for n in doc.graph.nodes if n.kind == "function"]
    assert names == ["AccumulateGrad", "MulBackward0", "MulBackward0", "AddBackward0"]
    lines = {n.name: n.line for n in doc.graph.nodes if n.kind == "function"}
    assert lines["AddBackward0"] == here - 2  # the `y = x * x + 3 * x` line
    x_node = next(n for n in doc.graph.nodes if n.kind == "tensor" and n.name == "x")
    assert x_node.grad is not None and x_node.grad.values == x.grad.item() == 7.0


def test_record_names_parameters_by_module_path_from_the_variable() -> None:
    model = nn.Sequential(nn.Linear(3, 2), nn.Tanh())
    with gradtrace.record() as rec:
        model(torch.ones(1, 3)).sum().backward()
    doc = rec.document()
    tensors = {n.name for n in doc.graph.nodes if n.kind == "tensor" and n.role == "leaf"}
    assert tensors == {"model.0.weight", "model.0.bias"}
    modules = {n.name: n.module for n in doc.graph.nodes if n.kind == "function"}
    assert modules["AddmmBackward0"] == "model.0" and modules["TanhBackward0"] == "model.1"


def test_record_removes_every_hook_even_when_the_block_raises() -> None:
    before = _installed()
    model = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="boom"), gradtrace.record() as rec:
        model(torch.ones(2)).sum().backward()
        raise ValueError("boom")
    assert _installed() == before
    doc = rec.document()
    assert doc.status == "error" and doc.error is not None
    assert doc.error.type == "ValueError" and doc.error.line is not None
    # the node hooks are gone too: a later backward through the same graph records nothing
    x = torch.ones(2, requires_grad=True)
    with gradtrace.record() as rec2:
        y = (x * 2).sum()
    y.backward()
    assert [e.phase for e in rec2.document().events] == ["forward", "forward", "forward"]


def test_record_limit_ends_the_block_quietly_with_graph_limit() -> None:
    x = torch.ones(1, requires_grad=True)
    with gradtrace.record(max_nodes=10) as rec:
        for _ in range(100):
            x = x * 1.01
    doc = rec.document()
    assert doc.status == "graph_limit"
    assert len(doc.graph.nodes) == 10
    assert doc.message is not None and "10 nodes" in doc.message


def test_recorder_does_not_change_module_outputs_or_gradients() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.LayerNorm(4))
    inp = torch.randn(3, 4)
    plain = model(inp)
    plain.sum().backward()
    want = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    with gradtrace.record():
        out = model(inp)
        out.sum().backward()
    assert torch.equal(out, plain)
    assert all(torch.equal(p.grad, w) for p, w in zip(model.parameters(), want, strict=True))


def test_warm_up_runs_the_whole_recorder_and_leaves_nothing_behind() -> None:
    before = _installed()
    warm_up()
    assert _installed() == before


def test_record_inside_a_function_names_its_local_tensors() -> None:
    def train_step() -> gradtrace.record:
        weights = torch.ones(2, requires_grad=True)
        with gradtrace.record() as rec:
            (weights * 2).sum().backward()
        return rec

    doc = train_step().document()
    leaf = next(n for n in doc.graph.nodes if n.kind == "tensor" and n.role == "leaf")
    assert leaf.name == "weights"
    assert leaf.grad is not None and leaf.grad.values == [2.0, 2.0]


def test_record_restores_the_collector_settings_even_when_the_block_raises() -> None:
    import gc

    before = (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count())
    with gradtrace.record():
        assert gc.get_threshold()[0] >= 20_000  # NOTE [gc]: fewer young collections inside
        (torch.ones(2, requires_grad=True) * 2).sum().backward()
    assert (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count()) == before
    with pytest.raises(KeyError), gradtrace.record():
        raise KeyError("x")
    assert (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count()) == before


def test_a_block_in_a_script_carries_the_scripts_code(tmp_path: Path) -> None:
    """The page and the widget show the code the node lines point at (a script's own text)."""
    script = tmp_path / "train.py"
    script.write_text("import torch, gradtrace\nwith gradtrace.record() as rec:\n"
                      "    x = torch.ones(2, requires_grad=True)\n    (x * 3).sum().backward()\n"
                      "doc = rec.document()\n")
    ns: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(script.read_text(), str(script), "exec"), ns)
    doc = ns["doc"]
    assert doc.code == script.read_text()
    mul = next(n for n in doc.graph.nodes if n.name == "MulBackward0")
    assert doc.code.splitlines()[mul.line - 1].strip() == "(x * 3).sum().backward()"
