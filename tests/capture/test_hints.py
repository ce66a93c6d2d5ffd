"""Hints: each fires on a program that makes its mistake and stays silent on a near miss, and
across the 15 lessons only the hints a lesson is about are raised (NOTE [no false alarms] in
gradtrace/analysis/hints/catalogue.py)."""

from __future__ import annotations

import sys
import warnings
from typing import Any

import pytest

from gradtrace.lessons import all_lessons

H = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\ntorch.manual_seed(0)\n"

# code: (a program that makes the mistake, a near miss that must not raise it)
CASES: dict[str, tuple[str, str]] = {
    "grad-accumulated": (
        H + "w = torch.tensor(1.0, requires_grad=True)\nfor _ in range(3):\n"
            "    loss = (w * 2 - 4) ** 2\n    loss.backward()\n",
        H + "w = torch.tensor(1.0, requires_grad=True)\nopt = torch.optim.SGD([w], lr=0.1)\n"
            "for _ in range(3):\n    opt.zero_grad()\n    loss = (w * 2 - 4) ** 2\n"
            "    loss.backward()\n    opt.step()\n"),
    "leaf-cut-off": (
        H + "w = torch.randn(3, requires_grad=True)\nv = torch.randn(3, requires_grad=True)\n"
            "h = (w * 2).detach()\nloss = (h * v).sum()\nloss.backward()\n",
        # a GAN step: the detached fake trains D only, and G's own loss gives G its gradient
        H + "G = nn.Linear(2, 2)\nD = nn.Linear(2, 1)\noptD = torch.optim.SGD(D.parameters(), lr=0.1)\n"
            "optG = torch.optim.SGD(G.parameters(), lr=0.1)\nfake = G(torch.randn(4, 2))\n"
            "d_loss = D(fake.detach()).mean()\noptD.zero_grad()\nd_loss.backward()\noptD.step()\n"
            "g_loss = -D(fake).mean()\noptG.zero_grad()\ng_loss.backward()\noptG.step()\n"),
    "requires-grad-after-cut": (
        H + "w = torch.randn(3, requires_grad=True)\nh = (w * 2).detach()\nloss = (h ** 2).sum()\n"
            "loss.requires_grad = True\nloss.backward()\n",
        H + "w = torch.randn(3, requires_grad=True)\nh = w * 2\nloss = (h ** 2).sum()\nloss.backward()\n"),
    "nonleaf-grad": (
        H + "x = torch.tensor([1.0, 2.0], requires_grad=True)\nh = x * 3\nloss = (h ** 2).sum()\n"
            "loss.backward()\nprint(h.grad)\n",
        H + "x = torch.tensor([1.0, 2.0], requires_grad=True)\nh = x * 3\nh.retain_grad()\n"
            "loss = (h ** 2).sum()\nloss.backward()\nprint(h.grad, x.grad)\n"),
    "grad-edited": (
        H + "model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))\n"
            "loss = model(torch.randn(16, 4)).pow(2).mean() * 50\nloss.backward()\n"
            "torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)\n",
        H + "model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))\n"
            "loss = model(torch.randn(16, 4)).pow(2).mean() * 50\nloss.backward()\n"
            "torch.nn.utils.clip_grad_norm_(model.parameters(), 1e6)  # never reached: nothing changes\n"),
    "graph-freed": (
        H + "x = torch.tensor(2.0, requires_grad=True)\ny = x * x\ny.backward()\ny.backward()\n",
        H + "x = torch.tensor(2.0, requires_grad=True)\ny = x * x\ny.backward(retain_graph=True)\n"
            "y.backward()\n"),
    "clip-before-backward": (
        H + "net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))\n"
            "opt = torch.optim.SGD(net.parameters(), lr=0.01)\nx, y = torch.randn(16, 4), torch.randn(16, 1) * 50\n"
            "for step in range(2):\n    opt.zero_grad()\n    loss = F.mse_loss(net(x), y)\n"
            "    nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)\n    loss.backward()\n    opt.step()\n",
        # after backward, with a limit the gradients never reach: it changes nothing, rightly
        H + "net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))\n"
            "opt = torch.optim.SGD(net.parameters(), lr=0.01)\nx, y = torch.randn(16, 4), torch.randn(16, 1) * 50\n"
            "for step in range(2):\n    opt.zero_grad()\n    loss = F.mse_loss(net(x), y)\n"
            "    loss.backward()\n    nn.utils.clip_grad_norm_(net.parameters(), max_norm=1e6)\n    opt.step()\n"),
    "eval-mode-in-training": (
        H + "model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.05)\n"
            "x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))\nmodel.train()\n"
            "for epoch in range(3):\n    loss = F.cross_entropy(model(x), y)\n"
            "    opt.zero_grad(); loss.backward(); opt.step()\n    model.eval()\n    with torch.no_grad():\n"
            "        acc = (model(x).argmax(1) == y).float().mean()\n",
        H + "model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.05)\n"
            "x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))\n"
            "for epoch in range(3):\n    model.train()\n    loss = F.cross_entropy(model(x), y)\n"
            "    opt.zero_grad(); loss.backward(); opt.step()\n    model.eval()\n    with torch.no_grad():\n"
            "        acc = (model(x).argmax(1) == y).float().mean()\n"),
    "double-softmax": (
        H + "net = nn.Linear(4, 3)\nx = torch.randn(5, 4)\nt = torch.tensor([0, 1, 2, 0, 1])\n"
            "loss = nn.CrossEntropyLoss()(net(x).softmax(dim=1), t)\nloss.backward()\n",
        H + "net = nn.Linear(4, 3)\nx = torch.randn(5, 4)\nt = torch.tensor([0, 1, 2, 0, 1])\n"
            "logits = net(x)\nprobs = logits.softmax(dim=1)\nloss = nn.CrossEntropyLoss()(logits, t)\n"
            "loss.backward()\n"),
    "nll-on-probabilities": (
        H + "net = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))\nx = torch.randn(5, 4)\n"
            "t = torch.tensor([0, 1, 2, 0, 1])\nloss = nn.NLLLoss()(net(x).view(5, 3), t)\nloss.backward()\n",
        # log_softmax for the loss, the softmax's probabilities beside it for a metric
        H + "net = nn.Linear(4, 3)\nx = torch.randn(5, 4)\nt = torch.tensor([0, 1, 2, 0, 1])\n"
            "logits = net(x)\nconfidence = logits.softmax(dim=1).max(1).values.mean()\n"
            "loss = F.nll_loss(F.log_softmax(logits, dim=1), t)\nloss.backward()\n"),
    "softmax-wrong-dim": (
        H + "net = nn.Linear(4, 3)\nx = torch.randn(5, 4)\nt = torch.tensor([0, 1, 2, 0, 1])\n"
            "loss = F.nll_loss(F.log_softmax(net(x), dim=0), t)\nloss.backward()\n",
        # the classes' dim, counted from the end; and a sequence's (N, T, C) turned to (N, C, T)
        H + "net = nn.Linear(4, 3)\nx = torch.randn(5, 4)\nt = torch.tensor([0, 1, 2, 0, 1])\n"
            "loss = F.nll_loss(F.log_softmax(net(x), dim=-1), t)\n"
            "seq = F.log_softmax(net(torch.randn(2, 6, 4)), dim=-1)\n"
            "loss = loss + F.nll_loss(seq.transpose(1, 2), torch.randint(0, 3, (2, 6)))\nloss.backward()\n"),
    "sigmoid-bce": (
        H + "net = nn.Linear(4, 1)\nx = torch.randn(5, 4)\nt = torch.rand(5, 1)\n"
            "loss = nn.BCELoss()(torch.sigmoid(net(x)), t)\nloss.backward()\n",
        H + "net = nn.Linear(4, 1)\nx = torch.randn(5, 4)\nt = torch.rand(5, 1)\n"
            "loss = nn.BCEWithLogitsLoss()(net(x), t)\nloss.backward()\n"),
    "unstable-math": (
        H + "x = torch.rand(4, requires_grad=True)\na = torch.log(1 + x)\nb = torch.exp(x) - 1\n"
            "c = torch.log(torch.exp(x).sum())\n(a.sum() + b.sum() + c).backward()\n",
        H + "x = torch.rand(4, requires_grad=True)\na = torch.log1p(x) + torch.log(2 + x)\n"
            "b = torch.expm1(x) - torch.exp(x) * 2\nc = torch.logsumexp(x, 0)\n"
            "(a.sum() + b.sum() + c).backward()\n"),
    "loss-broadcast": (
        H + "pred = torch.randn(3, 1, requires_grad=True)\ntarget = torch.randn(3)\n"
            "loss = F.mse_loss(pred * 2, target)\nloss.backward()\n",
        H + "pred = torch.randn(3, 1, requires_grad=True)\ntarget = torch.randn(3)\n"
            "loss = F.mse_loss((pred * 2).squeeze(-1), target)\nloss.backward()\n"),
    "graph-kept-alive": (
        H + "w = torch.randn(3, requires_grad=True)\ntotal = 0\nfor i in range(4):\n"
            "    loss = (w * i).pow(2).sum()\n    loss.backward()\n    w.grad = None\n    total += loss\n",
        H + "w = torch.randn(3, requires_grad=True)\ntotal = 0\nfor i in range(4):\n"
            "    loss = (w * i).pow(2).sum()\n    loss.backward()\n    w.grad = None\n"
            "    total += loss.item()\n"),
    "zero-gradient-op": (
        H + "w = torch.randn(3, requires_grad=True)\nq = (w * 4).round()\nq.sum().backward()\n",
        H + "w = torch.randn(3, requires_grad=True)\ny = w * 4\nq = y + (y.round() - y).detach()\n"
            "q.sum().backward()\n"),
    "non-differentiable-op": (
        H + "w = torch.randn(3, requires_grad=True)\nv = torch.randn(3, requires_grad=True)\n"
            "idx = (w * 2).argmax()\nloss = (v * idx).sum()\nloss.backward()\n",
        # argmax for the accuracy beside a loss on the same scores: the scores' leaf learns
        H + "w = torch.randn(4, 3, requires_grad=True)\nx = torch.randn(5, 4)\n"
            "t = torch.tensor([0, 1, 2, 0, 1])\nscores = x @ w\nacc = (scores.argmax(1) == t).float().mean()\n"
            "loss = F.cross_entropy(scores, t)\nloss.backward()\n"),
    "gradients-vanish": (
        H + "layers = []\nfor _ in range(8):\n    lin = nn.Linear(16, 16)\n    nn.init.normal_(lin.weight, std=0.05)\n"
            "    layers += [lin, nn.Sigmoid()]\nmodel = nn.Sequential(*layers, nn.Linear(16, 1))\n"
            "loss = model(torch.randn(32, 16)).pow(2).mean()\nloss.backward()\n",
        # the same depth with ReLU and the default init: a healthy MLP
        H + "layers = []\nfor _ in range(8):\n    layers += [nn.Linear(16, 16), nn.ReLU()]\n"
            "model = nn.Sequential(*layers, nn.Linear(16, 1))\n"
            "loss = model(torch.randn(32, 16)).pow(2).mean()\nloss.backward()\n"),
    # a SIREN (sine activations, frequency 30) with the default init, which SIREN's paper warns
    # against; the near miss is its own init, uniform in +-sqrt(6 / fan_in) / 30
    "gradients-explode": (
        H + "lins = nn.ModuleList(nn.Linear(16, 16) for _ in range(6))\nx = torch.randn(32, 16)\n"
            "for lin in lins:\n    x = torch.sin(30 * lin(x))\nloss = x.pow(2).mean()\nloss.backward()\n",
        H + "lins = nn.ModuleList(nn.Linear(16, 16) for _ in range(6))\nfor lin in lins[1:]:\n"
            "    nn.init.uniform_(lin.weight, -(6 / 16) ** 0.5 / 30, (6 / 16) ** 0.5 / 30)\nx = torch.randn(32, 16)\n"
            "for lin in lins:\n    x = torch.sin(30 * lin(x))\nloss = x.pow(2).mean()\nloss.backward()\n"),
    "train-mode-in-eval": (
        H + "model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 1))\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nloss = model(torch.randn(16, 4)).pow(2).mean()\n"
            "opt.zero_grad()\nloss.backward()\nopt.step()\nwith torch.no_grad():\n"
            "    val = model(torch.randn(16, 4)).pow(2).mean()\n",
        H + "model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 1))\n"
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nloss = model(torch.randn(16, 4)).pow(2).mean()\n"
            "opt.zero_grad()\nloss.backward()\nopt.step()\nmodel.eval()\nwith torch.no_grad():\n"
            "    val = model(torch.randn(16, 4)).pow(2).mean()\nmodel.train()\n"),
}

