"""ORACLE: the series by call (``Dynamics.calls``, analysis/dynamics/calls.py, NOTE [the
gradient at each call]) equal what torch's own hooks see on the real hidden states in a bare
run: ‖h_t.grad‖ of a GRU cell unrolled 200 steps, and ‖(h_t, c_t).grad‖ of a hand-written LSTM
cell (a module with modules inside) over three iterations of a training loop; on both kernel
sets. The vanishing gradient across GRU-200's calls is said, by the series' own numbers."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from gradtrace.analysis import analyze
from gradtrace.analysis.dynamics import file_reader
from gradtrace.notebook.dynamics import rows
from rundoc import parsed, run_captured

NATIVE = [True, False]
BUDGET = 64 << 20

GRU = """import torch
from torch import nn
torch.manual_seed(0)
cell = nn.GRUCell(8, 16)
h = torch.zeros(1, 16)
xs = torch.randn(200, 1, 8)
for t in range(200):
    h = cell(xs[t], h)
h.sum().backward()
"""

LSTM = """import torch
from torch import nn
torch.manual_seed(0)

class Cell(nn.Module):
    def __init__(self, n_in, n_hidden):
        super().__init__()
        self.ih = nn.Linear(n_in, 4 * n_hidden)
        self.hh = nn.Linear(n_hidden, 4 * n_hidden)

    def forward(self, x, state):
        h, c = state
        i, f, g, o = (self.ih(x) + self.hh(h)).chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, c

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = Cell(4, 8)
        self.head = nn.Linear(8, 1)

    def forward(self, xs):
        h = c = torch.zeros(xs.shape[1], 8)
        for x in xs:
            h, c = self.cell(x, (h, c))
        return self.head(h)

model = Model()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
xs, y = torch.randn(10, 3, 4), torch.randn(3, 1)
for step in range(3):
    opt.zero_grad()
    loss = ((model(xs) - y) ** 2).mean()
    loss.backward()
    opt.step()
"""


def _close(mine: Any, theirs: float) -> bool:
    return mine is not None and math.isclose(float(mine), theirs, rel_tol=1e-5, abs_tol=0.0)


def bare_gru() -> list[float]:
    """‖h_t.grad‖ (float64) of each call, from a hook on each real hidden state."""
    torch.manual_seed(0)
    cell = torch.nn.GRUCell(8, 16)
    h = torch.zeros(1, 16)
    xs = torch.randn(200, 1, 8)
    seen: dict[int, float] = {}
    for t in range(200):
        h = cell(xs[t], h)
        h.register_hook(lambda g, t=t: seen.__setitem__(t, float(g.double().norm())))
    h.sum().backward()
    return [seen[t] for t in range(200)]


def bare_lstm() -> list[list[float]]:
    """Per iteration, ‖(h_t.grad, c_t.grad)‖ (float64) of each call; a state no later op used
    gets no gradient (the last c)."""
    ns: dict[str, Any] = {}
    exec(compile(LSTM.split("model = Model()")[0], "<bare>", "exec"), ns)
    model = ns["Model"]()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    xs, y = torch.randn(10, 3, 4), torch.randn(3, 1)
    out: list[list[float]] = []
    for _ in range(3):
        sq: dict[int, float] = {}

        def seen(g: torch.Tensor, t: int, sq: dict[int, float] = sq) -> None:
            sq[t] = sq.get(t, 0.0) + float(g.double().pow(2).sum())
        h = c = torch.zeros(3, 8)
        for t, x in enumerate(xs):
            h, c = model.cell(x, (h, c))
            for s in (h, c):
                s.register_hook(lambda g, t=t: seen(g, t))
        opt.zero_grad()
        ((model.head(h) - y) ** 2).mean().backward()
        opt.step()
        out.append([math.sqrt(sq.get(t, 0.0)) for t in range(10)])
    return out


@pytest.mark.parametrize("native", NATIVE, ids=["core", "python"])
def test_gru_200s_gradient_by_call_equals_the_hidden_states_grads(run: Any, native: bool) -> None:
    doc = run(GRU, native=native, tensor_budget=BUDGET)
    dyn = doc["analysis"]["dynamics"]
    assert dyn["params"] == [] and dyn["layers"] == [] and len(dyn["iterations"]) == 1  # one pass
    (calls,) = dyn["calls"]
    assert (calls["module"], calls["type"], calls["pass"]) == ("cell", "GRUCell", 0)
    assert calls["calls"] == list(range(200))
    by_id = {n["id"]: n for n in doc["graph"]["nodes"]}
    assert {by_id[n]["name"] for n in calls["nodes"]} == {"AddBackward0"}  # h = (1 - z) * n + z * h
    truth = bare_gru()
    mine = calls["grad_norm"]
    assert all(_close(m, t) for m, t in zip(mine, truth, strict=True)), (mine[:3], truth[:3])
    assert 0 < truth[0] < 1e-30  # what the series must show: the gradient reaching call 1 all but gone
    (h,) = [h for h in doc["analysis"]["hints"] if h["code"] == "gradients-vanish"]
    assert "200 calls of cell" in h["title"] and h["line"] == 8
    assert any("by call" in e["label"] for e in h["evidence"]) and "‖grad‖ by call" in h["message"]
    assert h["nodes"][0] == calls["nodes"][0] and h["nodes"][-1] == calls["nodes"][-1]


@pytest.mark.parametrize("native", NATIVE, ids=["core", "python"])
def test_an_lstm_cells_calls_in_each_iteration_equal_its_states_grads(native: bool) -> None:
    captured = run_captured(LSTM, native=native, tensor_budget=BUDGET)
    doc = parsed(captured)
    dyn = doc["analysis"]["dynamics"]
    # the web process, with the events' values and the file's bytes alone, finds the same
    assert analyze(doc, file_reader(captured.tensors))["dynamics"] == dyn  # type: ignore[index]
    assert len(dyn["iterations"]) == 3 and len(dyn["params"]) == 6
    series = dyn["calls"]
    # the outer module's calls are the steps; its own Linear layers have no series of their own
    assert [(s["module"], s["type"], s["pass"]) for s in series] == [("model.cell", "Cell", p) for p in range(3)]
    assert [s["calls"] for s in series] == [list(range(10 * p, 10 * p + 10)) for p in range(3)]
    for s, truth in zip(series, bare_lstm(), strict=True):
        assert all(_close(m, t) for m, t in zip(s["grad_norm"], truth, strict=True)), (s["grad_norm"], truth)
    assert [h["code"] for h in doc["analysis"]["hints"] if h["code"].startswith("gradients-")] == []  # 10 steps
    calls = [r for r in rows(dyn) if r["series"] == "call"]
    assert len(calls) == 30 and calls[12]["call"] == 12 and calls[12]["iteration"] == 1
    assert _close(calls[12]["grad_norm"], series[1]["grad_norm"][2])


def test_without_a_tensor_file_there_is_no_series_by_call(run: Any) -> None:
    """The series reads the file only (the events may be parsed without their values): a run
    kept without one has none, and a one-pass run then has no dynamics at all."""
    doc = run(GRU)
    assert "dynamics" not in (doc.get("analysis") or {})
