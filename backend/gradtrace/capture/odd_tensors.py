"""TensorValues of the tensors that have no plain values to read: nested tensors and tensor
subclasses (the rest of the encoding is :mod:`gradtrace.capture.values`, which calls these)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from gradtrace.schema.canonical import TensorValueDict

Stats = Callable[[torch.Tensor], dict[str, Any] | None]
"""``values._torch_stats``: min, max, mean and norm of a plain tensor."""


def shape_of(t: torch.Tensor) -> list[int]:
    """``t``'s shape as plain ints; a nested tensor's is its number of tensors (NOTE [nested
    tensors]): its ragged sizes are symbolic (jagged) or not sizes at all (strided)."""
    if t.is_nested:
        return [t.size(0)]
    return list(t.shape)


# NOTE [tensor subclasses]
#     An op on a tensor subclass with its own ``__torch_dispatch__`` (``MaskedTensor``) runs
#     the subclass's Python code, which may print (MaskedTensor warns "prototype stage" from
#     each place that makes one) or compute: the recorder must not run any op the program did
#     not. So such a tensor is neither copied nor reduced with torch ops: a MaskedTensor
#     shows the stats of its unmasked elements, read from the plain tensors it holds; any
#     other subclass its shape and dtype, with a note. Both kernel sets encode such a
#     gradient at once (``encode`` in cxx/values.h calls ``values.encode_json``; the twin's
#     ``pycore._Value``), neither copying it (an op) nor holding it (autograd could then no
#     longer steal it: it would copy it, through the subclass's Python code).
_PYTHON_KEY = torch._C.DispatchKey.Python


def runs_python_ops(t: torch.Tensor) -> bool:
    """Whether ops on ``t`` run Python code of a subclass (NOTE [tensor subclasses])."""
    return bool(torch._C._dispatch_keys(t).has(_PYTHON_KEY))


def encode_subclass(t: torch.Tensor, out: TensorValueDict, stats: Stats) -> TensorValueDict:
    """A subclass's TensorValue, with no op of it run (NOTE [tensor subclasses])."""
    name = type(t).__name__
    data, mask = getattr(t, "_masked_data", None), getattr(t, "_masked_mask", None)
    if isinstance(data, torch.Tensor) and isinstance(mask, torch.Tensor) and not runs_python_ops(data):
        kept = data.detach()[mask.bool()] if mask.shape == data.shape else data.detach().reshape(-1)
        out["stats"] = stats(kept.cpu()) if kept.numel() and not kept.is_complex() else None
        out["note"] = (f"a {name}: stats of its {kept.numel():,} unmasked elements (of "
                       f"{data.numel():,}), no values")
        return out
    out["note"] = f"a tensor subclass ({name}): its values are not read, so that none of its ops runs"
    return out


# NOTE [nested tensors]
#     A nested tensor (``torch.nested``, jagged or strided layout) holds tensors of different
#     sizes: it has no rectangular shape nor values. Its TensorValue's shape is its number of
#     tensors, its ``layout`` says which kind, its stats are those of all its elements, and the
#     note lists the tensors' shapes. A node's output of that kind has no shape (``None``).
_NESTED_SHAPES_SHOWN = 4


def encode_nested_tensor(t: torch.Tensor, out: TensorValueDict, stats: Stats) -> TensorValueDict:
    """A nested tensor's TensorValue (NOTE [nested tensors])."""
    out["layout"] = "jagged" if t.layout == torch.jagged else "nested"
    parts = [p.detach() for p in t.unbind()]
    shapes = ", ".join(str(list(p.shape)) for p in parts[:_NESTED_SHAPES_SHOWN])
    more = f" and {len(parts) - _NESTED_SHAPES_SHOWN} more" if len(parts) > _NESTED_SHAPES_SHOWN else ""
    out["note"] = (f"a nested tensor of {len(parts)} tensors ({shapes}{more}): no values, stats "
                   "of all their elements")
    flat = [p.reshape(-1) for p in parts if p.numel()]
    if flat:
        whole = torch.cat(flat)
        if whole.device.type != "cpu":
            whole = whole.cpu()
        out["stats"] = stats(whole)
    return out