# What each lesson is about, among the hints (every other lesson raises none).
LESSON_HINTS = {
    "06_graph_freed": ["graph-freed"],
    "09_accumulating_grads": ["grad-accumulated"],
}


@pytest.fixture
def run(run: Any) -> Any:
    """The capture fixture, with the snippet's own warnings (torch's "target size" warning of
    a broadcast loss) left as warnings, as in the service, rather than pytest's errors."""

    def _run(code: str, **kw: Any) -> dict[str, Any]:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = _to_stderr  # into the run's output, as in the service
            return run(code, **kw)  # type: ignore[no-any-return]

    return _run


def _to_stderr(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
               line: str | None = None) -> None:
    """How Python shows a warning when nothing captures it (pytest does, in tests)."""
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _codes(doc: dict[str, Any]) -> list[str]:
    return [h["code"] for h in (doc.get("analysis") or {}).get("hints", [])]


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_hint_fires_on_its_mistake_and_not_on_the_near_miss(run: Any, code: str) -> None:
    fires, near_miss = CASES[code]
    found = run(fires)
    assert code in _codes(found), _codes(found)
    hint = next(h for h in found["analysis"]["hints"] if h["code"] == code)
    assert hint["line"] is not None
    assert hint["title"] and hint["message"] and hint["fix"] and hint["evidence"]
    # a read of .grad makes no node, nor does a module called under no_grad
    assert hint["nodes"] or hint["code"] in ("nonleaf-grad", "train-mode-in-eval")
    ids = {n["id"] for n in found["graph"]["nodes"]}
    assert set(hint["nodes"]) <= ids
    assert _codes(run(near_miss)) == []


