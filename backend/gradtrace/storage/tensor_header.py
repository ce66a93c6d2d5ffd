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

from gradtrace.errors import TensorFileDamaged
from gradtrace.schema.tensor_index import TensorIndex, TensorIndexEntry

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


def parse_index(header: bytes, *, size: int, sha256: str) -> TensorIndex:
    """The index of a file of ``size`` bytes whose JSON header (the N bytes after the first 8)
    is ``header``."""
    data_bytes = size - 8 - len(header)
    try:
        parsed = orjson.loads(header)
    except orjson.JSONDecodeError as exc:
        raise _damaged(f"its header is not JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise _damaged("its header is not a JSON object")
    entries = [_entry(key, info, 8 + len(header), data_bytes) for key, info in parsed.items()
               if key != "__metadata__"]
    entries.sort(key=lambda e: (e.start, e.end, e.key))
    _check_contiguous(entries, 8 + len(header), size)
    return TensorIndex(format="safetensors", sha256=sha256, bytes=size, header_bytes=8 + len(header),
                       tensors=entries)


def _entry(key: str, info: Any, base: int, data_bytes: int) -> TensorIndexEntry:
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
    return TensorIndexEntry(key=key, dtype=dtype, shape=[int(d) for d in shape], start=base + begin,
                            end=base + end)


def _check_contiguous(entries: list[TensorIndexEntry], base: int, size: int) -> None:
    """safetensors lays the buffers end to end, from the header's end to the file's."""
    at = base
    for e in entries:
        if e.start != at:
            what = "overlaps the one before it" if e.start < at else "leaves a hole before it"
            raise _damaged(f"tensor {e.key!r} {what}")
        at = e.end
    if at != size:
        raise _damaged(f"its buffers end at byte {at}, the file at byte {size}")


def _count(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _damaged(why: str) -> TensorFileDamaged:
    return TensorFileDamaged(f"the stored tensor file is damaged: {why}", detail={"reason": why})
