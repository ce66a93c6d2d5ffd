"""The first non-finite value: the producer named is the node ``detect_anomaly`` names.

Each snippet of ``nan_cases/`` makes a NaN in backward. It runs twice: recorded (capture, this
process), and as plain PyTorch under ``torch.autograd.detect_anomaly``, whose error names the
first node that returned NaN ("Function 'X' returned nan values in its Nth output").
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

CASES = sorted((Path(__file__).parent / "nan_cases").glob("*.py"))
_ANOMALY = re.compile(r"Function '(\w+)' returned nan values in its (\d+)th output")


def _anomaly(code: str) -> tuple[str, int]:
    """What detect_anomaly names for ``code``: (node name, output index)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its "Anomaly Detection has been enabled" and traces
        with pytest.raises(RuntimeError) as info, torch.autograd.detect_anomaly():
            exec(compile(code, "<snippet>", "exec"), {"__name__": "__snippet__"})
    m = _ANOMALY.search(str(info.value))
    assert m, str(info.value)
    return m[1], int(m[2])


def _backward(doc: dict[str, Any]) -> dict[str, Any]:
    found = [e for e in doc["analysis"]["nonfinite"] if e["phase"] == "backward"]
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_the_producer_is_what_detect_anomaly_names(run: Any, path: Path) -> None:
    code = path.read_text()
    name, output = _anomaly(code)
    entry = _backward(run(code))
    assert (entry["name"], entry["output"], entry["kind"]) == (name, output, "nan")
    assert entry["sentence"].startswith(f"first NaN in backward: {name}, line ")
    assert entry["node"] not in entry["passed_on"]


def test_where_names_the_unselected_branch_and_its_fix(run: Any) -> None:
    doc = run((Path(__file__).parent / "nan_cases" / "where_sqrt.py").read_text())
    entry = _backward(doc)
    assert entry["sentence"] == "first NaN in backward: SqrtBackward0, line 5, elements 0–1: 0 × inf/nan"
    assert entry["elements"] == [0, 1] and entry["count"] == 2
    assert "torch.where computes both branches" in entry["trap"]
    assert "torch.sqrt(safe)" in entry["fix"]
    assert doc["analysis"]["badge"] == "x.grad has NaN"
    carriers = [n["name"] for n in doc["graph"]["nodes"] if n["id"] in entry["passed_on"]]
    assert carriers == ["AccumulateGrad"]
    fixed = "\n".join(entry["fix"].replace("mask", "(x > 0)").splitlines())
    after = run("import torch\nx = torch.tensor([-1.0, 0.0, 4.0], requires_grad=True)\n"
                f"{fixed}\ny.sum().backward()\n")
    assert "analysis" not in after  # the fix it gives leaves no NaN (and nothing else to say)


def test_a_nan_made_of_an_infinity_is_told_apart(run: Any) -> None:
    """sqrt(0)'s slope is inf; the square's backward then makes 0 x inf = NaN: the NaN's
    producer is the square (PowBackward0), as detect_anomaly says, not sqrt."""
    doc = run((Path(__file__).parent / "nan_cases" / "hand_norm_at_zero.py").read_text())
    assert _backward(doc)["name"] == "PowBackward0"


def test_an_infinity_alone_and_a_nan_forward(run: Any) -> None:
    doc = run("import torch\nx = torch.tensor([0.0, 1.0, -1.0], requires_grad=True)\n"
              "loss = torch.log(x).sum()\nloss.backward()\n")
    forward, backward = doc["analysis"]["nonfinite"]
    assert (forward["phase"], forward["kind"]) == ("forward", "nan")
    assert forward["sentence"].startswith("first NaN seen in forward: loss, line 4")
    assert (backward["name"], backward["kind"], backward["elements"]) == ("LogBackward0", "inf", [0])
    assert doc["analysis"]["badge"] == "loss has NaN; x.grad has inf"


def test_finite_runs_say_nothing(run: Any) -> None:
    doc = run("import torch\nx = torch.tensor([1.0, 4.0], requires_grad=True)\n"
              "torch.where(x > 0, x.sqrt(), 0.0).sum().backward()\n")
    assert "analysis" not in doc


def test_the_strict_validator_takes_documents_with_an_analysis(run: Any) -> None:
    from gradtrace.schema.canonical import canonical_json
    from gradtrace.schema.fast import validate_strict_json

    doc = run((Path(__file__).parent / "nan_cases" / "where_sqrt.py").read_text())
    assert validate_strict_json(canonical_json(doc)) == json.loads(canonical_json(doc))