NO_HISTORY = {  # a root that ops with no gradient made, given requires_grad by hand
    "argmax": H + "logits = torch.randn(4, 5, requires_grad=True)\npred = logits.argmax(dim=1).float()\n"
                  "target = torch.tensor([1., 2., 0., 4.])\n"
                  "loss = ((pred - target) ** 2).mean().requires_grad_()\nloss.backward()\n",
    "comparison": H + "x = torch.tensor([1., 2.], requires_grad=True)\ny = (x > 1).float().sum()\n"
                      "y.requires_grad = True\ny.backward()\n",
}
LEAF_OWN_DERIVATIVE = [  # a lesson's first backward: a leaf made with requires_grad, differentiated
    H + "x = torch.tensor(2.0, requires_grad=True)\nx.backward()\nprint(x.grad)\n",
    H + "x = torch.randn(()).requires_grad_()\nx.backward()\n",
    H + "x = torch.randn(())\nx.requires_grad_()\ny = x * 3\ny.backward()\n",
]


@pytest.mark.parametrize("case", sorted(NO_HISTORY))
def test_a_root_without_history_given_requires_grad_by_hand_is_named(run: Any, case: str) -> None:
    """No cut to blame: an argmax (a comparison) made the loss, and the program set its
    requires_grad to make backward run; backward reaches nothing, and x's .grad stays None."""
    doc = run(NO_HISTORY[case])
    hint = next(h for h in doc["analysis"]["hints"] if h["code"] == "requires-grad-after-cut")
    line = 8 if case == "argmax" else 7  # after H's four lines
    assert hint["line"] == line and "has no history" in hint["title"], hint
    assert hint["nodes"] == doc["passes"][0]["roots"]
    assert all(n.get("grad") is None for n in doc["graph"]["nodes"] if n.get("name") in ("logits", "x"))


@pytest.mark.parametrize("code", LEAF_OWN_DERIVATIVE)
def test_a_leafs_own_derivative_is_no_mistake(run: Any, code: str) -> None:
    assert _codes(run(code)) == []


LOOP = H + """
net = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(PARAMS, lr=LR)
x, y = torch.randn(16, 3), torch.randn(16, 1)
for epoch in range(3):
BODY"""
ORDERS = {  # the loop body, by what it does wrong (or right)
    "right": "    opt.zero_grad()\n    loss = F.mse_loss(net(x), y)\n    loss.backward()\n    opt.step()\n",
    "zero_grad between": "    loss = F.mse_loss(net(x), y)\n    loss.backward()\n    opt.zero_grad()\n    opt.step()\n",
    "step first": "    opt.zero_grad()\n    loss = F.mse_loss(net(x), y)\n    opt.step()\n    loss.backward()\n",
    "zero_grad last": "    loss = F.mse_loss(net(x), y)\n    loss.backward()\n    opt.step()\n    opt.zero_grad()\n",
    "model.zero_grad": "    net.zero_grad()\n    loss = F.mse_loss(net(x), y)\n    loss.backward()\n    opt.step()\n",
}


def _loop(order: str, params: str = "net.parameters()", lr: str = "0.1") -> str:
    return LOOP.replace("PARAMS", params).replace("LR", lr).replace("BODY", ORDERS[order])


@pytest.mark.parametrize("order,line", [("zero_grad between", 12), ("step first", 12)])
def test_gradients_cleared_before_any_step_are_named(run: Any, order: str, line: int) -> None:
    """Every parameter got a gradient each iteration and nothing moved: the loop's order threw
    each gradient away before a step used it (torch's own values: no parameter changed)."""
    doc = run(_loop(order))
    hint = next(h for h in doc["analysis"]["hints"] if h["code"] == "gradients-discarded")
    assert hint["line"] == line and hint["severity"] == "error", hint
    assert ("zero_grad() on line 12 runs after backward() on line 11" if order == "zero_grad between"
            else "step() on line 12 runs before backward() on line 13") in hint["title"]
    scope: dict[str, Any] = {}
    bare = _loop(order).replace("for epoch", "before = [p.detach().clone() for p in net.parameters()]\nfor epoch")
    exec(compile(bare, "<bare>", "exec"), scope)
    assert all(torch_equal(a, b) for a, b in zip(scope["before"], scope["net"].parameters(), strict=True))
    assert _codes(run(_loop("right"))) == []
    assert _codes(run(_loop("right", lr="0.0"))) == []  # nothing moves, and the order is right
    assert _codes(run(_loop("zero_grad last"))) == []  # cleared after the step: as right
    assert _codes(run(_loop("model.zero_grad"))) == []


def test_parameters_no_optimizer_holds_are_named(run: Any) -> None:
    """The optimizer was given the first layer only: the loop's zero_grad and step leave the
    second alone, so its .grad adds up across iterations and it never trains."""
    doc = run(_loop("right", params="net[0].parameters()"))
    hint = next(h for h in doc["analysis"]["hints"] if h["code"] == "grad-accumulated")
    assert "net.2.weight, net.2.bias: no optimizer holds them" in hint["title"], hint
    named = {n["name"] for n in doc["graph"]["nodes"] if n["id"] in hint["nodes"]}
    assert named == {"net.2.weight", "net.2.bias", "AccumulateGrad"}  # each with its accumulator
    assert _codes(run(_loop("right"))) == []


FGSM = H + """
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
for step in range(2):
    x_adv = x.clone().requires_grad_(True)
    loss = F.cross_entropy(model(ATTACKED), y)
    grad, = torch.autograd.grad(loss, x_adv, allow_unused=True)
    x_adv = (x_adv + 0.1 * (grad if grad is not None else torch.zeros_like(x)).sign()).detach()
    opt.zero_grad()
    loss = F.cross_entropy(model(x_adv), y)
    loss.backward()
    opt.step()
"""


