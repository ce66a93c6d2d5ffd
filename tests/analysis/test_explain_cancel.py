"""NOTE [terms that cancel] in analysis/explain/node.py: where a rule's terms cancel to about 0 (a
convolution's bias before batch norm), Explain says that float32 rounding decides the digits of
both its float64 value and the kernel's; where the terms do not cancel (the same node's weight,
a bias with no batch norm after it) it says nothing of the kind."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from capture.tensor_oracle import recorded_run
from gradtrace.analysis.explain import explain_node
from gradtrace.analysis.kept import KeptTensors

BEFORE_BN = """import torch
import torch.nn as nn
torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
x = torch.randn(16, 3, 12, 12)
loss = net(x).pow(2).mean()
loss.backward()
"""
NO_BN = BEFORE_BN.replace("nn.BatchNorm2d(8), ", "")


def _explained(code: str, channel: int) -> dict[int, dict[str, Any]]:
    doc, _, _ = recorded_run(code, native=True)
    kept = KeptTensors.from_bytes(doc.tensor_bytes())
    d = doc.model_dump(mode="json", by_alias=True)
    nid = next(n["id"] for n in d["graph"]["nodes"] if n.get("name") == "ConvolutionBackward0")
    return {i["input_nr"]: i for i in explain_node(d, nid, index=[channel], tensors=kept)["inputs"]}


def _bare_bias(code: str) -> tuple[torch.Tensor, torch.Tensor]:
    """torch's own float32 bias gradient (``.grad``: the kernel's sum), and the sum of the same
    terms (the gradient at the convolution's output) in float64."""
    ns: dict[str, Any] = {"__name__": "__main__"}
    grads: list[torch.Tensor] = []
    ns["grads"] = grads
    exec(compile(code.replace("loss.backward()", "out = net[0](x); out.register_hook(grads.append)\n"
                              "loss = net[1:](out).pow(2).mean() if len(net) > 1 else out.pow(2).mean()\n"
                              "loss.backward()"), "<bare>", "exec"), ns)
    return ns["net"][0].bias.grad, grads[0].double().sum(dim=(0, 2, 3))


def test_a_bias_before_batch_norm_cancels_and_explain_says_so() -> None:
    float32, float64 = _bare_bias(BEFORE_BN)
    differ = 0
    for channel in range(8):
        bias = _explained(BEFORE_BN, channel)[2]
        # the numbers are torch's: the kernel's float32 sum, the rule's float64 sum of the same terms
        assert bias["recorded"] == pytest.approx(float(float32[channel]), rel=1e-6, abs=1e-15)
        assert bias["value"] == pytest.approx(float(float64[channel]), rel=1e-6, abs=1e-15)
        if abs(bias["value"] - bias["recorded"]) > 1e-3 * abs(bias["recorded"]):
            differ += 1
            assert bias["cancels"].startswith("the terms cancel: their sizes add up to "), bias
        else:  # a kernel whose rounding happened to land close: nothing to explain
            assert "cancels" not in bias, bias
    assert differ >= 4, "rounding noise this small differs in most channels: the test must see it"


@pytest.mark.parametrize("channel", [0, 3, 5])
def test_terms_that_do_not_cancel_get_no_such_note(channel: int) -> None:
    with_bn = _explained(BEFORE_BN, channel)
    assert "cancels" not in with_bn[1]  # the weight's gradient: its terms do not cancel
    bias = _explained(NO_BN, channel)[2]
    assert "cancels" not in bias and bias["value"] == pytest.approx(bias["recorded"], rel=1e-4)


def test_terms_that_cancel_to_a_small_result_are_said_to_agree_within_their_rounding() -> None:
    """A Gaussian process's kernel scaled by a 0-dim variance: the variance's gradient sums a
    hundred terms of a few units each to about -0.011, where the float64 sum and the kernel's
    float32 one differ in the fourth digit. Explain says so, and how far apart they are, and
    not that both are noise around 0; the kernel's value is torch's own ``.grad`` path."""
    from standard_programs import STANDARD

    doc, _, _ = recorded_run(STANDARD["gp_marginal_likelihood"], native=True)
    kept = KeptTensors.from_bytes(doc.tensor_bytes())
    d = doc.model_dump(mode="json", by_alias=True)
    notes = []
    for node in d["graph"]["nodes"]:
        if node.get("name") != "MulBackward0":
            continue
        for entry in explain_node(d, node["id"], index=[], tensors=kept)["inputs"]:
            if entry.get("shape") == [] and "cancels" in entry:
                notes.append(entry)
    assert notes
    for entry in notes:
        value, recorded = float(entry["value"]), float(entry["recorded"])
        assert 1e-4 * abs(recorded) < abs(value - recorded) < 1e-2 * abs(recorded), entry
        assert "within that rounding" in entry["cancels"] and "noise around 0" not in entry["cancels"]
