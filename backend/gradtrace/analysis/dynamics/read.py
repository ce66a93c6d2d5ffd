"""A run's tensor file (safetensors bytes: docs/CONTRACT.md "The tensor file") read by key with
numpy alone, for a process that has the bytes but not the tensors (the web process, the queue's
worker): the header is parsed once, and a tensor is sliced out of the bytes only when asked."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import orjson

_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
           "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}

_LITTLE = {code: np.dtype(t).newbyteorder("<") for code, t in _DTYPES.items()}
"""Each code's dtype as the file stores it (little-endian), made once, not at each read."""

Index = Mapping[str, tuple[str, Sequence[int], int, int]]
"""key -> (safetensors code, shape, begin, end), the offsets into the file's bytes: what the
writer knows in the process that wrote the file (NOTE [the index the writer knows] in
capture/tensorfile.py)."""


def file_reader(data: bytes | memoryview | None,
                index: Index | None = None) -> Callable[[str], np.ndarray | None] | None:
    """``key -> array`` over the safetensors bytes ``data`` (None for a key it lacks, a dtype
    numpy has no code for, or bytes that do not hold it); None for no bytes or a damaged header.
    ``index``: the file's index where the caller has it (the header is then not parsed)."""
    if not data:
        return None
    view = memoryview(data)
    if index is None:
        index = _parsed(view)
        if index is None:
            return None
    found = index

    def read(key: str) -> np.ndarray | None:
        info = found.get(key)
        if info is None:
            return None
        code, shape, begin, end = info
        little = _LITTLE.get(code)
        if little is None or not 0 <= begin <= end <= len(view):
            return None
        try:
            return np.frombuffer(view[begin:end], dtype=little).reshape(shape)
        except (TypeError, ValueError):
            return None

    # the dynamics' block read (analysis/dynamics/series.py: NOTE [a leaf's gradients in one read])
    def many(keys: list[str]) -> np.ndarray | None:
        """The tensors of ``keys`` as one array over a new first axis, when they share a dtype
        and a shape and lie one after another in the file in that order; else None."""
        infos = [found.get(k) for k in keys]
        if not infos or None in infos:
            return None
        code, shape, begin, end = infos[0]  # type: ignore[misc]
        little = _LITTLE.get(code)
        step = end - begin
        stop = begin + step * len(keys)
        if little is None or not 0 <= begin <= stop <= len(view):
            return None
        at = begin
        for c, sh, b, e in infos:  # type: ignore[misc]
            if c != code or b != at or e - b != step or (sh is not shape and list(sh) != list(shape)):
                return None
            at += step
        try:
            return np.frombuffer(view[begin:stop], dtype=little).reshape([len(keys), *shape])
        except (TypeError, ValueError):
            return None

    # the series by call's read of its gradients (analysis/dynamics/calls.py: NOTE [a series'
    # gradients in one gather])
    def gather(keys: list[str]) -> np.ndarray | None:
        """The tensors of ``keys`` as one array over a new first axis, when they share a dtype
        and a shape, wherever they lie in the file; else None."""
        infos = [found.get(k) for k in keys]
        if not infos or None in infos:
            return None
        code, shape, begin, end = infos[0]  # type: ignore[misc]
        little = _LITTLE.get(code)
        size = end - begin
        dims = list(shape)
        if little is None:
            return None
        for c, sh, b, e in infos:  # type: ignore[misc]
            if c != code or e - b != size or list(sh) != dims or not 0 <= b <= e <= len(view):
                return None
        try:  # the slices' bytes joined in C: one copy, no index array
            picked = b"".join([view[b:e] for _, _, b, e in infos])  # type: ignore[misc]
            return np.frombuffer(picked, dtype=little).reshape([len(keys), *dims])
        except (TypeError, ValueError):
            return None

    read.many = many  # type: ignore[attr-defined]
    read.gather = gather  # type: ignore[attr-defined]
    return read


def _parsed(view: memoryview) -> dict[str, tuple[str, list[int], int, int]] | None:
    """The index of a file's header, parsed once (None for a damaged one); an entry that is
    not well formed is left out, so a read of its key finds nothing."""
    try:
        n = int.from_bytes(view[:8], "little")
        header = orjson.loads(view[8:8 + n])
    except (orjson.JSONDecodeError, ValueError):
        return None
    if not isinstance(header, dict):
        return None
    start = 8 + n
    index: dict[str, tuple[str, list[int], int, int]] = {}
    for key, info in header.items():
        if key == "__metadata__" or not isinstance(info, dict):
            continue
        try:
            begin, end = (int(x) for x in info["data_offsets"])
            shape = [int(d) for d in info["shape"]]
        except (KeyError, TypeError, ValueError):
            continue
        if not 0 <= begin <= end:
            continue
        index[key] = (str(info.get("dtype")), shape, start + begin, start + end)
    return index
