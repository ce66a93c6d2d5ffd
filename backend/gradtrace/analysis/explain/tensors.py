"""Flat float tensors for :mod:`gradtrace.analysis.explain`: the document keeps values as nested lists.

NOTE [flat tensors]: the analysis package never imports torch (tests/test_torch_free.py), so the
rules of ``explain/ops.py`` work on row-major flat lists with their shape; broadcasting is undone
by mapping each output element to the one input element it reads.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gradtrace.analysis.numbers import sig


@dataclass(frozen=True)
class Flat:
    """A tensor's values, row-major, with its shape: a document's inline list, or a flat array
    read from the tensor file (``analysis/explain/operands.py``)."""

    values: Sequence[float] | np.ndarray
    shape: tuple[int, ...]

    def at(self, index: int) -> float:
        return float(self.values[index])


def numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


def unravel(index: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out: list[int] = []
    for size in reversed(shape):
        out.append(index % size if size else 0)
        index = index // size if size else 0
    return tuple(reversed(out))


def ravel(coords: tuple[int, ...], shape: tuple[int, ...]) -> int:
    index = 0
    for c, size in zip(coords, shape, strict=True):
        index = index * size + c
    return index


def broadcast_index(out_index: int, out_shape: tuple[int, ...], in_shape: tuple[int, ...]) -> int:
    """The element of a tensor of ``in_shape`` that broadcasting reads for output element ``out_index``."""
    coords = unravel(out_index, out_shape)
    lead = len(out_shape) - len(in_shape)
    mine = tuple(0 if size == 1 else coords[lead + d] for d, size in enumerate(in_shape))
    return ravel(mine, in_shape)


def sources(in_index: int, out_shape: tuple[int, ...], in_shape: tuple[int, ...]) -> list[int]:
    """Output elements that read input element ``in_index`` under broadcasting (what its grad sums)."""
    return [j for j in range(numel(out_shape)) if broadcast_index(j, out_shape, in_shape) == in_index]


def fmt(x: float) -> str:
    """A number as the page shows it: four significant digits."""
    return sig(x, 4)


def fmt_operand(x: float) -> str:
    """:func:`fmt`, a negative number in parentheses: what follows a sign or takes a power
    reads ``−(−0.29)/0.7²``, ``−(−0.5)²``, not ``−-0.29``."""
    return f"({fmt(x)})" if x < 0 else fmt(x)


def sum_of_products(parts: list[tuple[float, float]]) -> tuple[str, float]:
    """``Σ a·b`` over ``parts``, shown by its first three terms (``0.3·(−2) + … ``), summed exactly."""
    total = math.fsum(a * b for a, b in parts)
    shown = " + ".join(f"{fmt(a)}·{fmt_operand(b)}" for a, b in parts[:3]) + (" + …" if len(parts) > 3 else "")
    return shown, total
