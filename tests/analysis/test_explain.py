"""Explain this node (``analysis/explain.py``): every catalogued rule, evaluated on the document's
own numbers (float64 runs), gives the recorded ``grad_inputs`` and torch's real ``.grad``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="recording needs torch (the sandbox/capture side)")

from gradtrace.analysis.explain import catalogue, evaluate, explain_node  # noqa: E402
from gradtrace.analysis.explain_tensors import flatten  # noqa: E402
from gradtrace.capture import run_snippet  # noqa: E402
from gradtrace.errors import NotFound  # noqa: E402

LESSONS = Path(__file__).resolve().parents[2] / "backend" / "gradtrace" / "lessons" / "snippets"
F64 = "import torch\ntorch.set_default_dtype(torch.float64)\n"
TOL = 1e-6

# One small program per op: ``x`` (and ``y``) are leaves feeding the op directly, so the rule's
# gradient for that input is exactly torch's x.grad (y.grad).
OPS: dict[str, str] = {
    "AddBackward0": "x = torch.randn(2, 3, requires_grad=True)\ny = torch.randn(3, requires_grad=True)\nz = x + y",
    "SubBackward0": "x = torch.randn(2, 3, requires_grad=True)\ny = torch.randn(2, 1, requires_grad=True)\nz = x - y",
    "MulBackward0": "x = torch.randn(2, 3, requires_grad=True)\ny = torch.randn(3, requires_grad=True)\nz = x * y",
    "DivBackward0": "x = torch.randn(2, 3, requires_grad=True)\ny = (torch.rand(2, 3) + 1).requires_grad_()\nz = x / y",
    "NegBackward0": "x = torch.randn(4, requires_grad=True)\nz = -x",
    "ExpBackward0": "x = torch.randn(4, requires_grad=True)\nz = x.exp()",
    "TanhBackward0": "x = torch.randn(4, requires_grad=True)\nz = x.tanh()",
    "SigmoidBackward0": "x = torch.randn(4, requires_grad=True)\nz = x.sigmoid()",
    "ReluBackward0": "x = torch.randn(6, requires_grad=True)\nz = x.relu()",
    "LogBackward0": "x = (torch.rand(4) + 0.5).requires_grad_()\nz = x.log()",
    "SqrtBackward0": "x = (torch.rand(4) + 0.5).requires_grad_()\nz = x.sqrt()",
    "SinBackward0": "x = torch.randn(4, requires_grad=True)\nz = x.sin()",
    "CosBackward0": "x = torch.randn(4, requires_grad=True)\nz = x.cos()",
    "AbsBackward0": "x = torch.randn(4, requires_grad=True)\nz = x.abs()",
    "GeluBackward0": "x = torch.randn(4, requires_grad=True)\nz = torch.nn.functional.gelu(x)",
    "SumBackward0": "x = torch.randn(2, 3, requires_grad=True)\nz = x.sum()",
    "MeanBackward0": "x = torch.randn(2, 3, requires_grad=True)\nz = x.mean()",
    "ExpandBackward0": "x = torch.randn(3, 1, requires_grad=True)\nz = x.expand(3, 4)",
    "TBackward0": "x = torch.randn(2, 3, requires_grad=True)\nz = x.t()",
    "MmBackward0": "x = torch.randn(2, 3, requires_grad=True)\ny = torch.randn(3, 4, requires_grad=True)\nz = x @ y",
    "AddmmBackward0": "b = torch.randn(4, requires_grad=True)\nx = torch.randn(2, 3, requires_grad=True)\n"
                      "y = torch.randn(3, 4, requires_grad=True)\nz = torch.addmm(b, x, y)",
    "ViewBackward0": "x = torch.randn(2, 3, requires_grad=True)\nz = x.view(3, 2)",
    "UnsafeViewBackward0": "x = torch.randn(3, 2).t().detach().requires_grad_()\nz = x.reshape(6)",
    "SqueezeBackward0": "x = torch.randn(1, 3, requires_grad=True)\nz = x.squeeze()",
    "SqueezeBackward1": "x = torch.randn(1, 3, requires_grad=True)\nz = x.squeeze(0)",
    "UnsqueezeBackward0": "x = torch.randn(3, requires_grad=True)\nz = x.unsqueeze(0)",
    "CloneBackward0": "x = torch.randn(3, requires_grad=True)\nz = x.clone()",
    "ToCopyBackward0": "x = torch.randn(3, requires_grad=True)\nz = x.to(torch.float32)",
    "RsubBackward1": "x = torch.randn(3, requires_grad=True)\nz = 1 - x",
}
TAIL = "\ng = torch.randn(z.shape, dtype=z.dtype)\nz.backward(g)\n"


def _record(code: str) -> dict[str, Any]:
    doc = run_snippet(F64 + code, seed=0)
    assert doc["status"] == "ok", doc.get("error")
    return doc


def _close(rule: list[float], recorded: Any) -> bool:
    got = flatten(recorded)
    if len(got) != len(rule):
        return False
    return all(math.isclose(a, b, rel_tol=TOL, abs_tol=TOL) for a, b in zip(rule, got, strict=True))


def _checked(doc: dict[str, Any]) -> dict[str, int]:
    """Every backward event of a catalogued op: each input's gradient from the rule equals the
    recorded one wherever the rule can be evaluated. Returns how many inputs each op matched."""
    names = {n["id"]: n["name"] for n in doc["graph"]["nodes"]}
    matched: dict[str, int] = {}
    for event in doc["events"]:
        if event["phase"] != "backward" or names[event["node"]] not in catalogue():
            continue
        grads = evaluate(doc, event["node"], event["pass"])
        for i, rule in enumerate(grads):
            recorded = event["grad_inputs"][i]
            if rule is None or recorded is None or recorded.get("values") is None \
                    or len(flatten(recorded["values"])) != len(rule):
                continue
            assert _close(rule, recorded["values"]), (names[event["node"]], i, rule, recorded["values"])
            matched[names[event["node"]]] = matched.get(names[event["node"]], 0) + 1
    return matched


def test_catalogue_has_thirty_ops() -> None:
    assert len(catalogue()) >= 30


@pytest.mark.parametrize("op", sorted(OPS))
def test_rule_matches_recorded_and_torch(op: str) -> None:
    code = OPS[op] + TAIL
    doc = _record(code)
    assert _checked(doc).get(op), f"{op}'s rule was never evaluated"
    # torch's own answer: the same program, run here
    scope: dict[str, Any] = {}
    try:
        exec(compile(F64 + "torch.manual_seed(0)\n" + code, "<op>", "exec"), scope)
    finally:
        torch.set_default_dtype(torch.float32)
    node = next(n for n in doc["graph"]["nodes"] if n["name"] == op)
    grads = evaluate(doc, node["id"])
    leaves = [name for name in ("x", "y") if name in scope] if op != "AddmmBackward0" else ["b", "x", "y"]
    for i, leaf in enumerate(leaves):
        if grads[i] is None:
            continue
        real = scope[leaf].grad.reshape(-1).tolist()
        assert len(real) == len(grads[i])
        assert all(math.isclose(a, b, rel_tol=TOL, abs_tol=TOL) for a, b in zip(grads[i], real, strict=True)), leaf


def test_every_catalogued_op_is_exercised() -> None:
    assert set(catalogue()) <= set(OPS) | {"AccumulateGrad"}


@pytest.mark.parametrize("lesson", sorted(p.name for p in LESSONS.glob("*.py")))
def test_rules_reproduce_the_lessons(lesson: str) -> None:
    code = (LESSONS / lesson).read_text()
    doc = run_snippet(F64 + code, seed=0)  # 06 and 08 end in an error by design: their events up to it
    _checked(doc)  # agreement wherever the values were kept (12 and 14 keep few: larger tensors)


def test_lesson_01_mul_instance_reads_the_saved_operand() -> None:
    doc = _record((LESSONS / "01_chain_rule.py").read_text())
    node = next(n for n in doc["graph"]["nodes"] if n["name"] == "MulBackward0" and n["saved"])
    answer = explain_node(doc, node["id"])
    assert answer["known"] and answer["inputs"]
    first = answer["inputs"][0]
    assert first["rule"] == "grad_self = grad_out · other"
    assert math.isclose(first["value"], first["recorded"], rel_tol=TOL)
    assert first["instance"].endswith(f"= {first['value']:.4g}")


def test_addmm_instance_for_a_chosen_element() -> None:
    doc = _record(OPS["AddmmBackward0"] + TAIL)
    node = next(n for n in doc["graph"]["nodes"] if n["name"] == "AddmmBackward0")
    answer = explain_node(doc, node["id"], index=[1, 2])
    mat1 = answer["inputs"][1]
    assert mat1["index"] == [1, 2] and math.isclose(mat1["value"], mat1["recorded"], rel_tol=TOL)
    assert mat1["instance"].count("·") == 3  # three terms: grad_out[1, q] · mat2[2, q]
    assert explain_node(doc, node["id"], index=[9, 9])["inputs"][1]["index"] == [0, 0]


def test_unknown_node_and_unknown_op() -> None:
    doc = _record("x = torch.randn(3, requires_grad=True)\nz = x.cumsum(0)" + TAIL)
    with pytest.raises(NotFound):
        explain_node(doc, "n999")
    node = next(n for n in doc["graph"]["nodes"] if n["name"] == "CumsumBackward0")
    answer = explain_node(doc, node["id"])
    assert not answer["known"] and "no rule" in answer["note"]
