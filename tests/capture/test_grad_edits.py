"""``Node.grad_edits``: a leaf's ``.grad`` changed other than by accumulation is found by what
changed (NOTE [gradient edits] in capture/gradedits.py), on both kernel sets, and the document's
final ``grad`` is the one torch holds (the same program run bare, in this process)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

BOTH = pytest.mark.parametrize("native", [False, True], ids=["python", "core"])

AMP = """\
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cpu")
x = torch.randn(16, 4)
y = torch.randn(16, 1)
for step in range(3):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = nn.functional.mse_loss(model(x).float(), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""

AMP_CLIPPED = AMP.replace("    scaler.step(opt)\n", "    scaler.unscale_(opt)\n"
                          "    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)\n"
                          "    scaler.step(opt)\n")


def _bare(code: str) -> dict[str, Any]:
    """The program run without gradtrace: its namespace."""
    ns: dict[str, Any] = {"torch": torch, "nn": nn}
    exec(compile(code, "<bare>", "exec"), ns)
    return ns


def _leaves(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["name"]: n for n in doc["graph"]["nodes"] if n["kind"] == "tensor" and n["role"] == "leaf"}


def _values(v: dict[str, Any]) -> torch.Tensor:
    return torch.tensor(v["values"], dtype=torch.float32)


def _norm(v: dict[str, Any]) -> float:
    return float(v["stats"]["norm"])


def _final_grads_are_torchs(doc: dict[str, Any], model: nn.Module, prefix: str = "model") -> None:
    leaves = _leaves(doc)
    for name, p in model.named_parameters():
        got = leaves[f"{prefix}.{name}"]["grad"]
        assert p.grad is not None and got is not None, name
        torch.testing.assert_close(_values(got), p.grad, rtol=1.3e-6, atol=1e-6)


@BOTH
def test_amp_with_grad_scaler_on_cpu_shows_torchs_unscaled_gradients(run: Any, native: bool) -> None:
    assert hasattr(torch.amp, "GradScaler")  # torch 2.13 has the device-generic scaler
    doc = run(AMP, native=native)
    assert doc["status"] == "ok", doc["error"]
    assert "recorder_errors" not in doc
    _final_grads_are_torchs(doc, _bare(AMP)["model"])
    for name, leaf in _leaves(doc).items():
        assert len(leaf["grad_history"]) == 3
        edits = leaf["grad_edits"]
        # each step's unscale, by scaler.step (line 12), after that step's accumulation
        assert [(e["at"], e["line"], e["in_backward"]) for e in edits] == [(1, 12, False), (2, 12, False),
                                                                           (3, 12, False)], name
        for hist, edit in zip(leaf["grad_history"], edits, strict=True):
            assert _norm(edit["value"]) == pytest.approx(_norm(hist) / 65536.0, rel=1e-5)
        assert leaf["grad"] == {k: v for k, v in edits[-1]["value"].items() if k != "key"}  # key: the file's


@BOTH
def test_explicit_unscale_then_clipping_are_two_edits_each_step(run: Any, native: bool) -> None:
    doc = run(AMP_CLIPPED, native=native)
    assert doc["status"] == "ok", doc["error"]
    _final_grads_are_torchs(doc, _bare(AMP_CLIPPED)["model"])
    leaf = _leaves(doc)["model.0.weight"]
    assert [(e["at"], e["line"]) for e in leaf["grad_edits"]] == [(1, 12), (1, 13), (2, 12), (2, 13),
                                                                 (3, 12), (3, 13)]
    hint = next(h for h in doc["analysis"]["hints"] if h["code"] == "grad-edited")
    assert hint["line"] == 13
    # NOTE [each edit its own effect] in analysis/hints/grads.py: the unscale's × 1/scale and the
    # clipping's coefficient, each against torch's (the bare run's scale and total norm)
    ns = _bare(AMP_CLIPPED.replace("    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)\n",
                                   "    total = float(torch.nn.utils.get_total_norm(\n"
                                   "        [p.grad for p in model.parameters()]))\n"
                                   "    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)\n"))
    evidence = dict((e["label"], e["value"]) for e in hint["evidence"])
    unscale = evidence["line 12: scaler.unscale_(opt)"]
    clip = evidence["line 13: torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)"]
    scale = 65536.0  # the scale the last step ran with: GradScaler's default, never lowered here
    assert ns["scaler"].get_scale() == scale
    assert float(unscale.removeprefix("norm scaled × ")) == pytest.approx(1 / scale, rel=1e-3)
    assert float(clip.removeprefix("norm scaled × ")) == pytest.approx(0.05 / ns["total"], rel=1e-3)
    assert "(lines 12 and 13)" in hint["message"]


AMP_CLIPPED_SCALED = AMP.replace("    scaler.step(opt)\n",
                                 "    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)\n    scaler.step(opt)\n")


@BOTH
def test_clipping_before_the_unscale_then_the_unscale_are_torchs(run: Any, native: bool) -> None:
    """The AMP mistake of clipping the scaled gradients: the clip moves the version, the unscale
    inside ``scaler.step`` writes without moving it, last. The unscale's edit is its own value,
    not the clip's (the value store knows a tensor by identity and version), and the final
    ``grad`` is torch's."""
    doc = run(AMP_CLIPPED_SCALED, native=native)
    assert doc["status"] == "ok", doc["error"]
    _final_grads_are_torchs(doc, _bare(AMP_CLIPPED_SCALED)["model"])
    leaf = _leaves(doc)["model.0.weight"]
    edits = leaf["grad_edits"]
    assert [(e["at"], e["line"]) for e in edits] == [(1, 12), (1, 13), (2, 12), (2, 13), (3, 12), (3, 13)]
    for clip, unscale in zip(edits[::2], edits[1::2], strict=True):
        assert _norm(unscale["value"]) == pytest.approx(_norm(clip["value"]) / 65536.0, rel=1e-5)
    # the hint: the clip cut the scaled gradients, as torch's own clip saw them (65536× the true)
    hint = next(h for h in doc["analysis"]["hints"] if h["code"] == "clip-before-unscale")
    assert hint["line"] == 12 and dict((e["label"], e["value"]) for e in hint["evidence"])["scale"] == "65536"
    assert "clip-before-unscale" not in [h["code"] for h in run(AMP_CLIPPED, native=native)["analysis"]["hints"]]
    # the steps are tiny because of the clip, not the learning rate: no "raise the learning rate"
    assert "update-ratio-low" not in [h["code"] for h in doc["analysis"]["hints"]]


HOOK_SCALES_ANOTHER = """\
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 1))
ps = list(model.parameters())
def all_reduce(p):
    ps[3].grad.mul_(0.5)
ps[0].register_post_accumulate_grad_hook(all_reduce)
for _ in range(2):
    model.zero_grad()
    model(torch.randn(2, 3)).sum().backward()
"""


@BOTH
def test_a_post_accumulate_hook_scaling_another_grad_is_an_edit_in_backward(run: Any, native: bool) -> None:
    doc = run(HOOK_SCALES_ANOTHER, native=native)
    assert doc["status"] == "ok", doc["error"]
    _final_grads_are_torchs(doc, _bare(HOOK_SCALES_ANOTHER)["model"])
    bias = _leaves(doc)["model.1.bias"]
    assert [h["values"] for h in bias["grad_history"]] == [[2.0], [2.0]]  # as accumulated
    assert [(e["at"], e["line"], e["in_backward"], e["value"]["values"]) for e in bias["grad_edits"]] == [
        (1, 9, True, [1.0]), (2, 9, True, [1.0])]
    for name in ("model.0.weight", "model.0.bias", "model.1.weight"):
        assert "grad_edits" not in _leaves(doc)[name]


STEP_IN_BACKWARD = """\
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
opts = {p: torch.optim.SGD([p], lr=0.1) for p in model.parameters()}
seen = {p: [] for p in model.parameters()}
def step(p):
    seen[p].append(p.grad.clone())
    opts[p].step()
    opts[p].zero_grad()
for p in model.parameters():
    p.register_post_accumulate_grad_hook(step)
x = torch.randn(8, 3)
for _ in range(3):
    model(x).pow(2).mean().backward()
"""


@BOTH
def test_an_optimizer_stepping_in_post_accumulate_hooks_keeps_every_gradient(run: Any, native: bool) -> None:
    doc = run(STEP_IN_BACKWARD, native=native)
    assert doc["status"] == "ok", doc["error"]
    bare = _bare(STEP_IN_BACKWARD)
    acc = {n["id"] for n in doc["graph"]["nodes"] if n["name"] == "AccumulateGrad"}
    events = [e for e in doc["events"] if e["phase"] == "backward" and e["node"] in acc]
    assert len(events) == 12 and all(e["grad"] is not None for e in events)
    leaves = _leaves(doc)
    for name, p in bare["model"].named_parameters():
        leaf = leaves[f"model.{name}"]
        assert leaf["grad"] is None and p.grad is None
        assert len(leaf["grad_history"]) == 3
        for got, truth in zip(leaf["grad_history"], bare["seen"][p], strict=True):
            torch.testing.assert_close(_values(got), truth, rtol=1.3e-6, atol=1e-6)
        assert [r["at"] for r in leaf["grad_resets"]] == [1, 2]  # cleared in each backward
        assert "grad_edits" not in leaf


@BOTH
@pytest.mark.parametrize("edit", ["torch._foreach_mul_([p.grad for p in model.parameters()], 0.25)",
                                  "[p.grad.mul_(0.25) for p in model.parameters()]",
                                  "[setattr(p, 'grad', p.grad * 0.25) for p in model.parameters()]"])
def test_foreach_in_place_and_replaced_grads_are_edits_on_their_line(run: Any, native: bool, edit: str) -> None:
    code = ("torch.manual_seed(0)\nmodel = nn.Linear(3, 2)\nfor _ in range(2):\n"
            f"    model(torch.randn(4, 3)).sum().backward()\n    {edit}\n")
    doc = run(code, native=native)
    assert doc["status"] == "ok", doc["error"]
    _final_grads_are_torchs(doc, _bare(code)["model"])
    for leaf in _leaves(doc).values():
        assert [(e["at"], e["line"]) for e in leaf["grad_edits"]] == [(1, 5), (2, 5)]
        assert _norm(leaf["grad_edits"][0]["value"]) == pytest.approx(_norm(leaf["grad_history"][0]) / 4, rel=1e-5)


@BOTH
@pytest.mark.parametrize("clear", ["opt.zero_grad()", "opt.zero_grad(set_to_none=False)"])
def test_near_misses_make_no_edit(run: Any, native: bool, clear: str) -> None:
    """An Adam loop that reads every ``.grad`` (prints its norm) and writes one without changing
    it: resets where zero_grad clears, never an edit; the final gradients are torch's."""
    code = ("torch.manual_seed(0)\nmodel = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))\n"
            "opt = torch.optim.Adam(model.parameters(), lr=0.01)\nx = torch.randn(8, 3)\n"
            f"for _ in range(4):\n    {clear}\n    model(x).pow(2).mean().backward()\n"
            "    print(sum(p.grad.norm().item() for p in model.parameters()) > 0)\n"
            "    model[0].bias.grad.mul_(1.0)\n    opt.step()\n")
    doc = run(code, native=native)
    assert doc["status"] == "ok", doc["error"]
    _final_grads_are_torchs(doc, _bare(code)["model"])
    for leaf in _leaves(doc).values():
        assert "grad_edits" not in leaf
        assert [r["at"] for r in leaf["grad_resets"]] == [1, 2, 3]
    assert not any(h["code"] == "grad-edited" for h in (doc.get("analysis") or {}).get("hints", []))


def test_both_kernel_sets_write_the_same_document(run: Any) -> None:
    for code in (AMP, HOOK_SCALES_ANOTHER, STEP_IN_BACKWARD):
        assert run(code, native=False)["id"] == run(code, native=True)["id"]


@BOTH
def test_an_edit_in_a_record_block_is_torchs(native: bool) -> None:
    import gradtrace

    torch.manual_seed(0)
    w = torch.randn(5, requires_grad=True)
    with gradtrace.record(native=native, max_document_bytes=1 << 20) as rec:
        (w * w).sum().backward()
        torch._amp_foreach_non_finite_check_and_unscale_([w.grad], torch.zeros(1), torch.tensor(0.125))
    doc = rec.document()
    (leaf,) = [n for n in doc.graph.nodes if n.name == "w"]
    assert w.grad is not None and leaf.grad is not None and leaf.grad.values is not None
    torch.testing.assert_close(torch.tensor(leaf.grad.values), w.grad)
    assert leaf.grad_edits is not None and len(leaf.grad_edits) == 1


MODULE_HOOK = """\
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
def halve(module, grad_input, grad_output):
    return (grad_input[0] * 0.5,)
def look(module, grad_input, grad_output):
    return None
model[2].register_full_backward_hook(halve)
model[0].register_full_backward_hook(look)
x = torch.randn(5, 3, requires_grad=True)
model(x).sum().backward()
"""


@BOTH
def test_a_module_backward_hook_that_replaces_grad_input_is_marked(run: Any, native: bool) -> None:
    """As a tensor hook's replacement is: one event, the value before and after, which is
    half of it; a hook that returns None (``look``) marks nothing; ``x.grad`` is torch's."""
    doc = run(MODULE_HOOK, native=native)
    assert doc["status"] == "ok", doc["error"]
    bare = _bare(MODULE_HOOK)
    changed = [e for e in doc["events"] if e["changed_by_hook"]]
    assert len(changed) == 1
    node = next(n for n in doc["graph"]["nodes"] if n["id"] == changed[0]["node"])
    assert node["name"] == "BackwardHookFunctionBackward" and node["module"] == "model.2"
    (change,) = changed[0]["hook_changes"]
    before, after = _values(change["before"]), _values(change["after"])
    assert before.shape == (5, 4) and before.abs().sum() > 0
    torch.testing.assert_close(after, before * 0.5)
    x = next(n for n in doc["graph"]["nodes"] if n.get("name") == "x")
    torch.testing.assert_close(_values(x["grad"]), bare["x"].grad)


@BOTH
def test_an_unversioned_write_in_a_post_accumulate_hook_leaves_torchs_final_grad(run: Any, native: bool) -> None:
    """The unscale kernel moves no version counter: written inside the leaf's own hook, after
    the recorder captured the accumulation, the final ``grad`` is still read as torch holds it."""
    code = ("w = torch.tensor([2.0, -4.0], requires_grad=True)\nfound = torch.zeros(1)\n"
            "def unscale(p):\n"
            "    torch._amp_foreach_non_finite_check_and_unscale_([p.grad], found, torch.tensor(0.25))\n"
            "w.register_post_accumulate_grad_hook(unscale)\n(w * w).sum().backward()\nprint(w.grad.tolist())\n")
    doc = run(code, native=native)
    assert doc["stdout"] == "[1.0, -2.0]\n"
    (w,) = [n for n in doc["graph"]["nodes"] if n.get("name") == "w"]
    assert w["grad"]["values"] == [1.0, -2.0]
    assert [h["values"] for h in w["grad_history"]] == [[4.0, -8.0]]  # as accumulated
