"""A leaf's ``.grad`` that the program edits in place keeps every history entry in the tensor
file (NOTE [held gradients copied before a write] in capture/cxx/tap.h): each ``.grad``
history entry and each edit's value is bit for bit the ``.grad`` torch had at that moment in a
bare run of the same program, on both kernel sets, and nothing is left out as ``changed``.

The oracle is torch itself: the program run bare in this process, statement by statement, with
a clone of every parameter's ``.grad`` taken by torch's own post-accumulate hook (each
accumulation) and after each statement that changed it (each edit)."""

from __future__ import annotations

import ast
from typing import Any

import numpy as np
import pytest
import torch
from safetensors.torch import load
from torch import nn

from rundoc import parsed, run_captured

BUDGET = 64 << 20

HEAD = """import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
x = torch.randn(16, 4)
loss = model(x).pow(2).mean() * 50
loss.backward()
"""

AGAIN = "loss = model(x).pow(2).mean() * 50\nloss.backward()\n"

EDITS = {
    "clip_grad_norm": "torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)\n",
    "mul": "for p in model.parameters():\n    p.grad.mul_(0.5)\n",
    "clamp": "for p in model.parameters():\n    p.grad.clamp_(-1, 1)\n",
    "clip_grad_value": "torch.nn.utils.clip_grad_value_(model.parameters(), 0.1)\n",
    "weight_decay": "for p in model.parameters():\n    p.grad.add_(0.01 * p.detach())\n",
    "foreach_mul": "torch._foreach_mul_([p.grad for p in model.parameters()], 0.25)\n",
    "through_a_view": "model[0].weight.grad[:, 1].mul_(3.0)\nmodel[2].weight.grad.view(-1)[:4].zero_()\n",
    "data": "for p in model.parameters():\n    p.grad.data.mul_(0.5)\n",
    "accumulate": AGAIN,
    "zero_then_accumulate": ("opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                             "opt.zero_grad(set_to_none=False)\n" + AGAIN),
    "clip_then_accumulate": "torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)\n" + AGAIN,
    "sgd_momentum_step": ("opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=True)\n"
                          "opt.step()\n"
                          "opt.zero_grad(set_to_none=False)\n" + AGAIN + "opt.step()\n"),
    "grad_scaler_unscale": ("opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                            "scaler = torch.amp.GradScaler('cpu')\n"
                            "opt.zero_grad()\n"
                            "with torch.autocast('cpu', dtype=torch.bfloat16):\n"
                            "    loss = model(x).float().pow(2).mean()\n"
                            "scaler.scale(loss).backward()\n"
                            "scaler.unscale_(opt)\n"
                            "scaler.step(opt)\n"),
    # a second backward whose forward is run again inside it: discovery reads the recomputed
    # nodes' saved values while the first backward's .grad is held (a stepped slice over the
    # values' limit: the core makes it contiguous itself, NOTE [the core's lock passes by the
    # tap] in capture/cxx/core.h)
    "reentrant_checkpoint": ("from torch.utils.checkpoint import checkpoint\n"
                             "big = torch.randn(1200, 4, requires_grad=True)[::2]\n"
                             "loss = checkpoint(model, big, use_reentrant=True).pow(2).mean()\n"
                             "loss.backward()\n"),
    "adam_fused_step": ("opt = torch.optim.Adam(model.parameters(), lr=0.01, fused=True)\n"
                        "torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)\n"
                        "opt.step()\n"),
}

BOTH = pytest.mark.parametrize("native", [True, False], ids=["core", "python"])


def _bare(code: str) -> dict[str, list[torch.Tensor]]:
    """Every distinct ``.grad`` each parameter had, in order, in a bare run: after each
    accumulation (torch's post-accumulate hook) and after each top-level statement that
    changed it (an all-zero one is a reset, not an edit: NOTE [grad resets] in capture/resets.py)."""
    seen: dict[str, list[torch.Tensor]] = {}
    names: dict[int, str] = {}

    def snap(name: str, g: torch.Tensor | None, accumulated: bool = False) -> None:
        if g is None or not bool(g.any()):
            return
        got = seen.setdefault(name, [])
        if accumulated or not got or not torch.equal(got[-1].view(torch.uint8), g.detach().view(torch.uint8)):
            got.append(g.detach().clone())

    def hook(p: torch.Tensor) -> None:
        snap(names[id(p)], p.grad, accumulated=True)

    ns: dict[str, Any] = {"torch": torch, "nn": nn, "__name__": "__main__"}
    hooked = False
    for stmt in ast.parse(code).body:
        exec(compile(ast.Module(body=[stmt], type_ignores=[]), "<bare>", "exec"), ns)
        model = ns.get("model")
        if model is None:
            continue
        if not hooked:
            for name, p in model.named_parameters():
                names[id(p)] = f"model.{name}"
                p.register_post_accumulate_grad_hook(hook)
            hooked = True
        for name, p in model.named_parameters():
            snap(f"model.{name}", p.grad)
    return seen


def _recorded(code: str, native: bool) -> tuple[Any, dict[str, np.ndarray], bytes]:
    captured = run_captured(code, native=native, tensor_budget=BUDGET)
    doc = parsed(captured)
    assert doc["status"] == "ok", doc.get("error")
    assert captured.tensors is not None
    # numpy has no bfloat16 (an autocast run's forward values): those as their bits
    tensors = {k: (v.view(torch.int16) if v.dtype == torch.bfloat16 else v).numpy()
               for k, v in load(captured.tensors).items()}
    return doc, tensors, captured.tensors


def _history(leaf: dict[str, Any]) -> list[dict[str, Any]]:
    """The leaf's ``.grad`` history and edits merged in the order they happened (an edit's
    ``at`` counts the accumulations before it)."""
    out: list[dict[str, Any]] = []
    edits = leaf.get("grad_edits") or []
    for h, entry in enumerate(leaf["grad_history"]):
        out.append(entry)
        out.extend(e["value"] for e in edits if e["at"] == h + 1)
    return out


@pytest.mark.parametrize("name", list(EDITS))
@BOTH
def test_every_grad_history_entry_is_torchs_grad_at_that_moment(name: str, native: bool) -> None:
    code = HEAD + EDITS[name]
    expected = _bare(code)
    doc, tensors, _ = _recorded(code, native)
    left = doc["tensors"]["left_out"]
    assert [x for x in left if x["reason"] == "changed"] == []
    leaves = {n["name"]: n for n in doc["graph"]["nodes"] if n["kind"] == "tensor" and n["role"] == "leaf"
              and (n["name"] or "").startswith("model.")}
    assert sorted(leaves) == sorted(expected)
    for pname, leaf in leaves.items():
        entries = _history(leaf)
        assert len(entries) == len(expected[pname]), pname
        for entry, want in zip(entries, expected[pname], strict=True):
            assert "key" in entry, (pname, entry)
            got = tensors[entry["key"]]
            assert got.dtype == np.float32 and list(got.shape) == list(want.shape)
            assert got.tobytes() == want.numpy().tobytes(), (pname, entry["key"])
    # the event gradients that share the stolen ``.grad``'s memory are kept as they flowed
    keys = {k for e in doc["events"] for k in _event_keys(e)}
    assert keys <= set(tensors)


def _event_keys(event: dict[str, Any]) -> list[str]:
    vals = [*(event.get("grad_outputs") or []), *(event.get("grad_inputs") or []), event.get("grad")]
    return [v["key"] for v in vals if v is not None and "key" in v]


@pytest.mark.parametrize("name", ["clip_grad_norm", "mul", "foreach_mul", "data"])
@BOTH
def test_the_mm_gradient_under_an_edited_grad_is_kept_as_it_flowed(name: str, native: bool) -> None:
    """``mm``'s transposed result is the memory the engine stole for a weight's ``.grad``:
    after the edit each ``TBackward0``'s incoming gradient still reads what flowed, the
    transpose of the ``.grad`` history entry of that backward, not the edited ``.grad``.
    (Under autocast the gradient is bfloat16 and the ``.grad`` a float32 copy: no memory
    shared, nothing to check here.)"""
    doc, tensors, _ = _recorded(HEAD + EDITS[name], native)
    nodes = {n["id"]: n for n in doc["graph"]["nodes"]}
    weights = [n for n in nodes.values() if n.get("name") in ("model.0.weight", "model.2.weight")]
    history = [tensors[h["key"]] for w in weights for h in w["grad_history"]]
    edited = [tensors[e["value"]["key"]] for w in weights for e in w.get("grad_edits", [])]
    assert edited, "the edit was found"
    flowed = [tensors[e["grad_outputs"][0]["key"]] for e in doc["events"]
              if e["phase"] == "backward" and nodes[e["node"]].get("name") == "TBackward0"]
    assert len(flowed) == 2 * len(weights[0]["grad_history"])
    for g in flowed:
        assert any(h.shape == g.T.shape and np.array_equal(g.T, h) for h in history)
        assert not any(h.shape == g.T.shape and np.array_equal(g.T, h) for h in edited)


@pytest.mark.parametrize("name", ["clip_grad_norm", "accumulate", "zero_then_accumulate", "through_a_view"])
def test_both_kernel_sets_give_the_same_document_and_file(name: str) -> None:
    code = HEAD + EDITS[name]
    core, _, core_bytes = _recorded(code, True)
    twin, _, twin_bytes = _recorded(code, False)
    assert core["id"] == twin["id"]
    assert core_bytes == twin_bytes


def test_a_program_that_never_edits_grad_keeps_the_file_it_kept_before() -> None:
    """Near-miss: reading ``.grad`` (a norm, a clone, an optimizer step that reads it) writes
    nothing, so nothing is copied and the file is the one a run without the program's reads
    keeps, entry for entry."""
    reads = ("total = sum(p.grad.norm() ** 2 for p in model.parameters())\n"
             "saved = [p.grad.clone() for p in model.parameters()]\n"
             "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
             "opt.step()\n")
    for native in (True, False):
        doc, tensors, _ = _recorded(HEAD + reads, native)
        plain, plain_tensors, _ = _recorded(HEAD, native)
        assert doc["tensors"]["left_out"] == [] and plain["tensors"]["left_out"] == []
        for leaf in (n for n in doc["graph"]["nodes"] if n["kind"] == "tensor" and n["role"] == "leaf"):
            assert not leaf.get("grad_edits")
            for entry in leaf["grad_history"]:
                assert tensors[entry["key"]].tobytes() == plain_tensors[entry["key"]].tobytes()


@BOTH
def test_a_write_through_numpy_is_left_out_as_changed_never_kept_wrong(native: bool) -> None:
    """numpy writes the memory without a torch op: the tap cannot copy first. The gradients
    that shared the ``.grad``'s memory are left out as ``changed``; every history entry (a
    copy taken when it was recorded) is still torch's."""
    code = HEAD + "for p in model.parameters():\n    p.grad.numpy()[...] *= 0.5\n"
    expected = _bare(code)
    doc, tensors, _ = _recorded(code, native)
    changed = [x["key"] for x in doc["tensors"]["left_out"] if x["reason"] == "changed"]
    assert changed and all(k.startswith("e") for k in changed)
    for leaf in (n for n in doc["graph"]["nodes"] if n["kind"] == "tensor" and n["role"] == "leaf"
                 and n["name"].startswith("model.")):
        first = leaf["grad_history"][0]
        assert tensors[first["key"]].tobytes() == expected[leaf["name"]][0].numpy().tobytes()
