"""Folded checks, checkpoint recomputation and forward-mode AD through the real service and
sandbox: the documents validate on the web process's fast path and keep what capture wrote."""

from __future__ import annotations

import httpx

from gradtrace.schema import RunDocument

GRADCHECK = """import torch
x = torch.randn(3, dtype=torch.double, requires_grad=True)
print(torch.autograd.gradcheck(torch.sin, (x,)))
print(torch.autograd.gradcheck(lambda t: t.detach() ** 2, (x,), raise_exception=False))
(x.sin().sum()).backward()
"""

CHECKPOINT = """import torch
from torch import nn
from torch.utils.checkpoint import checkpoint
net = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.1), nn.Linear(4, 2))
x = torch.randn(2, 3, requires_grad=True)
checkpoint(net, x, use_reentrant=True).sum().backward()
print(sorted(k for k, p in net.named_parameters() if p.grad is not None))
"""

FORWARD_AD = """import torch
import torch.autograd.forward_ad as fwAD
with fwAD.dual_level():
    d = fwAD.make_dual(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0]))
    y = d * d
    print(fwAD.unpack_dual(y).tangent)
"""


def _run(api: httpx.Client, code: str) -> dict:
    r = api.post("/api/runs", json={"code": code})
    assert r.status_code == 200, r.text
    doc = r.json()
    RunDocument.model_validate(doc)
    return doc


def test_a_gradcheck_in_the_service_is_folded_with_its_verdicts(api: httpx.Client) -> None:
    doc = _run(api, GRADCHECK)
    assert doc["status"] == "ok" and doc["stdout"].startswith("True\n")
    assert [(f["line"], f["verdict"]) for f in doc["folded"]] == [(3, "passed"), (4, "failed")]
    assert [p["line"] for p in doc["passes"]] == [5]


def test_a_reentrant_checkpoint_in_the_service_shows_every_parameter(api: httpx.Client) -> None:
    doc = _run(api, CHECKPOINT)
    assert doc["status"] == "ok"
    names = {n["name"] for n in doc["graph"]["nodes"] if n["kind"] == "tensor" and n["grad"]}
    assert {"net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias", "x"} <= names, names
    assert [p.get("within") for p in doc["passes"]] == [None, 0]
    assert "train-mode-in-eval" not in [h["code"] for h in (doc.get("analysis") or {}).get("hints", [])]


def test_forward_ad_in_the_service_carries_its_tangents(api: httpx.Client) -> None:
    doc = _run(api, FORWARD_AD)
    assert doc["status"] == "ok"
    steps = doc["tangents"]
    assert [s["op"] for s in steps] == ["make_dual", "mul"]
    assert steps[1]["tangent"]["values"] == [2.0, 4.0] and steps[1]["name"] == "y"
