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

    # the dynamics' block read (analysis/dynamics/series.py: NOTE [a leaf's gradients in one read])
    def many(keys: list[str]) -> np.ndarray | None:
        """The tensors of ``keys`` as one array over a new first axis, when they share a dtype
        and a shape and lie one after another in the file in that order; else None."""
        try:
            infos = [header[k] for k in keys]
            first = infos[0]
            dt, sh = first["dtype"], first["shape"]
            dtype = _DTYPES.get(str(dt))
            begin, end = (int(x) for x in first["data_offsets"])
            step = end - begin
            if (dtype is None or "__metadata__" in keys or not all(i["dtype"] == dt and i["shape"] == sh for i in infos)
                    or [i["data_offsets"][0] for i in infos] != list(range(begin, begin + step * len(keys), step))
                    or int(infos[-1]["data_offsets"][1]) != begin + step * len(keys)
                    or not 0 <= begin <= begin + step * len(keys) <= len(view) - start):
                return None
            shape = [len(keys), *(int(d) for d in sh)]
            little = np.dtype(dtype).newbyteorder("<")
            return np.frombuffer(view[start + begin:start + begin + step * len(keys)], dtype=little).reshape(shape)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            return None

    read.many = many  # type: ignore[attr-defined]
    return read
