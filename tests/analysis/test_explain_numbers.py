"""Explain works its rule out from the run's tensor file (NOTE [operands from the tensor file] in
``analysis/explain/operands.py``): numbers for at least 95% of the backward nodes of a small
GPT-like model, GRU-200 and every lesson, each instance equal to the gradient that really flowed
there (the kept gradient, bit-equal to a bare run's: tests/capture/test_tensor_oracle.py) and a
leaf's to torch's real ``.grad`` of a bare run."""

from __future__ import annotations

import math
import random
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from capture.tensor_oracle import recorded_run
from capture.test_tensor_oracle import GPT_LIKE, LESSONS
from gradtrace.analysis.explain import explain_node
from gradtrace.analysis.kept import KeptTensors
from programs import GRU_200

TOL = 1e-4
"""float32: a rule's float64 sum against the kernel's float32 one."""


@cache
def _recorded(code: str) -> tuple[dict[str, Any], KeptTensors | None]:
    doc, _, _ = recorded_run(code, native=True)
    data = doc.tensor_bytes()
    return doc.model_dump(mode="json", by_alias=True), (KeptTensors.from_bytes(data) if data else None)


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=TOL, abs_tol=TOL * 1e-2)


def coverage(code: str, *, sample: int | None = None) -> dict[str, Any]:
    """How many backward nodes Explain works out with numbers: ``strict``, every input a
    gradient reached; ``any``, at least one. Every instance is checked against the gradient
    the event recorded, at a random element."""
    doc, kept = _recorded(code)
    assert kept is not None, "the run kept no tensor file"
    last = {ev["node"]: ev for ev in doc["events"] if ev["phase"] == "backward"}
    ids = list(last)
    rng = random.Random(0)
    if sample is not None and len(ids) > sample:
        ids = rng.sample(ids, sample)
    strict = loose = checked = 0
    missing: dict[str, int] = {}
    for nid in ids:
        first = explain_node(doc, nid, tensors=kept)
        reached = [i for i in first["inputs"] if i.get("note") != "no gradient passed to this input"]
        worked = [i for i in reached if "value" in i]
        strict += bool(worked) and len(worked) == len(reached)
        loose += bool(worked)
        if not worked or len(worked) < len(reached):
            why = first.get("note") or next((i["note"] for i in reached if "note" in i), "?")
            missing[f"{first['op']}: {why}"] = missing.get(f"{first['op']}: {why}", 0) + 1
        for entry in worked:
            index = [rng.randrange(s) for s in entry["shape"]]
            at = next(i for i in explain_node(doc, nid, index=index, tensors=kept)["inputs"]
                      if i["input_nr"] == entry["input_nr"])
            assert at["index"] == index
            if "recorded" in at:
                # or the terms cancel, and Explain says the digits that differ are float32's rounding
                # (NOTE [terms that cancel] in analysis/explain/node.py)
                assert _close(float(at["value"]), float(at["recorded"])) or "cancels" in at, (nid, first["op"], at)
                checked += 1
    return {"nodes": len(ids), "strict": strict, "any": loose, "checked": checked, "missing": missing}


def test_gpt_like_has_numbers_at_95_percent_of_its_backward_nodes() -> None:
    c = coverage(GPT_LIKE)
    assert c["strict"] >= 0.95 * c["nodes"], c
    assert c["checked"] >= 0.9 * c["nodes"], c


def test_gru_200_has_numbers_at_95_percent_of_its_backward_nodes() -> None:
    # ``xs[t]`` (data without gradient, read by addmm) is in the tensor file as itself
    # (NOTE [saved tensors from no node] in capture/saved.py): every input a gradient reached
    c = coverage(GRU_200, sample=600)
    assert c["strict"] >= 0.95 * c["nodes"], c


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_every_lesson_has_numbers(lesson: Path) -> None:
    c = coverage(lesson.read_text())
    if lesson.stem == "15_compiled":
        # a compiled function's backward is one opaque node: no rule to work out
        assert c["any"] >= c["nodes"] - 1, c
        return
    assert c["any"] >= 0.95 * c["nodes"], c