def test_an_input_whose_gradient_autograd_grad_returned_is_not_cut_off(run: Any) -> None:
    """Adversarial training (FGSM): ``torch.autograd.grad`` returns the input's gradient, which
    is never accumulated into ``.grad``, and the attacked input is then detached for the
    training step. The input did get its gradient: no ``leaf-cut-off``. The attack that
    detaches the input before the model (its gradient never computed) is named."""
    assert _codes(run(FGSM.replace("ATTACKED", "x_adv"))) == []
    broken = run(FGSM.replace("ATTACKED", "x_adv.detach()"))
    assert "leaf-cut-off" in _codes(broken), _codes(broken)


SIGMOID_TWICE = H + """
net = nn.Linear(4, 1)
x, t = torch.randn(8, 4), torch.rand(8, 1).round()
logits = net(x)
probs = torch.sigmoid(logits)
loss = F.binary_cross_entropy_with_logits(INPUT, t)
loss.backward()
"""


def test_a_sigmoid_before_bce_with_logits_is_named(run: Any) -> None:
    """BCEWithLogitsLoss applies its own sigmoid: a sigmoid's output given to it is squashed
    twice (torch's own loss then cannot fall below what 0.5 to 0.73 allows). The logits given
    to it, with their sigmoid computed beside for a metric, is the near miss."""
    doc = run(SIGMOID_TWICE.replace("INPUT", "probs"))
    hint = next(h for h in doc["analysis"]["hints"] if h["code"] == "sigmoid-bce")
    assert hint["line"] == 10 and "applied twice" in hint["title"], hint
    assert _codes(run(SIGMOID_TWICE.replace("INPUT", "logits"))) == []
    import torch

    squashed = torch.sigmoid(torch.sigmoid(torch.linspace(-50, 50, 101)))
    assert float(squashed.min()) >= 0.5 and float(squashed.max()) < 0.74  # what the hint says


def test_probabilities_given_to_nll_loss_are_named_as_torch_computes_them(run: Any) -> None:
    """NLLLoss on a softmax's probabilities is −mean(p[target]), between −1 and 0, as the hint
    says: torch's own loss on the same numbers, and the gradient it gives a confidently wrong
    row is smaller than the cross-entropy's."""
    code = CASES["nll-on-probabilities"][0]
    hint = next(h for h in run(code)["analysis"]["hints"] if h["code"] == "nll-on-probabilities")
    assert hint["line"] == 8 and "NLLLoss" in hint["title"], hint
    import torch
    import torch.nn.functional as F

    logits = torch.tensor([[6.0, 0.0, 0.0], [0.0, 2.0, 0.0]], requires_grad=True)
    t = torch.tensor([1, 1])
    p = logits.softmax(dim=1)
    wrong = F.nll_loss(p, t)
    assert -1 <= float(wrong.detach()) <= 0 and torch.allclose(wrong, -p[torch.arange(2), t].mean())
    (g_wrong,) = torch.autograd.grad(wrong, logits)
    (g_right,) = torch.autograd.grad(F.cross_entropy(logits, t), logits)
    assert g_wrong[0].abs().max() < 0.05 * g_right[0].abs().max()  # the confident mistake teaches least


FUNCTIONAL_DROPOUT = H + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x):
        return self.fc2(F.dropout(F.relu(self.fc1(x)), p=0.5DROPOUT_FLAG))


net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x, y = torch.randn(16, 8), torch.randint(0, 2, (16,))
loss = F.cross_entropy(net(x), y)
opt.zero_grad(); loss.backward(); opt.step()
net.eval()
with torch.no_grad():
    a, b = net(x), net(x)
"""


@pytest.mark.parametrize("native", [True, False], ids=["core", "python"])
def test_functional_dropout_in_a_module_in_eval_mode_is_named(run: Any, native: bool) -> None:
    """``F.dropout`` without ``training=`` drops in eval mode (torch's two evaluations differ);
    given ``training=self.training`` (they agree) or ``training=True`` on purpose (Monte Carlo
    dropout) it is silent."""
    import torch

    ns: dict[str, Any] = {}
    exec(compile(FUNCTIONAL_DROPOUT.replace("DROPOUT_FLAG", ""), "<bare>", "exec"), ns)
    assert not torch.equal(ns["a"], ns["b"])  # torch's own answer: it still drops
    doc = run(FUNCTIONAL_DROPOUT.replace("DROPOUT_FLAG", ""), native=native)
    hint = next(h for h in doc["analysis"]["hints"] if h["code"] == "train-mode-in-eval")
    assert hint["line"] == 13 and "F.dropout" in hint["title"], hint
    assert "training=self.training" in hint["fix"]
    for flag in (", training=self.training", ", training=True"):
        assert "train-mode-in-eval" not in _codes(run(FUNCTIONAL_DROPOUT.replace("DROPOUT_FLAG", flag), native=native))


def test_a_clip_before_backward_is_named_as_torch_sees_it(run: Any) -> None:
    """torch's own clip, run before backward, sees a total norm of 0 and changes nothing; the
    gradients step() uses exceed its limit. Silent: a clip inside an ``if`` that steps
    accumulated gradients, and a GAN's clip of D after D's backward and before G's."""
    import torch

    code = CASES["clip-before-backward"][0]
    ns: dict[str, Any] = {}
    bare = code.replace("    nn.utils.clip_grad_norm_(", "    seen = nn.utils.clip_grad_norm_(")
    exec(compile(bare, "<bare>", "exec"), ns)
    assert float(ns["seen"]) == 0.0
    after = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in ns["net"].parameters()]))
    assert float(after) > 1.0
    hint = next(h for h in run(code)["analysis"]["hints"] if h["code"] == "clip-before-backward")
    clip_line = next(i for i, text in enumerate(code.splitlines(), 1) if "clip_grad_norm_" in text)
    assert hint["line"] == clip_line and abs(float(hint["evidence"][2]["value"]) - float(after)) <= 1e-3 * float(after)
    accumulated = H + """
net = nn.Linear(4, 1)
opt = torch.optim.SGD(net.parameters(), lr=0.01)
for i in range(6):
    if i % 3 == 2:
        nn.utils.clip_grad_norm_(net.parameters(), 0.1)
        opt.step(); opt.zero_grad()
    loss = net(torch.randn(8, 4) * 30).pow(2).mean()
    loss.backward()
"""
    gan = H + """
G, D = nn.Linear(2, 2), nn.Linear(2, 1)
opt_g, opt_d = torch.optim.SGD(G.parameters(), lr=0.1), torch.optim.SGD(D.parameters(), lr=0.1)
for step in range(2):
    fake = G(torch.randn(8, 2) * 30)
    d_loss = D(fake.detach()).pow(2).mean()
    opt_d.zero_grad(); d_loss.backward()
    nn.utils.clip_grad_norm_(D.parameters(), 0.1); opt_d.step()
    g_loss = D(fake).pow(2).mean()
    opt_g.zero_grad(); g_loss.backward(); opt_g.step()
"""
    for silent in (accumulated, gan):
        assert "clip-before-backward" not in _codes(run(silent))


