"""The tensor file a saved HTML file carries (NOTE [tensors carried offline] in
backend/gradtrace/notebook/carried_tensors.py): whole within the budget; past it cut down by
slicing bytes, leaves first, then gradients, then forward outputs, every kept tensor bit-equal
to the run's (bfloat16 included), the cut file a safetensors file anyone opens."""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path

import pytest
import torch
from safetensors.torch import load

import gradtrace
from gradtrace.notebook.carried_tensors import tensor_slice, tensors_element, within_budget


def _run() -> gradtrace.RunDocument:
    with gradtrace.record() as rec:
        torch.manual_seed(0)
        w = torch.randn(16, 16, requires_grad=True)
        h = torch.randn(4, 16).to(torch.bfloat16) @ w.to(torch.bfloat16)
        (h.float().tanh() * 2).sum().backward()
    return rec.document()


def _size(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def test_within_the_budget_the_file_goes_whole() -> None:
    data = _run().tensor_bytes()
    assert data is not None
    carried, info = within_budget(data, len(data))
    assert carried is data and info["left_out_count"] == 0 and info["left_out_bytes"] == 0


def test_past_the_budget_leaves_first_then_gradients_then_outputs_bit_equal() -> None:
    doc = _run()
    data = doc.tensor_bytes()
    assert data is not None
    whole = load(data)
    leaves = {k: v for k, v in whole.items() if k.startswith("n") and not re.search(r"\.out\d+$", k)}
    grads = {k: v for k, v in whole.items() if k.startswith("e")}
    outputs = {k: v for k, v in whole.items() if re.search(r"\.out\d+$", k)}
    assert leaves and grads and outputs and any(v.dtype == torch.bfloat16 for v in whole.values())
    budget = sum(map(_size, leaves.values())) + sum(map(_size, grads.values()))
    carried, info = within_budget(data, budget)
    kept = load(carried)
    assert set(leaves) | set(grads) <= set(kept)
    assert info["bytes"] <= budget and info["count"] == len(kept)
    assert info["left_out_count"] == len(whole) - len(kept) > 0
    assert info["left_out_bytes"] == sum(_size(v) for k, v in whole.items() if k not in kept)
    def bits(t: torch.Tensor) -> torch.Tensor:
        return t.reshape(-1).view(torch.uint8)

    for k, v in kept.items():
        assert v.dtype == whole[k].dtype and torch.equal(bits(v), bits(whole[k])), k
    none, info0 = within_budget(data, 0)
    assert load(none) == {} and info0["left_out_count"] == len(whole)


def test_the_element_and_the_sliced_tensor() -> None:
    doc = _run()
    data = doc.tensor_bytes()
    assert data is not None
    element = tensors_element(data, budget=1 << 30)
    payload = re.search(r'id="gt-tensors" data-info="([^"]*)">([^<]*)</script>', element)
    assert payload is not None
    assert json.loads(html.unescape(payload.group(1)))["left_out_count"] == 0
    assert base64.b64decode(payload.group(2)) == data
    assert tensors_element(None) == ""
    key = next(k for k in load(data) if k.endswith(".out0"))
    dtype, shape, raw = tensor_slice(data, key)
    assert raw == doc.tensor(key).contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    assert shape == list(doc.tensor(key).shape) and dtype in ("F32", "BF16")
    with pytest.raises(KeyError, match="no such tensor"):
        tensor_slice(data, "__metadata__")
    with pytest.raises(ValueError, match="not a safetensors file"):
        tensor_slice(b"\xff" * 12, key)


def test_save_html_states_its_budget(tmp_path: Path) -> None:
    doc = _run()
    path = Path(doc.save_html(str(tmp_path / "a.html"), tensor_budget=1024))
    text = path.read_text()
    info = json.loads(html.unescape(re.search(r'id="gt-tensors" data-info="([^"]*)"', text).group(1)))  # type: ignore[union-attr]
    assert info["budget_bytes"] == 1024 and info["bytes"] <= 1024 and info["left_out_count"] > 0