def test_a_parameters_explained_gradient_is_torchs_real_grad() -> None:
    """AccumulateGrad's instance (what reaches ``.grad``) at random elements of every parameter
    of the GPT-like model, against ``.grad`` of a bare run (no gradtrace)."""
    doc, kept = _recorded(GPT_LIKE)
    torch.manual_seed(0)
    scope: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(GPT_LIKE, "<bare>", "exec"), scope)
    model = scope["model"]
    nodes = {n["id"]: n for n in doc["graph"]["nodes"]}
    behind = {e["target"]: e["source"] for e in doc["graph"]["edges"] if e.get("input_nr") is None}
    rng = random.Random(1)
    seen = 0
    for nid, node in nodes.items():
        if node["name"] != "AccumulateGrad":
            continue
        leaf = nodes[behind[nid]]
        real = model.get_parameter(str(leaf["name"]).removeprefix("model.")).grad
        for _ in range(3):
            index = [rng.randrange(s) for s in real.shape]
            entry = explain_node(doc, nid, index=index, tensors=kept)["inputs"][0]
            assert entry["index"] == index
            assert _close(float(entry["value"]), float(real[tuple(index)])), (leaf["name"], index, entry)
            seen += 1
    assert seen >= 3 * 20


SCALAR_OPERANDS = """import torch
torch.manual_seed(0)
w = torch.randn(3, 4, requires_grad=True)
t = torch.tensor(0.7, requires_grad=True)
s = torch.tensor(1.3, requires_grad=True)
y = (w / t) * s + w * t - s
y = y / y.norm() + w.sum() / t
(y ** 2).sum().backward()
"""
"""0-dim tensors broadcast against a matrix (a learned temperature, ``w / w.norm()``): each
one's gradient is the sum over every element that read it."""


def test_a_0_dim_operands_gradient_is_the_sum_over_what_read_it() -> None:
    c = coverage(SCALAR_OPERANDS)
    assert c["strict"] == c["nodes"] and c["checked"] >= c["nodes"], c
    doc, kept = _recorded(SCALAR_OPERANDS)
    scope: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(SCALAR_OPERANDS, "<bare>", "exec"), scope)
    nodes = {n["id"]: n for n in doc["graph"]["nodes"]}
    behind = {e["target"]: e["source"] for e in doc["graph"]["edges"] if e.get("input_nr") is None}
    seen = set()
    for nid, node in nodes.items():
        leaf = nodes.get(behind.get(nid, ""), {})
        if node["name"] == "AccumulateGrad" and leaf.get("name") in ("t", "s"):
            entry = explain_node(doc, nid, index=[], tensors=kept)["inputs"][0]
            assert _close(float(entry["value"]), float(scope[leaf["name"]].grad)), (leaf["name"], entry)
            seen.add(leaf["name"])
    assert seen == {"t", "s"}


SMALL_CNN = """import torch
from torch import nn
import torch.nn.functional as F
net = nn.Sequential(nn.Conv2d(2, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
                    nn.Conv2d(6, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
x, y = torch.randn(8, 2, 10, 10), torch.randn(8, 4)
for step in range(3):
    opt.zero_grad()
    loss = F.mse_loss(net(x), y)
    loss.backward()
    opt.step()
"""
"""conv + batch norm + ReLU + max pool + linear, MSE, three SGD steps: from the second step on
the convolutions' and batch norms' weights are not the values first met (the optimizer moved
them), so their rules read them refitted from the forward values (``explain/recover.py``)."""

