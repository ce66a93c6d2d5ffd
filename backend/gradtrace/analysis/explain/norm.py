"""Rules of batch norm, group norm and weight normalization. Batch norm and group norm: per channel
(batch norm) or per (sample, group) (group norm),
``x̂ = (input − mean) · rstd`` and

    grad_input  = rstd · (ĝ − mean(ĝ) − x̂ · mean(ĝ · x̂)),  ĝ = grad_out · weight[c]
    grad_weight = Σ grad_out · x̂,   grad_bias = Σ grad_out

(the means over the elements that shared the statistics). Batch norm in eval mode normalizes by
the running statistics, which are constants: ``grad_input = grad_out · weight / √(running_var + eps)``.

Weight normalization (``nn.utils.weight_norm``: ``WeightNormInterfaceBackward0``) makes
``w = g · v / ‖v‖``, the norm over every dimension but ``dim`` (one norm per slice along it, the
node's ``result1``), so

    grad_g = Σ grad_out · v / ‖v‖,   grad_v = g / ‖v‖ · (grad_out − v · Σ(grad_out · v) / ‖v‖²)

(the sums over the slice).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from gradtrace.analysis.explain.nn import _num
from gradtrace.analysis.explain.ops import Ctx, NotKept, Rule, Unsupported, only_output_grad
from gradtrace.analysis.explain.tensors import Flat, fmt, fmt_operand


def _need(ctx: Ctx, *names: str) -> list[Flat]:
    for name in names:
        if name not in ctx.saved:
            raise NotKept(name)
    return [ctx.saved[name] for name in names]


def _weight(ctx: Ctx) -> Flat | None:
    if "weight" in ctx.names and "weight" not in ctx.saved:
        raise NotKept("weight")
    return ctx.saved.get("weight")


def _sums(text: str, vals: list[float]) -> tuple[str, float]:
    return (" + ".join(text.format(*v) if isinstance(v, tuple) else fmt(v) for v in vals[:3])
            + (" + …" if len(vals) > 3 else "")), 0.0


def _arr(ctx: Ctx, t: Flat) -> np.ndarray:
    key = ("array", id(t))
    if key not in ctx.memo:
        ctx.memo[key] = np.asarray(t.values, dtype=np.float64).reshape(-1)
    found: np.ndarray = ctx.memo[key]
    return found


def _normalized(ctx: Ctx, i: int, k: int, members: Callable[[int], list[int]], channel: Callable[[Any], Any],
                stat: Callable[[Any], Any], mean: Flat, rstd: Flat) -> tuple[str, float]:
    """The shared formula: ``members(k)`` the elements that share ``k``'s statistics (for
    grad_input), or that belong to channel ``k`` (for grad_weight/grad_bias); ``channel`` and
    ``stat`` give an element's channel and its row of ``mean``/``rstd`` (of an int or an array)."""
    w = _weight(ctx)
    xs, gs, ms, rs = (_arr(ctx, t) for t in (ctx.saved["input"], ctx.g, mean, rstd))
    ws = _arr(ctx, w) if w is not None else None
    idx = np.asarray(members(k), dtype=np.int64)
    if i == 2:
        vals = gs[idx].tolist()
        return _sums("", vals)[0], math.fsum(vals)
    at = stat(idx)
    xhat = (xs[idx] - ms[at]) * rs[at]
    if i == 1:
        a, b = gs[idx], xhat
        text = " + ".join(f"{fmt(p)}·{fmt(q)}" for p, q in zip(a[:3].tolist(), b[:3].tolist(), strict=True))
        return text + (" + …" if a.size > 3 else ""), math.fsum((a * b).tolist())
    key = ("norm", int(idx[0]), idx.size)
    if key not in ctx.memo:
        gh = gs[idx] * (ws[channel(idx)] if ws is not None else 1.0)
        ctx.memo[key] = (math.fsum(gh.tolist()) / idx.size, math.fsum((gh * xhat).tolist()) / idx.size)
    mg, mgx = ctx.memo[key]
    r = float(rs[stat(k)])
    xh = (float(xs[k]) - float(ms[stat(k)])) * r
    mine = float(gs[k]) * (float(ws[channel(k)]) if ws is not None else 1.0)
    return f"{fmt(r)} · ({fmt(mine)} − {fmt(mg)} − {fmt(xh)} · {fmt(mgx)})", r * (mine - mg - xh * mgx)


