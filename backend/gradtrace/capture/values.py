"""Tensor → TensorValue dicts, the encoding described in :mod:`gradtrace.schema.document`.

NOTE [value capture is split in two]
    A gradient seen in a hook is encoded *now* when it is large (> ``VALUES_LIMIT`` elements:
    only stats are kept, so the recorder never holds big tensors alive and never changes
    autograd's "steal the incoming gradient" fast path for them), and *later* when it is small
    (the tensor is kept with its ``_version``; :meth:`ValueStore.resolve` encodes it when the
    document is built). Small tensors are cheap to hold, and deferring them keeps the hooks
    short. A small tensor that was modified in place after it was captured (its version moved)
    is encoded with stats only and ``"stale": true`` rather than with a value it never had
    at that moment.

NOTE [document size]
    Each tensor shows at most ``VALUES_LIMIT`` values, and the whole document shows at most
    ``values_budget`` numbers; past the budget, TensorValues carry stats only. The budget is
    spent in document order, so identical runs still give identical documents.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from gradtrace.schema import VALUES_LIMIT

TensorValueDict = dict[str, Any]

_FLOAT_NAMES = {"nan": "nan", "inf": "inf", "-inf": "-inf"}


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` → ``"float32"``."""
    return str(dtype).removeprefix("torch.")


def _num(x: float | int | bool) -> Any:
    """A JSON-safe number: NaN and ±inf become strings (schema NOTE [encoding of awkward values])."""
    if isinstance(x, float):
        if x != x:
            return "nan"
        if x in (math.inf, -math.inf):
            return "inf" if x > 0 else "-inf"
    return x


def _encode_nested(values: Any) -> Any:
    """Replace non-finite floats in a nested list (iteratively, no recursion)."""
    if not isinstance(values, list):
        return _num(values)
    out: list[Any] = []
    stack: list[tuple[list[Any], list[Any]]] = [(values, out)]
    while stack:
        src, dst = stack.pop()
        for item in src:
            if isinstance(item, list):
                sub: list[Any] = []
                dst.append(sub)
                stack.append((item, sub))
            else:
                dst.append(_num(item))
    return out


def _stats(t: torch.Tensor) -> dict[str, Any] | None:
    """min / max / mean / norm of a non-empty numeric tensor (complex: of its magnitude)."""
    if t.numel() == 0 or t.dtype == torch.bool:
        return None
    if t.is_complex():
        t = t.abs()
    f = t if t.is_floating_point() else t.to(torch.float64)
    lo, hi = torch.aminmax(t)
    mean = f.mean()
    norm = torch.linalg.vector_norm(f.to(torch.float64) if f.dtype in (torch.float16, torch.bfloat16) else f)
    return {"min": _num(lo.item()), "max": _num(hi.item()), "mean": _num(float(mean.item())),
            "norm": _num(float(norm.item()))}


def encode(t: torch.Tensor, *, with_values: bool = True) -> TensorValueDict:
    """Encode ``t`` as a TensorValue dict; never raises (odd tensors get shape and dtype only)."""
    out: TensorValueDict = {"shape": list(t.shape), "dtype": dtype_name(t.dtype), "values": None,
                            "stats": None}
    try:
        with torch.no_grad(), torch._C.DisableTorchFunction():
            t = t.detach()
            if t.layout != torch.strided or t.device.type == "meta" or t.is_quantized:
                return out
            if t.device.type != "cpu":
                t = t.cpu()
            out["stats"] = _stats(t)
            if with_values and t.numel() <= VALUES_LIMIT:
                raw = torch.view_as_real(t).tolist() if t.is_complex() else t.tolist()
                out["values"] = _encode_nested(raw)
    except Exception:  # a tensor subclass or layout we cannot read: keep what we have
        pass
    return out


def _version(t: torch.Tensor) -> int | None:
    """``t._version``, or None for tensors without a version counter (inference tensors)."""
    try:
        return int(t._version)
    except RuntimeError:
        return None


class _Deferred:
    """A small tensor kept for later encoding, with the version it had when captured."""

    __slots__ = ("tensor", "version")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor
        self.version = _version(tensor)


Handle = TensorValueDict | _Deferred | None


class ValueStore:
    """Captures tensors in hooks and encodes them once, deduplicated, when the document is built."""

    def __init__(self, values_budget: int = 200_000) -> None:
        self._by_id: dict[int, tuple[torch.Tensor, Handle]] = {}
        self._resolved: dict[int, TensorValueDict] = {}
        self.values_budget = values_budget

    def capture(self, t: Any, *, snapshot: bool = False) -> Handle:
        """Remember ``t`` (a tensor or None). ``snapshot`` copies small tensors that autograd
        may later change in place (a leaf's ``.grad``)."""
        if not isinstance(t, torch.Tensor):
            return None
        key = id(t)
        hit = self._by_id.get(key)
        if hit is not None and hit[0] is t and not snapshot:
            return hit[1]
        handle: Handle
        if t.numel() > VALUES_LIMIT or t.layout != torch.strided:
            handle = encode(t, with_values=False)
        elif snapshot:
            with torch.no_grad(), torch._C.DisableTorchFunction():
                handle = _Deferred(t.detach().clone())
        else:
            handle = _Deferred(t)
        if not snapshot:
            self._by_id[key] = (t, handle)
        return handle

    def resolve(self, handle: Handle) -> TensorValueDict | None:
        """The TensorValue dict of a captured handle, spending the values budget in call order."""
        if handle is None:
            return None
        if isinstance(handle, dict):
            return handle
        key = id(handle)
        done = self._resolved.get(key)
        if done is not None:
            return done
        t = handle.tensor
        stale = _version(t) != handle.version
        n = t.numel()
        with_values = not stale and n <= self.values_budget
        value = encode(t, with_values=with_values)
        if value["values"] is not None:
            self.values_budget -= n
        if stale:
            value["stale"] = True
        self._resolved[key] = value
        return value
