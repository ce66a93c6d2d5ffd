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
from rundoc import run_doc


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


LIMIT_WARNING = "gradtrace.record: recording stopped early"


def _gru_steps(steps: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """A GRU cell unrolled ``steps`` steps from a fixed seed, then backward: its output and
    the gradients of its parameters."""
    torch.manual_seed(0)
    cell = nn.GRUCell(3, 5)
    h = torch.zeros(1, 5)
    xs = torch.randn(steps, 1, 3)
    for t in range(steps):
        h = cell(xs[t], h)
    h.sum().backward()
    return h.detach(), [p.grad.clone() for p in cell.parameters() if p.grad is not None]


@pytest.mark.parametrize("limit", [{"max_nodes": 40}, {"max_events": 60},
                                   {"max_document_bytes": 600 << 10}],
                         ids=["nodes", "events", "document size"])
def test_a_limit_in_process_stops_the_recording_not_the_program(limit: dict[str, int]) -> None:
    """NOTE [limits] in recorder.py: the block runs to its end exactly as without gradtrace
    (same output, same gradients, bit for bit: the same kernels ran), the document keeps what
    was recorded before the limit, and the user is told once, at the end of the block."""
    want_h, want_grads = _gru_steps(30)
    with pytest.warns(RuntimeWarning, match=LIMIT_WARNING) as caught, gradtrace.record(**limit) as rec:
        h, grads = _gru_steps(30)
    assert len([w for w in caught if LIMIT_WARNING in str(w.message)]) == 1
    assert torch.equal(h, want_h)
    assert len(grads) == len(want_grads) == 4
    assert all(torch.equal(g, w) for g, w in zip(grads, want_grads, strict=True))
    doc = rec.document()
    assert doc.status == "graph_limit" and doc.message is not None
    assert doc.message.endswith("recording stopped there, and the rest of the block ran unrecorded")
    assert doc.error is None and doc.recorder_errors is None
    if "max_nodes" in limit:
        assert len(doc.graph.nodes) == 40
    if "max_events" in limit:  # events of backward passes
        assert sum(e.phase == "backward" for e in doc.events) == 60
    assert len(doc.graph.nodes) > 0


def test_after_a_limit_in_process_the_line_tracer_stops_noting_lines() -> None:
    """Past the limit nothing is placed by the line log, so a long loop run on unrecorded
    must not grow it (nor pay for tracing it)."""
    x = torch.ones(1, requires_grad=True)
    with pytest.warns(RuntimeWarning, match=LIMIT_WARNING), gradtrace.record(max_nodes=10) as rec:
        for _ in range(20):
            x = x * 1.01
        noted = len(rec.recorder.tracer.log.steps[0])
        for _ in range(500):
            x = x * 1.01
            x = x + 0.0
        assert len(rec.recorder.tracer.log.steps[0]) == noted
    assert rec.recorder.tracer.halted
    assert torch.allclose(x.detach(), torch.tensor([1.01 ** 520]), rtol=1e-4)


def test_a_limit_inside_a_backward_in_process_lets_that_backward_finish() -> None:
    torch.manual_seed(0)
    w = torch.randn(4, 4, requires_grad=True)
    want = torch.autograd.grad((w.tanh() @ w).sin().sum(), w)[0]
    with pytest.warns(RuntimeWarning, match=LIMIT_WARNING), gradtrace.record(max_events=7) as rec:
        y = (w.tanh() @ w).sin().sum()
        y.backward()
        (g2,) = torch.autograd.grad((w.tanh() @ w).sin().sum(), w)
    assert w.grad is not None and torch.equal(w.grad, want) and torch.equal(g2, want)
    assert rec.document().status == "graph_limit"


def test_a_snippet_in_the_sandbox_is_still_stopped_at_a_limit() -> None:
    """``run_snippet`` keeps stopping the program (a runaway loop must not run on unrecorded
    in the service)."""
    doc = run_doc(
        "import torch\nx = torch.ones(1, requires_grad=True)\nfor i in range(100):\n"
        "    x = x * 1.01\nprint('never')\n", max_nodes=10)
    assert doc["status"] == "graph_limit" and "never" not in doc["stdout"]


@pytest.mark.parametrize("bad", [{"max_nodes": 0}, {"max_events": -1},
                                 {"max_document_bytes": 0}, {"max_nodes": 2.5}])
def test_record_refuses_a_limit_that_is_not_a_positive_whole_number(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        gradtrace.record(**bad)


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
        assert gc.get_threshold()[0] >= 20_000  # NOTE [gc around a recorded block] in gradtrace/collector.py
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
