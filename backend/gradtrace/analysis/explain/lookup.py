"""Rules of ops that pick elements by a tensor the node saved: embedding (by ``indices``),
``masked_fill`` (by ``mask``), ``gather`` and ``index_select`` (by ``index``) and indexing with
tensors (``x[idx]``, by ``indices[k]``, integer or bool)."""

from __future__ import annotations

import math
import re

from gradtrace.analysis.explain.index import norm_dim
from gradtrace.analysis.explain.ops import Ctx, NotKept, Rule, Unsupported, _operand
from gradtrace.analysis.explain.tensors import broadcast_index, fmt, numel, ravel, unravel


def _embedding(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_weight[r, c] = Σ grad_out[n, c] over the positions n whose index is r."""
    shape = ctx.in_shapes[i] or ()
    width = shape[-1] if shape else 1
    r, c = divmod(k, width)
    if r == int(ctx.arg("padding_idx", -1)):
        return f"0  (row {r} is padding_idx)", 0.0
    idx = ctx.saved["indices"]
    hits = [n for n in range(len(idx.values)) if int(idx.at(n)) == r]
    parts = [ctx.g.at(n * width + c) for n in hits]
    if not parts:
        return f"0  (no index is {r})", 0.0
    total = sum(parts)
    shown = " + ".join(fmt(p) for p in parts[:4]) + (" + …" if len(parts) > 4 else "")
    if ctx.arg("scale_grad_by_freq", False):
        return f"({shown}) / {len(parts)}", total / len(parts)
    return shown, total


def _embedding_bag(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_weight[r, c] = Σ grad_out[b, c] · f over the positions n with indices[n] = r, b the
    bag of n (from the offsets): f is per_sample_weights[n] (sum), 1 / the bag's size (mean), or,
    for max, 1 once per bag whose max in column c came from row r; grad_per_sample_weights[n] =
    Σ_c grad_out[b, c] · weight[indices[n], c]."""
    idx, offsets = ctx.saved["indices"], ctx.saved["offsets"]
    mode = int(ctx.arg("mode", 0))
    pad = int(ctx.arg("padding_idx", -1))
    pad = pad if 0 <= pad < 2**63 else -1  # "none" is saved as -1 read unsigned
    if ctx.arg("scale_grad_by_freq", False) and mode != 2:
        raise Unsupported("scale_grad_by_freq")
    n_idx, bags, width = len(idx.values), ctx.g.shape[0], ctx.g.shape[-1]
    starts = [int(offsets.at(j)) for j in range(len(offsets.values))][:bags]

    def bag_of(n: int) -> int:
        return max(b for b in range(bags) if starts[b] <= n)

    psw = ctx.saved.get("per_sample_weights")
    if i == 1:  # the per-sample weights' gradient (sum mode only)
        weight = ctx.saved["weight"]
        row = int(idx.at(k))
        if row == pad:
            return f"0  (index {k} is padding_idx)", 0.0
        b = bag_of(k)
        parts = [(ctx.g.at(b * width + c), weight.at(row * width + c)) for c in range(width)]
        shown = " + ".join(f"{fmt(g)}·{fmt(w)}" for g, w in parts[:3]) + (" + …" if len(parts) > 3 else "")
        return shown, math.fsum(g * w for g, w in parts)
    r, c = divmod(k, width)
    if r == pad:
        return f"0  (row {r} is padding_idx)", 0.0
    if mode == 2:
        top = ctx.saved["result3"]
        won = [ctx.g.at(b * width + c) for b in range(bags) if int(top.at(b * width + c)) == r]
        if not won:
            return f"0  (no bag's max in column {c} came from row {r})", 0.0
        return " + ".join(fmt(p) for p in won[:4]) + (" + …" if len(won) > 4 else ""), math.fsum(won)
    terms: list[tuple[float, float]] = []
    for n in range(n_idx):
        if int(idx.at(n)) != r:
            continue
        b = bag_of(n)
        scale = 1.0 / float(ctx.saved["result2"].at(b)) if mode == 1 else None  # mean: the bag's size
        f = scale if scale is not None else float(psw.at(n)) if psw is not None else 1.0
        terms.append((ctx.g.at(b * width + c), f))
    if not terms:
        return f"0  (no index is {r})", 0.0
    if all(f == 1.0 for _, f in terms):
        shown = " + ".join(fmt(g) for g, _ in terms[:4]) + (" + …" if len(terms) > 4 else "")
    else:
        shown = " + ".join(f"{fmt(g)}·{fmt(f)}" for g, f in terms[:3]) + (" + …" if len(terms) > 3 else "")
    return shown, math.fsum(g * f for g, f in terms)


def _masked_fill(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    masked = _operand(ctx, "mask", k) != 0
    g = ctx.g.at(k)
    return f"{fmt(g)} · [mask {'true' if masked else 'false'} at {list(unravel(k, ctx.g.shape))}]", 0.0 if masked else g


def _picked(parts: list[float], why: str) -> tuple[str, float]:
    if not parts:
        return f"0  ({why})", 0.0
    return " + ".join(fmt(p) for p in parts[:4]) + (" + …" if len(parts) > 4 else ""), math.fsum(parts)


def _gather(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_self[c] = Σ grad_out[j] over the positions j with index[j] = c[dim] and j = c elsewhere."""
    shape = ctx.in_shapes[i] or ()
    c = list(unravel(k, shape))
    idx = ctx.saved["index"]
    dim = norm_dim(int(ctx.arg("dim")), len(shape))
    parts = []
    if all(c[d] < idx.shape[d] for d in range(len(shape)) if d != dim):
        for q in range(idx.shape[dim]):
            j = ravel((*c[:dim], q, *c[dim + 1:]), idx.shape)
            if norm_dim(int(idx.at(j)), shape[dim]) == c[dim]:
                parts.append(ctx.g.at(j))
    return _picked(parts, f"no index along dim is {c[dim]}")


def _index_select(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """grad_self[…, r, …] = Σ grad_out[…, q, …] over the q with index[q] = r (along dim)."""
    shape = ctx.in_shapes[i] or ()
    c = list(unravel(k, shape))
    idx = ctx.saved["index"]
    dim = norm_dim(int(ctx.arg("dim")), len(shape)) if shape else 0
    if not shape:
        return _picked([ctx.g.at(q) for q in range(len(idx.values))], "index is empty")
    parts = [ctx.g.at(ravel((*c[:dim], q, *c[dim + 1:]), ctx.g.shape)) for q in range(len(idx.values))
             if norm_dim(int(idx.at(q)), shape[dim]) == c[dim]]
    return _picked(parts, f"no index is {c[dim]}")


def _index_add(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """index_add: grad_self = grad_out; grad_source[…, q, …] = alpha · grad_out[…, index[q], …]
    (along dim)."""
    if i == 0:
        return fmt(ctx.g.at(k)), ctx.g.at(k)
    shape = ctx.in_shapes[i] or ()
    if not shape:
        raise Unsupported("the rule is written here for a source with dims")
    c = list(unravel(k, shape))
    dim = norm_dim(int(ctx.arg("dim")), len(shape))
    c[dim] = norm_dim(int(ctx.saved["index"].at(c[dim])), ctx.g.shape[dim])
    g, alpha = ctx.g.at(ravel(tuple(c), ctx.g.shape)), float(ctx.arg("alpha", 1))
    return (f"{fmt(g)}" if alpha == 1 else f"{fmt(alpha)} · {fmt(g)}"), alpha * g


_INDICES = re.compile(r"indices\[(\d+)\]")


def _index(ctx: Ctx, i: int, k: int) -> tuple[str, float]:
    """``self[indices]`` with tensors: grad_self[c] = Σ grad_out[r] over the result places r whose
    index tensors point at c (a bool mask stands for the coordinates of its true elements)."""
    shape = ctx.in_shapes[i] or ()
    c = unravel(k, shape)
    found = sorted((int(m.group(1)), n) for n in ctx.names if (m := _INDICES.fullmatch(n)))
    cols: list[tuple[int, list[int]]] = []  # (dim, index per advanced place), before broadcasting
    shapes: list[tuple[int, ...]] = []
    shift = 0
    for pos, name in found:
        if name not in ctx.saved:
            raise NotKept(name)
        t = ctx.saved[name]
        dim = pos + shift
        if ctx.dtypes.get(name) in ("bool", "uint8"):
            true = [unravel(q, t.shape) for q in range(len(t.values)) if t.at(q)]
            for d in range(len(t.shape)):
                cols.append((dim + d, [p[d] for p in true]))
                shapes.append((len(true),))
            shift += len(t.shape) - 1
        else:
            cols.append((dim, [norm_dim(int(t.at(q)), shape[dim]) for q in range(len(t.values))]))
            shapes.append(t.shape)
    if not cols:
        raise KeyError("no index tensor recorded")
    width = max(len(s) for s in shapes)
    full = [tuple([1] * (width - len(s)) + list(s)) for s in shapes]
    b_shape = tuple(max(s[d] for s in full) for d in range(width))
    dims = [d for d, _ in cols]
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    rest = [d for d in range(len(shape)) if d not in dims]
    parts = []
    for b in range(numel(b_shape)):
        if all(col[broadcast_index(b, b_shape, s)] == c[d] for (d, col), s in zip(cols, shapes, strict=True)):
            bc = unravel(b, b_shape)
            r = (*c[:dims[0]], *bc, *c[dims[-1] + 1:]) if adjacent else (*bc, *(c[d] for d in rest))
            parts.append(ctx.g.at(ravel(r, ctx.g.shape)))
    return _picked(parts, "no index points here")


BACKWARD_RULES: dict[str, Rule] = {
    "EmbeddingBackward0": Rule(("grad_weight[r, c] = Σ grad_out[n, c] over the positions n with indices[n] = r "
                                "(0 for padding_idx; divided by their count with scale_grad_by_freq)",),
                               (("indices",),), _embedding, ("padding_idx",)),
    "EmbeddingBagBackward0": Rule(("grad_weight[r, c] = Σ grad_out[bag(n), c] · (per_sample_weights[n] | 1 / bag size "
                                   "| [bag's max in c is row r]) over the positions n with indices[n] = r",
                                   "grad_per_sample_weights[n] = Σ_c grad_out[bag(n), c] · weight[indices[n], c]"),
                                  (("indices", "offsets", "result2", "result3"), ("indices", "offsets", "weight")),
                                  _embedding_bag,
                                  ("mode", "padding_idx")),
    "MaskedFillBackward0": Rule(("grad_self = grad_out · [not mask]  (the filled elements get 0)",), (("mask",),),
                                _masked_fill),
    "GatherBackward0": Rule(("grad_self[c] = Σ grad_out[j] over the j with index[j] = c along dim "
                             "(and j = c elsewhere)",), (("index",),), _gather, ("dim",)),
    "IndexSelectBackward0": Rule(("grad_self[…, r, …] = Σ grad_out[…, q, …] over the q with index[q] = r  "
                                  "(along dim)",), (("index",),), _index_select, ("dim",)),
    "IndexAddBackward0": Rule(("grad_self = grad_out", "grad_source[…, q, …] = alpha · grad_out[…, index[q], …]  "
                               "(along dim)"), ((), ("index",)), _index_add, ("dim",)),
    "IndexBackward0": Rule(("grad_self[c] = Σ grad_out[r] over the places r whose indices point at c "
                            "(a bool mask: its true elements' coordinates)",), ((),), _index),
}
