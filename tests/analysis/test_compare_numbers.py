"""The first divergence is the earliest op whose output (or gradient) differs beyond float32
tolerance, read from the kept outputs and, with both tensor files, element by element (NOTE
[first divergence] in ``analysis/compare/documents.py``): one changed input value, or another
seed, names the first op that used the changed value, not the loss."""

from __future__ import annotations

from typing import Any

import torch

from capture.tensor_oracle import recorded_run
from capture.test_tensor_oracle import GPT_LIKE
from gradtrace.analysis.compare import compare_documents
from gradtrace.analysis.kept import KeptTensors
from programs import ADAM_20

CHANGED_INPUT = """import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
x = torch.ones(3, 4)
x[1, 2] = {v}
h = model(x)
loss = h.pow(2).mean()
loss.backward()
"""
SWAPPED = """import torch
x = torch.tensor({xs})
w = torch.ones(2, requires_grad=True)
y = x * w
loss = (y * torch.tensor([1.0, 3.0])).sum()
loss.backward()
"""


def _rec(code: str, seed: int = 0) -> tuple[dict[str, Any], KeptTensors]:
    doc, _, _ = recorded_run(code, native=True, seed=seed)
    data = doc.tensor_bytes()
    assert data
    return doc.model_dump(mode="json", by_alias=True), KeptTensors.from_bytes(data)


def test_one_changed_input_value_names_the_first_op_that_read_it() -> None:
    (a, ta), (b, tb) = _rec(CHANGED_INPUT.format(v=0.5)), _rec(CHANGED_INPUT.format(v=0.7))
    # torch's own values: the first Linear's output is the first that differs
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 8)
    x = torch.ones(3, 4)
    x[1, 2] = 0.5
    first = lin(x).detach()
    x[1, 2] = 0.7
    assert not torch.allclose(first, lin(x).detach(), rtol=1e-4, atol=0)
    for tensors in ({}, {"tensors_a": ta, "tensors_b": tb}):
        d = compare_documents(a, b, **tensors).first_divergence
        assert d is not None and (d.phase, d.name, d.what, d.line_a) == ("forward", "AddmmBackward0", "value", 7), d
    exact = compare_documents(a, b, tensors_a=ta, tensors_b=tb).first_divergence
    assert exact is not None and exact.delta is not None and exact.delta.exact
    assert abs(exact.delta.max_abs - float((first - lin(x).detach()).abs().max())) < 1e-5


def test_another_seed_names_the_models_first_op_not_the_loss() -> None:
    (a, ta), (b, tb) = _rec(GPT_LIKE, 0), _rec(GPT_LIKE, 1)
    d = compare_documents(a, b, tensors_a=ta, tensors_b=tb).first_divergence
    assert d is not None and (d.phase, d.name, d.what) == ("forward", "EmbeddingBackward0", "value"), d


def test_the_same_run_twice_does_not_diverge() -> None:
    (a, ta), (b, tb) = _rec(GPT_LIKE, 0), _rec(GPT_LIKE, 0)
    assert compare_documents(a, b, tensors_a=ta, tensors_b=tb).first_divergence is None


def test_a_change_the_statistics_cannot_see_is_found_in_the_tensor_files() -> None:
    """Swapping two elements keeps min, max, mean and norm: the documents alone name the next
    op; the tensor files name the multiplication that read the swapped values."""
    (a, ta), (b, tb) = _rec(SWAPPED.format(xs=[1.0, 2.0])), _rec(SWAPPED.format(xs=[2.0, 1.0]))
    exact = compare_documents(a, b, tensors_a=ta, tensors_b=tb).first_divergence
    assert exact is not None and (exact.name, exact.line_a, exact.what) == ("MulBackward0", 4, "value"), exact
    rough = compare_documents(a, b).first_divergence
    assert rough is not None and rough.line_a == 5, rough


LOOP_LR = ADAM_20.replace("range(20)", "range(3)").replace("model.parameters(), 1e-2)", "model.parameters(), {lr})")
"""tests/programs.py's Adam loop, three steps, its learning rate to fill in."""


def test_another_learning_rate_names_the_first_op_of_the_second_iteration() -> None:
    """The first iteration is the same in both runs (the learning rate acts only in the step
    after it): the first divergence is the first op of the second forward pass that read a
    parameter, and the sentence says which iteration it is in."""
    (a, ta), (b, tb) = _rec(LOOP_LR.format(lr="1e-2")), _rec(LOOP_LR.format(lr="1e-3"))
    d = compare_documents(a, b, tensors_a=ta, tensors_b=tb).first_divergence
    assert d is not None and d.phase == "forward" and d.a_event is not None, d
    first_pass = next(k for k, e in enumerate(a["events"]) if e["phase"] == "backward")
    second_pass = next(k for k, e in enumerate(a["events"]) if e["phase"] == "backward" and e["pass"] == 1)
    assert first_pass < d.a_event < second_pass, d
    assert d.sentence.startswith("In the forward pass of iteration 2, "), d.sentence
    # the op read model.0.weight after the first step: its value differs between the runs
    torch.manual_seed(0)
    weights = []
    for lr in (1e-2, 1e-3):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
        opt = torch.optim.Adam(model.parameters(), lr)
        x, y = torch.randn(32, 4), torch.randn(32, 1)
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
        weights.append(model[0].weight.detach().clone())
    assert not torch.allclose(*weights, rtol=1e-4, atol=0)
