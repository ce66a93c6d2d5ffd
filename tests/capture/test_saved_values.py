"""Saved tensors carry their values (NOTE [saved values] in capture/saved.py), checked against
what torch itself saved: ``grad_fn._saved_*`` of built-in nodes and ``ctx.saved_tensors`` of
custom Functions. Every capture test runs on both kernel sets (GRADTRACE_KERNELS)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import gradtrace
from gradcheck.cube import cube
from gradtrace.schema import VALUES_LIMIT


def _as_tensor(values: Any, dtype: torch.dtype) -> torch.Tensor:
    def num(v: Any) -> Any:
        if isinstance(v, list):
            return [num(x) for x in v]
        return float(v) if isinstance(v, str) else v  # "nan", "inf", "-inf"
    return torch.tensor(num(values), dtype=dtype)


def _saved(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The saved tensors of the one node called ``name`` that saved any."""
    nodes = [n for n in doc["graph"]["nodes"]
             if n["kind"] == "function" and n["name"] == name and n["saved"]]
    assert len(nodes) == 1, [n["name"] for n in doc["graph"]["nodes"]]
    saved: list[dict[str, Any]] = nodes[0]["saved"]
    return saved


def _check(entry: dict[str, Any], expected: torch.Tensor) -> None:
    """The saved entry's value is ``expected``: structure exactly, numbers to float32."""
    value = entry["value"]
    assert value["shape"] == list(expected.shape)
    assert value["dtype"] == str(expected.dtype).removeprefix("torch.")
    got = _as_tensor(value["values"], expected.dtype)
    torch.testing.assert_close(got, expected.detach(), rtol=1.3e-6, atol=1e-5)


def test_builtin_nodes_saved_values_equal_what_torch_saved() -> None:
    torch.manual_seed(0)
    with gradtrace.record() as rec:
        x = torch.randn(3, 4, requires_grad=True)
        w = torch.randn(4, 5, requires_grad=True)
        h = x @ w
        y = h.tanh()
        y.sum().backward(retain_graph=True)
    doc = rec.document().model_dump(mode="json")
    mm = {s["name"]: s for s in _saved(doc, "MmBackward0")}
    assert set(mm) == {"self", "mat2"}
    _check(mm["self"], h.grad_fn._saved_self)  # type: ignore[union-attr]
    _check(mm["mat2"], h.grad_fn._saved_mat2)  # type: ignore[union-attr]
    (tanh,) = _saved(doc, "TanhBackward0")
    assert tanh["name"] == "result"
    _check(tanh, y.grad_fn._saved_result)  # type: ignore[union-attr]


def test_custom_function_saved_values_equal_ctx_saved_tensors(run: Any) -> None:
    code = cube("3 * ", "x = torch.tensor([1.0, 2.0], requires_grad=True)\ny = Cube.apply(x)\n"
                "y.sum().backward(retain_graph=True)\n")
    doc = run(code)
    assert doc["status"] == "ok", doc["error"]
    ns: dict[str, Any] = {}
    exec(compile(code, "<cube>", "exec"), ns)  # the same program, for torch's own answer
    expected = ns["y"].grad_fn.saved_tensors
    (entry,) = _saved(doc, "CubeBackward")
    assert entry["name"] == "saved_tensors[0]"
    _check(entry, expected[0])
    assert entry["value"]["values"] == [1.0, 2.0]


def test_a_saved_value_is_what_was_saved_not_what_it_became(run: Any) -> None:
    # ``b`` is saved by ``b.sin()`` and changed afterwards: its entry shows what autograd
    # saved, and backward refuses it (the in-place hazard, recorded as ever)
    doc = run("import torch\na = torch.ones(3, requires_grad=True)\nb = a * 2\nc = b.sin()\n"
              "b.add_(1)\nc.sum().backward()\n")
    assert doc["status"] == "error"
    (entry,) = _saved(doc, "SinBackward0")
    assert entry["name"] == "self"
    assert entry["value"]["values"] == [2.0, 2.0, 2.0]


