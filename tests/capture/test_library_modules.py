"""NOTE [no tap inside library modules]: the torch-function mode steps aside while a library
module runs; the graph, lines, modules, in-place notes and hooks must come out as before."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import torch
from torch import nn
from torch.overrides import TorchFunctionMode

import gradtrace
from rundoc import record_doc

from .oracle import graph_names, run_bare

MIXED = """\
import torch
from torch import nn
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
    def forward(self, x):
        h = self.lin(x)
        h.register_hook(lambda g: g * 2)
        return torch.tanh(h) + x
torch.manual_seed(0)
seq = nn.Sequential(nn.Linear(4, 4), Block(), nn.ReLU(inplace=True), nn.Linear(4, 4))
lstm = nn.LSTM(4, 3, batch_first=True)
mha = nn.MultiheadAttention(4, 2, batch_first=True)
x = torch.randn(2, 5, 4)
y = seq(x)
out, (h, c) = lstm(y)
a, w = mha(y, y, y)
loss = out.sum() + h.pow(2).sum() + c.mean() + a.mean() + w.sum()
loss.backward()
"""


def _functions(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in doc["graph"]["nodes"] if n["kind"] == "function"]


@pytest.mark.parametrize("native", [None, False], ids=["core", "python"])
def test_nodes_made_inside_library_modules_are_all_there_with_lines_and_modules(
        run: Any, native: bool | None) -> None:
    doc = run(MIXED, native=native)
    assert doc["status"] == "ok", doc["error"]
    ns, error = run_bare(MIXED)
    assert error is None
    expected = graph_names([ns["loss"]])
    assert Counter(n["name"] for n in _functions(doc)) == expected
    lines: dict[str | None, set[int]] = {}
    for n in _functions(doc):
        lines.setdefault(n["module"], set()).add(n["line"])
    # library modules: the calling line; the snippet's Block: its own lines
    assert lines["seq.0"] == lines["seq.2"] == lines["seq.3"] == {16}
    assert lines["seq.1.lin"] == {8} and lines["seq.1"] == {10}
    assert lines["lstm"] == {17} and lines["mha"] == {18}
    assert lines[None] == {19}


def test_graphs_a_library_module_made_and_the_snippet_dropped_are_recorded(run: Any) -> None:
    """Nothing but the module's result ever held these nodes, and each is dropped by the
    next iteration: they are found from the result as the module returns."""
    doc = run("import torch\nfrom torch import nn\nlin = nn.Linear(3, 2)\nx = torch.randn(4, 3)\n"
              "for i in range(3):\n    out = lin(x * (i + 1))\n")
    assert Counter(n["name"] for n in _functions(doc)) == Counter(
        {"AddmmBackward0": 3, "TBackward0": 3, "AccumulateGrad": 2})
    assert {n["line"] for n in _functions(doc)} == {6}


def test_a_snippet_module_inside_a_library_module_is_tapped(run: Any) -> None:
    """Block (snippet code) runs inside nn.Sequential: the mode is back on there, so the
    gradient hook Block registers is watched and its change shows."""
    doc = run(MIXED)
    changed = [e for e in doc["events"] if e["changed_by_hook"]]
    assert len(changed) == 1
    change = changed[0]["hook_changes"][0]
    before, after = torch.tensor(change["before"]["values"]), torch.tensor(change["after"]["values"])
    assert before.shape == (2, 5, 4) and before.abs().sum() > 0
    assert torch.equal(after, before * 2)


@pytest.mark.parametrize("native", [None, False], ids=["core", "python"])
def test_inplace_change_inside_a_library_module_is_traced_to_the_calling_line(
        run: Any, native: bool | None) -> None:
    doc = run(native=native, code="import torch\nfrom torch import nn\nx = torch.randn(3, requires_grad=True)\n"
              "h = x * 2\ny = h.pow(2)\nnn.ReLU(inplace=True)(h)\ny.sum().backward()\n")
    err = doc["error"]
    assert err is not None and err["line"] == 7 and "inplace" in err["message"]
    assert err["inplace_line"] == 6
    node = next(n for n in doc["graph"]["nodes"] if n["id"] == err["node"])
    assert node["name"] == "PowBackward0" and node["line"] == 5


def test_the_mode_stack_is_left_as_found_when_a_library_module_raises() -> None:
    lin = nn.Linear(4, 2)
    with pytest.raises(RuntimeError), gradtrace.record() as rec:
        h = torch.randn(3, 4, requires_grad=True) * 2
        lin(torch.randn(3, 5))  # wrong width: raises inside the module
    assert torch._C._len_torch_function_stack() == 0
    doc = record_doc(rec)
    assert doc["status"] == "error" and doc["error"]["type"] == "RuntimeError"
    assert [n["name"] for n in _functions(doc)] == ["AccumulateGrad", "MulBackward0"]
    del h


@pytest.mark.parametrize("native", [None, False], ids=["core", "python"])
def test_a_library_module_that_raises_still_shows_what_it_built(run: Any, native: bool | None) -> None:
    """A shape error in the last layer of an ``nn.Sequential``: the document still has the
    graph its first layers built, up to the error (from the tensors the traceback holds)."""
    doc = run("import torch\nfrom torch import nn\n"
              "model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(5, 1))\n"
              "x = torch.randn(2, 4)\ny = model(x)\n", native=native)
    assert doc["status"] == "error" and doc["error"]["line"] == 5
    assert "shapes cannot be multiplied" in doc["error"]["message"]
    placed = Counter((n["name"], n["module"]) for n in _functions(doc))
    assert placed == Counter({("AccumulateGrad", "model.0"): 2, ("TBackward0", "model.0"): 1,
                              ("AddmmBackward0", "model.0"): 1, ("ReluBackward0", "model.1"): 1})


class _Stop(BaseException):
    """As the sandbox's time limit: a BaseException, which torch's module call does not stop for
    (its post hooks never run)."""


def test_a_library_module_stopped_by_a_base_exception_still_shows_what_it_built() -> None:
    torch.manual_seed(0)
    last = nn.Linear(8, 1)

    def stop(module: nn.Module, args: Any) -> None:
        raise _Stop()

    last.register_forward_pre_hook(stop)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), last)
    with pytest.raises(_Stop), gradtrace.record() as rec:
        model(torch.randn(2, 4))
    assert torch._C._len_torch_function_stack() == 0
    doc = record_doc(rec)
    assert doc["error"]["type"] == "_Stop"
    placed = Counter((n["name"], n["module"]) for n in _functions(doc))
    assert placed == Counter({("AccumulateGrad", "model.0"): 2, ("TBackward0", "model.0"): 1,
                              ("AddmmBackward0", "model.0"): 1, ("ReluBackward0", "model.1"): 1})


class _Counting(TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.calls += 1
        return func(*args, **(kwargs or {}))


def test_a_mode_of_the_snippet_above_ours_keeps_both_working() -> None:
    """With the snippet's own mode on top, ours cannot step aside (it is not on top): it stays,
    and both see what they saw before; the stack is as found at each end."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 1))
    x = torch.randn(2, 3)
    with gradtrace.record() as rec:
        with _Counting() as counting:
            loss = model(x).sum()
        loss.backward()
    assert torch._C._len_torch_function_stack() == 0
    assert counting.calls >= 3  # linear, tanh, linear (and sum) reached the snippet's mode
    names = Counter(n["name"] for n in _functions(record_doc(rec)))
    assert names == graph_names([loss]) + Counter()  # AccumulateGrads included by both


