"""A parameter a node saved (layer norm's weight) is kept as it was when the node was made (NOTE
[a saved parameter copied] in capture/saved.py), so Explain works its rule out at every
iteration of a training loop, not only before the optimizer's first step: the kept weight of
each iteration is the weight a bare run had then, and every explained element equals the
gradient that really flowed."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from capture.tensor_oracle import recorded_run, same
from gradtrace.analysis.explain import explain_node
from gradtrace.analysis.kept import KeptTensors, saved_key

STEPS = 3
LOOP = f"""import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 6), nn.LayerNorm(6), nn.Tanh(), nn.Linear(6, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.5)
x = torch.randn(5, 4)
for step in range({STEPS}):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
"""


def _bare_weights() -> list[torch.Tensor]:
    """The layer norm's weight at each iteration's forward, in a run without gradtrace."""
    ns: dict[str, Any] = {}
    torch.manual_seed(0)
    seen: list[torch.Tensor] = []
    code = LOOP.replace("    loss = model(x)", "    seen.append(model[1].weight.detach().clone())\n    loss = model(x)")
    exec(compile(code, "<bare>", "exec"), {**ns, "seen": seen})
    return seen


@pytest.mark.parametrize("native", [True, False], ids=["core", "python"])
def test_layer_norms_weight_is_kept_and_explained_at_every_iteration(native: bool) -> None:
    doc, _, _ = recorded_run(LOOP, native=native)
    data = doc.tensor_bytes()
    assert data
    kept = KeptTensors.from_bytes(data)
    as_json = doc.model_dump(mode="json", by_alias=True)
    norms = [n for n in as_json["graph"]["nodes"] if n.get("name") == "NativeLayerNormBackward0"]
    assert len(norms) == STEPS
    weights = _bare_weights()
    assert not torch.equal(weights[0], weights[-1])  # the optimizer moved it: the case at hand
    leaf = next(n for n in as_json["graph"]["nodes"] if n.get("name") == "model.1.weight")
    assert same(doc.tensor(leaf["value"]["key"]), weights[0])  # what the first iteration read
    header = kept.header()
    for k, (n, want) in enumerate(zip(norms, weights, strict=True)):
        key = saved_key(n["id"], "weight")
        if k == 0:  # before the first backward pass: no step yet, nothing copied
            assert key not in header
            assert key not in {x["key"] for x in as_json["tensors"]["left_out"]}
        else:
            assert same(doc.tensor(key), want), n["id"]
        found = explain_node(as_json, n["id"], tensors=kept)
        inputs = [i for i in found["inputs"] if i.get("note") != "no gradient passed to this input"]
        assert inputs and all("value" in i for i in inputs), found
        for entry in inputs:  # an element of each, against the gradient that flowed there
            at = next(i for i in explain_node(as_json, n["id"], index=[0] * len(entry["shape"]),
                                              tensors=kept)["inputs"] if i["input_nr"] == entry["input_nr"])
            assert "recorded" in at
            assert abs(float(at["value"]) - float(at["recorded"])) <= 1e-5 * (1 + abs(float(at["recorded"])))
