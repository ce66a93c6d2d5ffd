"""Hints from the numbers of training (analysis/hints/dynamics.py, NOTE [dynamics thresholds];
analysis/hints/flow.py, NOTE [vanishing and exploding thresholds]): each fires on a program
that makes the mistake and stays silent on a near miss from standard practice."""

from __future__ import annotations

from typing import Any

import pytest

from gradtrace.lessons import all_lessons
from programs import ADAM_20, GRU_200

H = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\ntorch.manual_seed(0)\n"
LOOP = ("x, y = torch.randn(64, 8), torch.randn(64, 1)\nfor step in range(12):\n    opt.zero_grad()\n"
        "    loss = F.mse_loss(model(x), y)\n    loss.backward()\n    opt.step()\n")
MLP = "model = nn.Sequential(nn.Linear(8, 32), nn.{act}, nn.Linear(32, 32), nn.{act}, nn.Linear(32, 1))\n"


def mlp(act: str = "ReLU()", opt: str = "torch.optim.Adam(model.parameters(), lr=1e-3)", setup: str = "") -> str:
    return H + MLP.format(act=act) + setup + f"opt = {opt}\n" + LOOP


# PyTorch's "visualizing gradients" tutorial: fc layers (Linear, a norm, Sigmoid), four deep
# after the input layer, one batch; its point is the fall of the gradient without batch norm.
TUTORIAL = H + """def fc_layer(in_size, out_size, norm_layer):
    return nn.Sequential(nn.Linear(in_size, out_size), norm_layer(out_size), nn.Sigmoid())

class Net(nn.Module):
    def __init__(self, in_size=28 * 28, hidden_size=128, out_size=10, num_layers=3, batchnorm=False):
        super().__init__()
        norm_layer = nn.BatchNorm1d if batchnorm else nn.Identity
        self.in_layer = fc_layer(in_size, hidden_size, norm_layer)
        self.hidden_layers = nn.Sequential(*[fc_layer(hidden_size, hidden_size, norm_layer) for _ in range(num_layers)])
        self.out_layer = nn.Linear(hidden_size, out_size)

    def forward(self, x):
        return self.out_layer(self.hidden_layers(self.in_layer(torch.flatten(x, 1))))

model = Net(batchnorm={bn})
x, y = torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,))
loss = F.cross_entropy(model(x), y)
loss.backward()
"""

def rnn_loop(cell: str, steps: int, state: str = "h") -> str:
    """A recurrent cell unrolled ``steps`` steps, trained three iterations with its gradients
    clipped before each step (the near misses of an unrolled module: NOTE [vanishing across
    calls] in analysis/hints/dynamics.py)."""
    update, init = (("h, c = cell(xs[t], (h, c))", "h = c = torch.zeros(4, 16)") if state == "hc"
                    else ("h = cell(xs[t], h)", "h = torch.zeros(4, 16)"))
    return (H + f"cell = nn.{cell}(8, 16)\nhead = nn.Linear(16, 1)\n"
            "params = list(cell.parameters()) + list(head.parameters())\nopt = torch.optim.SGD(params, lr=0.1)\n"
            f"xs, y = torch.randn({steps}, 4, 8), torch.randn(4, 1)\nfor step in range(3):\n    {init}\n"
            f"    for t in range({steps}):\n        {update}\n    loss = F.mse_loss(head(h), y)\n"
            "    opt.zero_grad()\n    loss.backward()\n    torch.nn.utils.clip_grad_norm_(params, 1.0)\n"
            "    opt.step()\n")


# a ReLU RNN whose recurrent weight is 2.5 I, its inputs positive: backward grows the
# gradient 2.5x per step going back over 60 steps
RNN_GAIN = H + ("cell = nn.RNNCell(8, 16, nonlinearity='relu')\nwith torch.no_grad():\n"
                "    cell.weight_hh.copy_(2.5 * torch.eye(16))\n    cell.weight_ih.abs_()\n    cell.bias_ih.abs_()\n"
                "h = torch.zeros(1, 16)\nxs = torch.rand(60, 1, 8)\nfor t in range(60):\n    h = cell(xs[t], h)\n"
                "h.mean().backward()\n")

# a learned positional embedding before mean pooling and a regression head
def pos_embedding(init: str, opt: str) -> str:
    return H + (f"pos = nn.Parameter({init})\nhead = nn.Linear(8, 1)\n"
                f"opt = torch.optim.{opt}\n"
                "x = torch.randn(6, 5, 8); y = torch.randn(6, 1)\nfor step in range(6):\n"
                "    loss = F.mse_loss(head((x + pos).mean(1)), y)\n"
                "    opt.zero_grad(); loss.backward(); opt.step()\n")