def test_without_the_line_tracer_modules_are_still_named_call_by_call() -> None:
    """A debugger or coverage holds tracing: nodes are placed when discovered, so the mode
    stays on inside library modules and each node still gets the module that made it."""
    import sys

    def other_tracer(frame: Any, event: str, arg: Any) -> Any:
        return None

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 1))
    x = torch.randn(2, 3)
    sys.settrace(other_tracer)
    try:
        with gradtrace.record() as rec:
            loss = model(x).sum()
            loss.backward()
    finally:
        sys.settrace(None)
    assert not rec.recorder.tracer.active
    placed = Counter((n["name"], n["module"]) for n in _functions(record_doc(rec))
                     if n["name"] != "AccumulateGrad")
    assert placed == Counter({("AddmmBackward0", "model.0"): 1, ("TBackward0", "model.0"): 1,
                              ("TanhBackward0", "model.1"): 1, ("AddmmBackward0", "model.2"): 1,
                              ("TBackward0", "model.2"): 1, ("SumBackward0", None): 1})


# ---------------------------------------------------------------- NOTE [optimizer steps]
TRAIN = """\
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
opt = torch.optim.Adam(model.parameters(), lr=0.1)
x = torch.randn(5, 3)
for step in range(3):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
"""


@pytest.mark.parametrize("native", [None, False], ids=["core", "python"])
def test_optimizer_steps_add_no_cut_nodes_of_their_own(run: Any, native: bool | None) -> None:
    """Adam's internals under no_grad are not cuts the snippet made (before: three unnamed
    "cut" tensor nodes per parameter per step); the graph of every step is all there."""
    doc = run(TRAIN, native=native)
    assert doc["status"] == "ok", doc["error"]
    assert [n for n in doc["graph"]["nodes"] if n["role"] == "cut"] == []
    ns, error = run_bare(TRAIN)
    assert error is None
    per_step = graph_names([ns["loss"]])
    per_step.pop("AccumulateGrad")
    names = Counter(n["name"] for n in _functions(doc) if n["name"] != "AccumulateGrad")
    assert names == Counter({k: 3 * v for k, v in per_step.items()})
    assert {n["line"] for n in _functions(doc)} == {9}
    assert [p["line"] for p in doc["passes"]] == [10, 10, 10]


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_a_parameter_a_step_updated_is_named_in_the_diagnosis(run: Any, optimizer: str) -> None:
    doc = run("import torch\nfrom torch import nn\nmodel = nn.Linear(3, 1)\n"
              f"opt = torch.optim.{optimizer}(model.parameters(), lr=0.1)\n"
              "loss = model(torch.ones(2, 3, requires_grad=True)).sum()\nloss.backward(retain_graph=True)\n"
              "opt.step()\nloss.backward()\n")
    err = doc["error"]
    assert err is not None and err["line"] == 8 and "inplace" in err["message"]
    assert err["inplace_line"] == 7
    assert f"`{optimizer}.step` at line 7" in err["detail"]


