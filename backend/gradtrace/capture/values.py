"""Tensor → TensorValue dicts, the encoding described in :mod:`gradtrace.schema.document`.

NOTE [value capture is split in two]
    A gradient seen in a hook is reduced *now* when it is large (> ``VALUES_LIMIT`` elements:
    only stats are kept, so the recorder never holds big tensors alive and never changes
    autograd's "steal the incoming gradient" fast path for them), and *copied* now when it is
    small, to be written when the document is built: what flowed at that moment, even if the
    tensor is changed in place later. Both kernel sets do this (the C++ core in
    ``cxx/values.h``, ``pycore._Value``); :func:`encode` is the Python encoder of every kind of
    tensor, for the twin and for the rare tensors the C++ core hands back (``held``).

NOTE [document size]
    Each tensor shows at most ``VALUES_LIMIT`` values, and the whole document shows at most
    ``values_budget`` numbers; past the budget, TensorValues carry stats only. The budget is
    spent in document order, so identical runs still give identical documents.
"""

from __future__ import annotations

import functools
import math
import operator
from typing import Any

import numpy as np
import orjson
import torch

from gradtrace.capture.odd_tensors import encode_nested_tensor, encode_subclass, runs_python_ops, shape_of
from gradtrace.schema import VALUES_LIMIT
from gradtrace.schema.canonical import TensorValueDict, canonical_json