def test_a_log_softmax_over_the_batch_is_named_where_torchs_rows_are_no_distributions(run: Any) -> None:
    """torch's own log_softmax along dim 0: no row's probabilities sum to 1, every column's do."""
    import torch
    import torch.nn.functional as F

    code = CASES["softmax-wrong-dim"][0]
    hint = next(h for h in run(code)["analysis"]["hints"] if h["code"] == "softmax-wrong-dim")
    assert hint["line"] == 8 and "dim 0" in hint["title"], hint
    p = F.log_softmax(torch.randn(5, 3), dim=0).exp()
    assert torch.allclose(p.sum(0), torch.ones(3)) and not torch.allclose(p.sum(1), torch.ones(5))


TWO_OPTIMIZERS = H + """
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
opt_head = torch.optim.SGD(model[2].parameters(), lr=0.1)
x, y = torch.randn(16, 8), torch.randint(0, 2, (16,))
for step in range(3):
    opt.zero_grad(); opt_head.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt_head.step()
"""


@pytest.mark.parametrize("native", [True, False], ids=["core", "python"])
def test_a_parameter_two_optimizers_step_with_one_gradient_is_named(run: Any, native: bool) -> None:
    """torch's own run: the head's weight moves at both steps with one ``.grad``. Silent: one
    optimizer with a group for the head, two optimizers taking turns by iteration, two
    optimizers sharing an encoder, each after a backward of its own, and a Lookahead wrapper
    whose step steps its base optimizer."""
    import torch

    moved: list[bool] = []
    grads: list[Any] = []

    def watch(fn: Any) -> Any:
        def step(*a: Any, **k: Any) -> Any:
            w = ns["model"][2].weight
            before, g = w.detach().clone(), w.grad
            out = fn(*a, **k)
            moved.append(not torch.equal(before, w.detach()))
            grads.append(g)
            return out
        return step

    ns: dict[str, Any] = {"watch": watch}
    bare = TWO_OPTIMIZERS.replace("    opt.step()\n    opt_head.step()\n",
                                  "    watch(opt.step)()\n    watch(opt_head.step)()\n")
    exec(compile(bare, "<bare>", "exec"), ns)
    assert moved == [True] * 6 and all(grads[i] is grads[i + 1] for i in range(0, 6, 2))
    doc = run(TWO_OPTIMIZERS, native=native)
    hint = next(h for h in doc["analysis"]["hints"] if h["code"] == "stepped-twice")
    second = next(i for i, text in enumerate(TWO_OPTIMIZERS.splitlines(), 1) if "opt_head.step()" in text)
    assert hint["line"] == second and {doc_node["name"] for doc_node in doc["graph"]["nodes"]
                                   if doc_node["id"] in hint["nodes"]} == {"model.2.weight", "model.2.bias"}
    groups = TWO_OPTIMIZERS.replace(
        "opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)\nopt_head = torch.optim.SGD(model[2]"
        ".parameters(), lr=0.1)", "opt = torch.optim.SGD([{'params': model[0].parameters()}, {'params': model[2]"
        ".parameters(), 'lr': 0.1}], lr=0.01, momentum=0.9)\nopt_head = opt")
    turns = TWO_OPTIMIZERS.replace("    opt.step()\n    opt_head.step()\n",
                                   "    (opt if step % 2 else opt_head).step()\n")
    shared = H + """
enc = nn.Linear(8, 16); h1 = nn.Linear(16, 1); h2 = nn.Linear(16, 1)
o1 = torch.optim.SGD(list(enc.parameters()) + list(h1.parameters()), lr=0.01)
o2 = torch.optim.SGD(list(enc.parameters()) + list(h2.parameters()), lr=0.01)
x = torch.randn(16, 8)
for step in range(3):
    o1.zero_grad(); h1(enc(x)).pow(2).mean().backward(); o1.step()
    o2.zero_grad(); h2(enc(x)).pow(2).mean().backward(); o2.step()
"""
    lookahead = H + """
class Lookahead(torch.optim.Optimizer):
    def __init__(self, base, k=2):
        self.base, self.k, self.n = base, k, 0
        super().__init__(base.param_groups, {})
        self.slow = [p.detach().clone() for g in base.param_groups for p in g["params"]]
    def step(self, closure=None):
        self.base.step()
        self.n += 1
        if self.n % self.k == 0:
            with torch.no_grad():
                for p, s in zip([p for g in self.base.param_groups for p in g["params"]], self.slow):
                    s.add_(p - s, alpha=0.5); p.copy_(s)
net = nn.Linear(4, 1)
opt = Lookahead(torch.optim.SGD(net.parameters(), lr=0.1))
for step in range(4):
    loss = net(torch.randn(8, 4)).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""
    for silent in (groups, turns, shared, lookahead):
        assert "stepped-twice" not in _codes(run(silent, native=native))


ADAM_EACH_STEP = H + """
model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
x, y = torch.randn(32, 4), torch.randn(32, 1)
for step in range(6):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
"""


def _adam_first_steps(code: str) -> list[bool]:
    """torch's own run of ``code``: for each ``opt.step()``, whether it moved the first weight
    by Adam's first update, lr·g/(|g| + eps) (the step from empty moments)."""
    import torch

    firsts: list[bool] = []

    def watch(opt: Any) -> None:
        w = ns["model"][0].weight
        before, g = w.detach().clone(), w.grad.detach().clone()
        opt.step()
        first = before - 1e-2 * g / (g.abs() + 1e-8)
        firsts.append(torch.allclose(w.detach(), first, rtol=0, atol=1e-6))

    ns: dict[str, Any] = {"watch": watch}
    exec(compile(code.replace("    opt.step()\n", "    watch(opt)\n"), "<bare>", "exec"), ns)
    return firsts


