"""The tensors a run's tensor file may hold, before the budget chooses among them: each one's
key, bytes and class (NOTE [what the budget keeps first] in tensorfile.py), and whether
safetensors can hold it exactly. Apart from tensorfile.py so that the Python twin of the
core (pycore.py) can make the same rows without importing the writer, which imports the core."""

from __future__ import annotations

from dataclasses import dataclass

import torch

SAFETENSORS_CODES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
          torch.uint8: "U8", torch.bool: "BOOL", torch.uint16: "U16", torch.uint32: "U32",
          torch.uint64: "U64", torch.float8_e4m3fn: "F8_E4M3", torch.float8_e5m2: "F8_E5M2"}

LEAF, NONFINITE, GRADIENT, FORWARD = 0, 1, 2, 3


@dataclass(slots=True)
class Candidate:
    """One tensor the file may hold."""

    key: str
    tensor: torch.Tensor | None
    nbytes: int
    rank: int
    reason: str | None = None
    """Why it cannot be kept whatever the budget (``dtype``, ``changed``)."""


_wrapped = torch._C._functorch.is_functorch_wrapped_tensor
_STRIDED = torch.strided


def storable(t: torch.Tensor) -> str | None:
    """None when safetensors can hold ``t`` exactly, else the reason it is left out."""
    if _wrapped(t):  # a vmap/grad level's, gone now
        return "transform"
    if (t.dtype not in SAFETENSORS_CODES or t.layout is not _STRIDED or t.is_quantized or t.is_nested or t.is_meta
            or (type(t) is not torch.Tensor and not isinstance(t, torch.nn.Parameter))):
        return "dtype"
    return None


def candidate(key: str, t: torch.Tensor | None, rank: int, *, reason: str | None = None) -> Candidate:
    if t is None:
        return Candidate(key, None, 0, rank, reason or "dtype")
    why = reason or storable(t)
    if why is None:  # plain strided memory: ``numel * element_size``
        return Candidate(key, t, t.nbytes, rank, None)
    try:
        nbytes = t.numel() * t.element_size() if t.layout == torch.strided and not t.is_nested else 0
    except Exception:  # a subclass without sizes
        nbytes = 0
    return Candidate(key, None if why else t, nbytes, rank, why)
