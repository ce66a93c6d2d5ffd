"""Explain this node (``analysis/explain/node.py``): every catalogued rule, evaluated on the document's
own numbers (float64 runs), gives the recorded ``grad_inputs`` and torch's real ``.grad``."""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="recording needs torch (the sandbox/capture side)")

from analysis.explain_cases import NET_LEAVES, NET_OPS, NET_VARIANTS  # noqa: E402
from gradtrace.analysis.explain import explain_node  # noqa: E402
from gradtrace.analysis.explain import node as explain_node_module  # noqa: E402
from gradtrace.analysis.explain.node import BACKWARD_RULES  # noqa: E402
from gradtrace.analysis.numbers import flatten  # noqa: E402
from gradtrace.errors import NotFound  # noqa: E402
from rundoc import run_doc  # noqa: E402

CATALOGUE = sorted(BACKWARD_RULES)
"""The backward ops that have a rule."""

LESSONS = Path(__file__).resolve().parents[2] / "backend" / "gradtrace" / "lessons" / "snippets"
F64 = "import torch\ntorch.set_default_dtype(torch.float64)\n"
TOL = 1e-6


def evaluate(doc: dict[str, Any], node_id: str, pass_index: int | None = None) -> list[list[float] | None]:
    """Every input's gradient, whole, as the rule computes it from the document's numbers (None
    where the rule cannot: no gradient passed, an operand's value not kept, or no rule for the
    op): the page asks one element at a time, this test every element."""
    m = explain_node_module
    node = m._node(doc, node_id)
    rule = BACKWARD_RULES.get(str(node.get("name")))
    event = m._event(doc, node_id, pass_index)
    ctx = m._context(node, event, m.Numbers(doc, None)) if event else None
    if rule is None or ctx is None or event is None:
        return []
    out: list[list[float] | None] = []
    for i, shape in enumerate(ctx.in_shapes[:len(event.get("grad_inputs") or [])]):
        if shape is None or i >= len(rule.texts_for(len(event.get("grad_inputs") or []))) \
                or m._missing(rule, ctx, i):
            out.append(None)
            continue
        try:
            out.append([rule.elem(ctx, i, k)[1] for k in range(m.numel(shape))])
        except (m.NotKept, m.Unsupported, *m._ARITHMETIC, *m._MISFIT):
            out.append(None)
    return out

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
    "ReshapeAliasBackward0": "x = torch.randn(2, 3, requires_grad=True)\n"
                             "z = torch.ops.aten._reshape_alias(x, (3, 2), (2, 1))",
    # ops whose rule reads a saved argument (NOTE [saved arguments] in capture/saved.py)
    "PowBackward0": "x = (torch.rand(2, 3) + 0.5).requires_grad_()\nz = x.pow(2.5)",
    "PowBackward1": "x = (torch.rand(2, 3) + 0.5).requires_grad_()\ny = torch.randn(3, requires_grad=True)\n"
                    "z = x.pow(y)",
    "MulBackward1": "x = torch.randn(2, 3, requires_grad=True)\nz = torch.ops.aten.mul.Scalar(x, 2.5)",
    "DivBackward1": "x = torch.randn(2, 3, requires_grad=True)\nz = torch.ops.aten.div.Scalar(x, 4.0)",
    "AddBackward1": "x = torch.randn(2, 3, requires_grad=True)\nz = torch.ops.aten.add.Scalar(x, 2.0)",
    "SubBackward1": "x = torch.randn(2, 3, requires_grad=True)\nz = torch.ops.aten.sub.Scalar(x, 2.0)",
    "SelectBackward0": "x = torch.randn(2, 3, 4, requires_grad=True)\nz = x[:, -1]",
    "SliceBackward0": "x = torch.randn(2, 7, requires_grad=True)\nz = x[:, -5::2]",
    "SplitBackward0": "x = torch.randn(2, 7, requires_grad=True)\na, b, c, d = x.split(2, dim=1)\nz = a * 3 + d[:, :1]",
    "UnsafeSplitBackward0": "x = torch.randn(3, 4, requires_grad=True)\na, b = x.unsafe_split(2, 0)\nz = a.exp()",
    "EmbeddingBackward0": "x = torch.randn(5, 3, requires_grad=True)\ni = torch.tensor([[0, 2], [4, 2]])\n"
                          "z = torch.nn.functional.embedding(i, x)",
    "MaskedFillBackward0": "x = torch.randn(2, 3, requires_grad=True)\nm = torch.tensor([True, False, True])\n"
                           "z = x.masked_fill(m, float('-inf'))",
    "PermuteBackward0": "x = torch.randn(2, 3, 4, requires_grad=True)\nz = x.permute(2, 0, 1)",
    "TransposeBackward0": "x = torch.randn(2, 3, 4, requires_grad=True)\nz = x.transpose(-1, 0)",
    "SumBackward1": "x = torch.randn(2, 3, 4, requires_grad=True)\nz = x.sum(dim=(0, -1))",
    "MeanBackward1": "x = torch.randn(2, 3, 4, requires_grad=True)\nz = x.mean(1, keepdim=True)",
    "LogSoftmaxBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = torch.log_softmax(x, -1)",
    "SoftmaxBackward0": "x = torch.randn(3, 4, requires_grad=True)\nz = torch.softmax(x, 0)",
    "SafeSoftmaxBackward0": "x = torch.randn(2, 3, 4, requires_grad=True)\nz = torch._safe_softmax(x, -1)",
    "NllLossBackward0": "x = torch.randn(4, 5).log_softmax(-1).requires_grad_()\n"
                        "z = torch.nn.functional.nll_loss(x, torch.tensor([1, 4, -100, 0]))",
    "NativeLayerNormBackward0": "x = torch.randn(2, 3, 4, requires_grad=True)\nw = torch.randn(4, requires_grad=True)\n"
                                "b = torch.randn(4, requires_grad=True)\n"
                                "z = torch.nn.functional.layer_norm(x, (4,), w, b)",
    "BmmBackward0": "x = torch.randn(2, 3, 4, requires_grad=True)\ny = torch.randn(2, 4, 5, requires_grad=True)\n"
                    "z = torch.bmm(x, y)",
    "MaximumBackward0": "x = torch.randn(2, 3, requires_grad=True)\ny = x[0].detach().clone().requires_grad_()\n"
                        "z = torch.maximum(x, y)",  # row 0 ties: half each
    "MinimumBackward0": "x = torch.randn(2, 3, requires_grad=True)\ny = x[1].detach().clone().requires_grad_()\n"
                        "z = torch.minimum(x, y)",
    "LeakyReluBackward0": "x = torch.randn(6, requires_grad=True)\nz = torch.nn.functional.leaky_relu(x, 0.2)",
    "ClampBackward1": "x = torch.randn(6, requires_grad=True)\nz = x.clamp(-0.5, 0.5)",
    "ClampMinBackward0": "x = torch.randn(6, requires_grad=True)\nz = x.clamp_min(0.1)",
    "WhereBackward0": "x = torch.randn(2, 3, requires_grad=True)\ny = torch.randn(3, requires_grad=True)\n"
                      "z = torch.where(torch.randn(2, 3) > 0, x, y)",
    **NET_OPS,
}
LEAVES = {"AddmmBackward0": ["b", "x", "y"], "NativeLayerNormBackward0": ["x", "w", "b"], **NET_LEAVES}
"""The leaves fed to each input of the op, where not ``x`` (and ``y``)."""
VARIANTS: dict[str, tuple[str, str]] = {  # more argument values through the same checks
    "gelu tanh": ("GeluBackward0", "x = torch.randn(5, requires_grad=True)\n"
                                   "z = torch.nn.functional.gelu(x, approximate='tanh')"),
    "add alpha": ("AddBackward0", "x = torch.randn(2, 3, requires_grad=True)\ny = torch.randn(3, requires_grad=True)\n"
                                  "z = torch.add(x, y, alpha=2.5)"),
    "sub alpha": ("SubBackward0", "x = torch.randn(2, 3, requires_grad=True)\ny = torch.randn(3, requires_grad=True)\n"
                                  "z = torch.sub(x, y, alpha=-3)"),
    "rsub alpha": ("RsubBackward1", "x = torch.randn(3, requires_grad=True)\nz = torch.rsub(x, 1.0, alpha=2)"),
    "nll sum weight": ("NllLossBackward0", "x = torch.randn(4, 3).requires_grad_()\n"
                       "z = torch.nn.functional.nll_loss(x, torch.tensor([1, 2, 0, 1]), weight=torch.rand(3), "
                       "reduction='sum')"),
    "nll none ignore 2": ("NllLossBackward0", "x = torch.randn(4, 3).requires_grad_()\n"
                          "z = torch.nn.functional.nll_loss(x, torch.tensor([1, 2, 0, 2]), ignore_index=2, "
                          "reduction='none')"),
    "nll mean weight 1d": ("NllLossBackward0", "x = torch.randn(3).requires_grad_()\n"
                           "z = torch.nn.functional.nll_loss(x, torch.tensor(2), weight=torch.rand(3))"),
    "pow int negative base": ("PowBackward0", "x = torch.randn(2, 3, requires_grad=True)\nz = x ** 3"),
    "pow zero": ("PowBackward0", "x = torch.randn(3, requires_grad=True)\nz = x ** 0"),
    "select index": ("SelectBackward0", "x = torch.randn(3, 2, requires_grad=True)\nz = x[1]"),
    "slice step": ("SliceBackward0", "x = torch.randn(3, 8, 2, requires_grad=True)\nz = x[:, 1:6:3]"),
    "sum all dims": ("SumBackward1", "x = torch.randn(2, 3, requires_grad=True)\nz = x.sum(dim=(0, 1), keepdim=True)"),
    "layer norm no affine": ("NativeLayerNormBackward0", "x = torch.randn(3, 2, 4, requires_grad=True)\n"
                             "z = torch.nn.functional.layer_norm(x, (2, 4))"),
    **NET_VARIANTS,
    "softmax all -inf row": ("SafeSoftmaxBackward0", "x = torch.randn(2, 3)\nx[0] = float('-inf')\n"
                             "x.requires_grad_()\nz = torch._safe_softmax(x, -1)"),
}
EXEMPT = {  # lesson ops without a rule, and why
    "CompiledFunctionBackward": "the backward of a whole compiled region (lesson 15): its rule is the "
                                "compiled graph of many ops, not one local formula",
}
TAIL = "\ng = torch.randn(z.shape, dtype=z.dtype)\nz.backward(g)\n"


