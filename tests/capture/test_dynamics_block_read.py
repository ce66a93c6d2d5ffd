"""A leaf's gradients read in one block (NOTE [a leaf's gradients in one read] in
analysis/dynamics/series.py): the same arrays as reading each key, and no block where the
keys are not one run of tensors of one dtype and shape in the file's order."""

from __future__ import annotations

import numpy as np
import orjson

from gradtrace.analysis.dynamics import file_reader
from programs import ADAM_20
from rundoc import run_captured


def test_a_block_is_the_keys_read_one_by_one_and_only_a_run_of_one_shape_is_one() -> None:
    captured = run_captured(ADAM_20, seed=0, tensor_budget=64 << 20)
    read = file_reader(captured.tensors)
    assert read is not None
    many = read.many  # type: ignore[attr-defined]
    leaves = [n for n in orjson.loads(captured.graph)["nodes"] if len(n.get("grad_history") or []) == 20]
    assert len(leaves) == 4  # two weights, two biases
    keys = [str(g["key"]) for g in leaves[0]["grad_history"]]
    rows = [read(k) for k in keys]
    block = many(keys)
    assert block is not None and block.shape == (20, *rows[0].shape)  # type: ignore[union-attr]
    assert np.array_equal(block, np.stack(rows))  # type: ignore[arg-type]
    assert many(keys[::-1]) is None  # not in the file's order
    assert many([keys[0], keys[2]]) is None  # a gap
    other = next(str(n["grad_history"][0]["key"]) for n in leaves
                 if read(str(n["grad_history"][0]["key"])).shape != rows[0].shape)  # type: ignore[union-attr]
    assert many([keys[-1], other]) is None  # another shape
    assert many([*keys, "no such key"]) is None
    assert many(["__metadata__"]) is None


def test_a_gather_is_the_keys_read_one_by_one_wherever_they_lie_and_only_of_one_shape() -> None:
    """The series by call's gather (NOTE [a series' gradients in one gather] in
    analysis/dynamics/calls.py): any keys of one dtype and shape, in any order, gaps allowed."""
    captured = run_captured(ADAM_20, seed=0, tensor_budget=64 << 20)
    read = file_reader(captured.tensors)
    assert read is not None
    gather = read.gather  # type: ignore[attr-defined]
    leaves = [n for n in orjson.loads(captured.graph)["nodes"] if len(n.get("grad_history") or []) == 20]
    keys = [str(g["key"]) for g in leaves[0]["grad_history"]]
    picked = [keys[5], keys[0], keys[0], keys[19], keys[2]]  # out of order, repeated, with gaps
    rows = gather(picked)
    assert rows is not None and rows.dtype == read(keys[0]).dtype  # type: ignore[union-attr]
    assert np.array_equal(rows, np.stack([read(k) for k in picked]))  # type: ignore[arg-type]
    other = next(str(n["grad_history"][0]["key"]) for n in leaves
                 if read(str(n["grad_history"][0]["key"])).shape != read(keys[0]).shape)  # type: ignore[union-attr]
    assert gather([keys[0], other]) is None  # another shape
    assert gather([*keys, "no such key"]) is None
    assert gather([]) is None
