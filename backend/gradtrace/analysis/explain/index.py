"""Rules of ops that move elements: select, slice, permute, transpose, and sum/mean over dims.

Each reads the node's saved arguments (``saved_args``: NOTE [saved arguments] in
``capture/saved.py``), and maps an element of the input's gradient to the element of the
received gradient it comes from (or to none: a zero).
"""

from __future__ import annotations

import math
from typing import Any

from gradtrace.analysis.explain.ops import Ctx, Rule
from gradtrace.analysis.explain.tensors import fmt, numel, ravel, unravel


def norm_dim(d: int, ndim: int) -> int:
    """A dim as a non-negative index (``-1`` is the last)."""
    return d + ndim if d < 0 else d


def _in_shape(ctx: Ctx, i: int) -> tuple[int, ...]:
    """Input ``i``'s shape, the output's where it is not known (``()`` is a 0-dim input's)."""
    shape = ctx.in_shapes[i]
    return ctx.g.shape if shape is None else shape


def _select(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    shape = _in_shape(ctx, i)
    c = unravel(k, shape)
    dim = norm_dim(int(ctx.arg("dim")), len(shape))
    index = norm_dim(int(ctx.arg("index")), shape[dim])
    g = ctx.g.at(ravel(c[:dim] + c[dim + 1:], ctx.g.shape))
    hit = c[dim] == index
    return f"{fmt(g)} · [{c[dim]} = {index}]", g if hit else 0.0


def _diagonal(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """diagonal: grad_self[c] = grad_out at c's place on the diagonal where c[dim2] − c[dim1] =
    offset, else 0 (the diagonal is the output's last dim)."""
    shape = _in_shape(ctx, i)
    c = unravel(k, shape)
    d1, d2 = (norm_dim(int(ctx.arg(n)), len(shape)) for n in ("dim1", "dim2"))
    offset = int(ctx.arg("offset", 0))
    if c[d2] - c[d1] != offset:
        return f"0  (off the diagonal at offset {offset})", 0.0
    rest = tuple(x for d, x in enumerate(c) if d not in (d1, d2))
    j = ravel((*rest, c[d1] if offset >= 0 else c[d2]), ctx.g.shape)
    return fmt(ctx.g.at(j)), ctx.g.at(j)


def _diag_embed(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """diag_embed: input ``[…, n]`` goes to the output's ``dim1``, ``dim2`` place ``(n +
    max(−offset, 0), n + max(offset, 0))``, the other dims in order; its gradient reads it
    back from there."""
    shape = _in_shape(ctx, i)
    *rest, n = unravel(k, shape)
    nd = len(shape) + 1
    d1, d2 = norm_dim(int(ctx.arg("dim1", -2)), nd), norm_dim(int(ctx.arg("dim2", -1)), nd)
    offset = int(ctx.arg("offset", 0))
    if d1 == d2:
        raise ValueError(f"diag_embed's dim1 and dim2 are both {d1}")
    at = list(rest)
    for d, x in sorted(((d1, n + max(-offset, 0)), (d2, n + max(offset, 0)))):
        at.insert(d, x)
    value = ctx.g.at(ravel(tuple(at), ctx.g.shape))
    return f"grad_out{at} = {fmt(value)}", value


def _bounds(ctx: Ctx, size: int) -> tuple[int, int, int]:
    """``slice``'s start, end and step as indices into a dim of ``size`` (as Python clamps them)."""
    start, end, step = (ctx.arg("start"), ctx.arg("end"), int(ctx.arg("step", 1)))
    start = 0 if start is None else int(start)
    end = size if end is None else int(end)
    start = min(max(start + size if start < 0 else start, 0), size)
    end = min(max(end + size if end < 0 else end, 0), size)
    return start, end, step


def _slice(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    shape = _in_shape(ctx, i)
    c = unravel(k, shape)
    dim = norm_dim(int(ctx.arg("dim")), len(shape))
    start, end, step = _bounds(ctx, shape[dim])
    pos = c[dim]
    span = f"{start}:{end}" + (f":{step}" if step != 1 else "")
    if pos < start or pos >= end or (pos - start) % step:
        return f"0  ({pos} not in {span})", 0.0
    j = ravel((*c[:dim], (pos - start) // step, *c[dim + 1:]), ctx.g.shape)
    return f"{fmt(ctx.g.at(j))}  ({pos} in {span})", ctx.g.at(j)


def _permute(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    shape = _in_shape(ctx, i)
    c = unravel(k, shape)
    dims = [norm_dim(int(d), len(shape)) for d in ctx.arg("dims")]
    j = ravel(tuple(c[d] for d in dims), ctx.g.shape)
    return f"grad_out{list(c[d] for d in dims)} = {fmt(ctx.g.at(j))}", ctx.g.at(j)


def _pixel_shuffle(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """``pixel_shuffle`` moves input element ``[…, c·r² + a·r + b, h, w]`` to output
    ``[…, c, h·r + a, w·r + b]``; its gradient moves it back."""
    shape = _in_shape(ctx, i)
    r = int(ctx.arg("upscale_factor"))
    *lead, ch, h, w = unravel(k, shape)
    c, rest = divmod(ch, r * r)
    a, b = divmod(rest, r)
    at = (*lead, c, h * r + a, w * r + b)
    value = ctx.g.at(ravel(at, ctx.g.shape))
    return f"grad_out{list(at)} = {fmt(value)}", value


def _pixel_unshuffle(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """``pixel_unshuffle``, ``pixel_shuffle``'s inverse: input ``[…, c, h·r + a, w·r + b]``
    goes to output ``[…, c·r² + a·r + b, h, w]``."""
    shape = _in_shape(ctx, i)
    r = int(ctx.arg("downscale_factor"))
    *lead, c, y, x = unravel(k, shape)
    (h, a), (w, b) = divmod(y, r), divmod(x, r)
    at = (*lead, c * r * r + a * r + b, h, w)
    value = ctx.g.at(ravel(at, ctx.g.shape))
    return f"grad_out{list(at)} = {fmt(value)}", value


def _transpose(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    shape = _in_shape(ctx, i)
    c = list(unravel(k, shape))
    a, b = (norm_dim(int(ctx.arg(n)), len(shape)) for n in ("dim0", "dim1"))
    c[a], c[b] = c[b], c[a]
    j = ravel(tuple(c), ctx.g.shape)
    return f"grad_out{c} = {fmt(ctx.g.at(j))}", ctx.g.at(j)


def _reduced(ctx: Ctx, i: int, k: int) -> tuple[tuple[int, ...], int]:
    """The dims ``sum``/``mean`` reduced, and the received element input element ``k`` went to."""
    shape = _in_shape(ctx, i)
    dims: Any = ctx.arg("dim")
    reduced = tuple(range(len(shape))) if not dims else tuple(sorted(norm_dim(int(d), len(shape)) for d in dims))
    c = unravel(k, shape)
    if ctx.arg("keepdim", False):
        out = tuple(0 if d in reduced else x for d, x in enumerate(c))
    else:
        out = tuple(x for d, x in enumerate(c) if d not in reduced)
    return reduced, ravel(out, ctx.g.shape)


def _sum_dim(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    _, j = _reduced(ctx, i, k)
    return fmt(ctx.g.at(j)), ctx.g.at(j)


def _nansum(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """nansum: grad_out at k's place, 0 where self is NaN (the sum left it out)."""
    if math.isnan(ctx.saved["self"].at(k)):
        return "0  (self is NaN there: left out of the sum)", 0.0
    return _sum_dim(ctx, i, k)


def _mean_dim(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    reduced, j = _reduced(ctx, i, k)
    shape = _in_shape(ctx, i)
    n = math.prod(shape[d] for d in reduced) if shape else numel(shape)
    return f"{fmt(ctx.g.at(j))} / {n}", ctx.g.at(j) / n


def _split(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """Input element ``k`` went to output ``c // split_size`` at ``c % split_size`` along dim."""
    shape = _in_shape(ctx, i)
    c = list(unravel(k, shape))
    dim = norm_dim(int(ctx.arg("dim")), len(shape))
    size = int(ctx.arg("split_size"))
    part, c[dim] = divmod(c[dim], size) if size > 0 else (0, c[dim])
    g = ctx.gs[part] if part < len(ctx.gs) else None
    if g is None:
        return f"0  (output {part} received no gradient)", 0.0
    value = g.at(ravel(tuple(c), g.shape))
    return f"grad_out{part}{c} = {fmt(value)}", value


def _joined(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """cat: input ``i``'s element ``k`` is the received gradient's element shifted along dim by the
    sizes of the inputs before it (their shapes are their gradients')."""
    shape = _in_shape(ctx, i)
    c = list(unravel(k, shape))
    dim = norm_dim(int(ctx.arg("dim")), len(ctx.g.shape))
    before = ctx.in_shapes[:i]
    if any(s is None for s in before):
        raise KeyError("an earlier input's size along dim is unknown (it received no gradient)")
    c[dim] += sum(s[dim] for s in before if s is not None and len(s) == len(shape))
    j = ravel(tuple(c), ctx.g.shape)
    return f"grad_out{c} = {fmt(ctx.g.at(j))}", ctx.g.at(j)


def _stacked(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """stack: input ``i`` is the received gradient's slice ``i`` along the new dim."""
    c = list(unravel(k, _in_shape(ctx, i)))
    dim = norm_dim(int(ctx.arg("dim")), len(ctx.g.shape))
    c.insert(dim, i)
    j = ravel(tuple(c), ctx.g.shape)
    return f"grad_out{c} = {fmt(ctx.g.at(j))}", ctx.g.at(j)


def _from_parts(ctx: Ctx, part: int, c: list[int]) -> tuple[str, float]:
    g = ctx.gs[part] if part < len(ctx.gs) else None
    if g is None:
        return f"0  (output {part} received no gradient)", 0.0
    value = g.at(ravel(tuple(c), g.shape))
    return f"grad_out{part}{c} = {fmt(value)}", value


def _unbound(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """unbind: element ``k`` went to output ``c[dim]`` at ``c`` without dim."""
    c = list(unravel(k, _in_shape(ctx, i)))
    dim = norm_dim(int(ctx.arg("dim")), len(c))
    part = c.pop(dim)
    return _from_parts(ctx, part, c)


def _split_sizes(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """split_with_sizes: element ``k`` went to the output whose span along dim holds it."""
    c = list(unravel(k, _in_shape(ctx, i)))
    dim = norm_dim(int(ctx.arg("dim")), len(c))
    pos = c[dim]
    for part, size in enumerate(int(s) for s in ctx.arg("split_sizes")):
        if pos < size:
            c[dim] = pos
            return _from_parts(ctx, part, c)
        pos -= size
    raise IndexError("the element lies past the split sizes")


def _pad(reflect: bool, nd: int) -> Rule:
    """Reflection and replication padding of the last ``nd`` dims: each output place reads one
    input place (reflected about the edge, or the edge itself), so ``grad_self[p]`` sums the
    received gradient over the output places that read ``p``."""

    def source(o: int, lo: int, n: int) -> int:
        p = o - lo
        if reflect:
            return -p if p < 0 else 2 * (n - 1) - p if p >= n else p
        return min(max(p, 0), n - 1)

    def elem(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
        shape = ctx.in_shapes[i] or ()
        pads = [int(x) for x in ctx.arg("padding")]
        at = unravel(k, shape)
        lead, spatial = at[:-nd], at[-nd:]
        sizes = shape[-nd:]
        # padding lists the last dim's (left, right) first
        los = [pads[2 * (nd - 1 - d)] for d in range(nd)]
        his = [pads[2 * (nd - 1 - d) + 1] for d in range(nd)]
        outs = [n + lo + hi for n, lo, hi in zip(sizes, los, his, strict=True)]
        readers = [[o for o in range(outs[d]) if source(o, los[d], sizes[d]) == spatial[d]] for d in range(nd)]
        out_shape = (*ctx.g.shape[:-nd], *outs)
        vals: list[float] = []
        for place in _product(readers):
            vals.append(ctx.g.at(ravel((*lead, *place), out_shape)))
        shown = " + ".join(fmt(v) for v in vals[:4]) + (" + …" if len(vals) > 4 else "")
        return shown, math.fsum(vals)

    how = "reflected about the edge" if reflect else "the nearest edge place"
    return Rule((f"grad_self[p] = Σ grad_out[o] over the output places o that read p (o − padding, {how})",),
                ((),), elem, ("padding",))


def _product(lists: list[list[int]]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for options in lists:
        out = [(*prefix, o) for prefix in out for o in options]
    return out


BACKWARD_RULES: dict[str, Rule] = {
    **{f"{kind}Pad{nd}DBackward0": _pad(kind == "Reflection", nd) for kind in ("Reflection", "Replication")
       for nd in (1, 2, 3)},
    "SplitBackward0": Rule(("grad_self = the outputs' gradients joined along dim (an output that got none: 0)",),
                           ((),), _split, ("dim", "split_size")),
    "UnsafeSplitBackward0": Rule(("grad_self = the outputs' gradients joined along dim (an output that got none: 0)",),
                                 ((),), _split, ("dim", "split_size")),
    "SelectBackward0": Rule(("grad_self[…, i, …] = grad_out[…] · [i = index]  (i along dim)",), ((),),
                            _select, ("dim", "index")),
    "SliceBackward0": Rule(("grad_self[…, i, …] = grad_out[…, (i − start) / step, …] for i in start:end:step, "
                            "else 0",), ((),), _slice, ("dim", "step")),
    "PermuteBackward0": Rule(("grad_self = grad_out permuted back  (grad_self[c] = grad_out[c[dims]])",), ((),),
                             _permute, ("dims",)),
    "PixelShuffleBackward0": Rule(("grad_self[…, c·r² + a·r + b, h, w] = grad_out[…, c, h·r + a, w·r + b]  "
                                   "(r = upscale_factor)",), ((),), _pixel_shuffle, ("upscale_factor",)),
    "PixelUnshuffleBackward0": Rule(("grad_self[…, c, h·r + a, w·r + b] = grad_out[…, c·r² + a·r + b, h, w]  "
                                     "(r = downscale_factor)",), ((),), _pixel_unshuffle, ("downscale_factor",)),
    "TransposeBackward0": Rule(("grad_self = grad_out with dim0 and dim1 swapped back",), ((),),
                               _transpose, ("dim0", "dim1")),
    "DiagonalBackward0": Rule(("grad_self = grad_out on the diagonal (column − row = offset), else 0",), ((),),
                              _diagonal, ("offset", "dim1", "dim2")),
    "DiagEmbedBackward0": Rule(("grad_self[…, n] = grad_out on the diagonal: at n + max(−offset, 0) in dim1 "
                                "and n + max(offset, 0) in dim2",), ((),), _diag_embed, ("offset", "dim1", "dim2")),
    "SumBackward1": Rule(("grad_self[k] = grad_out at k's place with the summed dims dropped",), ((),),
                         _sum_dim, ("dim", "keepdim")),
    "NansumBackward0": Rule(("grad_self[k] = grad_out at k's place with the summed dims dropped, 0 where self is "
                             "NaN",), (("self",),), _nansum, ("keepdim",)),  # no dim recorded: every dim
    "MeanBackward1": Rule(("grad_self[k] = grad_out at k's place / the number of elements averaged",), ((),),
                          _mean_dim, ("dim", "keepdim")),
    "TransposeBackward1": Rule(("grad_self = grad_out with dim0 and dim1 swapped back  (in-place transpose_)",),
                               ((),), _transpose, ("dim0", "dim1")),
    "CatBackward0": Rule(("grad_tensors[i] = grad_out's slice along dim where input i sat",), ((),),
                         _joined, ("dim",), variadic=True),
    "StackBackward0": Rule(("grad_tensors[i] = grad_out[…, i, …]  (i along the new dim)",), ((),), _stacked,
                           ("dim",), variadic=True),
    "UnbindBackward0": Rule(("grad_self = the outputs' gradients stacked along dim (an output that got none: 0)",),
                            ((),), _unbound, ("dim",)),
    "SplitWithSizesBackward0": Rule(("grad_self = the outputs' gradients joined along dim (an output that got "
                                     "none: 0)",), ((),), _split_sizes, ("dim", "split_sizes")),
}
