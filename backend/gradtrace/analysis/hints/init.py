"""Hints about how a model's weights start.

NOTE [weights that start all equal]
    Two layers in a row whose weights start with every element equal (``nn.init.zeros_`` or
    ``constant_`` on both, the classic "initialize everything to zero") give every hidden unit
    between them the same input weights and the same output weights: each computes the same
    value, gets the same gradient, and takes the same step, so they stay equal for the whole of
    training and the layer works as one unit. The document shows it: the two weight leaves'
    first values (``Node.value``'s stats: min = max), their shapes meeting at the hidden width,
    the first layer's bias (when it has one) equal too, the first weight used before the
    second by the forward pass (``network_order``), and the two trained (an optimizer that
    stepped holds one, or one's value changed between backward calls): a worked example's
    round numbers, one backward read by hand, are no training. One such matrix alone is fine, and stays
    silent: a zero-initialized last layer, a LoRA adapter's B beside a random A.
    ``tests/capture/test_init_hints.py`` holds it to torch's own run: the hidden units'
    weights are still equal after training.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from gradtrace.analysis.docview import DocView
from gradtrace.analysis.dynamics.series import module_of, network_order
from gradtrace.analysis.hints.write import hint
from gradtrace.analysis.numbers import fmt, number


def _constant(tv: Any) -> float | None:
    """The one value every element of ``tv`` holds, from its stats, or None."""
    stats = (tv or {}).get("stats") or {}
    lo, hi = number(stats.get("min")), number(stats.get("max"))
    return lo if lo is not None and hi is not None and lo == hi else None


def symmetric_init(view: DocView) -> list[dict[str, Any]]:
    """Two layers in a row whose weights start all equal (NOTE [weights that start all equal])."""
    leaves = [n for n in view.leaf_nodes if n.get("grad_history")]
    by_name = {str(n.get("name")): n for n in leaves if n.get("name")}
    weights = [n for n in network_order(view, leaves) if len(_shape(n)) == 2]
    out = []
    for first, second in itertools.pairwise(weights):
        a, b = _constant(first.get("value")), _constant(second.get("value"))
        width = _shape(first)[0]
        if a is None or b is None or width < 2 or _shape(second)[1] != width:
            continue
        if not any(n.get("optimized") or n.get("value_steps") for n in (first, second)):
            continue  # never trained: a worked example's round numbers (one backward, read by hand)
        module = module_of(str(first.get("name") or ""))
        bias = by_name.get(f"{module}.bias") if module else None
        if bias is not None and _constant(bias.get("value")) is None:
            continue  # a bias that differs across the units sets them apart
        names = [view.tensor_label(first), view.tensor_label(second)]
        out.append(hint(
            "symmetric-init", "warning", f"{names[0]} and {names[1]} start all equal: the {width} hidden units "
            "between them stay identical",
            f"Every element of {names[0]} starts at {fmt(a)} and every element of {names[1]} at {fmt(b)}, so the "
            f"{width} hidden units between them get the same inputs and feed the output alike: each computes the "
            "same value and gets the same gradient, and every step keeps them equal. The layer trains as one "
            "unit, however wide it is. Random initial weights break the symmetry: nn.Linear's own "
            "initialization does, so the fix is to drop the constant one.",
            line=_constant_line(view) or first.get("def_line") or first.get("line"),
            nodes=[str(first["id"]), str(second["id"])],
            evidence=[(names[0], f"{_shape_text(first)}, all {fmt(a)}"),
                      (names[1], f"{_shape_text(second)}, all {fmt(b)}")],
            fix="# weights start random (nn.Linear's own init); only biases may start at zero\n"
                "for name, p in model.named_parameters():\n    if name.endswith(\"bias\"):\n"
                "        nn.init.zeros_(p)"))
    return out


_CONSTANT_INIT = re.compile(r"\b(?:zeros_|constant_|ones_|fill_|zero_)\s*\(")


def _constant_line(view: DocView) -> int | None:
    """The first line that sets a tensor to one value in place (``nn.init.zeros_``, ``fill_``),
    or None."""
    code = str(view.doc.get("code") or "")
    return next((i for i, text in enumerate(code.splitlines(), 1) if _CONSTANT_INIT.search(text.split("#")[0])),
                None)


def _shape(n: Mapping[str, Any]) -> list[int]:
    s = n.get("shape") or (n.get("value") or {}).get("shape")
    return [int(d) for d in s] if isinstance(s, list) and all(type(d) is int for d in s) else []


def _shape_text(n: Mapping[str, Any]) -> str:
    return "[" + ", ".join(str(d) for d in _shape(n)) + "]"
