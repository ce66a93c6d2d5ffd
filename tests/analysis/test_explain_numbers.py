"""Explain works its rule out from the run's tensor file (NOTE [operands from the tensor file] in
``analysis/explain/operands.py``): numbers for at least 95% of the backward nodes of a small
GPT-like model, GRU-200 and every lesson, each instance equal to the gradient that really flowed
there (the kept gradient, bit-equal to a bare run's: tests/capture/test_tensor_oracle.py) and a
leaf's to torch's real ``.grad`` of a bare run."""

from __future__ import annotations

import math
import random
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import torch

from capture.tensor_oracle import recorded_run
from capture.test_tensor_oracle import GPT_LIKE, LESSONS
from gradtrace.analysis.explain import explain_node
from gradtrace.analysis.kept import KeptTensors
from programs import GRU_200

TOL = 1e-4
"""float32: a rule's float64 sum against the kernel's float32 one."""


@cache
def _recorded(code: str) -> tuple[dict[str, Any], KeptTensors | None]:
    doc, _, _ = recorded_run(code, native=True)
    data = doc.tensor_bytes()
    return doc.model_dump(mode="json", by_alias=True), (KeptTensors.from_bytes(data) if data else None)


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=TOL, abs_tol=TOL * 1e-2)


def coverage(code: str, *, sample: int | None = None) -> dict[str, Any]:
    """How many backward nodes Explain works out with numbers: ``strict``, every input a
    gradient reached; ``any``, at least one. Every instance is checked against the gradient
    the event recorded, at a random element."""
    doc, kept = _recorded(code)
    assert kept is not None, "the run kept no tensor file"
    last = {ev["node"]: ev for ev in doc["events"] if ev["phase"] == "backward"}
    ids = list(last)
    rng = random.Random(0)
    if sample is not None and len(ids) > sample:
        ids = rng.sample(ids, sample)
    strict = loose = checked = 0
    missing: dict[str, int] = {}
    for nid in ids:
        first = explain_node(doc, nid, tensors=kept)
        reached = [i for i in first["inputs"] if i.get("note") != "no gradient passed to this input"]
        worked = [i for i in reached if "value" in i]
        strict += bool(worked) and len(worked) == len(reached)
        loose += bool(worked)
        if not worked or len(worked) < len(reached):
            why = first.get("note") or next((i["note"] for i in reached if "note" in i), "?")
            missing[f"{first['op']}: {why}"] = missing.get(f"{first['op']}: {why}", 0) + 1
        for entry in worked:
            index = [rng.randrange(s) for s in entry["shape"]]
            at = next(i for i in explain_node(doc, nid, index=index, tensors=kept)["inputs"]
                      if i["input_nr"] == entry["input_nr"])
            assert at["index"] == index
            if "recorded" in at:
                assert _close(float(at["value"]), float(at["recorded"])), (nid, first["op"], at)
                checked += 1
    return {"nodes": len(ids), "strict": strict, "any": loose, "checked": checked, "missing": missing}


def test_gpt_like_has_numbers_at_95_percent_of_its_backward_nodes() -> None:
    c = coverage(GPT_LIKE)
    assert c["strict"] >= 0.95 * c["nodes"], c
    assert c["checked"] >= 0.9 * c["nodes"], c


def test_gru_200_has_numbers_at_95_percent_of_its_backward_nodes() -> None:
    # ``xs[t]`` (data without gradient, read by addmm) is in the tensor file as itself
    # (NOTE [saved tensors from no node] in capture/saved.py): every input a gradient reached
    c = coverage(GRU_200, sample=600)
    assert c["strict"] >= 0.95 * c["nodes"], c


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_every_lesson_has_numbers(lesson: Path) -> None:
    c = coverage(lesson.read_text())
    if lesson.stem == "15_compiled":
        # a compiled function's backward is one opaque node: no rule to work out
        assert c["any"] >= c["nodes"] - 1, c
        return
    assert c["any"] >= 0.95 * c["nodes"], c


def test_a_parameters_explained_gradient_is_torchs_real_grad() -> None:
    """AccumulateGrad's instance (what reaches ``.grad``) at random elements of every parameter
    of the GPT-like model, against ``.grad`` of a bare run (no gradtrace)."""
    doc, kept = _recorded(GPT_LIKE)
    torch.manual_seed(0)
    scope: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(GPT_LIKE, "<bare>", "exec"), scope)
    model = scope["model"]
    nodes = {n["id"]: n for n in doc["graph"]["nodes"]}
    behind = {e["target"]: e["source"] for e in doc["graph"]["edges"] if e.get("input_nr") is None}
    rng = random.Random(1)
    seen = 0
    for nid, node in nodes.items():
        if node["name"] != "AccumulateGrad":
            continue
        leaf = nodes[behind[nid]]
        real = model.get_parameter(str(leaf["name"]).removeprefix("model.")).grad
        for _ in range(3):
            index = [rng.randrange(s) for s in real.shape]
            entry = explain_node(doc, nid, index=index, tensors=kept)["inputs"][0]
            assert entry["index"] == index
            assert _close(float(entry["value"]), float(real[tuple(index)])), (leaf["name"], index, entry)
            seen += 1
    assert seen >= 3 * 20
