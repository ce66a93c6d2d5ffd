"""The tensor file read without torch, by range (``analysis/kept.py``): exact values of every
dtype it reads, only the bytes asked for, nothing but None from a damaged file; and the
service's readers share a file's parsed header (``api/kept_files.py``)."""

from __future__ import annotations

import hashlib

import numpy as np
from safetensors.numpy import save

from gradtrace.analysis.kept import KeptTensors
from gradtrace.api.kept_files import kept_tensors
from gradtrace.storage.tensor_rows import MemoryTensors


def _file() -> tuple[bytes, dict[str, np.ndarray]]:
    arrays = {"n1.out0": np.array([[1.5, -2.0], [np.nan, np.inf]], dtype=np.float32),
              "e0.gi0": np.arange(6, dtype=np.float64).reshape(3, 2) / 7,
              "n2.value": np.array([3, -4], dtype=np.int64), "m": np.array([True, False])}
    return save(arrays), arrays


def test_every_tensor_is_read_exactly_and_only_its_bytes() -> None:
    data, arrays = _file()
    reads: list[tuple[int, int]] = []

    def read(a: int, b: int) -> bytes:
        reads.append((a, b))
        return data[a:b]

    kept = KeptTensors(read, len(data))
    for key, want in arrays.items():
        got = kept.array(key)
        assert got is not None and got.shape == (want.size,)
        assert np.array_equal(got, want.reshape(-1).astype(np.float64), equal_nan=True)
    header_end = 8 + int.from_bytes(data[:8], "little")
    body = [b - a for a, b in reads if a >= header_end]
    assert sum(body) == sum(a.nbytes for a in arrays.values())  # each buffer once, nothing else
    assert kept.array("absent") is None and "n1.out0" in kept and kept.shape("e0.gi0") == (3, 2)


def test_a_damaged_file_gives_no_numbers_and_no_error() -> None:
    data, _ = _file()
    for bad in (b"", data[:5], data[:40], b"\xff" * 8 + data[8:], data[:-3]):
        kept = KeptTensors.from_bytes(bad)
        assert kept.array("m") is None or (bad == data[:-3] and kept.array("e0.gi0") is not None)


def test_the_service_parses_a_files_header_once() -> None:
    data, _ = _file()
    source = MemoryTensors(data, hashlib.sha256(data).hexdigest())
    first = kept_tensors(source)
    assert first is not None and first.array("e0.gi0") is not None
    again = kept_tensors(source)
    assert again is not None and again.parsed()[0] is first.parsed()[0]
    assert kept_tensors(None) is None
