"""The safetensors header read without torch or the safetensors package, checked against that
package: every file it writes is indexed exactly, and every file it refuses is refused."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
import safetensors

from gradtrace.errors import TensorFileDamaged
from gradtrace.schema.tensor_index import TensorIndex
from gradtrace.storage.tensor_header import header_length, index_json
from storage.tensor_files import make_file, read_back, sample_arrays


def _index(data: bytes) -> TensorIndex:
    """The index as the API serves it, validated by its model."""
    n = header_length(data[:8], len(data))
    return TensorIndex.model_validate_json(index_json(data[8:8 + n], size=len(data), sha256="0" * 64))


def _with_header(header: dict, body: bytes) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + body


@pytest.mark.parametrize("bf16", [True, False])
def test_every_tensor_safetensors_writes_is_indexed_at_its_bytes(bf16: bool) -> None:
    data = make_file(sample_arrays(seed=1), bf16=bf16)
    index = _index(data)
    expected = read_back(data)
    assert [e.key for e in index.tensors] != [] and {e.key for e in index.tensors} == set(expected)
    assert index.bytes == len(data) and index.format == "safetensors"
    assert index.tensors[0].start == index.header_bytes and index.tensors[-1].end == len(data)
    for entry in index.tensors:
        dtype, shape, raw = expected[entry.key]
        assert (entry.dtype, entry.shape) == (dtype, shape)
        assert data[entry.start:entry.end] == raw
    assert [e.start for e in index.tensors] == sorted(e.start for e in index.tensors)


def _damaged_files() -> dict[str, bytes]:
    good = np.arange(6, dtype=np.float32).tobytes()
    entry = {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}
    data = make_file(sample_arrays())
    n = header_length(data[:8], len(data))
    return {
        "cut short": data[:-5],
        "cut inside the header": data[:8 + n // 2],
        "header length past the end": struct.pack("<Q", 10**6) + data[8:],
        "header not JSON": struct.pack("<Q", 4) + b"{{{{" + good,
        "header a list": _with_header([entry], good),  # type: ignore[arg-type]
        "buffer past the end": _with_header({"a": {**entry, "data_offsets": [0, 48]}}, good),
        "shape of another size": _with_header({"a": {**entry, "shape": [7]}}, good),
        "negative dimension": _with_header({"a": {**entry, "shape": [-2, -3]}}, good),
        "unknown dtype": _with_header({"a": {**entry, "dtype": "F12"}}, good),
        "overlap": _with_header({"a": entry, "b": {**entry, "data_offsets": [4, 28]}}, good + b"\0" * 4),
        "hole": _with_header({"a": {**entry, "data_offsets": [4, 28]}}, b"\0" * 4 + good),
        "bytes after the buffers": _with_header({"a": entry}, good + b"\0" * 8),
        "fewer than 8 bytes": b"\x05\0\0",
    }


@pytest.mark.parametrize("case", list(_damaged_files()))
def test_a_file_safetensors_refuses_is_refused_as_damaged(case: str) -> None:
    data = _damaged_files()[case]
    with pytest.raises(safetensors.SafetensorError):  # the oracle: safetensors itself refuses it
        safetensors.deserialize(data)
    with pytest.raises(TensorFileDamaged, match="the stored tensor file is damaged"):
        _index(data)
