"""Real safetensors files for the storage and API tests, written by the ``safetensors`` package.

``sample_arrays`` holds numpy arrays of several dtypes (float16 among them); ``bf16`` is a
bfloat16 tensor given as raw bytes (numpy has no bfloat16), written through safetensors' own
``serialize`` with a ``TensorSpec``. ``make_file`` writes them all into one file.
"""

from __future__ import annotations

import numpy as np
import safetensors
import safetensors.numpy


def sample_arrays(seed: int = 0, big: int = 0) -> dict[str, np.ndarray]:
    """Tensors of the dtypes a run keeps; ``big`` adds a float32 tensor of that many elements."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {
        "n1.out0": rng.standard_normal((3, 5)).astype(np.float32),
        "n2.out0": rng.standard_normal((2, 3, 4)).astype(np.float64),
        "e0.gi0": rng.standard_normal((7,)).astype(np.float16),
        "n3.value": np.array(2.5, dtype=np.float32),
        "n4.out0": rng.integers(-9, 9, size=(4, 2)).astype(np.int64),
        "n5.out0": rng.standard_normal((6,)) > 0,
        "n6.out0": np.zeros((0, 3), dtype=np.float32),
        "n7.out0": np.array([np.nan, np.inf, -np.inf, -0.0], dtype=np.float32),
    }
    if big:
        arrays["n9.out0"] = rng.standard_normal((big,)).astype(np.float32)
    return arrays


BF16_KEY = "e1.go0"
BF16_BITS = np.array([0x3F80, 0xC000, 0x7FC0, 0x0000, 0x4049, 0xFF80], dtype=np.uint16)
"""1, -2, NaN, 0, 3.140625, -inf as bfloat16 bit patterns."""


def make_file(arrays: dict[str, np.ndarray], *, bf16: bool = True) -> bytes:
    """The safetensors bytes of ``arrays`` (and the bfloat16 tensor ``BF16_KEY`` when ``bf16``)."""
    if not bf16:
        return safetensors.numpy.save(arrays)
    keep = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    specs = {k: safetensors.TensorSpec(dtype=v.dtype.name, shape=list(v.shape), data_ptr=v.ctypes.data,
                                       data_len=v.nbytes) for k, v in keep.items()}
    bits = np.ascontiguousarray(BF16_BITS.astype("<u2"))
    specs[BF16_KEY] = safetensors.TensorSpec(dtype="bfloat16", shape=[2, 3], data_ptr=bits.ctypes.data,
                                             data_len=bits.nbytes)
    data = bytes(safetensors.serialize(specs, metadata={"run": "test"}))
    del keep, bits  # alive until serialize returned
    return data


def read_back(data: bytes) -> dict[str, tuple[str, list[int], bytes]]:
    """``key -> (dtype, shape, raw bytes)`` as safetensors itself reads the file (every dtype)."""
    return {key: (info["dtype"], list(info["shape"]), bytes(info["data"]))
            for key, info in safetensors.deserialize(data)}


def assert_same_tensors(data: bytes, arrays: dict[str, np.ndarray], *, bf16: bool = True) -> None:
    """The file holds exactly ``arrays`` (and the bfloat16 tensor), bit for bit."""
    got = read_back(data)
    assert set(got) == set(arrays) | ({BF16_KEY} if bf16 else set())
    for key, array in arrays.items():
        _dtype, shape, raw = got[key]
        assert raw == np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes(), key
        assert int(np.prod(shape)) == array.size
    if bf16:
        assert got[BF16_KEY] == ("BF16", [2, 3], BF16_BITS.astype("<u2").tobytes())