@pytest.mark.parametrize("native", [True, False], ids=["core", "python"])
def test_an_optimizer_made_in_the_loop_is_named_as_torch_runs_it(run: Any, native: bool) -> None:
    """torch's own run: with Adam made inside the loop every step is Adam's first (lr·g/(|g| +
    eps)); made once, only the first is. Silent: Adam made once, made again for a second stage,
    made again each epoch of several batches, and plain SGD made in the loop (it keeps no
    state)."""
    fixed = ADAM_EACH_STEP.replace("    opt = torch.optim.Adam(model.parameters(), lr=1e-2)\n", "").replace(
        "for step in range(6):", "opt = torch.optim.Adam(model.parameters(), lr=1e-2)\nfor step in range(6):")
    assert _adam_first_steps(ADAM_EACH_STEP) == [True] * 6
    assert _adam_first_steps(fixed) == [True] + [False] * 5
    doc = run(ADAM_EACH_STEP, native=native)
    hint = next(h for h in doc["analysis"]["hints"] if h["code"] == "optimizer-recreated")
    made = next(i for i, text in enumerate(ADAM_EACH_STEP.splitlines(), 1) if "optim.Adam(" in text)
    assert hint["line"] == made and "Adam" in hint["title"], hint
    leaves = {n["name"]: n for n in doc["graph"]["nodes"] if n["id"] in hint["nodes"]}
    assert set(leaves) == {"model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"}
    assert leaves["model.0.weight"]["state_restarts"]["steps"] == 6
    assert leaves["model.0.weight"]["state_restarts"]["restarts"] == 5
    stages = H + """
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))
x, y = torch.randn(32, 4), torch.randn(32, 1)
for lr in (1e-2, 1e-3):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for step in range(4):
        opt.zero_grad(); ((model(x) - y) ** 2).mean().backward(); opt.step()
"""
    epochs = stages.replace("for lr in (1e-2, 1e-3):", "for epoch in range(3):").replace("lr=lr", "lr=1e-2")
    plain = ADAM_EACH_STEP.replace("torch.optim.Adam(model.parameters(), lr=1e-2)",
                                   "torch.optim.SGD(model.parameters(), lr=1e-2)")
    for silent in (fixed, stages, epochs, plain):
        assert "optimizer-recreated" not in _codes(run(silent, native=native))
    assert not any(n.get("state_restarts") for n in run(plain, native=native)["graph"]["nodes"])


def test_training_on_in_eval_mode_is_named_as_torch_runs_it(run: Any) -> None:
    """torch's own run of the mistake: from the second epoch, batch norm's running mean no
    longer moves while the model trains (it normalises by the running statistics). Silent: batch
    norm frozen from the start for fine-tuning, and frozen midway without an evaluation."""
    import torch

    code = CASES["eval-mode-in-training"][0]
    means: list[Any] = []
    bare = code.replace("    model.eval()\n", "    model.eval()\n    means.append(model[1].running_mean.clone())\n")
    exec(compile(bare, "<bare>", "exec"), {"means": means})
    assert not torch.equal(means[0], torch.zeros(8)) and torch.equal(means[1], means[2])
    hint = next(h for h in run(code)["analysis"]["hints"] if h["code"] == "eval-mode-in-training")
    train_line = next(i for i, text in enumerate(code.splitlines(), 1) if "loss = F.cross_entropy" in text)
    assert hint["line"] == train_line and "eval mode" in hint["title"] and hint["fix"].startswith("model.train()")
    frozen = code.replace("model.train()\n", "model.train(); model[1].eval()\n")
    midway = H + """
model = nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(32, 4), torch.randint(0, 2, (32,))
for step in range(4):
    if step == 2:
        model[1].eval()
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""
    # an evaluation with gradients on (no no_grad), never walked back, then training in eval mode
    with_grad = code.replace("    with torch.no_grad():\n        acc =", "    if True:\n        acc =")
    assert "eval-mode-in-training" in _codes(run(with_grad))
    phases = H + """
model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
data = {"train": (torch.randn(16, 8), torch.randint(0, 3, (16,))),
        "val": (torch.randn(8, 8), torch.randint(0, 3, (8,)))}
for epoch in range(3):
    for phase in ["train", "val"]:
        model.train() if phase == "train" else model.eval()
        inputs, labels = data[phase]
        opt.zero_grad()
        with torch.set_grad_enabled(phase == "train"):
            loss = F.cross_entropy(model(inputs), labels)
            if phase == "train":
                loss.backward(); opt.step()
"""
    for silent in (frozen, midway, phases, with_grad.replace("model.train()\n", "").replace(
            "for epoch in range(3):\n", "for epoch in range(3):\n    model.train()\n")):
        assert "eval-mode-in-training" not in _codes(run(silent))


CARRIED = H + """
rnn = nn.GRU(4, 8, batch_first=True)
head = nn.Linear(8, 1)
opt = torch.optim.Adam(list(rnn.parameters()) + list(head.parameters()), lr=1e-3)
h = torch.zeros(1, 2, 8)
for chunk in range(3):
    x = torch.randn(2, 5, 4)
    out, h = rnn(x, h)
    loss = head(out).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""


@pytest.mark.parametrize("native", [True, False], ids=["core", "python"])
def test_a_hidden_state_carried_with_its_graph_is_named(run: Any, native: bool) -> None:
    """torch's own run fails at the second backward, and runs with ``h = h.detach()``. The node
    the error names is one the first backward freed (the first chunk's), not one the failing
    backward ran itself before it failed; the hint names ``h`` and its detach."""
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        exec(compile(CARRIED, "<bare>", "exec"), {})
    exec(compile(CARRIED.replace("    out, h = rnn(x, h)", "    out, h = rnn(x, h.detach())"), "<bare>", "exec"), {})
    doc = run(CARRIED, native=native)
    assert doc["status"] == "error"
    named = next(n for n in doc["graph"]["nodes"] if n["id"] == doc["error"]["node"])
    rnn_line = next(i for i, text in enumerate(CARRIED.splitlines(), 1) if "out, h = rnn(x, h)" in text)
    assert named["line"] == rnn_line and {s.get("freed_after_pass") for s in named["saved"]} == {0}
    hint = next(h for h in doc["analysis"]["hints"] if h["code"] == "graph-freed")
    assert hint["title"].startswith("h carries") and hint["fix"].startswith("h = h.detach()"), hint


def test_a_sigmoid_before_cross_entropy_is_named_with_torchs_bound(run: Any) -> None:
    """A sigmoid's output given to CrossEntropyLoss: torch's softmax of values in (0, 1) never
    gives a class more than e/(e + C − 1), as the hint says. Silent: the logits to the loss, a
    sigmoid beside them for a metric."""
    import math

    import torch

    code = H + ("net = nn.Linear(4, 3)\nx = torch.randn(5, 4) * 10\nt = torch.tensor([0, 1, 2, 0, 1])\n"
                "loss = nn.CrossEntropyLoss()(torch.sigmoid(net(x)), t)\nloss.backward()\n")
    hint = next(h for h in run(code)["analysis"]["hints"] if h["code"] == "double-softmax")
    assert "sigmoid" in hint["title"] and hint["line"] == 8, hint
    near = code.replace("(torch.sigmoid(net(x)), t)", "(net(x), t)\nrate = torch.sigmoid(net(x)).mean()")
    assert _codes(run(near)) == []
    p = torch.softmax(torch.sigmoid(torch.randn(1000, 3) * 100), dim=1)
    assert float(p.max()) <= math.e / (math.e + 2) + 1e-6


