"""Reading a safetensors header into the index the API serves, checking it as safetensors does.

A safetensors file is an 8-byte little-endian header length N, N bytes of UTF-8 JSON
(``{key: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}``, offsets
relative to byte 8+N), then the buffers. This module parses only the header (the buffers are
never read here) and refuses what ``safetensors.numpy.load`` would refuse: a header that is
not a JSON object, offsets outside the file, a buffer whose length is not its shape's, holes
or overlaps between buffers. A refusal is :class:`~gradtrace.errors.TensorFileDamaged`: the
stored file cannot be what the writer made (docs/CONTRACT.md, "Tensor files").
"""

from __future__ import annotations

import math
import struct
from typing import Any

import orjson

from gradtrace.collector import gc_paused
from gradtrace.errors import TensorFileDamaged

HEADER_MAX = 100_000_000
"""safetensors' own ceiling on the JSON header (``MAX_HEADER_SIZE`` in its Rust crate)."""
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32, "C64": 64,
    "I64": 64, "U64": 64, "F64": 64,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}
"""Bits per element of every dtype safetensors 0.8 writes."""


def header_length(prefix: bytes, size: int) -> int:
    """N from the file's first 8 bytes; ``size`` is the whole file's length."""
    if size < 8 or len(prefix) < 8:
        raise _damaged(f"the file has {size} bytes, fewer than the 8 of its header length")
    (n,) = struct.unpack("<Q", prefix[:8])
    if n < 2 or n > HEADER_MAX or 8 + n > size:
        raise _damaged(f"its header length ({n} bytes) does not fit a file of {size} bytes")
    return int(n)


def index_json(header: bytes, *, size: int, sha256: str) -> bytes:
    """The index (:class:`~gradtrace.schema.tensor_index.TensorIndex`) of a file of ``size``
    bytes whose JSON header (the N bytes after the first 8) is ``header``, as JSON; written
    from the checked tuples, without a model per tensor (NOTE [checked, then built])."""
    with gc_paused():  # NOTE [gc while building documents] in collector.py: nothing here is cyclic
        return index_from(check_header(header, size=size), size=size, sha256=sha256, header_bytes=8 + len(header))


def index_from(entries: list[tuple[int, int, str, str, list[int]]], *, size: int, sha256: str,
               header_bytes: int) -> bytes:
    """The index as JSON from ``check_header``'s checked tuples."""
    return orjson.dumps({"format": "safetensors", "sha256": sha256, "bytes": size, "header_bytes": header_bytes,
                         "tensors": [{"key": key, "dtype": dtype, "shape": shape, "start": start, "end": end}
                                     for start, end, key, dtype, shape in entries]})


def check_header(header: bytes, *, size: int) -> list[tuple[int, int, str, str, list[int]]]:
    """Check the JSON header of a file of ``size`` bytes; its tensors as ``(start, end, key,
    dtype, shape)`` in file order (absolute offsets, end exclusive).

    NOTE [checked, then built]
        Every field of the index is checked here, with plain tuples: a run's header has a
        tensor per node output and gradient (13,223 on GRU-200), and a pydantic model for
        each, sorted by attribute, took 240-400 ms of the service's run on a loaded 2-core
        machine, against 40-50 ms for these tuples (the web process checks every run's file,
        sandbox/kinds/run.py). ``index_json`` writes the API's index straight from them.
    """
    base, data_bytes = 8 + len(header), size - 8 - len(header)
    try:
        parsed = orjson.loads(header)
    except orjson.JSONDecodeError as exc:
        raise _damaged(f"its header is not JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise _damaged("its header is not a JSON object")
    entries = [_entry(key, info, base, data_bytes) for key, info in parsed.items() if key != "__metadata__"]
    entries.sort()
    _check_contiguous(entries, base, size)
    return entries


def _entry(key: str, info: Any, base: int, data_bytes: int) -> tuple[int, int, str, str, list[int]]:
    """One tensor's ``(start, end, key, dtype, shape)``: the common case checked in a few
    operations (exact ``int``: a JSON ``true`` is not a count), anything else by ``_checked``,
    which says what is wrong."""
    if type(info) is dict:
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if type(shape) is list and type(offsets) is list and len(offsets) == 2:
            begin, end = offsets
            bits = DTYPE_BITS.get(dtype) if isinstance(dtype, str) else None
            if (isinstance(dtype, str) and bits is not None and type(begin) is int and type(end) is int
                    and 0 <= begin <= end <= data_bytes and all(type(d) is int and d >= 0 for d in shape)
                    and math.prod(shape) * bits == (end - begin) * 8):
                return base + begin, base + end, key, dtype, shape
    return _checked(key, info, base, data_bytes)


def _checked(key: str, info: Any, base: int, data_bytes: int) -> tuple[int, int, str, str, list[int]]:
    if not isinstance(info, dict):
        raise _damaged(f"tensor {key!r} is not described by an object")
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if not isinstance(dtype, str) or not dtype:
        raise _damaged(f"tensor {key!r} has no dtype")
    if not isinstance(shape, list) or not all(_count(d) for d in shape):
        raise _damaged(f"tensor {key!r} has no valid shape")
    if (not isinstance(offsets, list) or len(offsets) != 2 or not all(_count(o) for o in offsets)
            or not offsets[0] <= offsets[1] <= data_bytes):
        raise _damaged(f"tensor {key!r} lies outside the file's {data_bytes} data bytes")
    begin, end = int(offsets[0]), int(offsets[1])
    bits = DTYPE_BITS.get(dtype)
    if bits is None:
        raise _damaged(f"tensor {key!r} has the unknown dtype {dtype!r}")
    need = math.prod(shape) * bits
    if need % 8 or need // 8 != end - begin:
        raise _damaged(f"tensor {key!r} ({dtype} {shape}) holds {end - begin} bytes, not {need / 8:g}")
    return base + begin, base + end, key, dtype, [int(d) for d in shape]


def _check_contiguous(entries: list[tuple[int, int, str, str, list[int]]], base: int, size: int) -> None:
    """safetensors lays the buffers end to end, from the header's end to the file's."""
    at = base
    for start, end, key, _dtype, _shape in entries:
        if start != at:
            what = "overlaps the one before it" if start < at else "leaves a hole before it"
            raise _damaged(f"tensor {key!r} {what}")
        at = end
    if at != size:
        raise _damaged(f"its buffers end at byte {at}, the file at byte {size}")


def _count(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _damaged(why: str) -> TensorFileDamaged:
    return TensorFileDamaged(f"the stored tensor file is damaged: {why}", detail={"reason": why})
