"""A run's tensor file (safetensors bytes: docs/CONTRACT.md "The tensor file") read by key with
numpy alone, for a process that has the bytes but not the tensors (the web process, the queue's
worker): the header is parsed once, and a tensor is sliced out of the bytes only when asked."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import orjson

_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
           "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def file_reader(data: bytes | memoryview | None) -> Callable[[str], np.ndarray | None] | None:
    """``key -> array`` over the safetensors bytes ``data`` (None for a key it lacks, a dtype
    numpy has no code for, or bytes that do not hold it); None for no bytes or a damaged header."""
    if not data:
        return None
    view = memoryview(data)
    try:
        n = int.from_bytes(view[:8], "little")
        header = orjson.loads(view[8:8 + n])
    except (orjson.JSONDecodeError, ValueError):
        return None
    if not isinstance(header, dict):
        return None
    start = 8 + n

    def read(key: str) -> np.ndarray | None:
        info = header.get(key)
        if not isinstance(info, dict) or key == "__metadata__":
            return None
        dtype = _DTYPES.get(str(info.get("dtype")))
        try:
            begin, end = (int(x) for x in info["data_offsets"])
            shape = [int(d) for d in info["shape"]]
            if dtype is None or not 0 <= begin <= end <= len(view) - start:
                return None
            little = np.dtype(dtype).newbyteorder("<")
            return np.frombuffer(view[start + begin:start + end], dtype=little).reshape(shape)
        except (KeyError, TypeError, ValueError):
            return None
    return read
