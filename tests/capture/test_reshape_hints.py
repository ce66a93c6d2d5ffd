"""``view-not-permute`` (NOTE [a view that was meant as a transpose] in
analysis/hints/reshape.py) against torch's own values: the view's rows are runs of memory, not
the input's dims swapped; reshapes that split or merge dims stay silent."""

from __future__ import annotations

from typing import Any

import pytest

H = "import torch\nimport torch.nn as nn\ntorch.manual_seed(0)\n"

MIXER = H + """
class Mixer(nn.Module):
    def __init__(self, t=8, c=16):
        super().__init__()
        self.token_mlp = nn.Linear(t, t)
        self.channel_mlp = nn.Linear(c, c)
    def forward(self, x):
        x = self.channel_mlp(x)
        y = x.view(x.shape[0], x.shape[2], x.shape[1])
        return self.token_mlp(y).mean()
m = Mixer()
loss = m(torch.randn(4, 8, 16))
loss.backward()
"""

HEADS = H + """
B, T, C, nh = 2, 5, 16, 4
qkv = nn.Linear(C, 3 * C)
x = torch.randn(B, T, C)
q, k, v = qkv(x).split(C, dim=2)
q, k, v = (t.view(B, T, nh, C // nh).transpose(1, 2) for t in (q, k, v))
y = torch.softmax(q @ k.transpose(-2, -1) / 2.0, dim=-1) @ v
y = y.transpose(1, 2).contiguous().view(B, T, C)
y.sum().backward()
"""

FLATTEN = H + """
conv = nn.Conv2d(3, 8, 3)
out = conv(torch.randn(2, 3, 10, 10))
flat = out.view(out.shape[0], -1)
square = out.reshape(2, 8, 8, 8)
(flat.sum() + square.sum()).backward()
"""


def test_a_view_that_reorders_dims_is_named_as_torch_lays_it_out(run: Any) -> None:
    import torch

    x = torch.randn(4, 8, 16)
    viewed, swapped = x.view(4, 16, 8), x.transpose(1, 2)
    assert torch.equal(swapped[0, 3], x[0, :, 3]) and not torch.equal(viewed[0, 3], x[0, :, 3])
    assert torch.equal(viewed[0, 3], x.reshape(-1)[3 * 8:4 * 8])  # the next 8 elements of memory
    doc = run(MIXER)
    hint = next(h for h in doc["analysis"]["hints"] if h["code"] == "view-not-permute")
    line = next(i for i, t in enumerate(MIXER.splitlines(), 1) if ".view(" in t)
    node = next(n for n in doc["graph"]["nodes"] if n["id"] in hint["nodes"])
    assert hint["line"] == line and node["name"] == "ViewBackward0" and node["shape"] == [4, 16, 8]
    assert "x.permute(0, 2, 1)" in hint["fix"]
    fixed = MIXER.replace("x.view(x.shape[0], x.shape[2], x.shape[1])", "x.transpose(1, 2)")
    assert "view-not-permute" not in [h["code"] for h in (run(fixed).get("analysis") or {}).get("hints", [])]


@pytest.mark.parametrize("program", [HEADS, FLATTEN], ids=["attention-heads", "flatten"])
def test_views_that_split_or_merge_dims_stay_silent(run: Any, program: str) -> None:
    doc = run(program)
    assert doc["status"] == "ok"
    assert any(n["name"] == "ViewBackward0" for n in doc["graph"]["nodes"])
    assert "view-not-permute" not in [h["code"] for h in (doc.get("analysis") or {}).get("hints", [])]
