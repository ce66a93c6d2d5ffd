"""Compare two run documents as a person would: structure exactly, numbers to float32 precision.

Two documents are aligned item by item (dict keys by name, list items by position) and every
leaf is judged by the tolerances below; :func:`compare` returns typed :class:`Difference` rows,
:func:`differences` the same as one line each (the golden tests print those).

The tolerances are NOTE [goldens on any CPU] in ``backend/gradtrace/analysis/numbers.py``, which the
comparison of two runs shares; the document ``id`` hashes the float bits, so it is not compared.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from gradtrace.analysis.numbers import FLOOR, REL

IGNORED_TOP_LEVEL = frozenset({"id"})
_GRAD_KEYS = frozenset({"grad", "grad_inputs", "grad_outputs", "grad_history", "before", "after"})
_NUMBER = re.compile(r"-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")


DifferenceKind = Literal["keys", "length", "value", "number", "text"]
"""``keys``: a dict's keys differ; ``length``: a list's length; ``value``: an integer, bool,
null or type; ``number``: a float beyond tolerance; ``text``: a string beyond its printed digits."""


@dataclass(frozen=True, slots=True)
class Difference:
    """One place where two documents differ beyond the tolerances."""

    path: str
    """Where, from the document root: ``doc.graph.nodes[3].grad.stats.max``."""
    kind: DifferenceKind
    want: Any
    """The first document's value there (for ``keys``: the keys in one document only)."""
    got: Any
    """The second document's value there (``None`` for ``keys``)."""

    def __str__(self) -> str:
        if self.kind == "keys":
            return f"{self.path}: keys {self.want} are in one document only"
        if self.kind == "length":
            return f"{self.path}: {self.want} items, now {self.got}"
        if self.kind == "number":
            return f"{self.path}: {self.want!r}, now {self.got!r} (beyond float32 tolerance)"
        return f"{self.path}: {_short(self.want)!r}, now {_short(self.got)!r}"


def compare(want: Any, got: Any, *, limit: int = 20) -> list[Difference]:
    """Where ``got`` differs from ``want`` beyond the tolerances above (at most ``limit``)."""
    out: list[Difference] = []
    if isinstance(want, dict) and isinstance(got, dict):
        want = {k: v for k, v in want.items() if k not in IGNORED_TOP_LEVEL}
        got = {k: v for k, v in got.items() if k not in IGNORED_TOP_LEVEL}
    floor = FLOOR * _largest_gradient(want)
    _walk(want, got, "doc", None, out, limit, floor)
    return out


def differences(want: Any, got: Any, *, limit: int = 20) -> list[str]:
    """:func:`compare` as one readable line per difference."""
    return [str(d) for d in compare(want, got, limit=limit)]


def _largest_gradient(doc: Any, in_grad: bool = False) -> float:
    """The largest magnitude of any gradient (event or node ``grad``…) in a document."""
    if isinstance(doc, list):
        return max((_largest_gradient(v, in_grad) for v in doc), default=0.0)
    if not isinstance(doc, dict):
        return 0.0
    here = (_scale_of(doc) or 0.0) if in_grad and "shape" in doc and "dtype" in doc else 0.0
    return max([here, *(_largest_gradient(v, in_grad or k in _GRAD_KEYS) for k, v in doc.items())])


def _scale_of(value: dict[str, Any]) -> float | None:
    """The largest magnitude in a tensor value, from its stats (``None`` if it has none)."""
    stats = value.get("stats") or {}
    mags = [abs(v) for k in ("min", "max") if isinstance(v := stats.get(k), int | float)]
    return max(mags) if mags else None


def _walk(a: Any, b: Any, where: str, scale: float | None, out: list[Difference], limit: int,
          floor: float) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            out.append(Difference(where, "keys", sorted(a.keys() ^ b.keys()), None))
            return
        if "shape" in a and "dtype" in a and "stats" in a:
            scale = _scale_of(a)
        for k in a:
            _walk(a[k], b[k], f"{where}.{k}", scale, out, limit, floor)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(Difference(where, "length", len(a), len(b)))
            return
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _walk(x, y, f"{where}[{i}]", scale, out, limit, floor)
    elif isinstance(a, bool) or isinstance(b, bool) or (isinstance(a, int) and isinstance(b, int)):
        if a != b or type(a) is not type(b):
            out.append(Difference(where, "value", a, b))
    elif isinstance(a, int | float) and isinstance(b, int | float):
        if not _close(float(a), float(b), scale, floor):
            out.append(Difference(where, "number", a, b))
    elif isinstance(a, str) and isinstance(b, str):
        if a != b and not _same_text(a, b):
            out.append(Difference(where, "text", a, b))
    elif a != b:
        out.append(Difference(where, "value", a, b))


def _close(a: float, b: float, scale: float | None, floor: float) -> bool:
    if a == b:
        return True
    if not (math.isfinite(a) and math.isfinite(b)):
        return False
    tol = max(REL * max(abs(a), abs(b), scale or 0.0), floor)
    return abs(a - b) <= tol


def _same_text(a: str, b: str) -> bool:
    """Equal but for numbers that differ within their printed precision (see the NOTE)."""
    if _NUMBER.split(a) != _NUMBER.split(b):
        return False
    for x, y in zip(_NUMBER.findall(a), _NUMBER.findall(b), strict=True):
        if x == y:
            continue
        unit = max(_last_digit_unit(x), _last_digit_unit(y))
        if not unit:
            return False
        fx, fy = float(x), float(y)
        if abs(fx - fy) > max(unit * 1.000001, REL * max(abs(fx), abs(fy))):
            return False
    return True


def _last_digit_unit(token: str) -> float:
    """One unit in the last printed digit (``0.1161`` → 1e-4, ``3.5e-05`` → 1e-6), or 0 for a
    number printed without decimals (``32``, ``7.``: an integer or an integral float, exact)."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    if not decimals and not exponent:
        return 0.0
    return 10.0 ** (int(exponent or 0) - decimals)


def _short(v: Any) -> Any:
    return v[:200] + "…" if isinstance(v, str) and len(v) > 200 else v