def _batch_norm(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    only_output_grad(ctx, "batch norm")
    shape = ctx.g.shape
    c_count = shape[1] if len(shape) > 1 else 1
    plane = math.prod(shape[2:])

    def channel(j: Any) -> Any:
        return (j // plane) % c_count

    def of_channel(c: int) -> list[int]:
        return [(n * c_count + c) * plane + q for n in range(shape[0]) for q in range(plane)]

    members = (lambda j: of_channel(channel(j))) if i == 0 else of_channel
    if ctx.arg("training", True):
        mean, rstd = _need(ctx, "result1", "result2")
        return _normalized(ctx, i, k, members, channel, channel, mean, rstd)
    rm, rv = _need(ctx, "running_mean", "running_var")
    eps = _num(ctx.arg("eps"))

    def inv(j: int) -> float:
        return 1.0 / math.sqrt(rv.at(channel(j)) + eps)

    if i == 0:  # the statistics are constants: each element on its own
        w = _weight(ctx)
        wc = w.at(channel(k)) if w else 1.0
        var = rv.at(channel(k))
        return f"{fmt(ctx.g.at(k))} · {fmt(wc)} / √({fmt(var)} + {fmt(eps)})", ctx.g.at(k) * wc * inv(k)
    if i == 2:
        vals = [ctx.g.at(j) for j in of_channel(k)]
        return _sums("", vals)[0], math.fsum(vals)
    x = _need(ctx, "input")[0]
    pairs = [(ctx.g.at(j), (x.at(j) - rm.at(k)) * inv(j)) for j in of_channel(k)]
    text = " + ".join(f"{fmt(a)}·{fmt(b)}" for a, b in pairs[:3]) + (" + …" if len(pairs) > 3 else "")
    return text, math.fsum(a * b for a, b in pairs)


def _group_norm(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    only_output_grad(ctx, "group norm")
    n_count, c_count, hw, groups = (int(ctx.arg(a)) for a in ("N", "C", "HxW", "group"))
    per = c_count // groups
    mean, rstd = _need(ctx, "result1", "result2")

    def channel(j: Any) -> Any:
        return (j // hw) % c_count

    def stat(j: Any) -> Any:  # the (sample, group) row of mean and rstd
        return (j // (c_count * hw)) * groups + channel(j) // per

    def members(j: int) -> list[int]:
        if i != 0:  # grad_weight/grad_bias: channel j over samples and places
            return [(n * c_count + j) * hw + q for n in range(n_count) for q in range(hw)]
        n, grp = divmod(stat(j), groups)
        first = (n * c_count + grp * per) * hw
        return list(range(first, first + per * hw))

    return _normalized(ctx, i, k, members, channel, stat, mean, rstd)


def _weight_norm(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """NOTE in the module's docstring: element ``k`` of ``v`` (input 0) or of ``g`` (input 1)."""
    v, g, norms = _need(ctx, "v", "g", "result1")
    shape = v.shape
    dim = int(ctx.arg("dim", 0))
    dim = dim + len(shape) if dim < 0 else dim
    if not 0 <= dim < len(shape) or g.shape != norms.shape:
        raise Unsupported("a weight norm over the whole tensor is not written here")
    inner = math.prod(shape[dim + 1:])
    size = shape[dim]

    def slice_of(j: int) -> int:  # the slice along ``dim`` element ``j`` of v is in
        return (j // inner) % size

    grp = k if i == 1 else slice_of(k)
    members = [j for j in range(math.prod(shape)) if slice_of(j) == grp]
    n, gain = norms.at(grp), g.at(grp)
    total = math.fsum(ctx.g.at(j) * v.at(j) for j in members)
    if i == 1:  # grad_g = Σ grad_out · v / ‖v‖
        shown = " + ".join(f"{fmt(ctx.g.at(j))}·{fmt_operand(v.at(j))}" for j in members[:3])
        return f"({shown}{' + …' if len(members) > 3 else ''}) / {fmt(n)}", total / n
    # grad_v = g / ‖v‖ · (grad_out − v · Σ(grad_out · v) / ‖v‖²)
    go, x = ctx.g.at(k), v.at(k)
    return (f"{fmt(gain)}/{fmt(n)} · ({fmt(go)} − {fmt_operand(x)}·{fmt(total)}/{fmt(n)}²)",
            gain / n * (go - x * total / (n * n)))


_TEXTS = ("grad_input = rstd · (ĝ − mean(ĝ) − x̂ · mean(ĝ · x̂)),  ĝ = grad_out · weight[c], "
          "x̂ = (input − mean) · rstd",
          "grad_weight[c] = Σ grad_out · x̂  (over channel c's elements)",
          "grad_bias[c] = Σ grad_out  (over channel c's elements)")

BACKWARD_RULES: dict[str, Rule] = {
    "WeightNormInterfaceBackward0": Rule(
        ("grad_v = g / ‖v‖ · (grad_out − v · Σ(grad_out · v) / ‖v‖²)  (‖v‖ and the sum over v's slice along dim)",
         "grad_g = Σ grad_out · v / ‖v‖  (over the slice)"),
        (("v", "g", "result1"),), _weight_norm, ("dim",)),
    "NativeBatchNormBackward0": Rule(
        (_TEXTS[0] + " (means over the channel's batch); eval mode: grad_out · weight / √(running_var + eps)",
         _TEXTS[1] + "; eval mode: x̂ = (input − running_mean) / √(running_var + eps)", _TEXTS[2]),
        (("input",), ("input",), ()), _batch_norm, ("training",)),
    "NativeGroupNormBackward0": Rule(
        (_TEXTS[0] + " (means over the sample's group)", _TEXTS[1], _TEXTS[2]),
        (("input", "result1", "result2"), ("input", "result1", "result2"), ()), _group_norm,
        ("N", "C", "HxW", "group")),
}
