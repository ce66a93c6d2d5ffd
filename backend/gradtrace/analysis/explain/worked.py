"""Which saved tensors :mod:`gradtrace.analysis.explain.recover` works out, and from what
(NOTE [saved tensors worked out from the forward values] there)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from gradtrace.analysis.explain.ops import Rule
from gradtrace.analysis.explain.recover import factor_from, indices_from, layer_norm_stats, mask_from
from gradtrace.analysis.explain.tensors import Flat

JSON = Mapping[str, Any]


class Numbers(Protocol):
    """What this module reads through (``operands.Numbers``, which calls it: no import back)."""

    def flat(self, tv: JSON | None) -> Flat | None: ...

    def operand(self, node: JSON, rule: Rule, name: str, shape: tuple[int, ...] | None) -> Flat | None: ...

    def embedding_weight(self, node: JSON) -> Flat | None: ...


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
            return None
        stats = layer_norm_stats(x, _arr(out), m, w, b)  # type: ignore[arg-type]
        if stats is None or stats[0].size != math.prod(shape):
            return None
        return Flat(stats[0] if name == "result1" else stats[1], shape)
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
