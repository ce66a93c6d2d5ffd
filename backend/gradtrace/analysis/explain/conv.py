"""Rules of convolution and pooling: ``conv1d``/``conv2d``/``conv3d`` (and their transposed
forms), max pooling by its saved indices, average pooling and adaptive average pooling.

Each gradient element is a sum over the output positions (and kernel taps) that read it; the
instance shows the first terms and the exact sum (``math.fsum``), as ``_summed`` in
``explain/ops.py`` does. Strides, paddings, dilations and groups come from ``saved_args``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import product

import numpy as np

from gradtrace.analysis.explain.ops import Ctx, Rule, Unsupported
from gradtrace.analysis.explain.tensors import Flat, fmt, numel, ravel, unravel

Terms = list[tuple[float, float]]


def _shown(parts: Terms) -> tuple[str, float]:
    """``a·b + c·d + …`` (first three terms) and the exact sum."""
    value = math.fsum(a * b for a, b in parts)
    if not parts:
        return "0  (no output position reads this element)", 0.0
    text = " + ".join(f"{fmt(a)}·{fmt(b)}" for a, b in parts[:3]) + (" + …" if len(parts) > 3 else "")
    return text, value


def _ints(ctx: Ctx, name: str, nd: int, default: int) -> tuple[int, ...]:
    """A per-dim argument (stride, padding, dilation) as ``nd`` ints (an empty list: ``default``)."""
    raw = ctx.arg(name)
    vals = [int(v) for v in raw] if isinstance(raw, list | tuple) else ([] if raw is None else [int(raw)])
    if not vals:
        return (default,) * nd
    return tuple(vals) * nd if len(vals) == 1 else tuple(vals)


def _conv_geometry(ctx: Ctx) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], int]:
    nd = len(ctx.g.shape) - 2
    return (_ints(ctx, "stride", nd, 1), _ints(ctx, "padding", nd, 0), _ints(ctx, "dilation", nd, 1),
            int(ctx.arg("groups", 1)))


def _taps(x_pos: tuple[int, ...], ksize: tuple[int, ...], out_size: tuple[int, ...], s: tuple[int, ...],
          p: tuple[int, ...], d: tuple[int, ...]) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(kernel tap, output position) pairs with ``out·stride − pad + tap·dilation = x_pos``."""
    for kk in product(*(range(k) for k in ksize)):
        o = []
        for dim, t in enumerate(kk):
            num = x_pos[dim] + p[dim] - t * d[dim]
            if num % s[dim] or not 0 <= num // s[dim] < out_size[dim]:
                break
            o.append(num // s[dim])
        else:
            yield kk, tuple(o)


def _reads(o: tuple[int, ...], kk: tuple[int, ...], in_size: tuple[int, ...], s: tuple[int, ...],
           p: tuple[int, ...], d: tuple[int, ...]) -> tuple[int, ...] | None:
    """The input position output ``o`` reads at tap ``kk`` (None: in the padding)."""
    pos = tuple(o[i] * s[i] - p[i] + kk[i] * d[i] for i in range(len(o)))
    return pos if all(0 <= q < n for q, n in zip(pos, in_size, strict=True)) else None


def _conv(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """``y[n, co, o] = bias[co] + Σ_{ci, kk} x[n, ci, o·s − p + kk·d] · w[co, ci, kk]`` (ci in co's
    group); the transposed form is the same sum read the other way (x and y swap roles)."""
    g = ctx.g
    s, p, d, groups = _conv_geometry(ctx)
    transposed = bool(ctx.arg("transposed", False))
    _, c_out, *out_size = g.shape
    if i == 2:  # grad_bias[co] = Σ_{n, o} grad_out[n, co, o]
        plane = numel(tuple(out_size))
        vals = [g.at((n * c_out + k) * plane + q) for n in range(g.shape[0]) for q in range(plane)]
        text = " + ".join(fmt(v) for v in vals[:4]) + (" + …" if len(vals) > 4 else "")
        return text, math.fsum(vals)
    x_shape = ctx.in_shapes[0] if i == 0 and ctx.in_shapes[0] else ctx.saved["input"].shape
    w_shape = ctx.in_shapes[1] if i == 1 and ctx.in_shapes[1] else ctx.saved["weight"].shape
    x = ctx.saved.get("input", Flat((), x_shape))
    w = ctx.saved.get("weight", Flat((), w_shape))
    n_batch, c_in, *in_size = x_shape
    ksize = tuple(w_shape[2:])
    # the "small" side reads the "big" side: conv: y reads x; transposed: x is read by y the other way
    lo_shape, hi_shape = (tuple(in_size), tuple(out_size)) if not transposed else (tuple(out_size), tuple(in_size))
    lo_c, hi_c = (c_in, c_out) if not transposed else (c_out, c_in)
    lo_g, hi_g = lo_c // groups, hi_c // groups

    def lo_at(t: Flat, n: int, c: int, pos: tuple[int, ...]) -> float:
        return t.at((n * lo_c + c) * numel(lo_shape) + ravel(pos, lo_shape))

    def hi_at(t: Flat, n: int, c: int, pos: tuple[int, ...]) -> float:
        return t.at((n * hi_c + c) * numel(hi_shape) + ravel(pos, hi_shape))

    lo_t, hi_t = (x, g) if not transposed else (g, x)

    if i == 1:  # grad_weight[a, b, kk] = Σ_{n, o} (pairs of x and grad_out the tap joins)
        a, b, *kk_ = unravel(k, tuple(w_shape))
        hc = a  # weight's first dim: out channels (conv) or in channels (transposed)
        lc = (hc // hi_g) * lo_g + b
        lo_pad, valid = _padded(ctx, lo_t, (n_batch, lo_c, *lo_shape), hi_shape, s, p, d, ksize)
        taps = (slice(None), *(slice(t * dd, t * dd + ss * (h - 1) + 1, ss)
                               for t, dd, ss, h in zip(kk_, d, s, hi_shape, strict=True)))
        his = np.asarray(hi_t.values, dtype=np.float64).reshape(n_batch, hi_c, *hi_shape)[:, hc]
        keep = valid[taps]
        los = lo_pad[:, lc][taps][keep]
        return _shown_arrays(his[keep], los)
    # i == 0: grad_input
    c = unravel(k, tuple(x_shape))
    n, ch, pos = c[0], c[1], tuple(c[2:])
    parts = []
    if not transposed:  # Σ_{co in ch's group, kk} grad_out[n, co, o] · w[co, ch % group, kk]
        first = (ch // lo_g) * hi_g
        for co in range(first, first + hi_g):
            for kk, o in _taps(pos, ksize, tuple(out_size), s, p, d):
                parts.append((g.at((n * c_out + co) * numel(tuple(out_size)) + ravel(o, tuple(out_size))),
                              w.at((co * lo_g + ch % lo_g) * numel(ksize) + ravel(kk, ksize))))
        return _shown(parts)
    # transposed: x[n, ch, pos] feeds y[n, co, pos·s − p + kk·d] with w[ch, co % group, kk]
    first = (ch // hi_g) * lo_g
    for co in range(first, first + lo_g):
        for kk in product(*(range(m) for m in ksize)):
            at = _reads(pos, kk, tuple(out_size), s, p, d)
            if at is not None:
                parts.append((g.at((n * c_out + co) * numel(tuple(out_size)) + ravel(at, tuple(out_size))),
                              w.at((ch * lo_g + co % lo_g) * numel(ksize) + ravel(kk, ksize))))
    return _shown(parts)


def _padded(ctx: Ctx, t: Flat, shape: tuple[int, ...], hi_shape: tuple[int, ...], s: tuple[int, ...],
            p: tuple[int, ...], d: tuple[int, ...], ksize: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The side read at ``o·stride − padding + tap·dilation`` (the input; grad_out for the
    transposed form), zero-padded so that every (o, tap) lands in it, and where it is not padding
    (once per node: ``Ctx.memo``)."""
    key = ("conv-padded", id(t))
    if key not in ctx.memo:
        arr = np.asarray(t.values, dtype=np.float64).reshape(shape)
        widths = [(0, 0), (0, 0)] + [(pp, max(0, (h - 1) * ss + (kk - 1) * dd - pp - n + 1))
                                     for pp, h, ss, kk, dd, n in zip(p, hi_shape, s, ksize, d, shape[2:], strict=True)]
        ctx.memo[key] = (np.pad(arr, widths)[:, :, ...],
                         np.pad(np.ones(shape[:1] + shape[2:], dtype=bool), [widths[0], *widths[2:]]))
    found: tuple[np.ndarray, np.ndarray] = ctx.memo[key]
    return found


def _shown_arrays(a: np.ndarray, b: np.ndarray) -> tuple[str, float]:
    """:func:`_shown` of the pairs ``zip(a, b)``, in that order."""
    if not a.size:
        return _shown([])
    value = math.fsum((a * b).tolist())
    pairs = list(zip(a[:3].tolist(), b[:3].tolist(), strict=True))
    text = " + ".join(f"{fmt(x)}·{fmt(y)}" for x, y in pairs) + (" + …" if a.size > 3 else "")
    return text, value


def _plane(shape: tuple[int, ...], k: int, nd: int) -> tuple[int, tuple[int, ...]]:
    """Element ``k`` of a pooled input: its (batch, channel) plane and its place in the plane."""
    spatial = shape[-nd:]
    plane, rest = divmod(k, numel(spatial))
    return plane, unravel(rest, spatial)


def _max_pool(nd: int) -> Rule:
    def elem(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
        """grad_self[p] = Σ grad_out[o] over the windows o whose saved index (the max's place) is p."""
        shape = ctx.in_shapes[i] or ()
        plane, _ = _plane(shape, k, nd)
        place = k - plane * numel(shape[-nd:])
        idx, g = ctx.saved["result1"], ctx.g
        size = numel(g.shape[-nd:])
        hits = [g.at(plane * size + q) for q in range(size) if int(idx.at(plane * size + q)) == place]
        if not hits:
            return "0  (no window's max is here)", 0.0
        return " + ".join(fmt(v) for v in hits[:4]) + (" + …" if len(hits) > 4 else ""), math.fsum(hits)

    return Rule(("grad_self[p] = Σ grad_out[o] over the windows o whose max (saved indices) is at p",),
                (("result1",),), elem)


def _windows(ctx: Ctx, nd: int, in_size: tuple[int, ...], out_size: tuple[int, ...]
             ) -> Iterator[tuple[tuple[int, ...], list[range], float]]:
    """Each output position of avg_pool: its window (clipped to the input) and its divisor."""
    kernel = _ints(ctx, "kernel_size", nd, 1)
    stride = _ints(ctx, "stride", nd, 0)
    stride = kernel if not any(stride) else stride
    pad = _ints(ctx, "padding", nd, 0)
    include = bool(ctx.arg("count_include_pad", True))
    override = ctx.arg("divisor_override")
    for o in product(*(range(m) for m in out_size)):
        spans, full = [], 1
        for dim in range(nd):
            start = o[dim] * stride[dim] - pad[dim]
            end = min(start + kernel[dim], in_size[dim] + pad[dim])
            full *= end - start
            spans.append(range(max(start, 0), min(end, in_size[dim])))
        div = float(override) if override else float(full if include else math.prod(len(r) for r in spans))
        yield o, spans, div


def _adaptive_windows(in_size: tuple[int, ...], out_size: tuple[int, ...]
                      ) -> Iterator[tuple[tuple[int, ...], list[range], float]]:
    for o in product(*(range(m) for m in out_size)):
        spans = [range(o[d] * in_size[d] // out_size[d], -(-(o[d] + 1) * in_size[d] // out_size[d]))
                 for d in range(len(o))]
        yield o, spans, float(math.prod(len(r) for r in spans))


def _avg_pool(nd: int, adaptive: bool) -> Rule:
    def elem(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
        """grad_self[p] = Σ grad_out[o] / size(o) over the windows o that hold p."""
        shape = ctx.in_shapes[i] or ()
        plane, pos = _plane(shape, k, nd)
        in_size, out_size = tuple(shape[-nd:]), tuple(ctx.g.shape[-nd:])
        wins = _adaptive_windows(in_size, out_size) if adaptive else _windows(ctx, nd, in_size, out_size)
        parts = [(ctx.g.at(plane * numel(out_size) + ravel(o, out_size)), div) for o, spans, div in wins
                 if all(q in r for q, r in zip(pos, spans, strict=True))]
        if not parts:
            return "0  (in no window)", 0.0
        text = " + ".join(f"{fmt(a)}/{fmt(b)}" for a, b in parts[:3]) + (" + …" if len(parts) > 3 else "")
        return text, math.fsum(a / b for a, b in parts)

    if adaptive:
        return Rule(("grad_self[p] = Σ grad_out[o] / size(o) over the adaptive windows o holding p",), ((),), elem)
    return Rule(("grad_self[p] = Σ grad_out[o] / divisor(o) over the windows o holding p",), ((),), elem,
                ("kernel_size", "padding"))


def _nearest_source(o: int, size_in: int, size_out: int, scale: object) -> int:
    """The input index nearest upsampling copies to output index ``o`` (aten's ``nearest_idx``,
    in its float32 arithmetic)."""
    if size_out == size_in:
        return o
    if size_out == 2 * size_in:
        return o >> 1
    s = np.float32(1.0 / float(scale)) if isinstance(scale, int | float) and scale > 0 else \
        np.float32(size_in) / np.float32(size_out)
    return min(int(np.floor(np.float32(o) * s)), size_in - 1)


_SCALES = {1: ("scales",), 2: ("scales_h", "scales_w"), 3: ("scales_d", "scales_h", "scales_w")}


def _nearest(nd: int) -> Rule:
    def elem(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
        """grad_self[p] = Σ grad_out[o] over the output places o copied from p."""
        shape = ctx.in_shapes[i] or ()
        plane, pos = _plane(shape, k, nd)
        in_size, out_size = tuple(shape[-nd:]), tuple(ctx.g.shape[-nd:])
        hits = [[o for o in range(out_size[d])
                 if _nearest_source(o, in_size[d], out_size[d], ctx.arg(_SCALES[nd][d])) == pos[d]]
                for d in range(nd)]
        vals = [ctx.g.at(plane * numel(out_size) + ravel(o, out_size)) for o in product(*hits)]
        if not vals:
            return "0  (copied nowhere)", 0.0
        return " + ".join(fmt(v) for v in vals[:4]) + (" + …" if len(vals) > 4 else ""), math.fsum(vals)

    return Rule(("grad_self[p] = Σ grad_out[o] over the output places o nearest upsampling copied from p",),
                ((),), elem)


def _linear_weights(o: int, size_in: int, size_out: int, scale: object, align: bool,
                    real: type) -> list[tuple[int, float]]:
    """The input places linear upsampling reads for output place ``o``, each with its weight
    (aten's ``compute_source_index_and_lambda``, in the input's own float arithmetic ``real``)."""
    if size_out == size_in:
        return [(o, 1.0)]
    if align:
        ratio = real(size_in - 1) / real(size_out - 1) if size_out > 1 else real(0)
        src = ratio * real(o)
    else:
        ratio = real(1.0) / real(scale) if isinstance(scale, int | float) and scale > 0 else \
            real(size_in) / real(size_out)
        src = max(ratio * (real(o) + real(0.5)) - real(0.5), real(0))
    i0 = min(int(np.floor(src)), size_in - 1)
    lam1 = min(max(float(src - real(i0)), 0.0), 1.0)
    i1 = i0 + (1 if i0 < size_in - 1 else 0)
    return [(i0, float(real(1.0) - real(lam1))), (i1, lam1)]


def _linear(nd: int) -> Rule:
    def elem(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
        """grad_self[p] = Σ_o grad_out[o] · Π_d w_d(o_d → p_d): each output place's weights on
        the input places it interpolates between, per dimension."""
        shape = ctx.in_shapes[i] or ()
        plane, pos = _plane(shape, k, nd)
        in_size, out_size = tuple(shape[-nd:]), tuple(ctx.g.shape[-nd:])
        real = np.float64 if (ctx.in_dtypes[i] if i < len(ctx.in_dtypes) else None) == "float64" else np.float32
        align = bool(ctx.arg("align_corners"))
        scales = [ctx.arg(name) for name in _SCALES[nd]]
        hits: list[list[tuple[int, float]]] = []
        for d in range(nd):
            mine = []
            for o in range(out_size[d]):
                w = math.fsum(w for src, w in _linear_weights(o, in_size[d], out_size[d], scales[d], align, real)
                              if src == pos[d])
                if w:
                    mine.append((o, w))
            hits.append(mine)
        terms = []
        for combo in product(*hits):
            weight = math.prod(w for _, w in combo)
            terms.append((ctx.g.at(plane * numel(out_size) + ravel(tuple(o for o, _ in combo), out_size)), weight))
        if not terms:
            return "0  (read by no output place)", 0.0
        shown = " + ".join(f"{fmt(g)}·{fmt(w)}" for g, w in terms[:4]) + (" + …" if len(terms) > 4 else "")
        return shown, math.fsum(g * w for g, w in terms)

    return Rule(("grad_self[p] = Σ_o grad_out[o] · (the weight output place o gave p when interpolating)",),
                ((),), elem, ("align_corners",))


def _base_coords(steps: int, align: bool) -> list[float]:
    """affine_grid's normalised coordinates along one side (aten's ``linspace_from_neg_one``)."""
    if steps <= 1:
        return [0.0] * steps
    coords = [-1.0 + 2.0 * j / (steps - 1) for j in range(steps)]
    return coords if align else [x * (steps - 1) / steps for x in coords]


def _affine_grid(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grid[n, h, w] = theta[n] · (x_w, y_h, 1): grad_theta[n, r, j] = Σ_{h, w} grad_out[n, h, w, r] ·
    (x_w, y_h, 1)[j]."""
    size = [int(d) for d in ctx.arg("size") or ()]
    if len(size) != 4:
        raise Unsupported("a 3-D grid (5-D size)")
    _, _, hh, ww = size
    align = bool(ctx.arg("align_corners"))
    xs, ys = _base_coords(ww, align), _base_coords(hh, align)
    n, rest = divmod(k, 6)
    r, j = divmod(rest, 3)
    terms = []
    for h in range(hh):
        for w in range(ww):
            base = (xs[w], ys[h], 1.0)[j]
            terms.append((ctx.g.at(((n * hh + h) * ww + w) * 2 + r), base))
    shown = " + ".join(f"{fmt(g)}·{fmt(b)}" for g, b in terms[:3]) + (" + …" if len(terms) > 3 else "")
    return shown, math.fsum(g * b for g, b in terms)


def _grid_corners(ctx: Ctx, n: int, h: int, w: int) -> tuple[float, float, list[tuple[int, int, float]]]:
    """Where grid point (n, h, w) samples (aten's unnormalized ``ix``, ``iy``) and its four
    corners with their bilinear weights (zeros padding: a corner outside is read as 0)."""
    grid = ctx.saved["grid"]
    _, hg, wg, _ = grid.shape
    _, _, hi, wi = ctx.saved["input"].shape
    base = ((n * hg + h) * wg + w) * 2
    x, y = grid.at(base), grid.at(base + 1)
    if ctx.arg("align_corners"):
        ix, iy = (x + 1) / 2 * (wi - 1), (y + 1) / 2 * (hi - 1)
    else:
        ix, iy = ((x + 1) * wi - 1) / 2, ((y + 1) * hi - 1) / 2
    x0, y0 = math.floor(ix), math.floor(iy)
    corners = [(y0, x0, (x0 + 1 - ix) * (y0 + 1 - iy)), (y0, x0 + 1, (ix - x0) * (y0 + 1 - iy)),
               (y0 + 1, x0, (x0 + 1 - ix) * (iy - y0)), (y0 + 1, x0 + 1, (ix - x0) * (iy - y0))]
    return ix, iy, corners


def _grid_sample(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """Bilinear ``grid_sample`` with zeros padding: grad_input[n, c, p] = Σ_{h, w} grad_out[n, c, h, w]
    · the weight grid point (h, w) gave input place p; grad_grid[n, h, w] = Σ_c grad_out[n, c, h, w] ·
    ∂(the bilinear sample)/∂(x, y), times (W − 1)/2 or W/2 (align_corners or not) to normalised
    coordinates."""
    if int(ctx.arg("interpolation_mode", 0)) != 0 or int(ctx.arg("padding_mode", 0)) != 0:
        raise Unsupported("a mode other than bilinear with zeros padding")
    inp, grid = ctx.saved["input"], ctx.saved["grid"]
    nb, ch, hi, wi = inp.shape
    _, hg, wg, _ = grid.shape

    def value(n: int, c: int, y: int, x: int) -> float:
        return inp.at(((n * ch + c) * hi + y) * wi + x) if 0 <= y < hi and 0 <= x < wi else 0.0

    if i == 0:
        n, c, py, px = unravel(k, (nb, ch, hi, wi))
        terms = []
        for h in range(hg):
            for w in range(wg):
                weight = math.fsum(wt for y, x, wt in _grid_corners(ctx, n, h, w)[2] if (y, x) == (py, px))
                if weight:
                    terms.append((ctx.g.at(((n * ch + c) * hg + h) * wg + w), weight))
        if not terms:
            return "0  (no grid point samples it)", 0.0
        shown = " + ".join(f"{fmt(g)}·{fmt(wt)}" for g, wt in terms[:3]) + (" + …" if len(terms) > 3 else "")
        return shown, math.fsum(g * wt for g, wt in terms)
    n, h, w, d = unravel(k, (nb, hg, wg, 2))
    ix, iy, _ = _grid_corners(ctx, n, h, w)
    x0, y0 = math.floor(ix), math.floor(iy)
    scale = ((wi - 1) if d == 0 else (hi - 1)) / 2 if ctx.arg("align_corners") else (wi if d == 0 else hi) / 2
    terms = []
    for c in range(ch):
        nw, ne = value(n, c, y0, x0), value(n, c, y0, x0 + 1)
        sw, se = value(n, c, y0 + 1, x0), value(n, c, y0 + 1, x0 + 1)
        if d == 0:  # ∂/∂ix
            slope = (ne - nw) * (y0 + 1 - iy) + (se - sw) * (iy - y0)
        else:  # ∂/∂iy
            slope = (sw - nw) * (x0 + 1 - ix) + (se - ne) * (ix - x0)
        terms.append((ctx.g.at(((n * ch + c) * hg + h) * wg + w), slope * scale))
    shown = " + ".join(f"{fmt(g)}·{fmt(v)}" for g, v in terms[:3]) + (" + …" if len(terms) > 3 else "")
    return shown, math.fsum(g * v for g, v in terms)


_CONV_TEXTS = ("grad_input[n, c, p] = Σ_{co, tap} grad_out[n, co, o] · weight[co, c, tap] over the (o, tap) "
               "that read p  (o·stride − padding + tap·dilation = p; co in c's group)",
               "grad_weight[co, c, tap] = Σ_{n, o} grad_out[n, co, o] · input[n, c, o·stride − padding + tap·dilation]",
               "grad_bias[co] = Σ_{n, o} grad_out[n, co, o]")

BACKWARD_RULES: dict[str, Rule] = {
    "ConvolutionBackward0": Rule(_CONV_TEXTS, (("weight",), ("input",), ()), _conv,
                                 ("stride", "padding", "dilation", "groups", "transposed")),
    "MaxPool2DWithIndicesBackward0": _max_pool(2),
    "MaxPool3DWithIndicesBackward0": _max_pool(3),
    "AdaptiveMaxPool2DBackward0": _max_pool(2),
    "AdaptiveMaxPool3DBackward0": _max_pool(3),
    "FractionalMaxPool2DBackward0": _max_pool(2),
    "FractionalMaxPool3DBackward0": _max_pool(3),
    "AvgPool2DBackward0": _avg_pool(2, False),
    "AvgPool3DBackward0": _avg_pool(3, False),
    "AdaptiveAvgPool2DBackward0": _avg_pool(2, True),
    "AdaptiveAvgPool3DBackward0": _avg_pool(3, True),
    "UpsampleNearest1DBackward0": _nearest(1),
    "UpsampleNearest2DBackward0": _nearest(2),
    "UpsampleNearest3DBackward0": _nearest(3),
    "GridSampler2DBackward0": Rule(("grad_input[n, c, p] = Σ_{h, w} grad_out[n, c, h, w] · (the bilinear weight grid "
                                    "point (h, w) gave p)",
                                    "grad_grid[n, h, w] = Σ_c grad_out[n, c, h, w] · ∂sample/∂(x, y) · (W − 1)/2 "
                                    "or W/2"),
                                   (("grid",), ("input", "grid")), _grid_sample,
                                   ("interpolation_mode", "padding_mode", "align_corners")),
    "AffineGridGeneratorBackward0": Rule(("grad_theta[n, r, j] = Σ_{h, w} grad_out[n, h, w, r] · (x_w, y_h, 1)[j]  "
                                          "(x, y: the grid's normalised coordinates)",), ((),), _affine_grid,
                                         ("size", "align_corners")),
    "UpsampleLinear1DBackward0": _linear(1),
    "UpsampleBilinear2DBackward0": _linear(2),
    "UpsampleTrilinear3DBackward0": _linear(3),
}
