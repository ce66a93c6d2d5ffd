"""The tensor file beside the document (docs/CONTRACT.md, "The tensor file"): keys, the
safetensors bytes, ``doc.tensor()``, the byte budget and what it leaves out, on both kernel sets."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest
import torch
from safetensors.numpy import load
from safetensors.torch import load as load_torch

import gradtrace
from gradtrace.analysis.dynamics import file_reader
from gradtrace.capture import candidates, native, tensorfile
from gradtrace.notebook.run import NotebookRunDocument

NATIVE = [True, False]


def _mlp(native: bool, **kw: Any) -> Any:
    torch.manual_seed(0)
    with gradtrace.record(native=native, **kw) as rec:
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        x = torch.randn(16, 4)
        for _ in range(2):
            opt.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            opt.step()
    return rec.document(), model


@pytest.mark.parametrize("native", NATIVE, ids=["core", "python"])
def test_the_file_is_safetensors_and_doc_tensor_reads_it_back(native: bool) -> None:
    doc, _model = _mlp(native)
    data = doc.tensor_bytes()
    assert data is not None and doc.tensors is not None
    assert doc.tensors.sha256 == hashlib.sha256(data).hexdigest() and doc.tensors.bytes == len(data)
    arrays = load(data)  # anybody opens it without gradtrace
    assert len(arrays) == doc.tensors.count > 0 and doc.tensors.left_out_count == 0
    keys = [tv.key for n in doc.graph.nodes for tv in (n.output or []) if tv is not None]
    keys += [g.key for e in doc.events for g in (e.grad_inputs or []) + (e.grad_outputs or []) if g is not None]
    assert keys and all(k in arrays for k in keys)
    # in process: torch tensors; from the bytes alone: the same numbers as numpy arrays
    again = NotebookRunDocument.model_validate_json(doc.canonical_json()).with_tensor_bytes(data)
    for key in keys:
        mine = doc.tensor(key)
        assert isinstance(mine, torch.Tensor)
        assert np.array_equal(mine.numpy(), again.tensor(key), equal_nan=True)
        assert str(mine.dtype).removeprefix("torch.") == again.tensor(key).dtype.name


@pytest.mark.parametrize("native", NATIVE, ids=["core", "python"])
def test_leaves_have_their_value_before_and_after_the_updates(native: bool) -> None:
    doc, model = _mlp(native)
    w = next(n for n in doc.graph.nodes if n.kind == "tensor" and n.name == "model.0.weight")
    assert w.value is not None and w.value.key == f"{w.id}.value"
    assert w.value_end is not None and w.value_end.key == f"{w.id}.end"
    assert torch.equal(doc.tensor(f"{w.id}.end"), model[0].weight.detach())
    start = doc.tensor(f"{w.id}.value")
    assert not torch.equal(start, model[0].weight.detach())  # two SGD steps later
    # .grad after each accumulation: the two steps' gradients, kept as they were
    h0, h1 = (doc.leaf_tensor(w.id, "gh", h) for h in range(2))
    assert [tv.key for tv in w.grad_history] == [f"{w.id}.gh0", f"{w.id}.gh1"]
    assert not torch.equal(h0, h1)
    assert torch.equal(h1, model[0].weight.grad)
    # one SGD step from the start with the first gradient gives the second step's weights
    torch.testing.assert_close(start - 0.5 * h0, doc.tensor(f"{w.id}.end") + 0.5 * h1, rtol=0, atol=1e-6)


def test_both_kernel_sets_write_the_same_file() -> None:
    a, _ = _mlp(True)
    b, _ = _mlp(False)
    assert a.tensor_bytes() == b.tensor_bytes()


@pytest.mark.skipif(not native.available(), reason="the C++ core is not built here: no second writer")
def test_the_core_and_python_writers_give_the_same_bytes_for_every_layout() -> None:
    """NOTE [the file written once] in capture/cxx/tensorfile.h: each element's value, whatever
    the tensor's memory (a transpose, an expanded scalar, a lazily negated view, autograd's
    zero tensor, a slice with an offset, an empty tensor), as ``torch.cat`` writes it."""
    torch.manual_seed(0)
    base = torch.randn(6, 5)
    tensors = {"plain": base, "transposed": base.t(), "expanded": torch.tensor(2.5).expand(3, 4),
               "negated": torch._neg_view(base), "zeros": torch._efficientzerotensor(3, 2),
               "slice": base[2:, 1:4], "empty": torch.empty(0, 3), "bf16": base.to(torch.bfloat16),
               "bool": base > 0, "int": torch.arange(7), "scalar": torch.tensor(1.5, dtype=torch.float64),
               # strided ones of each element size, copied by the core's own loop or, past
               # ``kSmallStrided`` in cxx/tensorfile.h, by ATen's ``copy_``
               "permuted": torch.randn(3, 4, 5).permute(2, 0, 1), "stepped": base[::2, ::3],
               "f16_t": base.half().t(), "i8_t": torch.arange(30, dtype=torch.int8).view(5, 6).t(),
               "f64_t": base.double().t(), "bool_t": (base > 0).t(), "row": torch.arange(4.0).expand(3, 4),
               "large_t": torch.randn(200, 100).t()}
    def cands() -> list[candidates.Candidate]:
        return [candidates.candidate(k, t, candidates.FORWARD) for k, t in tensors.items()]

    written = cands()
    core_index: tensorfile.Index = {}
    core = tensorfile.write(written, in_core=True, index=core_index)
    # NOTE [each tensor let go once written] in capture/tensorfile.py: the file holds them now
    assert all(c.tensor is None for c in written)
    python_index: tensorfile.Index = {}
    assert core == tensorfile.write(cands(), in_core=False, index=python_index)
    back = load_torch(core)
    for k, t in tensors.items():
        want = torch.zeros(t.shape, dtype=t.dtype) if t._is_zerotensor() else t.resolve_neg()
        assert back[k].dtype == t.dtype and torch.equal(back[k], want), k
    # NOTE [the index the writer knows]: both writers' index is the header's, parsed
    parsed = tensorfile.file_tensors(core).index
    assert core_index == python_index == parsed
    assert list(core_index) == list(tensors)
    by_index, by_header = file_reader(core, core_index), file_reader(core)
    assert by_index is not None and by_header is not None
    for k, t in tensors.items():
        mine, theirs = by_index(k), by_header(k)
        if t.dtype == torch.bfloat16:  # no numpy code
            assert mine is None and theirs is None
            continue
        assert mine is not None and theirs is not None
        assert mine.shape == theirs.shape == tuple(t.shape) and mine.tobytes() == theirs.tobytes(), k
        assert mine.tobytes() == back[k].numpy().tobytes(), k
    assert by_index("missing") is None and by_header("missing") is None


@pytest.mark.parametrize("native", NATIVE, ids=["core", "python"])
def test_past_the_budget_leaves_first_then_gradients_then_forward_values(native: bool) -> None:
    full, _ = _mlp(native)
    assert full.tensors is not None
    data = full.tensor_bytes()
    assert data is not None
    sizes = {k: v.nbytes for k, v in load(data).items()}
    leaves = {n.id for n in full.graph.nodes if n.role == "leaf"}
    leaf = {k for k in sizes if k.split(".")[0] in leaves}
    grads = {k for k in sizes if k.startswith("e")}
    budget = sum(sizes[k] for k in leaf) + sum(sizes[k] for k in grads) // 2
    doc, _ = _mlp(native, tensor_budget=budget)
    assert doc.tensors is not None and doc.tensors.budget_bytes == budget
    kept = set(load(doc.tensor_bytes()))
    assert leaf <= kept  # leaves first
    assert not any(".out" in k for k in kept)  # forward values last: none fit
    assert 0 < len(kept & grads) < len(grads)
    left = {x.key: x for x in doc.tensors.left_out}
    assert doc.tensors.left_out_count == len(sizes) - len(kept) == len(left)
    assert all(x.reason == "budget" for x in left.values())
    assert set(left) | kept == set(sizes)
    assert doc.tensors.left_out_bytes == sum(sizes[k] for k in left)
    # a key left out is on no TensorValue, and doc.tensor() says why
    some = next(iter(left))
    with pytest.raises(KeyError, match="budget"):
        doc.tensor(some)
    # deterministic: the same run and budget give the same file
    again, _ = _mlp(native, tensor_budget=budget)
    assert again.tensor_bytes() == doc.tensor_bytes()


def test_without_a_budget_there_is_no_file() -> None:
    torch.manual_seed(0)
    with gradtrace.record(tensor_budget=None) as rec:
        x = torch.randn(3, requires_grad=True)
        (x * x).sum().backward()
    doc = rec.document()
    assert doc.tensors is None and doc.tensor_bytes() is None
    assert all(tv is None or tv.key is None for e in doc.events for tv in (e.grad_inputs or []))
    with pytest.raises(KeyError, match="no tensor file"):
        doc.tensor("e1.gi0")


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
def test_a_bad_budget_is_a_clear_error(bad: Any) -> None:
    with pytest.raises(ValueError, match="tensor_budget"):
        gradtrace.record(tensor_budget=bad)


def test_a_snippet_hands_out_its_file_with_its_document_and_none_without_a_budget() -> None:
    from rundoc import parsed, run_captured

    code = "x = torch.randn(3, requires_grad=True)\n(x.exp() * 2).sum().backward()\n"
    captured = run_captured(code, tensor_budget=1 << 20)
    doc = parsed(captured)
    assert captured.tensors is not None
    assert doc["tensors"]["sha256"] == hashlib.sha256(captured.tensors).hexdigest()
    assert len(load(captured.tensors)) == doc["tensors"]["count"] > 0
    plain = run_captured(code)  # no budget: no file kept, and none named
    assert plain.tensors is None and "tensors" not in parsed(plain)


def test_a_one_element_tensor_with_stride_zero_is_written_as_its_bytes() -> None:
    """A one-element view with stride 0 is "contiguous" to torch yet cannot be viewed as bytes:
    the Python writer copies it first (a training loop's recorder error, tests/capture/test_faithful.py)."""
    from gradtrace.capture.tensorfile import _flat_bytes

    t = torch.empty_strided((1,), (0,))
    t.fill_(2.0)
    assert _flat_bytes(t).tolist() == list(torch.tensor([2.0]).view(torch.uint8).tolist())