def _record(code: str) -> dict[str, Any]:
    doc = run_doc(F64 + code, seed=0)
    assert doc["status"] == "ok", doc.get("error")
    return doc


def _close(rule: list[float], recorded: Any) -> bool:
    got = flatten(recorded)
    if len(got) != len(rule):
        return False
    return all(a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=TOL, abs_tol=TOL)
               for a, b in zip(rule, got, strict=True))


def _checked(doc: dict[str, Any]) -> dict[str, int]:
    """Every backward event of a catalogued op: each input's gradient from the rule equals the
    recorded one wherever the rule can be evaluated. Returns how many inputs each op matched."""
    names = {n["id"]: n["name"] for n in doc["graph"]["nodes"]}
    matched: dict[str, int] = {}
    for event in doc["events"]:
        if event["phase"] != "backward" or names[event["node"]] not in CATALOGUE:
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
    assert len(CATALOGUE) >= 30


@pytest.mark.parametrize("case", sorted(OPS) + sorted(VARIANTS))
def test_rule_matches_recorded_and_torch(case: str) -> None:
    op, code = VARIANTS[case] if case in VARIANTS else (case, OPS[case])
    code += TAIL
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
    leaves = LEAVES.get(op) or [name for name in ("x", "y") if name in scope]
    assert any(g is not None for g in grads[:len(leaves)])
    for i, leaf in enumerate(leaves):
        if grads[i] is None:
            continue
        real = scope[leaf].grad.reshape(-1).tolist()
        assert len(real) == len(grads[i])
        assert all(math.isclose(a, b, rel_tol=TOL, abs_tol=TOL) for a, b in zip(grads[i], real, strict=True)), leaf


