"""``symmetric-init`` (NOTE [weights that start all equal] in analysis/hints/init.py) against
torch's own run: with both layers' weights started at zero the hidden units' weights are still
equal after training; with one of them random they are not, and the hint stays silent."""

from __future__ import annotations

from typing import Any

import pytest

H = "import torch\nimport torch.nn as nn\ntorch.manual_seed(0)\n"

TRAIN = """
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 4), torch.randn(32, 1)
for step in range(5):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
"""

ALL_ZEROS = H + """
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
for p in model.parameters():
    nn.init.zeros_(p)
""" + TRAIN

CONSTANT_TANH = H + """
model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
nn.init.constant_(model[0].weight, 0.1)
nn.init.constant_(model[0].bias, 0.0)
nn.init.constant_(model[2].weight, 0.1)
""" + TRAIN

LAST_ZERO = H + """
model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
nn.init.zeros_(model[2].weight)
""" + TRAIN

FIRST_CONSTANT = H + """
model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
nn.init.constant_(model[0].weight, 0.1)
""" + TRAIN

LORA = H + """
class LoRA(nn.Module):
    def __init__(self, base, r=4):
        super().__init__()
        self.base = base.requires_grad_(False)
        self.A = nn.Parameter(torch.randn(r, base.in_features) * 0.01)
        self.B = nn.Parameter(torch.zeros(base.out_features, r))
    def forward(self, x):
        return self.base(x) + x @ self.A.T @ self.B.T
model = nn.Sequential(LoRA(nn.Linear(4, 16)), nn.Tanh(), nn.Linear(16, 1))
""" + TRAIN


def _hidden_units_equal(code: str) -> bool:
    """torch's own run of ``code``: whether the first layer's rows (each hidden unit's input
    weights) are all equal after training."""
    import torch

    ns: dict[str, Any] = {}
    exec(compile(code, "<bare>", "exec"), ns)
    first = ns["model"][0]
    w = (first.base.weight + first.B @ first.A) if hasattr(first, "A") else first.weight
    return bool(torch.allclose(w, w[0].expand_as(w)))


@pytest.mark.parametrize("native", [True, False], ids=["core", "python"])
@pytest.mark.parametrize("program", [ALL_ZEROS, CONSTANT_TANH], ids=["zeros", "constant"])
def test_two_layers_started_all_equal_are_named_as_torch_trains_them(run: Any, program: str, native: bool) -> None:
    assert _hidden_units_equal(program)
    doc = run(program, native=native, tensor_budget=1 << 20)
    bare = run(program, native=native)  # no tensor file: no first values to read, nothing said
    assert "symmetric-init" not in [h["code"] for h in (bare.get("analysis") or {}).get("hints", [])]
    hint = next(h for h in doc["analysis"]["hints"] if h["code"] == "symmetric-init")
    named = {n["name"] for n in doc["graph"]["nodes"] if n["id"] in hint["nodes"]}
    assert named == {"model.0.weight", "model.2.weight"} and "16 hidden units" in hint["title"]
    assert hint["line"] == next(i for i, t in enumerate(program.splitlines(), 1) if "nn.init." in t)


@pytest.mark.parametrize("program", [LAST_ZERO, FIRST_CONSTANT, LORA], ids=["last-zero", "first-constant", "lora"])
def test_one_matrix_started_equal_breaks_no_symmetry_and_stays_silent(run: Any, program: str) -> None:
    assert not _hidden_units_equal(program)
    codes = [h["code"] for h in (run(program, tensor_budget=1 << 20).get("analysis") or {}).get("hints", [])]
    assert "symmetric-init" not in codes


def test_a_worked_example_with_round_weights_is_not_training_and_stays_silent(run: Any) -> None:
    """Two constant weights, one backward read by hand, no step: nothing trains, nothing is said."""
    program = H + """
W1 = torch.full((2, 3), 0.5, requires_grad=True)
W2 = torch.ones(1, 2, requires_grad=True)
x = torch.tensor([1.0, 2.0, 3.0])
y = W2 @ torch.tanh(W1 @ x)
y.sum().backward()
print(W1.grad, W2.grad)
"""
    doc = run(program, tensor_budget=1 << 20)
    assert "symmetric-init" not in [h["code"] for h in (doc.get("analysis") or {}).get("hints", [])]