NO_GRAPH = {  # a loss autograd recorded nothing for, and what the hint says made it so
    "no_grad": (H + "net = nn.Linear(4, 1)\nx, y = torch.randn(8, 4), torch.randn(8, 1)\nwith torch.no_grad():\n"
                    "    pred = net(x)\nloss = F.mse_loss(pred, y)\nloss.backward()\n",
                "line 8 ran under torch.no_grad()"),
    "decorated": (H + "net = nn.Linear(4, 1)\n@torch.no_grad()\ndef forward(x):\n    return net(x)\n"
                      "loss = forward(torch.randn(8, 4)).pow(2).mean()\nloss.backward()\n",
                  "line 8 ran under torch.no_grad()"),
    "detach": (H + "net = nn.Linear(4, 1)\nloss = net(torch.randn(8, 4)).detach().pow(2).mean()\nloss.backward()\n",
               "detach at line 6 cut it off"),
    "argmax": (H + "net = nn.Linear(4, 3)\npred = net(torch.randn(8, 4)).argmax(1).float()\n"
                   "loss = F.mse_loss(pred, torch.ones(8))\nloss.backward()\n", "argmax at line 6 has no gradient"),
    "item": (H + "net = nn.Linear(4, 1)\nloss = torch.tensor(net(torch.randn(8, 4)).pow(2).mean().item())\n"
                 "loss.backward()\n", "torch.tensor at line 6 has no gradient"),
}


@pytest.mark.parametrize("case", sorted(NO_GRAPH))
def test_a_backward_with_no_graph_says_what_left_the_loss_without_one(run: Any, case: str) -> None:
    """NOTE [a backward with no graph] in analysis/hints/training.py: torch raises its error on
    each; the hint names the cause. The near miss (the cause removed) runs and says nothing."""
    code, said = NO_GRAPH[case]
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        exec(compile(code, "<bare>", "exec"), {})
    doc = run(code)
    assert doc["status"] == "error"
    hint = next(h for h in doc["analysis"]["hints"] if h["code"] == "backward-without-graph")
    assert hint["title"] == f"loss has no grad_fn: {said}", hint["title"]
    assert [h["code"] for h in doc["analysis"]["hints"]] == ["backward-without-graph"]
    fixed = {"no_grad": code.replace("with torch.no_grad():\n    pred", "pred"),
             "decorated": code.replace("@torch.no_grad()\n", ""),
             "detach": code.replace(".detach()", ""),
             "argmax": code.replace(".argmax(1).float()", ".sum(1)"),
             "item": code.replace("torch.tensor(", "(").replace(".item())", ")")}[case]
    near = run(fixed)
    assert near["status"] == "ok" and _codes(near) == [], (near.get("error"), _codes(near))


REBUILT = H + """
w = torch.randn(3, requires_grad=True)
x = torch.randn(5, 3)
l1 = (x @ w).pow(2).mean()
l2 = w.abs().sum()
total = COMBINED.sum()
total.backward()
"""


def test_losses_rebuilt_by_torch_tensor_are_named_as_a_cut(run: Any) -> None:
    """``torch.tensor([l1, l2], requires_grad=True)`` reads each loss as a number: backward runs
    and ``w`` gets no gradient (torch's own ``.grad`` is None). ``torch.stack`` keeps the graph,
    and a leaf made by ``torch.tensor`` from plain numbers is a lesson's first graph: both
    silent."""
    doc = run(REBUILT.replace("COMBINED", "torch.tensor([l1, l2], requires_grad=True)"))
    hint = next(h for h in doc["analysis"]["hints"] if h["code"] == "requires-grad-after-cut")
    assert hint["line"] == 10 and hint["title"] == "torch.tensor() rebuilt l1, l2 as numbers: w gets no gradient"
    assert "torch.stack([l1, l2])" in hint["fix"]
    starved = {s["name"]: s for s in doc["analysis"]["starved"]}
    assert starved["w"]["reason"] == "cut" and starved["w"]["line"] == 10
    scope: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's own warning about reading a tensor that requires grad
        exec(compile(REBUILT.replace("COMBINED", "torch.tensor([l1, l2], requires_grad=True)"), "<bare>", "exec"),
             scope)
    assert scope["w"].grad is None
    assert _codes(run(REBUILT.replace("COMBINED", "torch.stack([l1, l2])"))) == []
    assert _codes(run(REBUILT.replace("COMBINED", "(torch.tensor([1.0, 2.0], requires_grad=True) * l1)"))) == []


