"""Rules of batch norm and group norm: per channel (batch norm) or per (sample, group) (group norm),
``x̂ = (input − mean) · rstd`` and

    grad_input  = rstd · (ĝ − mean(ĝ) − x̂ · mean(ĝ · x̂)),  ĝ = grad_out · weight[c]
    grad_weight = Σ grad_out · x̂,   grad_bias = Σ grad_out

(the means over the elements that shared the statistics). Batch norm in eval mode normalizes by
the running statistics, which are constants: ``grad_input = grad_out · weight / √(running_var + eps)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from gradtrace.analysis.explain.nn import _num
from gradtrace.analysis.explain.ops import Ctx, NotKept, Rule
from gradtrace.analysis.explain.tensors import Flat, fmt


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


def _normalized(ctx: Ctx, i: int, k: int, members: Callable[[int], list[int]], channel: Callable[[int], int],
                mean: Callable[[int], float], rstd: Callable[[int], float]) -> tuple[str, float]:
    """The shared formula: ``members(k)`` the elements that share ``k``'s statistics (for
    grad_input), or that belong to channel ``k`` (for grad_weight/grad_bias)."""
    x, g = ctx.saved["input"], ctx.g
    w = _weight(ctx)
    if i == 2:
        vals = [g.at(j) for j in members(k)]
        return _sums("", vals)[0], math.fsum(vals)

    def xhat(j: int) -> float:
        return (x.at(j) - mean(j)) * rstd(j)

    if i == 1:
        pairs = [(g.at(j), xhat(j)) for j in members(k)]
        text = " + ".join(f"{fmt(a)}·{fmt(b)}" for a, b in pairs[:3]) + (" + …" if len(pairs) > 3 else "")
        return text, math.fsum(a * b for a, b in pairs)
    row = members(k)
    key = ("norm", row[0], len(row))
    if key not in ctx.memo:
        gh = [g.at(j) * (w.at(channel(j)) if w else 1.0) for j in row]
        m = len(row)
        ctx.memo[key] = (math.fsum(gh) / m, math.fsum(a * xhat(j) for a, j in zip(gh, row, strict=True)) / m)
    mg, mgx = ctx.memo[key]
    s, xh, mine = rstd(k), xhat(k), g.at(k) * (w.at(channel(k)) if w else 1.0)
    return f"{fmt(s)} · ({fmt(mine)} − {fmt(mg)} − {fmt(xh)} · {fmt(mgx)})", s * (mine - mg - xh * mgx)


def _batch_norm(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    shape = ctx.g.shape
    c_count = shape[1] if len(shape) > 1 else 1
    plane = math.prod(shape[2:])

    def channel(j: int) -> int:
        return (j // plane) % c_count

    def of_channel(c: int) -> list[int]:
        return [(n * c_count + c) * plane + q for n in range(shape[0]) for q in range(plane)]

    members = (lambda j: of_channel(channel(j))) if i == 0 else of_channel
    if ctx.arg("training", True):
        mean, rstd = _need(ctx, "result1", "result2")
        return _normalized(ctx, i, k, members, channel, lambda j: mean.at(channel(j)), lambda j: rstd.at(channel(j)))
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
    n_count, c_count, hw, groups = (int(ctx.arg(a)) for a in ("N", "C", "HxW", "group"))
    per = c_count // groups
    mean, rstd = _need(ctx, "result1", "result2")

    def channel(j: int) -> int:
        return (j // hw) % c_count

    def stat(j: int) -> int:  # the (sample, group) row of mean and rstd
        return (j // (c_count * hw)) * groups + channel(j) // per

    def members(j: int) -> list[int]:
        if i != 0:  # grad_weight/grad_bias: channel j over samples and places
            return [(n * c_count + j) * hw + q for n in range(n_count) for q in range(hw)]
        n, grp = divmod(stat(j), groups)
        first = (n * c_count + grp * per) * hw
        return list(range(first, first + per * hw))

    return _normalized(ctx, i, k, members, channel, lambda j: mean.at(stat(j)), lambda j: rstd.at(stat(j)))


_TEXTS = ("grad_input = rstd · (ĝ − mean(ĝ) − x̂ · mean(ĝ · x̂)),  ĝ = grad_out · weight[c], "
          "x̂ = (input − mean) · rstd",
          "grad_weight[c] = Σ grad_out · x̂  (over channel c's elements)",
          "grad_bias[c] = Σ grad_out  (over channel c's elements)")

BACKWARD_RULES: dict[str, Rule] = {
    "NativeBatchNormBackward0": Rule(
        (_TEXTS[0] + " (means over the channel's batch); eval mode: grad_out · weight / √(running_var + eps)",
         _TEXTS[1] + "; eval mode: x̂ = (input − running_mean) / √(running_var + eps)", _TEXTS[2]),
        (("input",), ("input",), ()), _batch_norm, ("training",)),
    "NativeGroupNormBackward0": Rule(
        (_TEXTS[0] + " (means over the sample's group)", _TEXTS[1], _TEXTS[2]),
        (("input", "result1", "result2"), ("input", "result1", "result2"), ()), _group_norm,
        ("N", "C", "HxW", "group")),
}
