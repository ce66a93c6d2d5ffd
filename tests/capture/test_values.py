"""TensorValue encoding (schema NOTE [encoding of awkward values])."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
import torch

from gradtrace.capture.native import make_core
from gradtrace.capture.values import ValueStore, encode


def test_small_float_tensor_has_values_and_stats_like_torch() -> None:
    t = torch.tensor([[1.0, -2.0], [3.5, 0.25]])
    v = encode(t)
    assert v["shape"] == [2, 2] and v["dtype"] == "float32"
    assert v["values"] == t.tolist()
    assert v["stats"]["min"] == -2.0 and v["stats"]["max"] == 3.5
    assert v["stats"]["mean"] == pytest.approx(t.mean().item())
    assert v["stats"]["norm"] == pytest.approx(t.norm().item())


def test_non_finite_values_are_strings() -> None:
    v = encode(torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0]))
    assert v["values"] == ["nan", "inf", "-inf", 1.0]
    assert v["stats"]["max"] in ("inf", "nan")


def test_complex_values_are_real_imag_pairs_and_stats_are_of_the_magnitude() -> None:
    v = encode(torch.tensor([3 + 4j, 0 + 1j]))
    assert v["values"] == [[3.0, 4.0], [0.0, 1.0]]
    assert v["stats"]["max"] == 5.0 and v["stats"]["min"] == 1.0


@pytest.mark.parametrize(("t", "values"), [
    (torch.tensor([1, 2, 3]), [1, 2, 3]),
    (torch.tensor([True, False]), [True, False]),
    (torch.zeros(0, 3), []),
    (torch.tensor(2.5), 2.5),
])
def test_integer_bool_empty_and_scalar_tensors(t: torch.Tensor, values: Any) -> None:
    v = encode(t)
    assert v["values"] == values
    if t.dtype == torch.bool or t.numel() == 0:
        assert v["stats"] is None
    else:
        assert v["stats"]["max"] == t.max().item()


def test_past_one_thousand_elements_only_stats_are_kept() -> None:
    t = torch.arange(1001.0)
    v = encode(t)
    assert v["values"] is None
    assert v["stats"]["max"] == 1000.0 and v["stats"]["mean"] == 500.0
    assert math.isclose(v["stats"]["norm"], t.norm().item(), rel_tol=1e-6)


KERNELS = pytest.mark.parametrize("use_core", [True, False], ids=["core", "python"])


def _written(v: object) -> Any:
    """A resolved value as the document holds it: the canonical JSON the core wrote, which the
    value carries (NOTE [lazy TensorValues] in capture/values.py)."""
    assert v is not None
    return json.loads(v.native)  # type: ignore[attr-defined]


@KERNELS
def test_a_gradient_changed_in_place_after_capture_keeps_the_values_it_had(use_core: bool) -> None:
    store = ValueStore(make_core(use_core))
    g = torch.ones(3)
    handle = store.capture(g)
    g.mul_(5)
    again = store.capture(g)  # the same tensor, changed: a new value
    v, w = _written(store.resolve(handle)), _written(store.resolve(again))
    assert v["values"] == [1.0, 1.0, 1.0] and v["stats"]["max"] == 1.0
    assert w["values"] == [5.0, 5.0, 5.0]


@KERNELS
def test_values_budget_keeps_documents_small_and_is_spent_in_order(use_core: bool) -> None:
    store = ValueStore(make_core(use_core), values_budget=5)
    first, second = store.capture(torch.ones(3)), store.capture(torch.ones(3))
    a, b = _written(store.resolve(first)), _written(store.resolve(second))
    assert a["values"] == [1.0, 1.0, 1.0]
    assert b["values"] is None and b["stats"]["max"] == 1.0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="this machine has no CUDA device")
def test_cuda_run_records_cuda_device(run: Any) -> None:
    doc = run("x = torch.ones(2, requires_grad=True)\n(x * 2).sum().backward()\n", device="cuda")
    assert doc["device"] == "cuda"
    assert {n["device"] for n in doc["graph"]["nodes"]} == {"cuda:0"}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                                   torch.uint8])
@pytest.mark.parametrize("shape", [(), (7,), (1, 32), (3, 5)])
def test_low_rank_fast_path_encodes_like_the_general_path(dtype: torch.dtype, shape: tuple[int, ...]) -> None:
    torch.manual_seed(1)
    t = (torch.randn(shape) * 50).to(dtype)
    fast = encode(t)
    general = encode(t.unsqueeze(0).unsqueeze(0))  # rank >= 3: reshape, re-nest, same stats
    assert fast["stats"] == general["stats"]
    assert [[fast["values"]]] == general["values"]
    if dtype.is_floating_point:  # exact in the tensor's dtype, float32 ones in shortest form
        assert torch.equal(torch.tensor(fast["values"], dtype=dtype), t)
        assert fast["values"] == (t.tolist() if dtype == torch.float64 else
                                  [float(str(np.float32(x))) for x in t.reshape(-1).tolist()]
                                  if t.dim() == 1 else fast["values"])
    else:
        assert fast["values"] == t.tolist()
    assert encode(t, with_values=False)["stats"] == fast["stats"]


def test_every_gradient_has_values_or_stats_even_autograds_storage_less_zeros(run: Any) -> None:
    """sgn's gradient of a real input is one of autograd's zero tensors (no storage to read);
    it is encoded as the zeros it stands for, on both kernel sets."""
    doc = run("import torch\nx = torch.randn(20, 20, requires_grad=True)\ntorch.sgn(x).sum().backward()\n")
    grads = [t for ev in doc["events"] if ev["phase"] == "backward"
             for t in [*ev["grad_inputs"], *ev["grad_outputs"], ev["grad"]] if t is not None]
    grads += [n["grad"] for n in doc["graph"]["nodes"] if n.get("grad")]
    assert grads and all(t["values"] is not None or t["stats"] is not None for t in grads)
    leaf = next(n for n in doc["graph"]["nodes"] if n["name"] == "x")
    assert leaf["grad"]["stats"] == {"min": 0.0, "max": 0.0, "mean": 0.0, "norm": 0.0}
    assert "note" not in leaf["grad"]