VAE = H + """
enc = nn.Linear(8, 4)
dec = nn.Linear(2, 8)
opt = torch.optim.Adam([*enc.parameters(), *dec.parameters()], lr=1e-3)
x = torch.randn(16, 8)
for step in range(2):
    mu, logvar = enc(x).chunk(2, dim=1)
    z = torch.distributions.Normal(mu, (0.5 * logvar).exp()).DRAW()
    loss = F.mse_loss(dec(z), x)
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_a_sample_where_rsample_was_meant_is_named(run: Any) -> None:
    """``Normal(mu, sigma).sample()`` draws under ``no_grad`` inside torch: the encoder gets no
    gradient (torch's own ``.grad`` is None), and no cut of the snippet's shows it (NOTE [a
    sample is a cut] in analysis/starved.py). With ``rsample()``, and for a policy gradient's
    ``sample()`` (``log_prob`` carries the gradient), nothing is said."""
    doc = run(VAE.replace("DRAW", "sample"))
    hint = next(h for h in doc["analysis"]["hints"] if h["code"] == "leaf-cut-off")
    assert hint["line"] == 12
    assert hint["title"] == "enc.weight gets no gradient: .sample() at line 12 draws without gradient"
    assert ".rsample()" in hint["fix"]
    assert {s["name"]: s["reason"] for s in doc["analysis"]["starved"]} == {"enc.weight": "cut", "enc.bias": "cut"}
    scope: dict[str, Any] = {}
    exec(compile(VAE.replace("DRAW", "sample"), "<bare>", "exec"), scope)
    assert scope["enc"].weight.grad is None and scope["dec"].weight.grad is not None
    assert _codes(run(VAE.replace("DRAW", "rsample"))) == []
    policy = H + """
policy = nn.Linear(4, 3)
opt = torch.optim.Adam(policy.parameters(), lr=1e-2)
for step in range(2):
    dist = torch.distributions.Categorical(logits=policy(torch.randn(10, 4)))
    a = dist.sample()
    loss = -(dist.log_prob(a) * torch.randn(10)).mean()
    opt.zero_grad(); loss.backward(); opt.step()
"""
    assert _codes(run(policy)) == []


def torch_equal(a: Any, b: Any) -> bool:
    import torch

    return bool(torch.equal(a.detach(), b.detach()))


ENCODER_DETACHED = H + """
enc = nn.Linear(4, 8)
head = nn.Linear(8, 1)
opt = torch.optim.Adam(list(enc.parameters()) + list(head.parameters()), lr=1e-3)
x, y = torch.randn(16, 4), torch.randn(16, 1)
for step in range(3):
    h = torch.relu(enc(x)).detach()
    loss = F.mse_loss(head(h), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""


@pytest.mark.parametrize("native", [True, False], ids=["core", "python"])
def test_a_detached_input_to_a_module_cuts_the_leaves_before_it_off(run: Any, native: bool) -> None:
    """The cut tensor goes into a library module (``head(h)``, whose own ops the recorder does
    not see: NOTE [no tap inside library modules] in capture/modules.py): its dashed edge runs to
    the module's node, and the encoder that the optimizer holds but no gradient reaches is
    named, as when a plain op uses the cut tensor. With the encoder frozen on purpose
    (``requires_grad_(False)``), nothing is said."""
    doc = run(ENCODER_DETACHED, native=native)
    nodes = {n["id"]: n for n in doc["graph"]["nodes"]}
    cuts = {i for i, n in nodes.items() if n.get("cut")}
    dashed = [e for e in doc["graph"]["edges"] if e.get("cut")]
    assert len(cuts) == 3 and {e["source"] for e in dashed} == cuts  # one per iteration, each used
    assert all((nodes[e["target"]]["name"], nodes[e["target"]]["module"]) == ("AddmmBackward0", "head") for e in dashed)
    hint = next(h for h in doc["analysis"]["hints"] if h["code"] == "leaf-cut-off")
    assert hint["line"] == 11 and "enc.weight gets no gradient" in hint["title"] and ".detach()" in hint["title"]
    named = {nodes[i].get("name") for i in hint["nodes"] if i in nodes}
    assert {"enc.weight", "enc.bias"} <= named
    assert {"head.weight", "head.bias"}.isdisjoint(named)
    frozen = ENCODER_DETACHED.replace("head = nn.Linear(8, 1)\n", "head = nn.Linear(8, 1)\nenc.requires_grad_(False)\n")
    frozen = frozen.replace(".detach()", "")
    assert _codes(run(frozen, native=native)) == []


TARGET_NETWORK = H + """
q = nn.Linear(4, 2)
q_target = nn.Linear(4, 2)
q_target.load_state_dict(q.state_dict())
opt = torch.optim.SGD(PARAMS, lr=0.1)
s, s2, r = torch.randn(8, 4), torch.randn(8, 4), torch.randn(8)
for step in range(3):
    target = (r + 0.9 * q_target(s2).max(1).values).detach()
    pred = q(s).max(1).values
    loss = F.mse_loss(pred, target)
    opt.zero_grad(); loss.backward(); opt.step()
"""


@pytest.mark.parametrize("native", [True, False], ids=["core", "python"])
def test_a_target_network_no_optimizer_holds_is_cut_off_by_design(run: Any, native: bool) -> None:
    """A DQN's target network read through ``.detach()``: no gradient reaches it, and no
    optimizer holds it (NOTE [leaves an optimizer holds] in capture/library.py): no alarm. Given
    to the optimizer by mistake, the same cut starves parameters it means to train: named."""
    doc = run(TARGET_NETWORK.replace("PARAMS", "q.parameters()"), native=native)
    assert _codes(doc) == []
    held = {n["name"]: n.get("optimized") for n in doc["graph"]["nodes"] if n.get("role") == "leaf"}
    assert held == {"q.weight": True, "q.bias": True, "q_target.weight": None, "q_target.bias": None}
    both = run(TARGET_NETWORK.replace("PARAMS", "[*q.parameters(), *q_target.parameters()]"), native=native)
    hint = next(h for h in both["analysis"]["hints"] if h["code"] == "leaf-cut-off")
    assert "q_target.weight gets no gradient" in hint["title"], hint


@pytest.mark.parametrize("lesson", all_lessons(), ids=lambda lesson: lesson.stem)
def test_lessons_raise_only_the_hints_they_are_about(run: Any, lesson: Any) -> None:
    doc = run(lesson.code)
    assert _codes(doc) == LESSON_HINTS.get(lesson.stem, [])
    assert not (doc.get("analysis") or {}).get("nonfinite")  # no lesson makes a NaN or an inf
    assert (doc.get("analysis") or {}).get("badge") is None


def test_the_final_gradient_after_clipping_is_torchs(run: Any) -> None:
    """The document's final ``.grad`` is the clipped one torch holds (printed by the snippet),
    and the clipping line carries the note."""
    fires = CASES["grad-edited"][0] + "print([round(p.grad.norm().item(), 6) for p in model.parameters()])\n"
    doc = run(fires)
    printed = [float(x) for x in doc["stdout"].strip().strip("[]").split(",")]
    leaves = [n for n in doc["graph"]["nodes"] if n["kind"] == "tensor" and n.get("grad")]
    assert len(leaves) == len(printed) == 4
    for leaf, norm in zip(leaves, printed, strict=True):
        assert leaf["grad"]["stats"]["norm"] == pytest.approx(norm, rel=1e-5, abs=1e-6)
        assert leaf["grad_history"][-1]["stats"]["norm"] > norm  # backward's, before clipping
    hint = next(h for h in doc["analysis"]["hints"] if h["code"] == "grad-edited")
    assert hint["line"] == 8 and "clip_grad_norm_" in dict((e["label"], e["value"]) for e in hint["evidence"])["line"]


@pytest.mark.parametrize(("edit", "effect"), [("w.grad.mul_(0.5)", "norm scaled × 0.5"),
                                              ("w.grad.zero_()", "zeroed")])
def test_an_in_place_edit_of_grad_is_noted_with_its_line_and_effect(run: Any, edit: str, effect: str) -> None:
    """``.grad.mul_()`` and ``.grad.zero_()`` after backward: the final gradient is torch's, and
    the hint names the editing line and what it did."""
    code = (H + "w = torch.tensor([3.0, -4.0], requires_grad=True)\n(w * w).sum().backward()\n"
            f"{edit}\nprint(w.grad.tolist())\n")
    doc = run(code)
    leaf = next(n for n in doc["graph"]["nodes"] if n.get("name") == "w")
    torch_final = [float(x) for x in doc["stdout"].strip().strip("[]").split(",")]
    assert leaf["grad"]["values"] == pytest.approx(torch_final, abs=1e-6)
    hints = [h for h in doc["analysis"]["hints"] if h["code"] == "grad-edited"]
    assert hints and hints[0]["line"] == 7
    assert dict((e["label"], e["value"]) for e in hints[0]["evidence"])["effect"] == effect
