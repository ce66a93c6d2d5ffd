"""Which saved tensors :mod:`gradtrace.analysis.explain.recover` works out, and from what
(NOTE [saved tensors worked out from the forward values] there)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from gradtrace.analysis.explain.ops import Rule
from gradtrace.analysis.explain.recover import (
    channel_weights,
    conv_weight,
    factor_from,
    indices_from,
    layer_norm_refit,
    layer_norm_stats,
    mask_from,
)
from gradtrace.analysis.explain.tensors import Flat

JSON = Mapping[str, Any]


class Numbers(Protocol):
    """What this module reads through (``operands.Numbers``, which calls it: no import back)."""

    def flat(self, tv: JSON | None) -> Flat | None: ...

    def operand(self, node: JSON, rule: Rule, name: str, shape: tuple[int, ...] | None) -> Flat | None: ...

    def embedding_weight(self, node: JSON) -> Flat | None: ...

    def saved(self, node: JSON, entry: JSON, rule: Rule) -> Flat | None: ...


def _shape_of(node: JSON, name: str) -> tuple[int, ...] | None:
    for s in node.get("saved") or []:
        if s.get("name") == name:
            return tuple(int(x) for x in s.get("shape") or [])
    return None


def _arr(f: Flat | None) -> np.ndarray | None:
    return None if f is None else np.asarray(f.values, dtype=np.float64)


def worked_out(numbers: Numbers, node: JSON, rule: Rule, name: str, shape: tuple[int, ...] | None) -> Flat | None:
    """Saved tensor ``name`` of ``node`` from its input and output, or None where it cannot be."""
    if shape is None:
        return None
    op = node.get("name")
    outs = node.get("output") or []
    out = numbers.flat(outs[0]) if outs else None
    if out is None:
        return None
    if op == "NativeLayerNormBackward0" and name in ("result1", "result2"):
        x = _arr(numbers.operand(node, rule, "input", _shape_of(node, "input") or out.shape))
        args = node.get("saved_args") or {}
        dims = args.get("normalized_shape")
        if x is None or not isinstance(dims, list):
            return None
        m = math.prod(int(d) for d in dims)
        row = tuple(int(d) for d in dims)
        w = _arr(numbers.operand(node, rule, "weight", row)) if _shape_of(node, "weight") else None
        b = _arr(numbers.operand(node, rule, "bias", row)) if _shape_of(node, "bias") else None
        if (_shape_of(node, "weight") and w is None) or (_shape_of(node, "bias") and b is None):
            return _layer_norm_refit(x, out, m, name, shape)
        stats = layer_norm_stats(x, _arr(out), m, w, b)  # type: ignore[arg-type]
        if stats is None or stats[0].size != math.prod(shape):
            return None
        return Flat(stats[0] if name == "result1" else stats[1], shape)
    if op == "NativeLayerNormBackward0" and name in ("weight", "bias"):
        x = _arr(numbers.operand(node, rule, "input", _shape_of(node, "input") or out.shape))
        m = math.prod(shape)
        return None if x is None else _layer_norm_refit(x, out, m, name, shape)
    if op in ("NativeBatchNormBackward0", "NativeGroupNormBackward0") and name == "weight":
        return _norm_weight(numbers, node, rule, out, shape)
    if op == "ConvolutionBackward0" and name == "weight":
        return _conv_weight(numbers, node, rule, out, shape)
    if op == "MaskedFillBackward0" and name == "mask":
        x = _arr(numbers.operand(node, rule, "self", out.shape))
        mask = None if x is None else mask_from(x, _arr(out), out.shape, shape)  # type: ignore[arg-type]
        return None if mask is None else Flat(mask.reshape(-1), shape)
    if op in ("MulBackward0", "DivBackward0") and name in ("self", "other") and not (op == "DivBackward0"
                                                                                     and name == "self"):
        known = _arr(numbers.operand(node, rule, "self" if name == "other" else "other", out.shape))
        x = None if known is None else factor_from(known, _arr(out), shape, op == "DivBackward0")  # type: ignore[arg-type]
        return None if x is None else Flat(x.reshape(-1), shape)
    if op == "EmbeddingBackward0" and name == "indices":
        width = out.shape[-1] if out.shape else 0
        weight = numbers.embedding_weight(node)
        idx = None if weight is None else indices_from(_arr(weight), _arr(out), width)  # type: ignore[arg-type]
        return None if idx is None or idx.size != math.prod(shape) else Flat(idx, shape)
    return None


def _norm_weight(numbers: Numbers, node: JSON, rule: Rule, out: Flat, shape: tuple[int, ...]) -> Flat | None:
    """Batch/group norm's weight (a parameter an optimizer may have changed since it was first
    met) from its output and x̂, which its input and saved statistics give."""
    x = _arr(numbers.operand(node, rule, "input", out.shape))
    args = node.get("saved_args") or {}

    def stat(name: str) -> np.ndarray | None:
        entry = next((s for s in node.get("saved") or [] if s.get("name") == name), None)
        return None if entry is None else _arr(numbers.saved(node, entry, rule))

    if x is None or len(out.shape) < 2 or len(shape) != 1 or shape[0] != out.shape[1]:
        return None
    c = out.shape[1]
    xs = x.reshape(out.shape[0], c, -1)
    if node.get("name") == "NativeGroupNormBackward0":
        mean, rstd, groups = stat("result1"), stat("result2"), args.get("group")
        if mean is None or rstd is None or not isinstance(groups, int) or groups <= 0 or c % groups:
            return None
        per = np.repeat(np.arange(groups), c // groups)
        m, r = mean.reshape(out.shape[0], groups)[:, per], rstd.reshape(out.shape[0], groups)[:, per]
        xhat = (xs - m[:, :, None]) * r[:, :, None]
    elif args.get("training") is True:
        mean, rstd = stat("result1"), stat("result2")
        if mean is None or rstd is None or mean.size != c or rstd.size != c:
            return None
        xhat = (xs - mean.reshape(1, c, 1)) * rstd.reshape(1, c, 1)
    else:
        rm, rv, eps = stat("running_mean"), stat("running_var"), args.get("eps")
        if rm is None or rv is None or not isinstance(eps, float) or rm.size != c:
            return None
        xhat = (xs - rm.reshape(1, c, 1)) / np.sqrt(rv.reshape(1, c, 1) + eps)
    w = channel_weights(xhat, _arr(out).reshape(xs.shape), c)  # type: ignore[union-attr]
    return None if w is None else Flat(w, shape)


def _ints(v: object, nd: int, default: int) -> tuple[int, ...] | None:
    vals = [int(a) for a in v] if isinstance(v, list) else [] if v is None else None
    if vals is None:
        return None
    return (default,) * nd if not vals else tuple(vals) * nd if len(vals) == 1 else tuple(vals)


def _conv_weight(numbers: Numbers, node: JSON, rule: Rule, out: Flat, shape: tuple[int, ...]) -> Flat | None:
    """A convolution's weight (a parameter an optimizer may have changed since it was first met)
    refitted from its input and output; not for the transposed form."""
    args = node.get("saved_args") or {}
    entry = next((s for s in node.get("saved") or [] if s.get("name") == "input"), None)
    x = None if entry is None else _arr(numbers.saved(node, entry, rule))
    nd = len(shape) - 2
    geometry = [_ints(args.get(a), nd, d) for a, d in (("stride", 1), ("padding", 0), ("dilation", 1))]
    groups = args.get("groups", 1)
    if x is None or args.get("transposed") is not False or nd < 1 or not isinstance(groups, int) or groups <= 0 \
            or any(g is None or len(g) != nd for g in geometry) or entry is None:
        return None
    x_shape = tuple(int(s) for s in entry.get("shape") or [])
    if x.size != math.prod(x_shape) or len(x_shape) != nd + 2:
        return None
    s, p, d = (g for g in geometry if g is not None)
    w = conv_weight(x.reshape(x_shape), _arr(out).reshape(out.shape), shape, s, p, d, groups)  # type: ignore[union-attr]
    return None if w is None else Flat(w.reshape(-1), shape)


def _layer_norm_refit(x: np.ndarray, out: Flat, m: int, name: str, shape: tuple[int, ...]) -> Flat | None:
    """Layer norm's saved ``name`` (mean, rstd, weight or bias) refitted from its input and output."""
    fit = layer_norm_refit(x, _arr(out), m)  # type: ignore[arg-type]
    if fit is None:
        return None
    value = fit[{"result1": 0, "result2": 1, "weight": 2, "bias": 3}[name]]
    return Flat(value, shape) if value.size == math.prod(shape) else None
