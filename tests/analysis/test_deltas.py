"""Tensor deltas (``analysis/compare/deltas.py``): exact from values, lower bounds from statistics,
non-finite values, and the golden tests' float32 tolerance."""

from __future__ import annotations

import math
from typing import Any

from gradtrace.analysis.compare import deltas as dl
from gradtrace.analysis.numbers import REL


def tv(values: Any, shape: list[int] | None = None) -> dict[str, Any]:
    flat = dl._flat(values)
    finite = [float(v) for v in flat if not isinstance(v, str)]
    stats = {"min": min(finite), "max": max(finite), "mean": sum(finite) / len(finite),
             "norm": math.sqrt(sum(v * v for v in finite))} if finite else {}
    return {"shape": shape if shape is not None else [len(flat)], "dtype": "float32", "values": values, "stats": stats}


def test_exact_from_values() -> None:
    d = dl.tensor_delta(tv([1.0, 2.0, 3.0]), tv([1.0, 2.5, 1.0]))
    assert d is not None and d.exact and not d.mismatch
    assert d.max_abs == 2.0
    assert dl.rel_l2(d) == math.sqrt(0.25 + 4.0) / math.sqrt(14.0)
    assert dl.beyond(d, 0.0)


def test_equal_tensors_are_zero_and_within_tolerance() -> None:
    d = dl.tensor_delta(tv([[1.0, -2.0]], [1, 2]), tv([[1.0, -2.0]], [1, 2]))
    assert d is not None and d.max_abs == 0.0 and dl.rel_l2(d) == 0.0 and not dl.beyond(d, 0.0)


def test_float32_noise_is_within_tolerance_and_a_real_change_is_not() -> None:
    noise = dl.tensor_delta(tv([100.0, 0.5]), tv([100.0 * (1 + REL / 2), 0.5]))
    assert noise is not None and noise.max_abs and not dl.beyond(noise, 0.0)
    change = dl.tensor_delta(tv([100.0, 0.5]), tv([100.0, 0.6]))
    assert change is not None and dl.beyond(change, 0.0)
    # the run's floor (FLOOR of its largest gradient) absorbs rounding noise of tiny gradients
    tiny = dl.tensor_delta(tv([1e-8]), tv([2e-8]))
    assert tiny is not None and not dl.beyond(tiny, dl.floor_of(1.0)) and dl.beyond(tiny, 0.0)


def test_statistics_only_give_lower_bounds() -> None:
    a, b = tv([1.0, 4.0]), tv([2.0, 4.0])
    a["values"] = b["values"] = None
    d = dl.tensor_delta(a, b)
    assert d is not None and not d.exact
    assert d.max_abs is not None and d.max_abs <= 1.0  # the true largest difference is 1
    assert d.max_abs == 1.0  # here the minimum moved by all of it


def test_non_finite_values_equal_in_place_and_differing_otherwise() -> None:
    same = dl.tensor_delta(tv([1.0, "nan", "inf"]), tv([1.0, "nan", "inf"]))
    assert same is not None and same.max_abs == 0.0 and not dl.beyond(same, 0.0)
    moved = dl.tensor_delta(tv([1.0, "nan"]), tv([1.5, "nan"]))
    assert moved is not None and moved.max_abs == 0.5 and not moved.mismatch
    broke = dl.tensor_delta(tv([1.0, 2.0]), tv([1.0, "nan"]))
    assert broke is not None and broke.mismatch and broke.max_abs is None and dl.beyond(broke, 1.0)


def test_shape_dtype_or_presence_changes_are_mismatches() -> None:
    assert dl.tensor_delta(tv([1.0, 2.0]), tv([1.0, 2.0, 3.0])) is dl.MISMATCH
    other = {**tv([1.0]), "dtype": "float64"}
    assert dl.tensor_delta(tv([1.0]), other) is dl.MISMATCH
    assert dl.tensor_delta(None, tv([1.0])) is dl.MISMATCH
    assert dl.tensor_delta(None, None) is None


def test_combined_deltas_add_squares_and_keep_the_largest_element() -> None:
    one = dl.tensor_delta(tv([0.0, 3.0]), tv([0.0, 4.0]))
    two = dl.tensor_delta(tv([4.0]), tv([2.0]))
    assert one is not None and two is not None
    both = dl.combine([one, two])
    assert both is not None and both.max_abs == 2.0
    assert dl.rel_l2(both) == math.sqrt(1 + 4) / math.sqrt(9 + 16)
