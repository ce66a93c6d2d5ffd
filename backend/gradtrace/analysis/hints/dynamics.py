"""Hints from the series by iteration (``Analysis.dynamics``, computed by
``analysis/dynamics/`` before the hints run): update:data ratios far from 1e-3, ReLU layers
mostly dead, tanh or sigmoid layers mostly saturated; and from the series by call, gradients
that vanish or explode across an unrolled module's calls.

NOTE [dynamics thresholds]
    Each rule reads the settled part of the run, the last quarter of its iterations (at least
    two), so a first step from a zero-initialised bias (an infinite ratio) or a first batch of
    large activations does not count alone:
    - update ratio: the median of log10 ‖Δw‖/‖w‖ of a weight (two or more dimensions; biases
      start at zero) above -1 (100x the 1e-3 of Karpathy's makemore lecture: each step moves
      the weight by a tenth of itself) or below -5 (100x under: the weight barely moves);
      a weight that started all zeros is left out as biases are (a positional embedding or
      a class token made with ``torch.zeros``): an optimizer's steps of about one size make
      its ratio about 1/t after t steps whatever the learning rate, so a short run's last
      iterations would read as far too large; and "too large" is not said of a run whose loss
      went down (at each line that ran backward twice or more, its last value below its first,
      every value finite): a few steps of a small model from its init move each weight by a
      good part of itself while training works, and a learning rate too large shows in a loss
      that does not fall;
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
from gradtrace.analysis.hints.grads import clip_before_unscale
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


def _started_at_zero(node: Mapping[str, Any]) -> bool:
    """Whether a leaf's value when the run first saw it was all zeros (its norm 0)."""
    stats = (node.get("value") or {}).get("stats") or {}
    return number(stats.get("norm")) == 0


def _loss_fell(view: DocView, dyn: Mapping[str, Any]) -> bool:
    """Whether the run's losses went down (NOTE [dynamics thresholds]): each line that ran a
    backward pass twice or more (a loop's ``loss.backward()``; a GAN's two), its last loss
    below its first and none of them NaN or infinite."""
    line_of = {p.get("index"): p.get("line") for p in view.doc.get("passes") or []}
    by_line: dict[Any, list[float | None]] = {}
    for index, value in zip(dyn.get("iterations") or [], dyn.get("loss") or [], strict=False):
        by_line.setdefault(line_of.get(index), []).append(number(value))
    looped = [[v for v in values if v is not None] for values in by_line.values() if len(values) >= 2]
    return bool(looped) and all(
        len(known) >= 2 and all(math.isfinite(v) for v in known) and known[-1] < known[0] for known in looped)


def update_ratio(view: DocView) -> list[dict[str, Any]]:
    """Weights whose update:data ratio stays far from 1e-3 (NOTE [dynamics thresholds])."""
    dyn = _dyn(view)
    if not dyn:
        return []
    high: list[tuple[float, Mapping[str, Any]]] = []
    low: list[tuple[float, Mapping[str, Any]]] = []
    falling = _loss_fell(view, dyn)
    # weights whose small steps a clip of the scaled gradients explains (``clip-before-unscale``):
    # a larger learning rate is not the fix there
    clipped = {n for h in clip_before_unscale(view) for n in h["nodes"]}
    for p in dyn["params"]:
        node = view.by_id.get(p["node"]) or {}
        if len(node.get("shape") or []) < 2 or _started_at_zero(node):
            continue
        settled = _settled(p["update"])
        if not settled:
            continue
        med = statistics.median(settled)
        if med > _HIGH and not falling:
            high.append((med, p))
        elif med < _LOW and p["node"] not in clipped:
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


# NOTE [vanishing across calls]: a module that one backward pass walks through N times (an RNN
# cell over a sequence) has the gradient at each call's output (NOTE [the gradient at each
# call] in analysis/dynamics/calls.py). Its weights' gradient is a sum over the calls, and in
# float32 a part under 2^-24 (the unit roundoff) of the largest is lost in the rounding: those
# calls teach the weights nothing. The rule fires when half or more of 8 or more calls are that
# small, all known and finite: vanishing when the largest comes after them (the gradient shrinks
# going back to call 1), exploding when before. Default-init GRU and LSTM cells lose about
# 1.5-2x a call, so 35 steps (truncated BPTT's usual length) lose a tenth of the calls or none,
# 50 about a third, 100 two thirds and 200 more than four fifths: 200 fire, 50 and less stay
# silent (tests/capture/test_dynamics_hints.py), whatever clipping does to the weights' gradient
# afterwards, which does not change what reached each call.
_LOST = 2.0 ** -24
_MIN_CALLS = 8


