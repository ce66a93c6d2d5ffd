"""The in-process analysis reads capture's JSON where it lies (NOTE [events without their
values] in analysis/docview.py): its backward events, found by a byte search, are the parsed
events' own, and the analysis it gives is the one the web process gives the parsed document
(``analyze``), with and without the tensor file's keys in the JSON, on both kernel sets."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gradtrace.analysis.docview import backward_skeletons
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
    assert analyze_parts(captured.fields) == analyze(parsed)
