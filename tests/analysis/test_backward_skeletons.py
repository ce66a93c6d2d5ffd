"""The in-process analysis reads capture's JSON without the values it does not read (NOTE
[events without their values] and NOTE [a finite graph without its values] in
analysis/docview.py): its backward events are the parsed events' own, its graph the parsed
graph less its outputs' values and its saved tensors', and the analysis it gives is the one the
web process gives the whole parsed document (``analyze``), with and without the tensor file's
stats and keys in the JSON, on both kernel sets."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gradtrace.analysis.docview import backward_skeletons, graph_without_values, may_hold_nonfinite
from gradtrace.analysis.dynamics import file_reader
from gradtrace.analysis.run import analyze, analyze_parts
from rundoc import run_captured

PROGRAMS = {
    "two passes, retain_graph": """import torch
w = torch.randn(3, requires_grad=True)
y = (w * 2).exp().sum()
y.backward(retain_graph=True)
y.backward()
""",
    "autograd.grad and a loop": """import torch
x = torch.randn(4, requires_grad=True)
h = x
for _ in range(3):
    h = torch.tanh(h * 1.5)
g, = torch.autograd.grad(h.sum(), x, create_graph=True)
g.pow(2).sum().backward()
""",
    "a NaN in the backward": """import torch
x = torch.tensor([0.0, 1.0], requires_grad=True)
y = torch.sqrt(x) * 0
y.sum().backward()
""",
    "no backward": """import torch
x = torch.randn(2, requires_grad=True)
y = x * 3
""",
    "activations over steps": """import torch
import torch.nn as nn
net = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1), nn.Sigmoid())
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    net(torch.randn(4, 3)).sum().backward()
    opt.step()
""",
    "a NaN in the forward": """import torch
x = torch.tensor([1000.0, 1.0], requires_grad=True)
a = torch.exp(x)
(a - a).sum().backward()
""",
}


def _backward_of(events: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    return [(i, {"node": ev["node"], "pass": ev["pass"], "phase": ev["phase"]})
            for i, ev in enumerate(events) if ev["phase"] == "backward"]


@pytest.mark.parametrize("budget", [None, 64 << 20], ids=["without tensors", "with tensors"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_backward_events_and_analysis_match_the_parsed_document(name: str, budget: int | None) -> None:
    captured = run_captured(PROGRAMS[name], **({} if budget is None else {"tensor_budget": budget}))
    assert captured.status == "ok"
    events = orjson.loads(captured.events)
    expected = _backward_of(events)
    assert budget is None or not expected or b'"key":"' in captured.events  # the keys are in the JSON
    assert list(backward_skeletons(captured.events)) == expected
    parsed = {**captured.fields, "graph": orjson.loads(captured.graph), "events": events}
    tensors = file_reader(captured.tensors)
    assert analyze_parts(captured.fields, tensors=tensors) == analyze(parsed, tensors)


def _without_values(graph: dict[str, Any]) -> dict[str, Any]:
    """``graph`` less its outputs' values (each output's key kept) and its saved tensors'."""
    nodes = []
    for n in graph["nodes"]:
        n = dict(n)
        if n.get("output") is not None:
            n["output"] = [None if o is None else {k: v for k, v in o.items() if k == "key"} for o in n["output"]]
        n["saved"] = [{k: v for k, v in s.items() if k != "value"} for s in n["saved"]]
        nodes.append(n)
    return {**graph, "nodes": nodes}


@pytest.mark.parametrize("budget", [None, 64 << 20], ids=["without tensors", "with tensors"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_finite_graph_is_the_parsed_graph_without_its_values(name: str, budget: int | None) -> None:
    captured = run_captured(PROGRAMS[name], **({} if budget is None else {"tensor_budget": budget}))
    whole = orjson.loads(captured.graph)
    assert budget is None or any(n.get("output") for n in whole["nodes"])  # the stats and keys are in the JSON
    assert graph_without_values(captured.graph) == _without_values(whole)
    assert may_hold_nonfinite(captured.graph) == name.startswith("a NaN")  # the graph holds it: parsed whole