def test_large_saved_tensors_have_no_value_and_odd_dtypes_have_theirs(run: Any) -> None:
    doc = run(f"import torch\nx = torch.randn({VALUES_LIMIT + 1}, requires_grad=True)\n"
              "y = x.exp()\n"
              "z = torch.randn(2, 3, requires_grad=True)\n"
              "i = torch.tensor([[2, 0], [1, 1]])\n"
              "g = z.gather(1, i)\n"
              "(y.sum() + g.sum()).backward()\n")
    assert doc["status"] == "ok", doc["error"]
    (exp,) = _saved(doc, "ExpBackward0")
    assert "value" not in exp and exp["shape"] == [VALUES_LIMIT + 1]
    gather = {s["name"]: s for s in _saved(doc, "GatherBackward0")}
    assert gather["index"]["value"]["dtype"] == "int64"
    assert gather["index"]["value"]["values"] == [[2, 0], [1, 1]]


def test_saved_values_spend_the_documents_values_budget(run: Any) -> None:
    # each pass's gradients spend 1,000 numbers a value: past the 10,000 of the budget the
    # saved tensors (written last) keep their stats only
    doc = run("import torch\nx = torch.ones(1000, requires_grad=True)\n"
              "for _ in range(6):\n    (x * x).sum().backward()\n")
    assert doc["status"] == "ok", doc["error"]
    saved = [s for n in doc["graph"]["nodes"] if n["kind"] == "function" for s in n["saved"]]
    assert saved and all("value" in s for s in saved)
    assert all(s["value"]["values"] is None for s in saved)
    assert all(s["value"]["stats"]["max"] == 1.0 for s in saved)


def test_saved_values_are_absent_when_the_saved_tensors_are_unread(run: Any) -> None:
    doc = run("import torch\nfrom torch.utils.checkpoint import checkpoint\n"
              "x = torch.ones(3, requires_grad=True)\n"
              "y = checkpoint(lambda t: t.sin() * t, x, use_reentrant=False)\n"
              "y.sum().backward()\n")
    assert doc["status"] == "ok", doc["error"]
    unread = [n for n in doc["graph"]["nodes"] if n.get("saved_unread")]
    assert unread and all(n["saved"] == [] for n in unread)


ARGS_PROGRAM = """import torch, torch.nn.functional as F
x = torch.randn(2, 3, 4, requires_grad=True)
a = x.pow(2).sum() + x[:, -1].sum() + x[..., 1:3].sum() + F.log_softmax(x, -1).sum()
a = a + x.transpose(-1, 0).sum() + x.permute(2, 0, 1).sum(dim=(0, 1)).sum() + x.clamp(min=0).sum()
a = a + F.gelu(x, approximate="tanh").sum() + x.abs().pow(float("inf")).sum()
a = a + F.nll_loss(F.log_softmax(x[0], -1), torch.tensor([0, 1, 2]))
a.backward()
"""
ARGS_EXPECTED = {  # by op: torch's own ``_saved_*`` of each, signed, None and sizes left out
    "PowBackward0": [{"exponent": 2}, {"exponent": "inf"}],
    "SelectBackward0": [{"dim": 1, "index": -1}, {"dim": 0, "index": 0}],
    "SliceBackward0": [{"dim": 2, "start": 1, "end": 3, "step": 1}],
    "LogSoftmaxBackward0": [{"dim": -1}, {"dim": -1}],
    "TransposeBackward0": [{"dim0": -1, "dim1": 0}],
    "PermuteBackward0": [{"dims": [2, 0, 1]}],
    "SumBackward1": [{"dim": [0, 1], "keepdim": False}],
    "ClampBackward1": [{"min": 0}],
    "GeluBackward0": [{"approximate": "tanh"}],
    "NllLossBackward0": [{"ignore_index": -100, "reduction": 1}],
}


