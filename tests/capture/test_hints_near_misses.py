"""Hints judge intent from the program: near misses taken from standard practice raise nothing
(accumulation, a GAN step with a detached fake, a frozen backbone, a gradient penalty,
truncated BPTT, GradScaler, the tutorials' training loops, an EMA teacher, tied weights,
checkpointing, batch norm, schedulers, clipped LSTMs, a VAE, logsumexp shifted by its
maximum by hand, a few steps of a linear regression), also with every number kept as
the service keeps it (the dynamics' hints read them); the real mistakes are said once per
pitfall and line, naming every tensor they concern."""

from __future__ import annotations

from typing import Any

import pytest

H = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\ntorch.manual_seed(0)\n"
MODEL = "model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))\n"
DATA = "x = torch.randn(16, 4)\ny = torch.randint(0, 2, (16,))\n"

NEAR_MISSES: dict[str, str] = {
    # one zero_grad, four micro-batches of a scaled loss, clipping, one step: how large batches train
    "accumulation": H + MODEL + DATA + "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nopt.zero_grad()\n"
        "for i in range(4):\n    loss = F.cross_entropy(model(x[i * 4:(i + 1) * 4]), y[i * 4:(i + 1) * 4]) / 4\n"
        "    loss.backward()\ntorch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\nopt.step()\n",
    # accumulation over k micro-batches inside an epoch loop that steps and zeroes every k
    "accumulation-every-k": H + MODEL + DATA + "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for epoch in range(2):\n    opt.zero_grad()\n    for i in range(2):\n"
        "        (F.cross_entropy(model(x[i * 8:(i + 1) * 8]), y[i * 8:(i + 1) * 8]) / 2).backward()\n"
        "    opt.step()\n",
    "gan-detached-fake": H + "G = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))\n"
        "D = nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))\n"
        "opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)\nopt_d = torch.optim.Adam(D.parameters(), lr=1e-3)\n"
        "bce = nn.BCEWithLogitsLoss()\nfor step in range(2):\n    real = torch.randn(8, 2) + 2\n"
        "    fake = G(torch.randn(8, 2))\n    opt_d.zero_grad()\n"
        "    loss_d = bce(D(real), torch.ones(8, 1)) + bce(D(fake.detach()), torch.zeros(8, 1))\n"
        "    loss_d.backward()\n    opt_d.step()\n    opt_g.zero_grad()\n"
        "    loss_g = bce(D(fake), torch.ones(8, 1))\n    loss_g.backward()\n    opt_g.step()\n",
    "frozen-backbone": H + "backbone = nn.Sequential(nn.Linear(4, 8), nn.ReLU())\nhead = nn.Linear(8, 2)\n"
        "for p in backbone.parameters():\n    p.requires_grad_(False)\n" + DATA
        + "opt = torch.optim.SGD(head.parameters(), lr=0.1)\nfor step in range(3):\n    opt.zero_grad()\n"
        "    loss = F.cross_entropy(head(backbone(x)), y)\n    loss.backward()\n    opt.step()\n",
    "gradient-penalty": H + "D = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))\n"
        "opt = torch.optim.Adam(D.parameters(), lr=1e-3)\nreal = torch.randn(8, 2)\nfake = torch.randn(8, 2)\n"
        "for step in range(2):\n    opt.zero_grad()\n    eps = torch.rand(8, 1)\n"
        "    mixed = (eps * real + (1 - eps) * fake).requires_grad_(True)\n"
        "    grad, = torch.autograd.grad(D(mixed).sum(), mixed, create_graph=True)\n"
        "    penalty = ((grad.norm(2, dim=1) - 1) ** 2).mean()\n"
        "    loss = D(fake).mean() - D(real).mean() + 10 * penalty\n    loss.backward()\n    opt.step()\n",
    "truncated-bptt": H + "rnn = nn.RNNCell(3, 5)\nhead = nn.Linear(5, 1)\n"
        "opt = torch.optim.SGD(list(rnn.parameters()) + list(head.parameters()), lr=0.1)\n"
        "xs = torch.randn(12, 2, 3)\nh = torch.zeros(2, 5)\nfor chunk in range(3):\n    h = h.detach()\n"
        "    opt.zero_grad()\n    for t in range(4):\n        h = rnn(xs[chunk * 4 + t], h)\n"
        "    loss = head(h).pow(2).mean()\n    loss.backward()\n    opt.step()\n",
    "grad-scaler": H + MODEL + DATA + "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "scaler = torch.amp.GradScaler('cpu')\nfor step in range(2):\n    opt.zero_grad()\n"
        "    with torch.autocast('cpu', dtype=torch.bfloat16):\n        loss = F.cross_entropy(model(x), y)\n"
        "    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n",
    # the quickstart tutorial's train loop: backward, step, then zero_grad at the end
    "tutorial-quickstart": H + "model = nn.Sequential(nn.Flatten(), nn.Linear(16, 12), nn.ReLU(), nn.Linear(12, 3))\n"
        "loss_fn = nn.CrossEntropyLoss()\noptimizer = torch.optim.SGD(model.parameters(), lr=1e-3)\n"
        "batches = [(torch.randn(4, 4, 4), torch.randint(0, 3, (4,))) for _ in range(3)]\n"
        "model.train()\nfor batch, (X, y) in enumerate(batches):\n    pred = model(X)\n    loss = loss_fn(pred, y)\n"
        "    loss.backward()\n    optimizer.step()\n    optimizer.zero_grad()\n",
    # the polynomial tutorial: manual updates under no_grad, gradients set to None after each
    "tutorial-polynomial": H + "x = torch.linspace(-3, 3, 50)\ny = torch.sin(x)\n"
        "a, b, c, d = (torch.randn((), requires_grad=True) for _ in range(4))\nfor t in range(5):\n"
        "    y_pred = a + b * x + c * x ** 2 + d * x ** 3\n    loss = (y_pred - y).pow(2).sum()\n"
        "    loss.backward()\n    with torch.no_grad():\n        for p in (a, b, c, d):\n"
        "            p -= 1e-6 * p.grad\n            p.grad = None\n",
    # a teacher model updated as an exponential moving average under no_grad (BYOL, mean teacher)
    "ema-teacher": H + "student = nn.Linear(4, 4)\nteacher = nn.Linear(4, 4)\n"
        "teacher.load_state_dict(student.state_dict())\nopt = torch.optim.SGD(student.parameters(), lr=0.1)\n"
        "x = torch.randn(8, 4)\nfor step in range(3):\n    with torch.no_grad():\n        target = teacher(x)\n"
        "    loss = F.mse_loss(student(x), target + 0.1)\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n"
        "    with torch.no_grad():\n        for pt, ps in zip(teacher.parameters(), student.parameters()):\n"
        "            pt.mul_(0.99).add_(ps, alpha=0.01)\n",
    # two heads on one encoder, the first backward keeping the graph for the second
    "two-losses-retain-graph": H + "enc = nn.Linear(4, 8)\nh1, h2 = nn.Linear(8, 1), nn.Linear(8, 3)\n"
        "x = torch.randn(5, 4)\nz = torch.relu(enc(x))\nl1 = h1(z).pow(2).mean()\n"
        "l2 = F.cross_entropy(h2(z), torch.tensor([0, 1, 2, 0, 1]))\nl1.backward(retain_graph=True)\nl2.backward()\n",
    # a language model's head tied to its embedding
    "weight-tying": H + "emb = nn.Embedding(20, 8)\nhead = nn.Linear(8, 20, bias=False)\nhead.weight = emb.weight\n"
        "ids = torch.randint(0, 20, (4, 6))\nlogits = head(torch.tanh(emb(ids)))\n"
        "F.cross_entropy(logits.view(-1, 20), ids.view(-1)).backward()\n",
    "activation-checkpointing": H + "from torch.utils.checkpoint import checkpoint\n"
        "blocks = nn.ModuleList([nn.Sequential(nn.Linear(16, 16), nn.GELU()) for _ in range(4)])\n"
        "x = torch.randn(4, 16, requires_grad=True)\nh = x\nfor b in blocks:\n"
        "    h = checkpoint(b, h, use_reentrant=False)\nh.sum().backward()\n",
    "cnn-batchnorm-momentum": H + "model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), "
        "nn.Flatten(), "
        "nn.Linear(4 * 6 * 6, 10))\nopt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)\n"
        "x, t = torch.randn(8, 1, 8, 8), torch.randint(0, 10, (8,))\nfor step in range(5):\n    opt.zero_grad()\n"
        "    loss = F.cross_entropy(model(x), t)\n    loss.backward()\n    opt.step()\n",
    "adamw-scheduler": H + "model = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 1))\n"
        "opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)\n"
        "sched = torch.optim.lr_scheduler.StepLR(opt, 2, 0.5)\nx, y = torch.randn(16, 8), torch.randn(16, 1)\n"
        "for step in range(6):\n    opt.zero_grad()\n    loss = F.mse_loss(model(x), y)\n    loss.backward()\n"
        "    opt.step()\n    sched.step()\n",
    # an LSTM over a short sequence, its gradients clipped before each step
    "lstm-clipped": H + "lstm = nn.LSTM(4, 8)\nhead = nn.Linear(8, 1)\n"
        "params = list(lstm.parameters()) + list(head.parameters())\n"
        "opt = torch.optim.SGD(params, lr=0.1)\nx, y = torch.randn(12, 2, 4), torch.randn(2, 1)\n"
        "for step in range(3):\n    out, _ = lstm(x)\n    loss = F.mse_loss(head(out[-1]), y)\n    opt.zero_grad()\n"
        "    loss.backward()\n    torch.nn.utils.clip_grad_norm_(params, 0.5)\n    opt.step()\n",
    # a straight-through clamp written as a custom Function
    "custom-function-ste": H + "class Clamp(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        ctx.save_for_backward(x)\n        return x.clamp(-1, 1)\n"
        "    @staticmethod\n    def backward(ctx, g):\n"
        "        x, = ctx.saved_tensors\n        return g * (x.abs() <= 1).to(g.dtype)\n"
        "x = torch.randn(10, requires_grad=True)\nClamp.apply(x * 3).sum().backward()\n",
    "vae-reparameterisation": H + "enc = nn.Linear(8, 4)\ndec = nn.Linear(2, 8)\nx = torch.randn(16, 8)\n"
        "h = enc(x)\nmu, logvar = h[:, :2], h[:, 2:]\nz = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)\n"
        "rec = F.mse_loss(dec(z), x, reduction='sum')\nkld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())\n"
        "(rec + kld).backward()\n",
    # eight Linear-BatchNorm-ReLU blocks trained with Adam: batch norm keeps the gradients level
    "deep-mlp-batchnorm": H + "layers = []\nfor i in range(8):\n"
        "    layers += [nn.Linear(32, 32), nn.BatchNorm1d(32), nn.ReLU()]\n"
        "model = nn.Sequential(*layers, nn.Linear(32, 1))\nopt = torch.optim.Adam(model.parameters(), 1e-3)\n"
        "x, y = torch.randn(64, 32), torch.randn(64, 1)\nfor step in range(5):\n    opt.zero_grad()\n"
        "    loss = F.mse_loss(model(x), y)\n    loss.backward()\n    opt.step()\n",
    # logsumexp's own trick by hand: the maximum subtracted first (detached, or kept), so
    # nothing overflows
    "logsumexp-shifted-by-max": H + "w = torch.randn(5, 3, requires_grad=True)\nz = torch.randn(7, 5) @ w\n"
        "m = z.max(dim=1, keepdim=True).values.detach()\n"
        "a = m + torch.log(torch.exp(z - m).sum(dim=1, keepdim=True))\nk = z.amax(0)\n"
        "b = k + torch.log(torch.exp(z - k).sum(0))\n(a.mean() + b.mean()).backward()\n",
    # few steps of a small model from its init: each weight moves by a good part of itself
    # while the loss falls
    "linear-regression-few-steps": H + "net = nn.Linear(4, 1)\nopt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
        "x, y = torch.randn(16, 4), torch.randn(16, 1)\nfor step in range(4):\n"
        "    loss = F.mse_loss(net(x), y)\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n",
}

