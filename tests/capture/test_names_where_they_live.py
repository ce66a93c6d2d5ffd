"""A tensor is named by where it lives (module path, list index, dict key), never by a loop's
leftover variable (NOTE [where a tensor lives] in capture/frames.py), on both kernel sets; the
paths are checked against the program's own objects, run bare."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

BOTH = pytest.mark.parametrize("native", [False, True], ids=["python", "core"])

LOOPS = """\
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
for k, p in model.named_parameters():
    print(k, tuple(p.shape))
ws = [torch.randn(2, requires_grad=True) for _ in range(4)]
d = {"a": torch.randn(2, requires_grad=True), "b": torch.randn(2, requires_grad=True)}
for w in ws:
    pass
for key, v in d.items():
    pass
loss = model(torch.randn(2, 3)).sum() + sum((w * w).sum() for w in ws) + d["a"].sum() * d["b"].sum()
loss.backward()
"""


def _bare(code: str) -> dict[str, Any]:
    ns: dict[str, Any] = {"torch": torch, "nn": nn}
    exec(compile(code, "<bare>", "exec"), ns)
    return ns


def _truth(ns: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Every leaf by where it lives in the bare run's namespace."""
    out = {f"model.{k}": p for k, p in ns["model"].named_parameters()}
    out.update({f"ws[{i}]": w for i, w in enumerate(ns["ws"])})
    out.update({f"d[{k!r}]": v for k, v in ns["d"].items()})
    return out


@BOTH
def test_leaves_are_named_where_they_live_not_by_a_loop_variable(run: Any, native: bool) -> None:
    doc = run(LOOPS, native=native)
    assert doc["status"] == "ok", doc["error"]
    leaves = {n["name"]: n for n in doc["graph"]["nodes"] if n["kind"] == "tensor" and n["role"] == "leaf"}
    truth = _truth(_bare(LOOPS))
    assert set(leaves) == set(truth)
    for name, t in truth.items():  # each name holds that very tensor's gradient
        assert t.grad is not None
        torch.testing.assert_close(torch.tensor(leaves[name]["grad"]["values"]), t.grad)


@BOTH
def test_a_plain_variable_still_names_its_tensor(run: Any, native: bool) -> None:
    """Near-miss: a variable that is no loop's target keeps naming its tensor, also when the
    tensor lives in a list too; a loop variable names what nothing else reaches."""
    code = ("w0 = torch.randn(2, requires_grad=True)\nws = [w0]\n"
            "for i in range(2):\n    u = torch.randn(2, requires_grad=True)\n"
            "(w0 * u).sum().backward()\n")
    doc = run(code, native=native)
    names = sorted(n["name"] for n in doc["graph"]["nodes"] if n["kind"] == "tensor" and n["role"] == "leaf")
    assert names == ["u", "w0"]
