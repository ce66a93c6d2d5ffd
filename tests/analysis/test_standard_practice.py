"""The judges on programs written for no feature (tests/standard_programs.py): every one records
with no recorder error, no hint, no first NaN and no badge (there is nothing wrong with them:
no false alarm); every tensor kept is what the op returned or what flowed there, bit for bit
(the oracle of tests/capture/tensor_oracle.py), and recorded again each writes the same file;
each loop's dynamics follow every parameter that trained, with its update ratio read from
torch's real values; Explain has numbers for at least 95% of the backward nodes of those whose
ops all have a rule."""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import pytest
import torch

from analysis.test_explain_numbers import coverage
from capture.tensor_oracle import check
from rundoc import run_doc
from standard_programs import STANDARD

NAMES = sorted(STANDARD)
NO_RULE = {
    "custom_function": "the program's own autograd.Function, whose backward is its own code",
    "gradient_reversal": "the program's own autograd.Function, a gradient reversal layer",
    "mark_non_differentiable": "the program's own autograd.Function, a sort that returns its indices",
}
"""Programs with nodes Explain's catalogue has no rule for (tests/analysis/test_explain.py
lists the ops it has), and which."""
EXPLAINED = [name for name in NAMES if name not in NO_RULE]
DATA = {"x"}
"""Leaves that get a gradient each iteration and that no optimizer steps: a physics-informed
network's collocation points, made to require grad for ``du/dx``."""


@cache
def _doc(name: str) -> dict[str, Any]:
    return run_doc(STANDARD[name], seed=0, tensor_budget=64 << 20)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_no_false_alarm(name: str) -> None:
    doc = _doc(name)
    assert doc["status"] == "ok", doc.get("error")
    assert not doc.get("recorder_errors"), doc.get("recorder_errors")
    analysis = doc.get("analysis") or {}
    assert not analysis.get("hints"), [(h["code"], h["title"]) for h in analysis["hints"]]
    assert not analysis.get("nonfinite") and not analysis.get("badge"), analysis
    assert not doc["tensors"]["left_out_count"], doc["tensors"]


@pytest.mark.slow
@pytest.mark.parametrize("native", [True, False], ids=["core", "python"])
@pytest.mark.parametrize("name", NAMES)
def test_every_kept_tensor_is_exact(name: str, native: bool) -> None:
    counts = check(STANDARD[name], native=native)
    assert counts["outputs"] > 0 and counts["grads"] > 0, counts


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_a_loops_dynamics_follow_every_trained_parameter(name: str) -> None:
    doc = _doc(name)
    passes = [p for p in doc["passes"] if p.get("within") is None]
    trained = [n for n in doc["graph"]["nodes"] if n.get("role") == "leaf" and len(n.get("grad_history") or []) >= 2]
    if not trained:  # one backward pass (a saliency map), or several of no training (a Hessian): no series
        assert "dynamics" not in (doc.get("analysis") or {}), doc["analysis"]["dynamics"]
        return
    dyn = doc["analysis"]["dynamics"]
    assert dyn["iterations"] == [p["index"] for p in passes]
    assert {p["node"] for p in dyn["params"]} == {n["id"] for n in trained}
    starts_at_zero = {n["id"] for n in trained if (n.get("value") or {}).get("stats", {}).get("norm") == 0}
    for p in dyn["params"]:
        steps = [u for u in p["update"] if u is not None]
        # a step at least (an optimizer may step once per few passes: gradient accumulation),
        # each a finite log10 ratio; infinite only for the first, from a parameter that
        # started at zero (a norm layer's bias, a regression's weights)
        assert all(isinstance(u, float) and math.isfinite(u) for u in steps[1:]), p
        assert not steps or isinstance(steps[0], float) or (steps[0] == "inf" and p["node"] in starts_at_zero), p
        # one that got a gradient other than zero moved (a WGAN critic's last bias gets 0 from
        # both terms: Adam leaves it where it is; a bias before batch norm gets ~1e-8: no
        # step of float32 can move it), unless no optimizer holds it (a backbone left out of
        # the optimizer given the head only): its values at the start and the end say which
        leaf = next(n for n in trained if n["id"] == p["node"])
        moved = (leaf.get("value") or {}).get("stats") != (leaf.get("value_end") or {}).get("stats")
        assert steps or p["name"] in DATA or not moved or not any(
            g > 1e-6 for g in p["grad_norm"] if isinstance(g, float)), p
        assert moved or not steps, p  # a step recorded where nothing changed


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_the_same_program_writes_the_same_document_and_file(name: str) -> None:
    """Recorded again, each program gives the same document id and tensor file: nothing a
    kernel left unwritten is kept (NOTE [a kernel's workspace] in capture/tensordoc.py)."""
    first, again = _doc(name), run_doc(STANDARD[name], seed=0, tensor_budget=64 << 20)
    assert again["tensors"]["sha256"] == first["tensors"]["sha256"]
    assert again["id"] == first["id"]


def test_the_update_ratio_is_torchs() -> None:
    """One parameter's ‖Δw‖/‖w‖ at each step, against the same loop run bare."""
    name = "mlp_sgd_small_lr"
    doc = run_doc(STANDARD[name], seed=0, tensor_budget=64 << 20)
    series = next(p for p in doc["analysis"]["dynamics"]["params"] if p["name"] == "model.0.weight")
    ns: dict[str, Any] = {}
    torch.manual_seed(0)
    ratios: list[float] = []
    code = STANDARD[name].replace("opt.step()", "before = model[0].weight.detach().clone(); opt.step(); "
                                  "ratios.append(float((model[0].weight.detach() - before).norm() / before.norm()))")
    exec(compile(code, "<bare>", "exec"), {**ns, "ratios": ratios})
    assert len(ratios) == len(series["update"])
    for mine, theirs in zip(series["update"], ratios, strict=True):
        assert mine is not None and abs(mine - math.log10(theirs)) < 1e-4, (mine, theirs)


@pytest.mark.slow
@pytest.mark.parametrize("name", EXPLAINED)
def test_explain_has_numbers_for_nearly_every_backward_node(name: str) -> None:
    c = coverage(STANDARD[name])
    assert c["any"] >= 0.95 * c["nodes"], c