# Info notes that say what torch holds rather than accuse: clipping and the scaler's unscale
# change .grad in place, and the page shows the value torch holds.
NOTES = {"grad-edited"}


def _hints(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return list((doc.get("analysis") or {}).get("hints", []))


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_standard_practice_raises_nothing(run: Any, name: str) -> None:
    doc = run(NEAR_MISSES[name])
    assert doc["status"] == "ok", doc.get("error")
    assert [h["code"] for h in _hints(doc) if h["code"] not in NOTES] == []


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_standard_practice_raises_nothing_with_every_number_kept(run: Any, name: str) -> None:
    # the dynamics' hints (dead ReLUs, saturation) read the kept outputs: the service keeps them
    doc = run(NEAR_MISSES[name], tensor_budget=256 << 20)
    assert doc["status"] == "ok", doc.get("error")
    assert doc["tensors"] is not None
    assert [h["code"] for h in _hints(doc) if h["code"] not in NOTES] == []


def test_stepping_between_passes_without_zeroing_is_said_once_naming_every_parameter(run: Any) -> None:
    code = H + MODEL + DATA + "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor i in range(4):\n" \
        "    loss = F.cross_entropy(model(x), y) / 4\n    loss.backward()\n    opt.step()\n"
    hints = [h for h in _hints(run(code)) if h["code"] == "grad-accumulated"]
    assert len(hints) == 1
    tensors = next(e["value"] for e in hints[0]["evidence"] if e["label"] == "tensors")
    assert tensors.split(", ") == [f"model.{i}.{w}" for i in (0, 2, 4) for w in ("weight", "bias")]
    assert hints[0]["line"] == 11


def test_a_pitfall_in_a_loop_is_said_once_with_its_iterations(run: Any) -> None:
    code = H + "lin = nn.Linear(4, 3)\nfor step in range(3):\n    p = F.softmax(lin(torch.randn(2, 4)), dim=1)\n" \
        "    loss = F.cross_entropy(p, torch.tensor([0, 2]))\n    loss.backward()\n"
    hints = [h for h in _hints(run(code)) if h["code"] == "double-softmax"]
    assert len(hints) == 1
    assert {"label": "occurrences", "value": "3 on this line (iterations 1–3)"} in hints[0]["evidence"]


def test_each_hand_written_formula_has_its_own_sentence(run: Any) -> None:
    code = H + "x = torch.randn(5, requires_grad=True)\na = torch.log(1 + x.abs())\nb = torch.exp(x) - 1\n" \
        "c = torch.log(torch.exp(x).sum())\n(a.sum() + b.sum() + c).backward()\n"
    messages = [h["message"] for h in _hints(run(code)) if h["code"] == "unstable-math"]
    assert len(messages) == 3 and len(set(messages)) == 3
    assert "logsumexp" in messages[2] and "1 + x" not in messages[2]