FLOAT32_ONLY = {
    "MkldnnRnnLayerBackward0": "nn.LSTM's fused CPU kernel runs in float32 (a float64 LSTM is made of "
                               "plain ops): tests/analysis/test_explain_numbers.py holds every element "
                               "of its rule to torch's .grad",
}
"""Catalogued ops that this file's float64 programs cannot make, and where they are tested."""


def test_every_catalogued_op_is_exercised() -> None:
    assert set(CATALOGUE) <= set(OPS) | {"AccumulateGrad"} | set(FLOAT32_ONLY)
    assert not set(FLOAT32_ONLY) & set(OPS)


@functools.cache
def _lesson(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = run_doc(F64 + (LESSONS / name).read_text(), seed=0)
    return doc  # 06 and 08 end in an error by design: their events up to it


LESSON_NAMES = sorted(p.name for p in LESSONS.glob("*.py"))


@pytest.mark.parametrize("lesson", LESSON_NAMES)
def test_rules_reproduce_the_lessons(lesson: str) -> None:
    _checked(_lesson(lesson))  # agreement wherever the values were kept (12 and 14 keep few: larger tensors)


def test_every_op_the_lessons_use_has_a_rule() -> None:
    used = {n["name"]: lesson[:2] for lesson in LESSON_NAMES for n in _lesson(lesson)["graph"]["nodes"]
            if n["kind"] == "function"}
    assert len(LESSON_NAMES) == 15
    missing = {op: at for op, at in used.items() if op not in CATALOGUE and op not in EXEMPT}
    assert not missing, f"lesson ops with no rule (op: lesson): {missing}"
    assert set(EXEMPT) <= set(used), "an exemption no lesson needs"
    assert not set(EXEMPT) & set(CATALOGUE)


SMALLER = {  # lessons whose tensors exceed the 1,000 elements a document keeps values of, made small
    "12_checkpoint_memory.py": [("64, 64", "8, 8"), ("16, 64", "4, 8")],
    "14_transformer_block.py": [("d_model=64, nhead=4, dim_feedforward=128", "d_model=4, nhead=2, dim_feedforward=4"),
                                ("num_layers=2", "num_layers=1"), ("randn(2, 16, 64)", "randn(2, 2, 4)")],
}
"""(A document keeps 10,000 numbers in all: NOTE [document size] in capture/values.py.)"""
UNMATCHED = {  # lesson ops with a rule that no lesson runs backward through with its values kept
    "AccumulateGrad": "a leaf receives, it passes nothing on",
    "ExpBackward0": "lesson 08's backward fails (the in-place error) before reaching it",
    "TanhBackward0": "only in lesson 12, under checkpoint: reading its saved result would recompute the "
                     "block, so it is not read (saved_unread) and its rule has no numbers",
}


def _smaller(name: str) -> dict[str, Any]:
    code = (LESSONS / name).read_text()
    for old, new in SMALLER[name]:
        assert old in code, (name, old)
        code = code.replace(old, new)
    doc = _record(code)
    return doc


def test_the_lessons_exercise_their_ops_rules() -> None:
    """Every lesson op with a rule is worked out on a lesson's own graph and numbers (12 and 14
    with smaller tensors, whose values the document keeps) and matches what backward passed on."""
    docs = [_lesson(n) for n in LESSON_NAMES] + [_smaller(n) for n in SMALLER]
    matched: set[str] = set()
    for doc in docs:
        matched |= set(_checked(doc))
    used = {n["name"] for lesson in LESSON_NAMES for n in _lesson(lesson)["graph"]["nodes"]
            if n["kind"] == "function"}
    assert sorted(used & set(CATALOGUE) - matched) == sorted(UNMATCHED)


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
    doc = _record("x = torch.randn(3, requires_grad=True)\nz = torch.linalg.svdvals(x.reshape(1, 3))" + TAIL)
    with pytest.raises(NotFound):
        explain_node(doc, "n999")
    node = next(n for n in doc["graph"]["nodes"] if n["name"] == "LinalgSvdBackward0")
    answer = explain_node(doc, node["id"])
    assert not answer["known"] and "no rule" in answer["note"]


def test_pow_instance_reads_the_saved_exponent_and_an_older_document_says_it_lacks_it() -> None:
    doc = _record(VARIANTS["pow int negative base"][1] + TAIL)
    node = next(n for n in doc["graph"]["nodes"] if n["name"] == "PowBackward0")
    assert node["saved_args"] == {"exponent": 3}
    answer = explain_node(doc, node["id"], index=[1, 2])
    assert answer["args"] == {"exponent": 3}  # what the rule read, shown with it
    entry = answer["inputs"][0]
    assert entry["rule"] == "grad_self = grad_out · exponent · self^(exponent − 1)"
    assert " · 3 · " in entry["instance"] and "^2 = " in entry["instance"]
    assert math.isclose(entry["value"], entry["recorded"], rel_tol=TOL)
    del node["saved_args"]  # as written before capture kept saved arguments
    old = explain_node(doc, node["id"])["inputs"][0]
    assert "instance" not in old and "exponent not recorded" in old["note"]
    assert evaluate(doc, node["id"]) == [None]


def test_select_instance_says_whether_the_element_was_selected() -> None:
    doc = _record(OPS["SelectBackward0"] + TAIL)
    node = next(n for n in doc["graph"]["nodes"] if n["name"] == "SelectBackward0")
    assert node["saved_args"] == {"dim": 1, "index": -1}
    picked = explain_node(doc, node["id"], index=[1, 2, 3])["inputs"][0]
    assert "· [2 = 2] = " in picked["instance"] and picked["value"] == picked["recorded"] != 0
    other = explain_node(doc, node["id"], index=[1, 0, 3])["inputs"][0]
    assert "[0 = 2]" in other["instance"] and other["value"] == other["recorded"] == 0


def test_the_where_nan_program_is_explained_as_ieee_computes_it() -> None:
    """1/(2·√0) is inf and 0 · inf is nan in torch: the rule says the same, never raises."""
    doc = _record("x = torch.tensor([-1.0, 0.0, 4.0], requires_grad=True)\n"
                  "y = torch.where(x > 0, x.sqrt(), 0.0)\ny.sum().backward()\n")
    node = next(n for n in doc["graph"]["nodes"] if n["name"] == "SqrtBackward0")
    for k, want in enumerate(("nan", "nan", 0.25)):
        entry = explain_node(doc, node["id"], index=[k])["inputs"][0]
        assert entry["value"] == entry["recorded"] == want, entry
    assert _checked(doc).get("SqrtBackward0") == 1


def test_arguments_that_contradict_the_shapes_give_a_note_not_an_error() -> None:
    """A job's result is untrusted: a saved argument past the tensor's dims is answered, not raised."""
    doc = _record(OPS["SelectBackward0"] + TAIL)
    node = next(n for n in doc["graph"]["nodes"] if n["name"] == "SelectBackward0")
    node["saved_args"] = {"dim": 7, "index": 0}
    entry = explain_node(doc, node["id"])["inputs"][0]
    assert "instance" not in entry and "do not fit" in entry["note"]
    assert evaluate(doc, node["id"]) == [None]
    node["saved_args"] = {"dim": [1], "index": 0}
    assert "do not fit" in explain_node(doc, node["id"])["inputs"][0]["note"]


def test_a_norm_of_an_ord_the_rule_does_not_cover_says_so() -> None:
    """No false number: ord=inf's gradient (shared among the ties of the largest |x|) is not
    written here, and the answer says why rather than showing a value."""
    doc = _record("x = torch.randn(3, 4, requires_grad=True)\nz = torch.linalg.vector_norm(x, float('inf'))" + TAIL)
    node = next(n for n in doc["graph"]["nodes"] if n["name"] == "LinalgVectorNormBackward0")
    entry = explain_node(doc, node["id"])["inputs"][0]
    assert "value" not in entry and "ord ≥ 1 and finite" in entry["note"]


@pytest.mark.parametrize("op", sorted(NET_OPS))
def test_a_network_rule_answers_contradictory_arguments_with_a_note(op: str) -> None:
    """A job's result is untrusted: every saved argument of the node replaced by a number or a
    list that contradicts the shapes gives an answer (a note or a number), never an exception."""
    doc = _record(NET_OPS[op] + TAIL)
    node = next(n for n in doc["graph"]["nodes"] if n["name"] == op)
    for bad in (99, -99, 0, [99, 99], [], "x"):
        node["saved_args"] = {k: bad for k in node.get("saved_args") or {"dim": 0}}
        answer = explain_node(doc, node["id"])
        assert answer["known"] and answer["inputs"], answer
