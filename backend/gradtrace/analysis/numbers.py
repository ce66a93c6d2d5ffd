"""Numbers as run documents spell them, read and written in one place for the whole package.

A document writes NaN and the infinities as the strings ``"nan"``, ``"inf"`` and ``"-inf"``
(NOTE [encoding of awkward values] in ``schema/document.py``), a tensor's values as nested lists
(a complex element as ``[real, imag]``); sentences show numbers short. Every reader in
``analysis/`` (hints, the first non-finite values, explanations, comparisons, goals) takes its
numbers from here, so the spelling is parsed one way.

NOTE [goldens on any CPU]
    torch picks its CPU kernels by processor (``ATEN_CPU_CAPABILITY``: default, AVX2,
    AVX-512), and their reductions round differently, so a gradient can differ in its last
    bits from one machine to the next. A golden document therefore pins what must not change
    (names, lines, modules, edges, events, order, statuses, shapes, dtypes, every integer) and
    compares floats within a tolerance:

    * inside a tensor value (``shape``/``dtype``/``stats``), a float may differ by ``REL`` of
      the tensor's largest magnitude: a reduction's rounding error scales with its terms, not
      with a result that cancelled to nearly zero;
    * and never less than ``FLOOR`` of the largest gradient anywhere in the document: deep in a
      network a gradient can be the rounding noise left by a cancellation upstream (a transformer's
      LayerNorm leaves gradients of 1e-8 that differ by 0.5% between kernels, while its largest
      gradients are 1e-3); noise is judged against the magnitudes that made it;
    * any other float, by ``REL`` of itself;
    * a number inside a string (what the snippet printed, ``tensor(0.1161)``) by one unit of
      its last printed digit, or ``REL`` of itself when that is larger; the text around the
      numbers must be equal.

    The golden tests apply it (``tests/docdiff.py``; the document ``id`` hashes the float bits,
    so it is not compared), and so does the comparison of two runs (``analysis/compare/deltas.py``):
    two runs that differ only by the CPU they ran on are the same run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

REL = 1e-4
"""Relative tolerance: float32 has 24 bits (6e-8); sums over thousands of terms and several
layers of kernels that round differently stay well within 1e-4 of the magnitudes involved."""
FLOOR = 1e-5
"""Absolute floor, as a fraction of the document's largest gradient (see the NOTE)."""


def number(v: Any) -> float | None:
    """A JSON number or ``"nan"``/``"inf"``/``"-inf"`` as a float (complex: its magnitude)."""
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    if isinstance(v, list) and len(v) == 2:  # a complex element [real, imag]
        re_, im = number(v[0]), number(v[1])
        if re_ is None or im is None:
            return None
        return math.nan if math.isnan(re_) or math.isnan(im) else math.hypot(re_, im)
    return None


def flatten(values: object) -> list[float]:
    """Nested lists (or one number) as one row-major list of floats; anything that is not a
    real tensor's values raises ValueError."""
    if isinstance(values, list):
        out: list[float] = []
        for item in values:
            out.extend(flatten(item))
        return out
    if isinstance(values, bool):
        return [1.0 if values else 0.0]
    if isinstance(values, (int, float)):
        return [float(values)]
    if isinstance(values, str):  # "nan", "inf", "-inf" as the canonical writer spells them
        return [float(values)]
    raise ValueError(f"not a tensor value: {type(values).__name__}")


def flat(tv: Mapping[str, Any] | None) -> list[float] | None:
    """The recorded values of the TensorValue ``tv`` in row-major order (a complex element: its
    magnitude; anything unreadable: NaN), or None when only stats were kept."""
    if tv is None or tv.get("values") is None:
        return None
    out: list[float] = []
    complex_ = str(tv.get("dtype", "")).startswith("complex")
    stack: list[Any] = [tv["values"]]
    while stack:
        v = stack.pop()
        if isinstance(v, list) and not (complex_ and len(v) == 2 and not isinstance(v[0], list)):
            stack.extend(reversed(v))
        else:
            x = number(v)
            out.append(math.nan if x is None else x)
    return out


def fmt(x: float | None) -> str:
    """A number as a sentence shows it: signed, short, ``inf`` and ``nan`` spelled out."""
    if x is None:
        return "?"
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == int(x) and abs(x) < 1e6:
        return str(int(x))
    return f"{x:.4g}"


def sig(x: float | None, digits: int) -> str:
    """``x`` to ``digits`` significant digits (``inf``, ``-inf``, ``nan`` as such; None: ``?``)."""
    return "?" if x is None else f"{x:.{digits}g}"


def rounded(x: float, digits: int) -> float:
    """``x`` rounded to ``digits`` significant digits (``fmt(rounded(x, 2))``: ``0.0031``)."""
    return float(f"{x:.{digits}g}")
