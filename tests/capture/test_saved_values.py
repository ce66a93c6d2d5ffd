"""Saved tensors carry their values (NOTE [saved values] in capture/saved.py), checked against
what torch itself saved: ``grad_fn._saved_*`` of built-in nodes and ``ctx.saved_tensors`` of
custom Functions. Every capture test runs on both kernel sets (GRADTRACE_KERNELS)."""

from __future__ import annotations

from typing import Any

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