SMALL_RESNET = """import torch
from torch import nn
import torch.nn.functional as F
class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1, self.n1 = nn.Conv2d(c, c, 3, padding=1), nn.GroupNorm(2, c)
        self.c2, self.n2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.GroupNorm(2, c)
    def forward(self, x):
        return F.silu(x + self.n2(self.c2(F.silu(self.n1(self.c1(x))))))
net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), Block(8), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(8 * 16, 5))
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
x, y = torch.randn(4, 3, 8, 8), torch.randint(0, 5, (4,))
for step in range(3):
    loss = F.cross_entropy(net(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
"""A residual block with group norm and SiLU, cross-entropy, three Adam steps."""


@pytest.mark.parametrize("code", [SMALL_CNN, SMALL_RESNET], ids=["cnn", "resnet"])
def test_conv_nets_have_numbers_at_95_percent_of_their_backward_nodes(code: str) -> None:
    c = coverage(code)
    assert c["strict"] >= 0.95 * c["nodes"], c
    assert c["checked"] >= 0.9 * c["nodes"], c


def test_a_conv_weight_is_refitted_only_where_the_patches_determine_it() -> None:
    """The refit gives torch's weight back from a float32 conv's input and output, and refuses
    (None, so the rule says the weight was not kept) where the patches do not determine it: an
    input constant along its width, or fewer output positions than weights."""
    from gradtrace.analysis.explain.recover import conv_weight

    torch.manual_seed(0)
    w, b = torch.randn(6, 2, 3, 3), torch.randn(6)

    def refit(x: torch.Tensor, pad: int = 1) -> Any:
        out = torch.nn.functional.conv2d(x, w, b, stride=(1, 2), padding=pad, groups=2)
        return conv_weight(x.double().numpy(), out.double().numpy(), tuple(w.shape), (1, 2), (pad, pad), (1, 1), 2)

    for x, pad in ((torch.randn(4, 4, 9, 9), 1), (torch.randn(4, 4, 9, 1).expand(4, 4, 9, 9).contiguous(), 1)):
        got = refit(x, pad)  # (the zero padding tells a constant row's taps apart)
        assert got is not None and np.allclose(got, w.double().numpy(), rtol=1e-4, atol=1e-5)
    assert refit(torch.randn(4, 4, 9, 1).expand(4, 4, 9, 9).contiguous(), 0) is None
    assert refit(torch.randn(1, 4, 2, 2)) is None


LAYER_NORM_ADAM = """import torch
from torch import nn
net = nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.GELU(), nn.Linear(8, 8), nn.LayerNorm(8, eps=1e-6),
                    nn.Linear(8, 2))
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
x, y = torch.randn(5, 6), torch.randn(5, 2)
for step in range(3):
    loss = (net(x) - y).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_layer_norm_whose_weight_moved_is_explained_from_a_refit() -> None:
    """After the first step Adam has moved the layer norms' weights: each one's rule reads its
    weight, mean and rstd refitted from its input and output (eps 1e-5 and 1e-6 both found)."""
    c = coverage(LAYER_NORM_ADAM)
    assert c["strict"] == c["nodes"], c
    assert c["checked"] >= 0.9 * c["nodes"], c


def test_a_layer_norm_refit_needs_two_rows_and_an_exact_fit() -> None:
    from gradtrace.analysis.explain.recover import layer_norm_refit

    torch.manual_seed(0)
    x, w, b = torch.randn(4, 6), torch.randn(6), torch.randn(6)
    out = torch.nn.functional.layer_norm(x, (6,), w, b, eps=1e-6)
    fit = layer_norm_refit(x.double().numpy(), out.double().numpy(), 6)
    assert fit is not None and np.allclose(fit[2], w.double().numpy(), rtol=1e-4, atol=1e-5)
    assert layer_norm_refit(x[:1].double().numpy(), out[:1].double().numpy(), 6) is None
    noisy = out.double().numpy() + 1e-3 * np.random.default_rng(0).standard_normal(out.shape)
    assert layer_norm_refit(x.double().numpy(), noisy, 6) is None


def test_a_bfloat16_autocast_loop_is_explained_in_the_dtype_its_kernels_pass_on() -> None:
    """Under CPU autocast the linear layers run in bfloat16: a rule's float64 value is rounded
    to bfloat16 where the gradient passed on is one (and a cast back to float32 rounds likewise),
    so every instance equals the recorded gradient."""
    from standard_programs import STANDARD

    c = coverage(STANDARD["autocast_cpu_bf16"])
    assert c["strict"] == c["nodes"] and c["checked"] >= c["nodes"], c


def test_rounding_to_a_half_dtype_is_torchs() -> None:
    from gradtrace.analysis.explain.ops import round_to

    values = torch.randn(2000, dtype=torch.float64) * 10
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        want = values.to(dtype).double().tolist()
        got = [round_to(v, str(dtype).removeprefix("torch.")) for v in values.tolist()]
        assert got == want, dtype