_DTYPE_NAMES: dict[torch.dtype, str] = {}
_DEVICE_NAMES: dict[torch.device, str] = {}


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` → ``"float32"`` (cached: called for every node and value)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).removeprefix("torch.")
    return name


def device_name(device: torch.device) -> str:
    name = _DEVICE_NAMES.get(device)
    if name is None:
        name = _DEVICE_NAMES[device] = str(device)
    return name


def _num(x: float | int | bool) -> Any:
    """A JSON-safe number: NaN and ±inf become strings (schema NOTE [encoding of awkward values])."""
    if isinstance(x, float):
        if x != x:
            return "nan"
        if x in (math.inf, -math.inf):
            return "inf" if x > 0 else "-inf"
    return x


def _encode_nested(values: Any) -> Any:
    """Replace non-finite floats in a nested list."""
    if not isinstance(values, list):
        return _num(values)
    return _map_nested(values, _num)


def _torch_stats(t: torch.Tensor) -> dict[str, Any] | None:
    """min / max / mean / norm with torch ops (large, complex or non-finite tensors)."""
    if t.numel() == 0 or t.dtype == torch.bool:
        return None
    if t.is_complex():
        t = t.abs()
    lo, hi = torch.aminmax(t)
    if t.dtype in (torch.float32, torch.float64):
        # five dispatches in all: these stats are taken for every large gradient in a hook
        mn, mx, total, norm = torch.stack((lo, hi, t.sum(), torch.linalg.vector_norm(t))).tolist()
        mean = total / t.numel()
    elif t.is_floating_point():
        f = t.to(torch.float32)
        mn, mx, mean, norm = torch.stack((lo.to(f.dtype), hi.to(f.dtype), f.mean(),
                                          torch.linalg.vector_norm(f))).tolist()
    if t.is_floating_point():
        if t.dtype != torch.float64 and _out_of_range_on_the_way(mn, mx, mean, norm):
            d = t.to(torch.float64)  # NOTE [stats beyond the dtype's range]
            mean, norm = d.sum().item() / t.numel(), torch.linalg.vector_norm(d).item()
        return {"min": _num(mn), "max": _num(mx), "mean": _num(mean), "norm": _num(norm)}
    f = t.to(torch.float64)
    return {"min": _num(lo.item()), "max": _num(hi.item()), "mean": _num(float(f.mean().item())),
            "norm": _num(float(torch.linalg.vector_norm(f).item()))}


def _out_of_range_on_the_way(mn: float, mx: float, mean: float, norm: float) -> bool:
    """Whether a float32 reduction of finite elements overflowed (a mean or norm that is not
    finite: an infinite partial sum, or two of opposite signs) or underflowed (a zero norm
    with an element not zero) on the way."""
    if not math.isfinite(mn + mx):
        return False  # NaN or an infinity among the elements: the stats say so
    return not (math.isfinite(mean) and math.isfinite(norm)) or (norm == 0 and (mn != 0 or mx != 0))


def _nest(flat: list[Any], shape: list[int]) -> Any:
    """The nested list of ``shape`` from its flat row-major list (what ``tolist`` gives)."""
    if not shape:
        return flat[0]
    rows: list[Any] = flat
    for d in reversed(shape[1:]):
        rows = [rows[i:i + d] for i in range(0, len(rows), d)]
    return rows


def _sum(xs: list[float]) -> float:
    """Left to right, one rounding per addition: what the C++ core computes (NOTE [same stats
    on both paths]); ``sum()`` compensates since Python 3.12."""
    return functools.reduce(operator.add, xs, 0.0)


def _norm(xs: list[float]) -> float:
    """sqrt of the left-to-right sum of squares (NOTE [same stats on both paths])."""
    return math.sqrt(functools.reduce(operator.add, map(operator.mul, xs, xs), 0.0))


# NOTE [same stats on both paths]
#     Small tensors' stats are computed from their float64 values, in row-major order, one
#     rounding per step, here and in the C++ core (``reduce`` in ``cxx/values.h``), so both
#     paths write the same bytes for them. Large tensors' stats differ in the last digits
#     (torch's float32 reductions here, float64 there): the document records which is which
#     only through its bytes, and the tests compare those stats with a tolerance.


def _fast(t: torch.Tensor, shape: list[int], with_values: bool) -> tuple[Any, Any] | None:
    """(values, stats) of a small real tensor from one ``tolist``, in Python; None when a value
    is not finite (NaN/inf need the careful path)."""
    flat = t.reshape(-1).tolist()
    total = _sum(flat)
    if total - total != 0:  # NaN or inf somewhere (or an overflowing sum): careful path
        return None
    n = len(flat)
    stats = {"min": min(flat), "max": max(flat), "mean": total / n, "norm": _num(_norm(flat))}
    return (_nest(flat, shape) if with_values else None), stats


def encode(t: torch.Tensor, *, with_values: bool = True) -> TensorValueDict:
    """Encode ``t`` as a TensorValue dict; never raises (odd tensors get shape and dtype only).

    Callers run it with the torch-function mode off (the recorder's own reads are not ops of
    the snippet)."""
    out = _encode(t, with_values)
    if t.dtype in _FLOAT32_LIKE or t.is_quantized:  # NOTE [float32 values]
        try:
            out["values"] = _short32(out["values"])
            if out["stats"] is not None:
                out["stats"] = {k: _f32(v) for k, v in out["stats"].items()}
        except Exception:  # (never expected: the values are numbers and "nan"/"inf" strings)
            pass
    return out


# NOTE [float32 values]
#     Numbers of a float32 tensor (and of float16, bfloat16 and complex64 ones, whose parts are
#     float32-exact) are written with the fewest digits that read back as the same float32, as
#     numpy's repr writes a float32: what the tensor holds, exactly, without the 8-9 digits of
#     noise of its float64 expansion (0.38785562 rather than 0.3878556191921234). Their stats
#     are rounded the same way. The C++ core writes the same (``format_float32``). Float64
#     tensors keep every digit.
_FLOAT32_LIKE = {torch.float32, torch.float16, torch.bfloat16, torch.complex64, torch.complex32}


def _f32(x: Any) -> Any:
    """One number at float32 precision (strings "nan"/"inf" and ints pass); one beyond
    float32's range is "inf" or "-inf" (NOTE [stats beyond the dtype's range])."""
    if isinstance(x, float) and math.isfinite(x):
        if abs(x) >= _F32_OVERFLOW:
            return "inf" if x > 0 else "-inf"
        return float(str(np.float32(x)))
    return x


# NOTE [stats beyond the dtype's range]
#     A stat is the exact statistic rounded once to the tensor's precision (float32 for float32,
#     float16, bfloat16 and complex64: NOTE [float32 values]), as the C++ core writes it
#     (``write_number`` in ``cxx/values.h``: a float64 statistic cast to float). A norm whose
#     value is beyond that range is written "inf", what ``torch.linalg.vector_norm`` gives in
#     the tensor's dtype (``torch.full((4,), 3e38)``); a norm or sum that overflows only on the
#     way (1e30 over a million elements: norm 1e33) is not: the statistic is finite, and both
#     kernel sets write it. ``_torch_stats`` redoes such a float32 reduction in float64, and
#     one that underflowed on the way too (2,000 elements of 1e-30: norm 4.5e-29, not 0: a
#     gradient that is not zero never reads as one).
_F32_OVERFLOW = 2.0**128 - 2.0**103  # float32's largest finite number plus half its last step


def _short32(values: Any) -> Any:
    """A nested list of numbers at float32 precision: in one go through numpy and orjson
    (which writes float32 arrays in their shortest form) when they are all finite numbers."""
    if values is None or not isinstance(values, list):
        return _f32(values)
    try:
        arr = np.asarray(values, dtype=np.float32)
    except (ValueError, TypeError):  # "nan"/"inf" strings, or ragged: one by one
        return _map_nested(values, _f32)
    if arr.size == 0 or not np.isfinite(arr).all():
        return _map_nested(values, _f32)
    return orjson.loads(orjson.dumps(arr, option=orjson.OPT_SERIALIZE_NUMPY))


def _map_nested(values: list[Any], fn: Any) -> list[Any]:
    """``fn`` applied to every leaf of a nested list (iteratively, no recursion)."""
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
                dst.append(fn(item))
    return out


def _encode(t: torch.Tensor, with_values: bool) -> TensorValueDict:
    dtype = t.dtype
    try:
        shape = shape_of(t)
    except Exception:  # a subclass that has no sizes
        shape = []
    out = TensorValueDict(shape=shape, dtype=dtype_name(dtype), values=None, stats=None)
    try:
        if t.is_nested:
            return encode_nested_tensor(t, out, _torch_stats)
        if runs_python_ops(t):
            return encode_subclass(t, out, _torch_stats)
        t = t.detach()
        if t._is_zerotensor():  # autograd's storage-less zeros (sgn's gradient of a real input)
            t = torch.zeros(t.shape, dtype=t.dtype, device=t.device)
        if t.device.type == "meta":  # NOTE [every kind of tensor]
            out["note"] = "a meta tensor has no data: shape and dtype only"
            return out
        if t.layout != torch.strided:
            return _encode_sparse(t, out, with_values)
        if t.is_quantized:
            out["note"] = "quantized: the values and stats are of its dequantized numbers"
            t = t.dequantize()
        if t.device.type != "cpu":
            t = t.cpu()
        n = t.numel()
        small = n <= VALUES_LIMIT
        if small and n and t.dtype != torch.bool and not t.is_complex():
            fast = _fast(t, shape, with_values)
            if fast is not None:
                out["values"], out["stats"] = fast
                return out
        out["stats"] = _torch_stats(t)
        if t.dtype == torch.bool and n:
            out["nonzero"] = int(torch.count_nonzero(t))
            out["note"] = "booleans have no stats: nonzero counts the true elements"
        if with_values and small:
            raw = torch.view_as_real(t.resolve_conj()).tolist() if t.is_complex() else t.tolist()
            out["values"] = _encode_nested(raw)
    except Exception:  # a tensor subclass or layout we cannot read: keep what we have
        if out["values"] is None and out["stats"] is None:
            out["note"] = "its values could not be read"
    return out


# NOTE [every kind of tensor]
#     Every TensorValue has values and/or stats, or a ``note`` saying why not. A sparse tensor
#     (``nn.Embedding(sparse=True)``'s gradient) gets its ``layout``, the count of its nonzero
#     elements (``nonzero``), its dense values when small and the stats of its dense form
#     always, computed from the stored elements plus the implicit zeros (never densified when
#     large). A quantized tensor shows its dequantized numbers, a boolean one its values and
#     the count of true elements (no stats: not a number), a meta tensor only its shape and
#     dtype (it has no data), each with a note; complex and integer tensors need none.
def encode_json(t: torch.Tensor) -> tuple[bytes, bytes]:
    """``t``'s TensorValue as canonical JSON, with and without values: for the C++ core, which
    hands tensor subclasses to Python at once (NOTE [tensor subclasses] in odd_tensors.py)."""
    with torch._C.DisableTorchFunction():
        return canonical_json(encode(t)), canonical_json(encode(t, with_values=False))


def _encode_sparse(t: torch.Tensor, out: TensorValueDict, with_values: bool) -> TensorValueDict:
    out["layout"] = str(t.layout).removeprefix("torch.")
    if t.layout == torch.sparse_coo:
        t = t.coalesce()
    stored = t.values().reshape(-1)
    if stored.is_quantized:
        stored = stored.dequantize()
    out["nonzero"] = int(torch.count_nonzero(stored))
    n = t.numel()
    if n == 0:
        return out
    if n <= VALUES_LIMIT:
        dense = _encode(t.to_dense(), with_values)
        out["values"], out["stats"] = dense["values"], dense["stats"]
        return out
    if stored.dtype == torch.bool:
        out["note"] = "booleans have no stats: nonzero counts the true elements"
        return out
    if stored.is_complex():
        stored = stored.abs()
    f = stored.to(torch.float64)
    implicit = n > stored.numel()
    if stored.numel():
        lo, hi, total, sq = torch.stack((f.min(), f.max(), f.sum(), f.pow(2).sum())).tolist()
    else:
        lo = hi = total = sq = 0.0
    if implicit:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    out["stats"] = {"min": _num(lo), "max": _num(hi), "mean": _num(total / n), "norm": _num(math.sqrt(sq))}
    out["note"] = f"sparse: {n:,} elements, values shown when at most {VALUES_LIMIT:,}"
    return out


Handle = TensorValueDict | int | None
"""A captured value: the core's value id, or a TensorValue encoded already (``encode_now``)."""


class ValueStore:
    """The document's values: captured by the core (NOTE [one recorder, two kernel sets] in
    pycore.py), written once, in document order, against the values budget."""

    def __init__(self, core: Any, values_budget: int = 10_000) -> None:
        self.core = core
        self._done: dict[int, list[Any]] = {}
        self._budget = values_budget
        self.values_budget = values_budget

    def begin_document(self) -> None:
        """Start spending the values budget anew: every document of one run is the same
        (a second ``rec.document()`` once found the budget spent by the first and
        wrote stats where the first had values)."""
        self.values_budget = self._budget

    def capture(self, t: Any) -> Handle:
        """The core's id for ``t`` as it is now (None for what is not a tensor)."""
        if not isinstance(t, torch.Tensor):
            return None
        vid: int = self.core.capture(t)
        return vid

    def capture_copy(self, t: Any) -> Handle:
        """``capture``, its kept tensor a copy (NOTE [kept tensors] in tensorfile.py): what the
        program changes in place later (a leaf's value, an edited ``.grad``)."""
        vid = self.capture(t)
        if isinstance(vid, int) and vid >= 0:
            self.core.keep_copy(vid)
        return vid

    def encode_now(self, t: torch.Tensor) -> TensorValueDict:
        """Encode ``t`` as it is now, its values paid from the budget like every other."""
        n = t.numel()
        with_values = n <= VALUES_LIMIT and n <= self.values_budget
        if with_values:
            self.values_budget -= n
        return encode(t, with_values=with_values)

    def encode_held(self) -> None:
        """Encode, in Python, the few gradients the C++ core keeps for it (complex, integer,
        sparse, empty: NOTE [why C++]), before any value is written."""
        with torch._C.DisableTorchFunction():
            for vid, t in self.core.held():
                self.core.set_encoded(vid, canonical_json(encode(t)),
                                      canonical_json(encode(t, with_values=False)))

    # NOTE [lazy TensorValues]
    #     The core writes each TensorValue's canonical JSON; parsing it back into a dict only
    #     for the canonical writer to use the JSON again cost 7 µs a value, a fifth of a
    #     transformer's document. A document is always written out first (NOTE [one document
    #     path] in document.py), so the dict stays empty and carries its JSON alone. The JSON
    #     without values (for when the budget runs out) is asked for only then.
    def _value(self, text: bytes) -> TensorValueDict:
        out = TensorValueDict()
        out.native = text
        return out

    def resolve(self, handle: Handle) -> TensorValueDict | None:
        """The TensorValue of a captured handle, spending the values budget in call order:
        every time values are written into the document they count, also when the same
        gradient appears again (as one node's input and the next node's output); its JSON is
        asked of the core in the form the budget allows (with values, or without)."""
        if handle is None or isinstance(handle, dict):
            return handle
        if handle < 0:
            return None
        done = self._done.get(handle)
        if done is None:
            done = self._done[handle] = [None, None, int(self.core.numel_of(handle))]
        n: int = done[2]
        slot = 0
        if n:
            if n > self.values_budget:
                self.values_budget = 0
                slot = 1
            else:
                self.values_budget -= n
        out: TensorValueDict | None = done[slot]
        if out is None:
            out = done[slot] = self._value(self.core.value(handle, slot == 0)[0])
        return out
