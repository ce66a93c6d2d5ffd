"""The index of a stored tensor file: what ``GET /api/runs/{id}/tensors`` answers.

The file itself is safetensors (docs/CONTRACT.md, "Tensor files"): an 8-byte little-endian
header length N, N bytes of JSON header, then the raw buffers. The index is that header made
absolute: each tensor's ``start``/``end`` are byte offsets in the whole file, so a reader asks
for exactly ``Range: bytes=start-(end-1)`` and needs nothing else.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class TensorIndexEntry(BaseModel):
    """One tensor of the file, where its bytes are."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(description="The tensor's stable key, as the run document names it (`n12.out0`, "
                                 "`e3.gi1`, `n4.gh0`, …)")
    dtype: str = Field(description="safetensors dtype code (`F32`, `F16`, `BF16`, `F64`, `I64`, `BOOL`, …); "
                                   "the buffer holds its elements little-endian, in C order")
    shape: list[int] = Field(description="The tensor's shape (`[]` for a scalar)")
    start: int = Field(ge=0, description="Absolute byte offset of the tensor's first byte in the file")
    end: int = Field(ge=0, description="Absolute byte offset just past the tensor's last byte "
                                       "(exclusive; `end - start` is its byte size)")


class TensorIndex(BaseModel):
    """Every tensor of a run's (or a share's) tensor file, in file order."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["safetensors"] = Field(description="The file's format; always `safetensors`")
    sha256: str = Field(description="SHA-256 of the whole file, hex; also its ETag")
    bytes: int = Field(ge=0, description="Length of the whole file in bytes")
    header_bytes: int = Field(ge=8, description="8 + the JSON header's length: where the first buffer "
                                                "begins")
    tensors: list[TensorIndexEntry] = Field(description="The tensors, ordered by `start`")
