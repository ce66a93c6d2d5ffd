"""ORACLE: the dynamics series (``Analysis.dynamics``, analysis/dynamics/) equal what torch
computes in the same loop, on a 20-step Adam loop and a 3-layer tanh MLP trained by hand with
SGD: ‖p.grad‖ after each backward, ‖Δp‖/‖p‖ around each step, the saturated (|tanh| > 0.97)
and dead (ReLU output exactly 0) shares of the real activations; on both kernel sets."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

import gradtrace

NATIVE = [True, False]
RTOL = 1e-5


def _close(mine: Any, torch_value: float, rtol: float = RTOL) -> bool:
    return mine is not None and math.isclose(float(mine), torch_value, rel_tol=rtol, abs_tol=1e-7)


def adam_loop(record: bool, native: bool = True) -> tuple[Any, dict[str, Any]]:
    """A 20-step Adam loop on a ReLU MLP; what torch says about it, step by step."""
    torch.manual_seed(0)
    truth: dict[str, Any] = {"grad": {}, "ratio": {}, "dead": [], "loss": []}
    ctx = gradtrace.record(native=native) if record else None
    rec = ctx.__enter__() if ctx else None
    try:
        model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        x, y = torch.randn(32, 6), torch.randn(32, 1)
        names = {f"model.{k}": p for k, p in model.named_parameters()}
        for _ in range(20):
            opt.zero_grad()
            h = model[1](model[0](x))
            loss = ((model[2](h) - y) ** 2).mean()
            loss.backward()
            with torch.no_grad():
                truth["dead"].append(float((h == 0).sum()) / h.numel())
                truth["loss"].append(float(loss))
                before = {k: p.detach().clone() for k, p in names.items()}
                for k, p in names.items():
                    truth["grad"].setdefault(k, []).append(float(p.grad.norm()))
            opt.step()
            with torch.no_grad():
                for k, p in names.items():
                    truth["ratio"].setdefault(k, []).append(
                        float((p - before[k]).norm()) / float(before[k].norm()))
    finally:
        if ctx:
            ctx.__exit__(None, None, None)
    return (rec.document() if rec else None), truth


def tanh_by_hand(native: bool) -> tuple[Any, dict[str, Any]]:
    """A 3-layer tanh MLP trained by hand: ``p -= lr * p.grad`` under no_grad."""
    torch.manual_seed(1)
    truth: dict[str, Any] = {"grad": {}, "ratio": {}, "sat": [[], []], "loss": []}
    with gradtrace.record(native=native) as rec:
        W1 = (torch.randn(5, 12) * 1.5).requires_grad_()
        W2 = (torch.randn(12, 12) * 0.9).requires_grad_()
        W3 = (torch.randn(12, 1) * 0.3).requires_grad_()
        params = {"W1": W1, "W2": W2, "W3": W3}
        x, y = torch.randn(24, 5), torch.randn(24, 1)
        for _ in range(8):
            h1 = torch.tanh(x @ W1)
            h2 = torch.tanh(h1 @ W2)
            loss = ((h2 @ W3 - y) ** 2).mean()
            for p in params.values():
                p.grad = None
            loss.backward()
            with torch.no_grad():
                truth["loss"].append(float(loss))
                for i, h in enumerate((h1, h2)):
                    truth["sat"][i].append(float((h.abs() > 0.97).sum()) / h.numel())
                for k, p in params.items():
                    truth["grad"].setdefault(k, []).append(float(p.grad.norm()))
                    before = p.detach().clone()
                    p -= 0.5 * p.grad
                    truth["ratio"].setdefault(k, []).append(float((p - before).norm()) / float(before.norm()))
    return rec.document(), truth


def _params(doc: Any) -> dict[str, Any]:
    dyn = doc.analysis.dynamics
    assert dyn is not None
    return {p.name: p for p in dyn.params}


@pytest.mark.parametrize("native", NATIVE, ids=["core", "python"])
def test_adam_loop_series_equal_torchs(native: bool) -> None:
    doc, truth = adam_loop(True, native)
    dyn = doc.analysis.dynamics
    assert len(dyn.iterations) == 20 and dyn.threshold == 0.97
    params = _params(doc)
    assert list(params) == ["model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"]  # network order
    for name, p in params.items():
        assert p.module == name.rsplit(".", 1)[0]
        assert all(_close(m, t) for m, t in zip(p.grad_norm, truth["grad"][name], strict=True)), name
        want = [math.log10(r) for r in truth["ratio"][name]]
        assert all(_close(m, t, 1e-4) for m, t in zip(p.update, want, strict=True)), (name, p.update, want)
        g = doc.tensor(f"{p.node}.gh3").detach().abs()
        assert _close(p.grad_mean[3], float(g.mean())) and _close(p.grad_max[3], float(g.max()))
    (relu,) = dyn.layers
    assert relu.kind == "relu" and relu.module == "model.1"
    assert all(_close(m, t) for m, t in zip(relu.share, truth["dead"], strict=True))
    assert all(_close(m, t) for m, t in zip(dyn.loss, truth["loss"], strict=True))
    rows = doc.dynamics
    rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    assert len(rows) == 20 * (1 + 4 + 1)
    w = [r for r in rows if r["series"] == "param" and r["name"] == "model.0.weight"]
    assert [r["iteration"] for r in w] == list(range(20))
    assert _close(w[7]["grad_norm"], truth["grad"]["model.0.weight"][7])


@pytest.mark.parametrize("native", NATIVE, ids=["core", "python"])
def test_tanh_mlp_by_hand_series_equal_torchs(native: bool) -> None:
    doc, truth = tanh_by_hand(native)
    dyn = doc.analysis.dynamics
    params = _params(doc)
    assert list(params) == ["W1", "W2", "W3"]
    for name, p in params.items():
        assert p.module is None
        assert all(_close(m, t) for m, t in zip(p.grad_norm, truth["grad"][name], strict=True)), name
        want = [math.log10(r) for r in truth["ratio"][name]]
        assert all(_close(m, t, 1e-4) for m, t in zip(p.update, want, strict=True)), (name, p.update, want)
    assert [layer.kind for layer in dyn.layers] == ["tanh", "tanh"]
    for layer, want in zip(dyn.layers, truth["sat"], strict=True):
        assert all(_close(m, t) for m, t in zip(layer.share, want, strict=True)), (layer.share, want)
    assert any(s > 0.2 for s in truth["sat"][0])  # the test sees real saturation, not zeros
    assert all(_close(m, t) for m, t in zip(dyn.loss, truth["loss"], strict=True))


def test_both_kernel_sets_write_the_same_value_steps() -> None:
    a, _ = adam_loop(True, True)
    b, _ = adam_loop(True, False)
    steps = [[s.model_dump() for s in (n.value_steps or [])] for n in a.graph.nodes]
    assert steps == [[s.model_dump() for s in (n.value_steps or [])] for n in b.graph.nodes]
    assert sum(map(len, steps)) == 4 * 20
    np.testing.assert_equal(a.analysis.dynamics.model_dump(), b.analysis.dynamics.model_dump())


def test_the_tensor_files_bytes_alone_give_the_same_series() -> None:
    """The web process has the file's bytes, not the tensors (analysis/dynamics/read.py)."""
    from gradtrace.analysis import analyze
    from gradtrace.analysis.dynamics import file_reader

    doc, _ = tanh_by_hand(True)
    data = doc.tensor_bytes()
    found = analyze(doc.as_json_dict(), file_reader(data))
    assert found is not None and found["dynamics"] == doc.analysis.dynamics.model_dump(mode="json")
    assert file_reader(b"\x08\x00\x00\x00\x00\x00\x00\x00not json") is None
    without = analyze(doc.as_json_dict())
    assert without is not None and without["dynamics"]["layers"] == []  # no file: the shares are not guessed