@pytest.mark.parametrize("native", [True, False], ids=["core", "python"])
def test_small_non_tensor_arguments_are_saved_args(native: bool) -> None:
    """NOTE [saved arguments] in capture/saved.py, on both kernel sets."""
    from rundoc import run_doc

    doc = run_doc(ARGS_PROGRAM, seed=0, native=native)
    assert doc["status"] == "ok", doc["error"]
    fns = [n for n in doc["graph"]["nodes"] if n["kind"] == "function"]
    for op, expected in ARGS_EXPECTED.items():
        got = [n.get("saved_args") for n in fns if n["name"] == op]
        assert sorted(map(str, got)) == sorted(str(dict(sorted(e.items()))) for e in expected), op
    for n in fns:  # sizes, strides and None never appear; add's alpha does
        assert not any("_sym_" in k for k in n.get("saved_args") or {}), n
        if n["name"] == "AddBackward0":
            assert n["saved_args"] == {"alpha": 1}
    mul = [n for n in fns if n["name"] in ("MulBackward0", "ExpBackward0", "AccumulateGrad")]
    assert mul and all("saved_args" not in n for n in mul)  # nothing but tensors saved: absent


def test_a_saved_argument_is_torchs_own_value() -> None:
    from gradtrace.capture.saved import saved_arg

    x = torch.randn(3, 4, requires_grad=True)
    node = torch.nn.functional.softmax(x, -1).grad_fn
    assert node._saved_dim == 2**64 - 1  # autograd's binding: int64 as unsigned
    assert saved_arg(node._saved_dim) == -1
    assert saved_arg(2**64) is None and saved_arg(-(2**63)) == -(2**63)
    assert saved_arg((1, 2)) == [1, 2] and saved_arg(tuple(range(9))) is None
    assert saved_arg(True) is True and saved_arg(float("nan")) == "nan" and saved_arg(0.5) == 0.5
    assert saved_arg("tanh") == "tanh" and saved_arg("not a name") is None and saved_arg(None) is None
    assert saved_arg(torch.float32) is None and saved_arg((1.5,)) is None


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_strided_saved_values_are_read_in_row_major_order(dtype: torch.dtype) -> None:
    """Saved tensors that are views with other strides (a transpose, a 3-d permute, a stepped
    slice, an expand with stride 0) carry the values torch saved, in row-major order, with the
    stats of those values: the core reads them where they lie, without a contiguous copy."""
    torch.manual_seed(0)
    with gradtrace.record() as rec:
        a = torch.randn(4, 6, dtype=dtype, requires_grad=True)
        b = torch.randn(2, 3, 4, dtype=dtype, requires_grad=True)
        c = torch.randn(3, 10, dtype=dtype, requires_grad=True)
        d = torch.randn(5, 1, dtype=dtype, requires_grad=True)
        ta = a.t()
        pb = b.permute(2, 0, 1)
        sc = c[:, ::3]
        ed = d.expand(5, 4)
        y1 = ta * ta.flip(0)  # MulBackward0 saves both operands
        y2 = pb.sin()
        y3 = sc.abs()
        y4 = ed.cos()
        (y1.sum() + y2.sum() + y3.sum() + y4.sum()).backward(retain_graph=True)
    doc = rec.document().model_dump(mode="json")
    expected = {"MulBackward0": y1.grad_fn._saved_self, "SinBackward0": y2.grad_fn._saved_self,  # type: ignore[union-attr]
                "AbsBackward0": y3.grad_fn._saved_self, "CosBackward0": y4.grad_fn._saved_self}  # type: ignore[union-attr]
    for name, tensor in expected.items():
        assert not tensor.is_contiguous(), name  # the case under test: a strided saved tensor
        entry = next(s for s in _saved(doc, name) if s["name"] in ("self", "result"))
        _check(entry, tensor)
        stats = entry["value"]["stats"]
        flat = tensor.detach().double().flatten()
        torch.testing.assert_close(torch.tensor([float(stats[k]) for k in ("min", "max", "mean", "norm")],
                                                dtype=torch.float64),
                                   torch.stack([flat.min(), flat.max(), flat.mean(), flat.norm()]),
                                   rtol=1.3e-6, atol=1e-6)