def test_after_a_step_that_raised_the_next_lines_are_tapped(run: Any) -> None:
    """A step's post hook never runs when it raises: the snippet's next line puts the mode
    back (here the detach on line 8 is a cut only the mode sees)."""
    doc = run("import torch\nw = torch.ones(2, requires_grad=True)\nopt = torch.optim.LBFGS([w])\n"
              "try:\n    opt.step()  # LBFGS needs a closure: raises inside the step\n"
              "except TypeError:\n    pass\nd = (w * 3).detach()\n(w * d).sum().backward()\n")
    assert doc["status"] == "ok", doc["error"]
    cuts = [n for n in doc["graph"]["nodes"] if n["role"] == "cut"]
    assert [(c["name"], c["cut"]["kind"], c["cut"]["line"]) for c in cuts] == [("d", "detach", 8)]
    assert [p["line"] for p in doc["passes"]] == [9]


def test_a_closure_run_by_a_step_is_tapped(run: Any) -> None:
    """LBFGS calls the snippet's closure inside its step: its backward is a pass of the
    snippet's, with its api and line, as without the step around it."""
    doc = run("import torch\nw = torch.ones(2, requires_grad=True)\n"
              "opt = torch.optim.LBFGS([w], max_iter=2)\ndef closure():\n    opt.zero_grad()\n"
              "    loss = ((w - 3) ** 2).sum()\n    loss.backward()\n    return loss\n"
              "opt.step(closure)\n")
    assert doc["status"] == "ok", doc["error"]
    assert [(p["api"], p["line"]) for p in doc["passes"]] == [("Tensor.backward", 7)] * 2
