"""NOTE [a NaN GradScaler skips] in analysis/nonfinite/scaler.py: a backward NaN or infinity
that the program's GradScaler skipped the optimizer step for is said to be handled, and the
iterations it names are the ones where a bare run's scaler backed off (its scale went down);
near-misses stay as they were."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from gradtrace.analysis.docview import DocView
from gradtrace.analysis.nonfinite.scaler import skipped_passes
from rundoc import run_doc

LOOP = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
scaler = torch.amp.GradScaler("cpu", init_scale={scale}, backoff_factor={backoff})
x = torch.randn(16, 8) * {size}; y = torch.randn(16, 1)
backed_off = []
for step in range({steps}):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.float16):
        loss = F.mse_loss(model(x).float(), y)
    before = scaler.get_scale()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    backed_off.append(scaler.get_scale() < before)
"""
RECOVERS = LOOP.format(scale=2.0 ** 22, backoff=0.0625, size=1, steps=6)
"""The scale starts too high: the first iterations overflow float16 and are skipped, then it fits."""
NEVER = LOOP.format(scale=2.0 ** 24, backoff=0.5, size=100, steps=4)
"""Inputs this large overflow at every scale it reaches: every iteration is skipped."""
FITS = LOOP.format(scale=2.0 ** 8, backoff=0.5, size=1, steps=4)
"""A scale that fits from the start: nothing overflows, nothing to say."""
NO_SCALER_STEP = RECOVERS.replace("    scaler.step(opt)\n    scaler.update()\n", "    opt.step()\n")
"""A GradScaler made, but the step taken by the optimizer itself: the NaN reaches the weights."""


def _bare_backed_off(code: str) -> list[int]:
    ns: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(code, "<bare>", "exec"), ns)
    return [i for i, b in enumerate(ns["backed_off"]) if b]


def _doc(code: str) -> dict[str, Any]:
    doc = run_doc(code, seed=0, tensor_budget=64 << 20)
    assert doc["status"] == "ok", doc.get("error")
    return doc


def _backward_entry(doc: dict[str, Any]) -> dict[str, Any] | None:
    return next((e for e in (doc.get("analysis") or {}).get("nonfinite") or [] if e["phase"] == "backward"), None)


@pytest.mark.parametrize("code", [RECOVERS, NEVER], ids=["recovers", "never"])
def test_the_skipped_iterations_are_the_ones_the_scaler_backed_off_in(code: str) -> None:
    backed_off = _bare_backed_off(code)
    assert backed_off, "the program must overflow somewhere to prove anything"
    doc = _doc(code)
    assert skipped_passes(DocView(doc)) == backed_off
    entry = _backward_entry(doc)
    assert entry is not None and entry["pass"] == backed_off[0], entry
    handled = entry.get("handled")
    assert handled is not None and "GradScaler (line 7)" in handled, entry
    if len(backed_off) == len(doc["passes"]):
        assert f"every one of the {len(backed_off)} iterations" in handled
    else:
        shown = ", ".join(str(i + 1) for i in backed_off)
        assert f"skipped {len(backed_off)} of {len(doc['passes'])} iterations ({shown})" in handled


def test_a_scale_that_fits_has_nothing_to_say() -> None:
    assert _bare_backed_off(FITS) == []
    doc = _doc(FITS)
    assert not (doc.get("analysis") or {}).get("nonfinite")


def test_a_step_the_scaler_did_not_take_is_not_said_to_be_handled() -> None:
    """Near-miss: the optimizer steps on the NaN gradients itself, so the weights change (to NaN)
    after the pass: nothing was skipped, and the NaN stays an error."""
    ns: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(NO_SCALER_STEP, "<bare>", "exec"), ns)
    assert not torch.isfinite(ns["model"][0].weight).all()  # the step spoiled the weights
    entry = _backward_entry(_doc(NO_SCALER_STEP))
    assert entry is not None and "handled" not in entry, entry
