"""Every kind of tensor gets values and/or stats, or a note saying why not (NOTE [every kind
of tensor] in capture/values.py); a sparse gradient its dense values when small, and always its
nonzero count and stats. Both recorders for the gradients."""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytest
import torch

from conftest import CASES
from gradtrace.capture.values import encode

BOTH = pytest.mark.parametrize("native", [False, True], ids=["python", "core"])


def _close(a: Any, b: float) -> bool:
    return math.isclose(float(a), b, rel_tol=1e-5, abs_tol=1e-6)


def _stats_of(dense: torch.Tensor) -> dict[str, float]:
    f = dense.double()
    return {"min": f.min().item(), "max": f.max().item(), "mean": f.mean().item(), "norm": f.norm().item()}


def test_sparse_small_has_dense_values_nonzero_and_stats() -> None:
    t = torch.sparse_coo_tensor([[0, 2, 2]], [1.5, -2.0, 0.5], (5,), check_invariants=True)
    v = encode(t)
    assert v["layout"] == "sparse_coo" and v["nonzero"] == 2  # 2 and 2 coalesce into -1.5
    assert v["values"] == [1.5, 0.0, -1.5, 0.0, 0.0]
    for k, want in _stats_of(t.to_dense()).items():
        assert _close(v["stats"][k], want), k


def test_sparse_large_has_stats_of_its_dense_form_without_values() -> None:
    t = torch.sparse_coo_tensor([[3, 4000, 9999]], [2.0, -5.0, 0.0], (10_000,), check_invariants=True)
    v = encode(t)
    assert v["values"] is None and v["nonzero"] == 2 and "10,000" in v["note"]
    for k, want in _stats_of(t.to_dense()).items():
        assert _close(v["stats"][k], want), k


def test_sparse_csr() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Sparse CSR tensor support is in beta state"
        t = torch.tensor([[0.0, 3.0], [4.0, 0.0]]).to_sparse_csr()
        v = encode(t)
    assert v["layout"] == "sparse_csr" and v["nonzero"] == 2
    assert v["values"] == [[0.0, 3.0], [4.0, 0.0]] and v["stats"]["norm"] == 5.0


def test_every_other_kind_has_values_stats_or_a_note() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # quantized creation is deprecated
        q = torch.quantize_per_tensor(torch.tensor([0.5, -1.0]), 0.1, 0, torch.qint8)
    kinds = {
        "complex": torch.tensor([3 + 4j, 0j]),
        "int": torch.tensor([1, -2, 3]),
        "bool": torch.tensor([True, False, True]),
        "quantized": q,
        "meta": torch.empty(2, 3, device="meta"),
    }
    out = {k: encode(t) for k, t in kinds.items()}
    assert out["complex"]["values"] == [[3.0, 4.0], [0.0, 0.0]] and out["complex"]["stats"]["max"] == 5.0
    assert out["int"]["values"] == [1, -2, 3] and out["int"]["stats"]["min"] == -2
    assert out["bool"]["values"] == [True, False, True] and out["bool"]["nonzero"] == 2
    assert out["bool"]["stats"] is None and "true" in out["bool"]["note"]
    assert out["quantized"]["values"] == [0.5, -1.0] and out["quantized"]["dtype"] == "qint8"
    assert "dequantized" in out["quantized"]["note"]
    assert out["meta"]["values"] is None and out["meta"]["stats"] is None and "no data" in out["meta"]["note"]
    for k, v in out.items():
        assert v["values"] is not None or v["stats"] is not None or v.get("note"), k


EMBEDDING = (CASES / "sparse_embedding.py").read_text()  # the golden case, run on both recorders


@BOTH
def test_sparse_embedding_gradients(run: Any, native: bool) -> None:
    doc = run(EMBEDDING, native=native)
    leaves = {n["name"]: n for n in doc["graph"]["nodes"] if n["role"] == "leaf"}
    small, large = leaves["small.weight"], leaves["large.weight"]
    assert small["grad"]["layout"] == "sparse_coo" and small["grad"]["nonzero"] == 4
    assert small["grad"]["values"] == [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [2.0, 2.0], [0.0, 0.0]]
    assert small["grad_history"] == [small["grad"]]
    g = large["grad"]
    assert g["values"] is None and g["nonzero"] == 8 and g["shape"] == [3000, 4]
    torch.manual_seed(0)
    torch.nn.Embedding(6, 2)
    w = torch.nn.Embedding(3000, 4).weight.detach()
    dense = torch.zeros(3000, 4)
    for i in (1, 4, 4):
        dense[i] += 2 * w[i]
    for k, want in _stats_of(dense).items():
        assert _close(g["stats"][k], want), k


def test_both_recorders_write_sparse_gradients_alike(run: Any) -> None:
    assert run(EMBEDDING, native=False)["id"] == run(EMBEDDING, native=True)["id"]