LSTM_PROGRAMS = {
    "one layer": """import torch
from torch import nn
torch.manual_seed(0)
m = nn.LSTM(3, 5)
x = torch.randn(4, 2, 3, requires_grad=True)
h0, c0 = torch.randn(1, 2, 5, requires_grad=True), torch.randn(1, 2, 5, requires_grad=True)
out, (h, c) = m(x, (h0, c0))
(out.pow(2).sum() + h.sum() * 0.5 + c.tanh().sum()).backward()
""",
    "bidirectional, batch first, two layers": """import torch
from torch import nn
torch.manual_seed(0)
m = nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)
x = torch.randn(2, 5, 3, requires_grad=True)
out, (h, c) = m(x)
(out[:, -1].sum() + c.pow(2).mean()).backward()
""",
    "no bias, last step only": """import torch
from torch import nn
torch.manual_seed(0)
m = nn.LSTM(2, 3, bias=False)
x = torch.randn(6, 1, 2, requires_grad=True)
out, _ = m(x)
out[-1].sum().backward()
""",
}
"""nn.LSTM on the CPU: each layer and direction one ``MkldnnRnnLayerBackward0`` (NOTE [an LSTM
layer's rule] in analysis/explain/rnn.py)."""
_LSTM_INPUTS = ("input", "weight_ih", "weight_hh", "bias_ih", "bias_hh", "hx", "cx")


@pytest.mark.parametrize("name", sorted(LSTM_PROGRAMS))
def test_an_lstm_layers_explained_gradients_are_torchs_real_grads(name: str) -> None:
    """Every element of every input an LSTM node passes a gradient to (input, weights, biases,
    initial state), worked out by backpropagation through time from the saved values, equals
    torch's ``.grad`` of a bare run: a layer's own weights read nothing else, and ``x`` and
    ``h0``/``c0`` get their gradient from the first layer's nodes alone (both directions summed)."""
    code = LSTM_PROGRAMS[name]
    c = coverage(code)
    assert c["strict"] == c["nodes"], c
    doc, kept = _recorded(code)
    scope: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(code, "<bare>", "exec"), scope)
    m = scope["m"]
    nodes = [n for n in doc["graph"]["nodes"] if n.get("name") == "MkldnnRnnLayerBackward0"]
    assert len(nodes) == m.num_layers * (2 if m.bidirectional else 1)
    by_dir: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    for node in nodes:  # creation order: layer by layer, forward direction first
        by_dir[bool(node["saved_args"]["reverse"])].append(node)
    x_grad = np.zeros(tuple(scope["x"].shape))
    compared = 0
    for reverse, layer_nodes in by_dir.items():
        for layer, node in enumerate(layer_nodes):
            first = explain_node(doc, node["id"], tensors=kept)
            suffix = f"_l{layer}" + ("_reverse" if reverse else "")
            for entry in first["inputs"]:
                if "value" not in entry:
                    continue
                shape = entry["shape"]
                got = np.array([float(explain_node(doc, node["id"], index=[int(i) for i in np.unravel_index(k, shape)],
                                                   tensors=kept)["inputs"][entry["input_nr"]]["value"])
                                for k in range(math.prod(shape))]).reshape(shape)
                what = _LSTM_INPUTS[entry["input_nr"]]
                if what == "input":
                    if layer == 0:  # layer 0's input is x, time first (nn.LSTM transposes a batch-first x)
                        x_grad += got.transpose(1, 0, 2) if m.batch_first else got
                    continue
                if what in ("hx", "cx"):
                    leaf = scope.get("h0" if what == "hx" else "c0")
                    if leaf is None:
                        continue
                    real = leaf.grad[layer * (2 if m.bidirectional else 1) + int(reverse)].numpy()
                else:
                    real = getattr(m, what + suffix).grad.numpy()
                assert np.allclose(got, real, rtol=TOL, atol=TOL * 1e-2), (node["id"], what, got, real)
                compared += 1
    assert np.allclose(x_grad, scope["x"].grad.numpy(), rtol=TOL, atol=TOL * 1e-2), (x_grad, scope["x"].grad)
    assert compared >= 2 * len(nodes)
