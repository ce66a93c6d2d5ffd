"""A tensor file's index as the API serves it, built once per stored file and kept.

Every page that draws a run asks for its index (NOTE [tensor sources] in
frontend/src/tensors/source.js), and building it parses and checks the whole safetensors
header (40-50 ms for GRU-200's 13,223 tensors). A stored file never changes under its owner,
so the built index (and its gzip, for a long one) is kept, up to ``INDEX_CACHE_BYTES``, the
least recently asked dropped first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from gradtrace.storage.codec import compress
from gradtrace.storage.tensor_header import header_length, index_json
from gradtrace.storage.tensor_rows import TensorSource

GZIP_INDEX_BYTES = 64 << 10
"""An index longer than this is gzip'd for a client that takes it."""
INDEX_CACHE_BYTES = 32 << 20
"""Bytes of built indexes kept (plain and gzip'd), the oldest dropped first."""

_indexes: OrderedDict[tuple[str, str, str], tuple[bytes, bytes | None]] = OrderedDict()
_indexes_lock = threading.Lock()


def _index_key(source: TensorSource) -> tuple[str, str, str]:
    """One stored file: its owner and its hash, never the hash alone, since two owners' copies
    of one file are damaged, or not, each on its own (a run still in memory: its hash)."""
    return str(getattr(source, "owner", "")), str(getattr(source, "owner_id", "")), source.sha256


def _cached_index(source: TensorSource) -> tuple[bytes, bytes | None] | None:
    with _indexes_lock:
        found = _indexes.get(_index_key(source))
        if found is not None:
            _indexes.move_to_end(_index_key(source))
        return found


def built_index(source: TensorSource) -> tuple[bytes, bytes | None]:
    """The index as JSON and, when long, gzip'd; built and checked once per stored file."""
    found = _cached_index(source)
    if found is not None:
        return found
    body = read_index(source)
    built = body, (compress(body) if len(body) > GZIP_INDEX_BYTES else None)
    with _indexes_lock:
        _indexes[_index_key(source)] = built
        total = sum(len(b) + len(g or b"") for b, g in _indexes.values())
        while total > INDEX_CACHE_BYTES and len(_indexes) > 1:
            _key, (b, g) = _indexes.popitem(last=False)
            total -= len(b) + len(g or b"")
    return built


def read_index(source: TensorSource) -> bytes:
    """The file's index as JSON, its header parsed and checked (TensorFileDamaged when it does
    not hold together)."""
    n = header_length(source.read(0, min(8, source.size)), source.size)
    return index_json(source.read(8, 8 + n), size=source.size, sha256=source.sha256)