def _parts_stats(parts: list[torch.Tensor]) -> dict[str, float]:
    return _stats_of(torch.cat([p.reshape(-1) for p in parts]))


@pytest.mark.parametrize("layout", [torch.jagged, torch.strided], ids=["jagged", "strided"])
def test_a_nested_tensor_has_its_count_layout_stats_and_shapes(layout: torch.layout) -> None:
    """NOTE [nested tensors] in capture/values.py: no rectangular shape (a symbolic one,
    jagged, or none at all, strided), so its shape is its number of tensors."""
    parts = [torch.randn(2, 3), torch.randn(4, 3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the strided layout's prototype notice
        v = encode(torch.nested.as_nested_tensor(parts, layout=layout))
    assert v["shape"] == [2] and v["values"] is None
    assert v["layout"] == ("jagged" if layout == torch.jagged else "nested")
    assert "2 tensors ([2, 3], [4, 3])" in v["note"]
    for k, want in _parts_stats(parts).items():
        assert _close(v["stats"][k], want), k


NESTED = '''
a = torch.randn(2, 3)
b = torch.randn(4, 3)
jag = torch.nested.nested_tensor([a, b], layout=torch.jagged, requires_grad=True)
s = sum(t.sum() for t in (jag.sin() * 2).unbind())
s.backward()
std = torch.nested.nested_tensor([a, b], requires_grad=True)
(std * 2).to_padded_tensor(0.0).sum().backward()
print(s.item() != 0, jag.grad.is_nested, std.grad.is_nested)
'''


@BOTH
def test_nested_tensor_programs_record(run: Any, native: bool) -> None:
    """The program runs, its output is kept and the document holds its nested leaves with
    their gradients: no crash of the document (SymInt sizes, or no sizes at all)."""
    doc = run(NESTED, native=native)
    assert doc["status"] == "ok" and doc["error"] is None and "recorder_errors" not in doc
    assert doc["stdout"].endswith("True True True\n")
    leaves = {n["name"]: n for n in doc["graph"]["nodes"] if n["role"] == "leaf"}
    torch.manual_seed(0)
    a, b = torch.randn(2, 3), torch.randn(4, 3)
    want = {"jag": [2 * a.cos(), 2 * b.cos()], "std": [torch.full((2, 3), 2.0), torch.full((4, 3), 2.0)]}
    for name, parts in want.items():
        grad = leaves[name]["grad"]
        assert leaves[name]["shape"] == [2] and grad["shape"] == [2] and "2 tensors" in grad["note"]
        for k, value in _parts_stats(parts).items():
            assert _close(grad["stats"][k], value), (name, k)


def test_both_recorders_write_nested_tensors_alike(run: Any) -> None:
    assert run(NESTED, native=False)["id"] == run(NESTED, native=True)["id"]


class _Counting(torch.Tensor):
    """A subclass whose every op is counted (NOTE [tensor subclasses] in capture/values.py)."""

    ops = 0

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        cls.ops += 1
        unwrap = lambda x: x.as_subclass(torch.Tensor) if isinstance(x, _Counting) else x  # noqa: E731
        return func(*[unwrap(a) for a in args], **(kwargs or {}))


def test_a_tensor_subclass_is_encoded_without_running_its_ops() -> None:
    from torch.masked import masked_tensor

    t = torch.randn(3).as_subclass(_Counting)
    _Counting.ops = 0
    v = encode(t)
    assert _Counting.ops == 0 and v["values"] is None and v["shape"] == [3]
    assert "_Counting" in v["note"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mt = masked_tensor(torch.tensor([1.0, -2.0, 4.0]), torch.tensor([True, False, True]))
        made = len(caught)
        v = encode(mt)
    assert len(caught) == made, [str(w.message) for w in caught[made:]]  # no op ran: no warning
    assert v["stats"]["min"] == 1.0 and v["stats"]["max"] == 4.0 and "2 unmasked elements (of 3)" in v["note"]


MASKED = '''
import warnings
warnings.simplefilter("ignore")  # MaskedTensor's prototype notices (pytest makes warnings errors)
from torch.masked import masked_tensor
data = torch.arange(6, dtype=torch.float).reshape(2, 3)
mask = torch.tensor([[True, False, True], [False, True, True]])
mt = masked_tensor(data, mask, requires_grad=True)
(mt * 2).exp().sum().backward()
'''


def test_both_recorders_write_masked_gradients_alike(run: Any) -> None:
    core, python = run(MASKED, native=True), run(MASKED, native=False)
    assert core["status"] == "ok" and core["id"] == python["id"]
    grad = next(n for n in core["graph"]["nodes"] if n["name"] == "mt")["grad"]
    assert "MaskedTensor" in grad["note"] and grad["stats"] is not None