CASES: dict[str, tuple[str, str]] = {
    # name: (program, the hint it raises; a saturated sigmoid also makes the gradient vanish)
    "sgd-lr-10": (mlp(opt="torch.optim.SGD(model.parameters(), lr=10.0)"), "update-ratio-high"),
    "sgd-lr-1e-7": (mlp(opt="torch.optim.SGD(model.parameters(), lr=1e-7)"), "update-ratio-low"),
    "relu-bias-minus-5": (mlp(setup="with torch.no_grad():\n    model[2].bias.fill_(-5.0)\n"), "relu-dead"),
    "tanh-init-x8": (mlp("Tanh()", setup="with torch.no_grad():\n    model[0].weight.mul_(8.0)\n"
                                         "    model[2].weight.mul_(8.0)\n"), "activation-saturated"),
    "sigmoid-bias-8": (mlp("Sigmoid()", setup="with torch.no_grad():\n    model[0].bias.fill_(8.0)\n"),
                       "activation-saturated"),
    "tutorial-without-batchnorm": (TUTORIAL.replace("{bn}", "False"), "gradients-vanish"),
    "gru-200": (GRU_200, "gradients-vanish"),  # across its calls: one pass, one module
    "rnn-relu-gain-2.5": (RNN_GAIN, "gradients-explode"),
    "pos-embedding-randn-sgd-lr-20": (pos_embedding("0.02 * torch.randn(1, 5, 8)",
                                                    "SGD([pos, *head.parameters()], lr=20.0)"), "update-ratio-high"),
}

NEAR_MISSES: dict[str, str] = {
    "adam-1e-3": mlp(),
    "sgd-0.05": mlp(opt="torch.optim.SGD(model.parameters(), lr=0.05)"),
    "sgd-momentum": mlp(opt="torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)"),
    "tanh-default-init": mlp("Tanh()"),
    "sigmoid-default-init": mlp("Sigmoid()"),
    "relu-default-init": mlp("ReLU()", opt="torch.optim.SGD(model.parameters(), lr=0.1)"),
    "tutorial-with-batchnorm": TUTORIAL.replace("{bn}", "True"),
    "adam-20-steps": ADAM_20,
    # unrolled cells over sequences of the usual lengths, clipped: each call keeps its gradient
    "gru-cell-35-clipped": rnn_loop("GRUCell", 35),
    "gru-cell-50-clipped": rnn_loop("GRUCell", 50),
    "lstm-cell-20-clipped": rnn_loop("LSTMCell", 20, "hc"),
    # a weight made with torch.zeros: its ratio is about 1/t after t steps of any size
    "pos-embedding-zeros": pos_embedding("torch.zeros(1, 5, 8)", "Adam([pos, *head.parameters()], lr=1e-2)"),
}

CODES = {"update-ratio-high", "update-ratio-low", "relu-dead", "activation-saturated", "gradients-vanish",
         "gradients-explode"}


def _with_file(run: Any, code: str) -> dict[str, Any]:
    """The run with its tensor file (the activation shares read it), as the service keeps one."""
    doc = run(code, tensor_budget=64 << 20)
    assert doc.get("tensors")
    return dict(doc)


def _codes(doc: dict[str, Any]) -> list[str]:
    return [h["code"] for h in (doc.get("analysis") or {}).get("hints", []) if h["code"] in CODES]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_mistake_raises_its_hint(run: Any, name: str) -> None:
    code, want = CASES[name]
    doc = _with_file(run, code)
    assert doc["status"] == "ok", doc.get("error")
    assert _codes(doc) == [want] or (name == "sigmoid-bias-8" and _codes(doc) == ["gradients-vanish", want])
    (h,) = [h for h in doc["analysis"]["hints"] if h["code"] == want]
    assert h["nodes"] and h["evidence"] and h["fix"]


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_the_near_miss_stays_silent(run: Any, name: str) -> None:
    doc = _with_file(run, NEAR_MISSES[name])
    assert doc["status"] == "ok", doc.get("error")
    assert _codes(doc) == []


def test_the_tutorials_fall_without_batch_norm_is_said_with_its_numbers(run: Any) -> None:
    doc = _with_file(run, TUTORIAL.replace("{bn}", "False"))
    (h,) = [h for h in doc["analysis"]["hints"] if h["code"] == "gradients-vanish"]
    ratio = float(next(e["value"] for e in h["evidence"] if e["label"] == "last / first"))
    assert 100 <= ratio < 1e4  # the size the old 1e4 bound kept silent


@pytest.mark.parametrize("lesson", all_lessons(), ids=lambda lesson: lesson.stem)
def test_no_lesson_raises_a_dynamics_hint(run: Any, lesson: Any) -> None:
    """The 15 lessons with their tensor file (tests/capture/test_hints.py runs them without)."""
    assert _codes(_with_file(run, lesson.code)) == []


def test_without_a_tensor_file_the_update_ratio_still_speaks(run: Any) -> None:
    """‖Δw‖/‖w‖ comes from the document's value_steps (two norms per step), not from the file."""
    doc = run(CASES["sgd-lr-10"][0])
    assert not doc.get("tensors") and _codes(doc) == ["update-ratio-high"]
