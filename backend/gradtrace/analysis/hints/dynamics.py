"""Hints from the series by iteration (``Analysis.dynamics``, computed by
``analysis/dynamics/`` before the hints run): update:data ratios far from 1e-3, ReLU layers
mostly dead, tanh or sigmoid layers mostly saturated.

NOTE [dynamics thresholds]
    Each rule reads the settled part of the run, the last quarter of its iterations (at least
    two), so a first step from a zero-initialised bias (an infinite ratio) or a first batch of
    large activations does not count alone:
    - update ratio: the median of log10 ‖Δw‖/‖w‖ of a weight (two or more dimensions; biases
      start at zero) above -1 (100x the 1e-3 of Karpathy's makemore lecture: each step moves
      the weight by a tenth of itself) or below -5 (100x under: the weight barely moves);
    - dead ReLUs: every settled iteration with 90% or more of the layer's outputs exactly 0
      (a healthy ReLU layer zeroes about half);
    - saturation: the settled iterations' mean share of saturated outputs at 50% or more
      (Karpathy's tuned init keeps it to a few percent; a mostly saturated layer passes back
      almost no gradient).
    tests/capture/test_dynamics_hints.py holds each rule to a program that makes the mistake
    and a near miss that stays silent, and the 15 lessons to no alarm.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import Any

from gradtrace.analysis.docview import DocView
from gradtrace.analysis.hints.write import hint
from gradtrace.analysis.numbers import fmt, number, rounded

_HIGH, _LOW = -1.0, -5.0
_DEAD = 0.9
_SATURATED = 0.5


def _settled(series: list[Any]) -> list[float]:
    """The finite values of the last quarter of ``series`` (at least its last two)."""
    vals = [(i, number(v)) for i, v in enumerate(series)]
    finite = [(i, v) for i, v in vals if v is not None and math.isfinite(v)]
    if len(finite) < 2:
        return []
    keep = max(2, math.ceil(len(finite) / 4))
    return [v for _, v in finite[-keep:]]


def _dyn(view: DocView) -> Mapping[str, Any] | None:
    return view.dynamics


def update_ratio(view: DocView) -> list[dict[str, Any]]:
    """Weights whose update:data ratio stays far from 1e-3 (NOTE [dynamics thresholds])."""
    dyn = _dyn(view)
    if not dyn:
        return []
    high: list[tuple[float, Mapping[str, Any]]] = []
    low: list[tuple[float, Mapping[str, Any]]] = []
    for p in dyn["params"]:
        node = view.by_id.get(p["node"]) or {}
        if len(node.get("shape") or []) < 2:
            continue
        settled = _settled(p["update"])
        if not settled:
            continue
        med = statistics.median(settled)
        if med > _HIGH:
            high.append((med, p))
        elif med < _LOW:
            low.append((med, p))
    out = []
    for code, found, word in (("update-ratio-high", high, "large"), ("update-ratio-low", low, "small")):
        if not found:
            continue
        found.sort(key=lambda x: -abs(x[0] + 3))
        names = ", ".join(f"{p['name']} 1e{fmt(rounded(m, 2))}" for m, p in found[:6])
        first = view.by_id.get(found[0][1]["node"]) or {}
        out.append(hint(
            code, "warning", f"updates are too {word}: ‖Δw‖/‖w‖ of {found[0][1]['name']} is "
            f"{fmt(rounded(10 ** found[0][0], 2))} per step, far from 1e-3",
            f"Each optimizer step moves these weights by "
            f"{'a large part of themselves' if word == 'large' else 'almost nothing'} (the update:data ratio "
            "‖Δw‖/‖w‖ over the last iterations; about 1e-3 is the usual working range). "
            f"{'Lower the learning rate' if word == 'large' else 'Raise the learning rate'}, "
            "or check the init's scale.",
            line=first.get("def_line") or first.get("line"), nodes=[p["node"] for _, p in found],
            evidence=[("median log10 ‖Δw‖/‖w‖, last iterations", names)],
            fix=("optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)   # a smaller step" if word == "large"
                 else "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)   # a larger step")))
    return out


def activations(view: DocView) -> list[dict[str, Any]]:
    """ReLU layers mostly dead, tanh or sigmoid layers mostly saturated (NOTE [dynamics
    thresholds])."""
    dyn = _dyn(view)
    if not dyn:
        return []
    out = []
    for layer in dyn["layers"]:
        settled = _settled(layer["share"])
        if not settled:
            continue
        where = layer["module"] or f"line {layer['line']}"
        nodes = [n for n in layer["nodes"] if n][-1:]
        if layer["kind"] == "relu" and min(settled) >= _DEAD:
            out.append(hint(
                "relu-dead", "warning", f"the ReLU of {where} is mostly dead: "
                f"{fmt(rounded(100 * min(settled), 2))}% of its outputs are 0",
                f"At least {fmt(rounded(100 * min(settled), 2))}% of this ReLU's outputs are exactly 0 in each of "
                "the last iterations, and no gradient flows back through a zero: the units before it stop "
                "learning (a too-large learning rate or a negative bias pushed them there).",
                line=layer["line"], nodes=nodes,
                evidence=[("dead share, last iterations", ", ".join(f"{100 * s:.3g}%" for s in settled[-6:]))],
                fix="nn.LeakyReLU(0.01)   # or a smaller learning rate, Kaiming init"))
        elif layer["kind"] in ("tanh", "sigmoid") and statistics.fmean(settled) >= _SATURATED:
            share = statistics.fmean(settled)
            out.append(hint(
                "activation-saturated", "warning", f"the {layer['kind']} of {where} is mostly saturated: "
                f"{fmt(rounded(100 * share, 2))}% of its outputs past {dyn['threshold']}",
                f"On average {fmt(rounded(100 * share, 2))}% of this {layer['kind']}'s outputs sit at its flat ends "
                f"(|y| > {dyn['threshold']}{' on the scale from −1 to 1' if layer['kind'] == 'sigmoid' else ''}) "
                "over the last iterations, where its local gradient is nearly 0: the layers before it barely learn.",
                line=layer["line"], nodes=nodes,
                evidence=[("saturated share, last iterations", ", ".join(f"{100 * s:.3g}%" for s in settled[-6:]))],
                fix="# scale the layer before it down at init (Kaiming's gain for tanh is 5/3), or normalise:\n"
                    "nn.init.kaiming_normal_(layer.weight, nonlinearity='tanh'); nn.BatchNorm1d(hidden)"))
    return out
