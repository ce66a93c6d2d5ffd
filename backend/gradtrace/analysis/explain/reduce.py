"""Rules of padding, repeat, cumulative sum, max/min (over a dim by the saved indices, or over all
elements), the vector norm (``torch.norm``'s too), a triangle's mask, dot products and
dropout's mask.

The element a received gradient comes from is found as in ``explain/index.py``; where a rule
cannot be exact for an argument (a norm's ``ord`` of 0 or ±inf) it says so instead of a number.
"""

from __future__ import annotations

import math
from dataclasses import replace
from itertools import product

from gradtrace.analysis.explain.index import _reduced, norm_dim
from gradtrace.analysis.explain.nn import _num, _pow
from gradtrace.analysis.explain.ops import Ctx, Rule, Unsupported
from gradtrace.analysis.explain.tensors import fmt, ravel, unravel
from gradtrace.analysis.local_derivatives import _exp


def _pad(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_self[c] = grad_out[c + before] (``pad`` lists (before, after) from the last dim back;
    a negative pad crops, and a cropped element gets 0)."""
    shape = ctx.in_shapes[i] or ()
    c = list(unravel(k, shape))
    pads = [int(p) for p in ctx.arg("pad")]
    for n in range(len(pads) // 2):
        c[len(shape) - 1 - n] += pads[2 * n]
    if any(not 0 <= q < s for q, s in zip(c, ctx.g.shape, strict=True)):
        return "0  (cropped by a negative pad)", 0.0
    j = ravel(tuple(c), ctx.g.shape)
    return f"grad_out{c} = {fmt(ctx.g.at(j))}", ctx.g.at(j)


def _repeat(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_self[c] = Σ grad_out over every copy of c (c + r · size along each dim)."""
    shape = ctx.in_shapes[i] or ()
    reps = [int(r) for r in ctx.arg("repeats")]
    lead = len(reps) - len(shape)
    c = unravel(k, shape)
    full = (1,) * lead + tuple(shape)
    place = (0,) * lead + tuple(c)
    vals = [ctx.g.at(ravel(tuple(r * s + q for r, s, q in zip(rs, full, place, strict=True)), ctx.g.shape))
            for rs in product(*(range(r) for r in reps))]
    return " + ".join(fmt(v) for v in vals[:4]) + (" + …" if len(vals) > 4 else ""), math.fsum(vals)


def _cumsum(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_self[…, p, …] = Σ_{q ≥ p} grad_out[…, q, …] (every later partial sum holds it)."""
    shape = ctx.in_shapes[i] or ()
    if not shape:
        return fmt(ctx.g.at(0)), ctx.g.at(0)
    c = list(unravel(k, shape))
    dim = norm_dim(int(ctx.arg("dim")), len(shape))
    vals = []
    for q in range(c[dim], shape[dim]):
        c[dim] = q
        vals.append(ctx.g.at(ravel(tuple(c), shape)))
    return " + ".join(fmt(v) for v in vals[:4]) + (" + …" if len(vals) > 4 else ""), math.fsum(vals)


def _cumprod(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_self[…, p, …] = Σ_{q ≥ p} grad_out[…, q, …] · Π_{r ≤ q, r ≠ p} self[…, r, …]: each later
    partial product holds x_p once, and its derivative is the product of the others (a zero
    among them included, where dividing the result by x_p would fail)."""
    shape = ctx.in_shapes[i] or ()
    x = ctx.saved["self"]
    if not shape:
        return fmt(ctx.g.at(0)), ctx.g.at(0)
    c = list(unravel(k, shape))
    dim = norm_dim(int(ctx.arg("dim")), len(shape))
    p = c[dim]

    def at(q: int) -> int:
        c[dim] = q
        return ravel(tuple(c), shape)

    others = math.prod(x.at(at(r)) for r in range(p))  # Π_{r < p}
    terms = []
    for q in range(p, shape[dim]):
        if q > p:
            others *= x.at(at(q))
        terms.append((ctx.g.at(at(q)), others))
    shown = " + ".join(f"{fmt(g)}·{fmt(o)}" for g, o in terms[:3]) + (" + …" if len(terms) > 3 else "")
    return shown, math.fsum(g * o for g, o in terms)


def _max_dim(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_self[c] = grad_out at c's reduced place if indices there is c[dim], else 0."""
    shape = ctx.in_shapes[i] or ()
    c = unravel(k, shape)
    dim = norm_dim(int(ctx.arg("dim")), len(shape)) if shape else 0
    _, j = _reduced(replace(ctx, args={**ctx.args, "dim": [dim]}), i, k)
    picked = int(ctx.saved["indices"].at(j)) if shape else 0
    at = c[dim] if shape else 0
    if at != picked:
        return f"0  ({at} is not the index picked, {picked})", 0.0
    return f"{fmt(ctx.g.at(j))}  (index {picked} picked)", ctx.g.at(j)


def _max_all(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_self = grad_out / count where self equals the result (split evenly among ties), else 0."""
    x, r = ctx.saved["self"], ctx.saved["result"].at(0)

    def hit(v: float) -> bool:
        return v == r or (math.isnan(v) and math.isnan(r))

    if not hit(x.at(k)):
        return f"0  ({fmt(x.at(k))} ≠ {fmt(r)})", 0.0
    count = sum(1 for q in range(len(x.values)) if hit(x.at(q)))
    g = ctx.g.at(0)
    return (f"{fmt(g)} / {count}  ({count} elements equal {fmt(r)})" if count > 1 else fmt(g)), g / count


def _norm(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_self = grad_out · self · |self|^(ord − 2) / norm^(ord − 1) (0 where the norm is 0);
    ``torch.norm``'s nodes name ``ord`` ``p`` (None is 2)."""
    order = ctx.arg("ord", ctx.arg("p"))
    p = 2.0 if order is None else _num(order)
    if p in (0.0, math.inf, -math.inf) or p < 1:
        raise Unsupported(f"the rule is written here for ord ≥ 1 and finite, not ord = {fmt(p)}")
    _, j = _reduced(ctx, i, k)
    x, r, g = ctx.saved["self"].at(k), ctx.saved["result"].at(j), ctx.g.at(j)
    if r == 0:
        return "0  (the norm is 0)", 0.0
    if p == 2:
        return f"{fmt(g)} · {fmt(x)} / {fmt(r)}", g * x / r
    if p == 1:
        s = 0.0 if x == 0 else math.copysign(1.0, x)
        return f"{fmt(g)} · sign({fmt(x)})", g * s
    if x == 0:  # |x|^(ord − 2) is infinite for ord < 2; torch takes the element's share as 0
        return f"{fmt(g)} · 0  (self is 0)", 0.0
    factor = x * _pow(abs(x), p - 2) / _pow(r, p - 1)
    return f"{fmt(g)} · {fmt(x)}·|{fmt(x)}|^{fmt(p - 2)} / {fmt(r)}^{fmt(p - 1)}", g * factor


def _triangle(ctx: Ctx, i: int, k: int, lower: bool) -> tuple[str, float]:
    """tril: grad_self[…, r, c] = grad_out[…, r, c] where c − r ≤ diagonal, else 0 (triu: ≥)."""
    shape = ctx.in_shapes[i] or ctx.g.shape
    r, c = unravel(k, shape)[-2:]
    d = int(ctx.arg("diagonal", 0))
    if (c - r <= d) if lower else (c - r >= d):
        return fmt(ctx.g.at(k)), ctx.g.at(k)
    return f"0  (zeroed: column − row {'>' if lower else '<'} {d})", 0.0


def _dropout(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_self = grad_out · mask / (1 − p)."""
    kept, p, g = ctx.saved["result1"].at(k), _num(ctx.arg("p")), ctx.g.at(k)
    if not kept:
        return f"{fmt(g)} · 0  (dropped)", 0.0
    return f"{fmt(g)} / (1 − {fmt(p)})", g / (1 - p) if p < 1 else 0.0


def _spread_of(ctx: Ctx, i: int, k: int, std: bool) -> tuple[str, float]:
    """var: grad_self = grad_out · 2 · (self − mean) / (n − correction); std: grad_out ·
    (self − mean) / ((n − correction) · result), 0 where the result is 0 (over the reduced dims)."""
    shape = ctx.in_shapes[i] or ()
    reduced, j = _reduced(ctx, i, k)
    c = unravel(k, shape)
    group = []
    for q in product(*(range(shape[d]) if d in reduced else (c[d],) for d in range(len(shape)))):
        group.append(ctx.saved["self"].at(ravel(q, shape)))
    n = len(group)
    correction = _num(ctx.arg("correction", 1))
    mean = math.fsum(group) / n
    x, g = ctx.saved["self"].at(k), ctx.g.at(j)
    if std:
        r = ctx.saved["result"].at(j)
        if r == 0:
            return "0  (the std is 0)", 0.0
        return (f"{fmt(g)} · ({fmt(x)} − {fmt(mean)}) / (({n} − {fmt(correction)}) · {fmt(r)})",
                g * (x - mean) / ((n - correction) * r))
    return f"{fmt(g)} · 2 · ({fmt(x)} − {fmt(mean)}) / ({n} − {fmt(correction)})", g * 2 * (x - mean) / (n - correction)


def _logsumexp(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_self = grad_out · exp(self − result) (the softmax of the reduced elements)."""
    _, j = _reduced(ctx, i, k)
    x, r, g = ctx.saved["self"].at(k), ctx.saved["result"].at(j), ctx.g.at(j)
    return f"{fmt(g)} · exp({fmt(x)} − {fmt(r)})", g * _exp(x - r)


def _flip(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    shape = ctx.in_shapes[i] or ()
    c = list(unravel(k, shape))
    for d in {norm_dim(int(d), len(shape)) for d in ctx.arg("dims")}:
        c[d] = shape[d] - 1 - c[d]
    j = ravel(tuple(c), ctx.g.shape)
    return f"grad_out{c} = {fmt(ctx.g.at(j))}", ctx.g.at(j)


def _mv(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_self[r, c] = grad_out[r] · vec[c]; grad_vec[c] = Σ_r self[r, c] · grad_out[r]."""
    if i == 0:
        mat = ctx.in_shapes[0] or ()
        r, c = divmod(k, mat[1])
        g, v = ctx.g.at(r), ctx.saved["vec"].at(c)
        return f"{fmt(g)} · {fmt(v)}", g * v
    m = ctx.saved["self"]
    parts = [(m.at(r * m.shape[1] + k), ctx.g.at(r)) for r in range(m.shape[0])]
    text = " + ".join(f"{fmt(a)}·{fmt(b)}" for a, b in parts[:3]) + (" + …" if len(parts) > 3 else "")
    return text, math.fsum(a * b for a, b in parts)


def _dot(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """dot: the other input's ``tensor``; vdot (real tensors: no conjugate to take): ``other``."""
    g, other = ctx.g.at(0), ctx.saved[("other" if "other" in ctx.names else "tensor") if i == 0 else "self"].at(k)
    return f"{fmt(g)} · {fmt(other)}", g * other


_MAX = "grad_self[c] = grad_out at c's place with dim dropped if indices there is c[dim], else 0"
_ALL = "grad_self = grad_out / count where self = result (ties share evenly), else 0"
def _amax(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """amax/amin: grad_out shared evenly among the elements equal to the result (ties split it)."""
    _, j = _reduced(ctx, i, k)
    x, r = ctx.saved["self"].at(k), ctx.saved["result"].at(j)
    if x != r:
        return f"0  ({fmt(x)} is not the result {fmt(r)})", 0.0
    counts: dict[int, int] | None = ctx.memo.get("ties")
    if counts is None:
        counts = {}
        self_ = ctx.saved["self"]
        for q in range(len(self_.values)):
            _, jq = _reduced(ctx, i, q)
            if self_.at(q) == ctx.saved["result"].at(jq):
                counts[jq] = counts.get(jq, 0) + 1
        ctx.memo["ties"] = counts
    n, g = counts.get(j, 1), ctx.g.at(j)
    return (fmt(g) if n == 1 else f"{fmt(g)} / {n}  ({n} tie for it)"), g / n


def _picked(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """topk/sort: grad_self[c] = the received gradient at the output place whose saved index along
    dim is c's (none: 0)."""
    shape = ctx.in_shapes[i] or ()
    idx = ctx.saved["indices"]
    d = norm_dim(int(ctx.arg("dim", -1)), len(shape))
    c = list(unravel(k, shape))
    hits = []
    for p in range(idx.shape[d]):
        at = ravel(tuple(p if q == d else x for q, x in enumerate(c)), idx.shape)
        if int(idx.at(at)) == c[d]:
            hits.append((p, ctx.g.at(at)))
    if not hits:
        return "0  (not among the picked elements)", 0.0
    return " + ".join(f"{fmt(v)}" for _, v in hits), math.fsum(v for _, v in hits)


def _roll(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """roll: grad_self[c] = grad_out at c moved by the shifts (the flat index when no dims are given)."""
    shape = ctx.in_shapes[i] or ()
    shifts = [int(x) for x in ctx.arg("shifts")]
    dims = [int(x) for x in ctx.arg("dims") or []]
    if not dims:
        n = len(ctx.g.values)
        j = (k + shifts[0]) % n if n else 0
    else:
        c = list(unravel(k, shape))
        for sh, d in zip(shifts, dims, strict=True):
            d = norm_dim(d, len(shape))
            c[d] = (c[d] + sh) % shape[d]
        j = ravel(tuple(c), shape)
    return fmt(ctx.g.at(j)), ctx.g.at(j)


BACKWARD_RULES: dict[str, Rule] = {
    "AmaxBackward0": Rule(("grad_self = grad_out / (how many tie) where self is the max, else 0",),
                          (("self", "result"),), _amax, ("dim", "keepdim")),
    "AminBackward0": Rule(("grad_self = grad_out / (how many tie) where self is the min, else 0",),
                          (("self", "result"),), _amax, ("dim", "keepdim")),
    "TopkBackward0": Rule(("grad_self = grad_out at the place whose saved index is this element's, else 0",),
                          (("indices",),), _picked, ("dim",)),
    "SortBackward0": Rule(("grad_self = grad_out at the place the element was sorted to (saved indices)",),
                          (("indices",),), _picked, ("dim",)),
    "RollBackward0": Rule(("grad_self = grad_out rolled back by the shifts",), ((),), _roll, ("shifts", "dims")),
    "ConstantPadNdBackward0": Rule(("grad_self[c] = grad_out[c + pad before]  (a cropped element: 0)",), ((),),
                                   _pad, ("pad",)),
    "RepeatBackward0": Rule(("grad_self[c] = Σ grad_out over every copy of c",), ((),), _repeat, ("repeats",)),
    "CumsumBackward0": Rule(("grad_self[…, p, …] = Σ_{q ≥ p} grad_out[…, q, …]  (along dim)",), ((),), _cumsum,
                            ("dim",)),
    "CumprodBackward0": Rule(("grad_self[…, p, …] = Σ_{q ≥ p} grad_out[…, q, …] · Π_{r ≤ q, r ≠ p} self[…, r, …]  "
                              "(along dim)",), (("self",),), _cumprod, ("dim",)),
    "MaxBackward0": Rule((_MAX,), (("indices",),), _max_dim, ("dim", "keepdim")),
    "MinBackward0": Rule((_MAX,), (("indices",),), _max_dim, ("dim", "keepdim")),
    "MaxBackward1": Rule((_ALL,), (("self", "result"),), _max_all),
    "MinBackward1": Rule((_ALL,), (("self", "result"),), _max_all),
    "LinalgVectorNormBackward0": Rule(("grad_self = grad_out · self · |self|^(ord − 2) / norm^(ord − 1)  "
                                       "(ord 2: grad_out · self / norm)",), (("self", "result"),), _norm,
                                      ("ord", "keepdim")),
    "NormBackward0": Rule(("grad_self = grad_out · self · |self|^(p − 2) / norm^(p − 1)  (p 2: grad_out · self / "
                           "norm)",), (("self", "result"),), _norm, ("p",)),
    "NormBackward1": Rule(("grad_self = grad_out · self · |self|^(p − 2) / norm^(p − 1)  (p 2: grad_out · self / "
                           "norm)",), (("self", "result"),), _norm, ("p", "keepdim")),
    "TrilBackward0": Rule(("grad_self = grad_out on and below the diagonal, else 0",), ((),),
                          lambda c, i, k: _triangle(c, i, k, True), ("diagonal",)),
    "TriuBackward0": Rule(("grad_self = grad_out on and above the diagonal, else 0",), ((),),
                          lambda c, i, k: _triangle(c, i, k, False), ("diagonal",)),
    "VarBackward0": Rule(("grad_self = grad_out · 2 · (self − mean) / (n − correction)  (over the reduced dims)",),
                         (("self",),), lambda c, i, k: _spread_of(c, i, k, False), ("keepdim",)),
    "StdBackward0": Rule(("grad_self = grad_out · (self − mean) / ((n − correction) · result)  (0 where result is 0)",),
                         (("self", "result"),), lambda c, i, k: _spread_of(c, i, k, True), ("keepdim",)),
    "LogsumexpBackward0": Rule(("grad_self = grad_out · exp(self − result)  (over the reduced dims)",),
                               (("self", "result"),), _logsumexp, ("dim", "keepdim")),
    "FlipBackward0": Rule(("grad_self = grad_out flipped back along dims",), ((),), _flip, ("dims",)),
    "MvBackward0": Rule(("grad_self[r, c] = grad_out[r] · vec[c]", "grad_vec[c] = Σ_r self[r, c] · grad_out[r]"),
                        (("vec",), ("self",)), _mv),
    "DotBackward0": Rule(("grad_self = grad_out · tensor", "grad_tensor = grad_out · self"),
                         (("tensor",), ("self",)), _dot),
    "VdotBackward0": Rule(("grad_self = grad_out · other", "grad_other = grad_out · self"),
                          (("other",), ("self",)), _dot),
    "NativeDropoutBackward0": Rule(("grad_self = grad_out · mask / (1 − p)",), (("result1",),), _dropout, ("p",)),
}
