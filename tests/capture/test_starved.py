"""Every parameter or leaf that ends with no gradient is listed with what starved it (unused,
cut, frozen), checked against the ``.grad`` torch holds at the end of the bare run."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

H = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\ntorch.manual_seed(0)\n"
CLASS = "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"

PROGRAMS: dict[str, tuple[str, dict[str, tuple[str, int | None]]]] = {
    "unused-layer": (H + CLASS + "        self.a = nn.Linear(2, 2)\n        self.b = nn.Linear(2, 2)\n"
                     "    def forward(self, x):\n        return self.a(x)\nm = M()\n"
                     "m(torch.randn(3, 2)).sum().backward()\n",
                     {"m.b.weight": ("unused", None), "m.b.bias": ("unused", None)}),
    "data-in-forward": (H + CLASS + "        self.w = nn.Parameter(torch.randn(2, 2))\n"
                        "        self.b = nn.Parameter(torch.zeros(2))\n    def forward(self, x):\n"
                        "        return x @ self.w.data + self.b\nm = M()\nm(torch.randn(3, 2)).sum().backward()\n",
                        {"m.w": ("cut", 11)}),
    "detach": (H + "w = torch.randn(3, requires_grad=True)\nv = torch.randn(3, requires_grad=True)\n"
               "h = (w * 2).detach()\n(h * v).sum().backward()\n", {"w": ("cut", 7)}),
    "frozen": (H + "net = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))\nnet[0].requires_grad_(False)\n"
               "net(torch.randn(3, 2)).sum().backward()\n", {"net.0.weight": ("frozen", None),
                                                             "net.0.bias": ("frozen", None)}),
    "item-rebuild": (H + "lin = nn.Linear(2, 1)\nloss = lin(torch.randn(3, 2)).pow(2).mean()\n"
                     "loss = torch.tensor(loss.item(), requires_grad=True)\nloss.backward()\n",
                     {"lin.weight": ("cut", 7), "lin.bias": ("cut", 7)}),
    "all-fed": (H + "net = nn.Sequential(nn.Linear(2, 2), nn.Tanh(), nn.Linear(2, 1))\n"
                "net(torch.randn(3, 2)).sum().backward()\n", {}),
}


def _bare_without_grad(code: str) -> set[str]:
    """The parameters and named leaves that hold no .grad after the bare run (torch's answer)."""
    ns: dict[str, Any] = {}
    exec(compile(code, "<bare>", "exec"), ns)
    out = set()
    for name, value in ns.items():
        if isinstance(value, nn.Module) and not name.startswith("_"):
            out |= {f"{name}.{p}" for p, t in value.named_parameters() if t.grad is None}
        elif isinstance(value, torch.Tensor) and value.is_leaf and value.requires_grad and value.grad is None \
                and name not in ("loss",):
            out.add(name)
    return out


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_starved_leaves_are_torchs_and_say_why(run: Any, name: str) -> None:
    code, expected = PROGRAMS[name]
    doc = run(code)
    listed = {s["name"]: (s["reason"], s["line"]) for s in (doc.get("analysis") or {}).get("starved") or []}
    assert listed == expected
    assert set(listed) == _bare_without_grad(code)


def test_the_item_rebuild_is_said_as_a_cut(run: Any) -> None:
    hints = run(PROGRAMS["item-rebuild"][0])["analysis"]["hints"]
    assert [h["code"] for h in hints] == ["requires-grad-after-cut"] and hints[0]["line"] == 7


def test_python_reads_the_list_from_the_document(run: Any) -> None:
    from gradtrace.schema import RunDocument

    doc = RunDocument.model_validate(run(PROGRAMS["frozen"][0]))
    assert doc.analysis is not None and doc.analysis.starved is not None
    assert [(s.name, s.reason) for s in doc.analysis.starved] == [("net.0.weight", "frozen"), ("net.0.bias", "frozen")]


def test_a_parameter_read_through_data_in_forward_gets_its_hint(run: Any) -> None:
    hints = run(PROGRAMS["data-in-forward"][0])["analysis"]["hints"]
    assert [(h["code"], h["line"]) for h in hints] == [("leaf-cut-off", 11)]
    assert hints[0]["title"] == "m.w gets no gradient: read through .data at line 11"
    assert [h["code"] for h in run(PROGRAMS["unused-layer"][0]).get("analysis", {}).get("hints", [])] == []