def call_flow(view: DocView) -> list[dict[str, Any]]:
    """Gradients that vanish or explode across the calls of an unrolled module (NOTE
    [vanishing across calls])."""
    dyn = _dyn(view)
    out: list[dict[str, Any]] = []
    for series in (dyn or {}).get("calls") or []:
        g = [number(v) for v in series["grad_norm"]]
        if len(g) < _MIN_CALLS or any(v is None or not math.isfinite(v) for v in g):
            continue
        vals = [float(v) for v in g if v is not None]
        top = max(vals)
        lost = [k for k, v in enumerate(vals) if v < top * _LOST]
        if top <= 0 or 2 * len(lost) < len(vals):
            continue
        peak = vals.index(top)
        out.append(_call_hint(view, series, vals, lost, peak, vanish=peak > statistics.median(lost)))
    return out


def _call_hint(view: DocView, series: Mapping[str, Any], g: list[float], lost: list[int], peak: int, *,
               vanish: bool) -> dict[str, Any]:
    n, module = len(g), series["module"]
    kind = "vanish" if vanish else "explode"
    far = min(lost) if vanish else max(lost)  # the call farthest from the peak on the lost side
    live = [k for k in range(min(far, peak), max(far, peak) + 1) if g[k] > 0]
    end = live[0] if vanish else live[-1]  # the farthest call whose gradient is not 0
    per_call = (g[peak] / g[end]) ** (1 / max(1, abs(peak - end)))
    picks = sorted({0, n // 4, n // 2, 3 * n // 4, peak, n - 1})
    trail = " → ".join(f"call {k + 1} {fmt(rounded(g[k], 3))}" for k in picks)
    what = f"{module} ({series['type']})" if series.get("type") else module
    first = view.by_id.get(series["nodes"][0]) or {}
    return hint(
        f"gradients-{kind}", "warning",
        f"gradients {kind} across the {n} calls of {module}: ‖grad‖ at call {far + 1} is {fmt(rounded(g[far], 3))}, "
        f"at call {peak + 1} {fmt(rounded(g[peak], 3))}",
        f"Going back through the calls of {what}, backward {'shrinks' if vanish else 'grows'} the gradient "
        f"about {fmt(rounded(per_call, 2))}x per call, so {len(lost)} of its {n} calls get less than 2⁻²⁴ of the "
        f"largest. Its weights' gradient is a sum over the calls, and in float32 a part that small is lost in the "
        f"rounding: the {'first' if vanish else 'last'} {len(lost)} steps teach the weights nothing. The dynamics "
        "panel's chart ‖grad‖ by call shows it.",
        line=first.get("line"), nodes=[series["nodes"][far], series["nodes"][peak]],
        evidence=[("‖grad‖ at each call's output (dynamics: ‖grad‖ by call)", trail),
                  ("calls under 2⁻²⁴ of the largest", f"{len(lost)} of {n}"),
                  (f"{'shrink' if vanish else 'growth'} per call, going back", f"{fmt(rounded(per_call, 2))}x")],
        fix=("# let the gradient through more steps: an LSTM whose forget gate starts open\n"
             "cell = nn.LSTMCell(n_in, n_hidden)\n"
             "with torch.no_grad():\n    cell.bias_ih[n_hidden:2 * n_hidden].fill_(1.0)   # forget-gate bias 1\n"
             "# or attention over the hidden states; or backpropagate only as far as it reaches:\n"
             "# h = h.detach() every k steps (truncated BPTT)"
             if vanish else
             "# keep the recurrent gain below 1 and clip what still grows:\n"
             "nn.init.orthogonal_(cell.weight_hh)\n"
             "torch.nn.utils.clip_grad_norm_(cell.parameters(), max_norm=1.0)"))