def test_the_service_analyses_what_it_validated_never_the_jobs_own() -> None:
    """NOTE [one analysis]: the sandbox child writes no analysis; the web process computes it
    on the document it validated, and drops whatever a job claims."""
    from gradtrace.jobs import Job
    from gradtrace.sandbox.kinds.run import validate_result
    from gradtrace.schema.canonical import canonical_json
    from rundoc import run_captured

    code = (Path(__file__).parent / "nan_cases" / "where_sqrt.py").read_text()
    child = run_captured(code, analysis=False).fields  # what the sandbox child writes
    assert "analysis" not in child
    forged = {"badge": "all fine", "nonfinite": [], "hints": []}
    for claimed in (None, forged):
        extra = {} if claimed is None else {"analysis": claimed}
        doc = validate_result(Job(code=code), canonical_json({**child, **extra, "id": ""}))
        assert doc is not None
        assert doc["analysis"]["badge"] == "x.grad has NaN"
        assert _backward(doc)["name"] == "SqrtBackward0"


_PATTERN_WORDS = {"where_sqrt": "torch.where", "masked_log": "masked_fill", "divide_then_mask": "(x / div)[div != 0]",
                  "hand_norm_at_zero": "norm", "entropy_log_clamped": "log of a value clamped",
                  "acos_edge": "acos", "div_zero_by_zero": "nan_to_num",
                  "softmax_underflow": "tiny but not 0"}


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_every_named_pattern_gets_its_cause_trap_and_fix(run: Any, path: Path) -> None:
    entry = _backward(run(path.read_text()))
    assert entry["cause"] and entry["trap"] and entry.get("fix"), entry
    assert _PATTERN_WORDS[path.stem] in entry["trap"], entry["trap"]


def test_a_nan_made_of_an_infinity_received_blames_where_the_infinity_was_made(run: Any) -> None:
    """Division's backward makes the NaN (detect_anomaly names it too), but nothing was zero:
    the gradient it received was already infinite, made by log's backward at a subnormal
    probability. The cause names log, and the trap is log's, not a zero divisor's."""
    doc = run((Path(__file__).parent / "nan_cases" / "softmax_underflow.py").read_text())
    entry = _backward(doc)
    assert entry["name"] == "DivBackward0"
    assert "first made by LogBackward0, line 9" in entry["cause"], entry["cause"]
    assert "zero" not in entry["cause"] and "denominator" not in entry["trap"], entry
    # the infinity is real: log's backward returned it from a finite gradient
    log = next(n["id"] for n in doc["graph"]["nodes"] if n.get("name") == "LogBackward0")
    ev = next(e for e in doc["events"] if e["phase"] == "backward" and e["node"] == log)
    assert ev["grad_inputs"][0]["stats"]["min"] == "-inf"
    assert all(isinstance(v, float) for v in ev["grad_outputs"][0]["stats"].values())


def test_the_fix_for_divide_then_mask_leaves_no_nan(run: Any) -> None:
    entry = _backward(run((Path(__file__).parent / "nan_cases" / "divide_then_mask.py").read_text()))
    fixed = ("import torch\nx = torch.tensor([1.0, 1.0], requires_grad=True)\ndiv = torch.tensor([0.0, 1.0])\n"
             f"{entry['fix']}\ny.sum().backward()\nprint(x.grad)\n")
    after = run(fixed)
    assert "analysis" not in after and after["stdout"].strip() == "tensor([0., 1.])"


NEGATIVE_ROOT = """import torch
torch.manual_seed(0)
x = torch.randn(6, requires_grad=True)
y = x ** 0.5
y.sum().backward()
"""


def test_a_backward_nan_the_forward_made_names_the_forward_op(run: Any) -> None:
    """NOTE [a backward NaN the forward made] in analysis/nonfinite/first.py: ``x ** 0.5`` of a
    negative ``x`` is NaN in the forward, and its backward's NaN (the node detect_anomaly names)
    comes from it, at the same elements as torch's own."""
    name, _ = _anomaly(NEGATIVE_ROOT)
    doc = run(NEGATIVE_ROOT, tensor_budget=1 << 20)
    entry = _backward(doc)
    assert entry["name"] == name == "PowBackward0"
    assert entry["cause"].startswith("the forward pass had already made NaN here, line 4"), entry["cause"]
    forward = next(e for e in doc["analysis"]["nonfinite"] if e["phase"] == "forward")
    assert forward["node"] == entry["node"] and "fractional power" in forward["cause"]
    ns: dict[str, Any] = {}
    exec(compile(NEGATIVE_ROOT, "<bare>", "exec"), ns)
    negative = [i for i, v in enumerate(ns["x"].tolist()) if v < 0]
    assert negative == entry["elements"] and torch.isnan(ns["x"].grad[negative]).all()
