"""A tensor file's index as the API serves it, built once per stored file and kept.

Every page that draws a run asks for its index (NOTE [tensor sources] in
frontend/src/tensors/source.js), and building it parses and checks the whole safetensors
header (40-50 ms for GRU-200's 13,223 tensors). A stored file never changes under its owner,
so the built index (its JSON, its gzip for a long one, and each key's place for the per-key
route, ``tensor_keys.py``) is kept, up to ``INDEX_CACHE_BYTES``, the least recently asked
dropped first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from gradtrace.collector import gc_paused
from gradtrace.storage.codec import compress
from gradtrace.storage.tensor_header import check_header, header_length, index_from
from gradtrace.storage.tensor_rows import TensorSource

GZIP_INDEX_BYTES = 64 << 10
"""An index longer than this is gzip'd for a client that takes it."""
INDEX_CACHE_BYTES = 32 << 20
"""Bytes of built indexes kept (plain, gzip'd, and about as much again for the key map), the
oldest dropped first."""

Place = tuple[int, int, str, list[int]]
"""One tensor's ``(start, end, dtype, shape)``: absolute byte offsets, end exclusive."""


@dataclass(frozen=True)
class BuiltIndex:
    body: bytes
    gz: bytes | None
    places: dict[str, Place]

    @property
    def cost(self) -> int:
        """Bytes it is counted as: the JSON twice (the key map holds about as much), the gzip."""
        return 2 * len(self.body) + len(self.gz or b"")


_indexes: OrderedDict[tuple[str, str, str], BuiltIndex] = OrderedDict()
_indexes_lock = threading.Lock()


def _index_key(source: TensorSource) -> tuple[str, str, str]:
    """One stored file: its owner and its hash, never the hash alone, since two owners' copies
    of one file are damaged, or not, each on its own (a run still in memory: its hash)."""
    return str(getattr(source, "owner", "")), str(getattr(source, "owner_id", "")), source.sha256


def cached_index(source: TensorSource) -> BuiltIndex | None:
    """The index already built for ``source``, or None (nothing read)."""
    with _indexes_lock:
        found = _indexes.get(_index_key(source))
        if found is not None:
            _indexes.move_to_end(_index_key(source))
        return found


def built_index(source: TensorSource) -> BuiltIndex:
    """The index as JSON, gzip'd when long, and each key's place; built and checked once per
    stored file (TensorFileDamaged when its header does not hold together)."""
    found = cached_index(source)
    if found is not None:
        return found
    n = header_length(source.read(0, min(8, source.size)), source.size)
    header = source.read(8, 8 + n)
    with gc_paused():  # NOTE [gc while building documents] in collector.py: nothing here is cyclic
        entries = check_header(header, size=source.size)
        body = index_from(entries, size=source.size, sha256=source.sha256, header_bytes=8 + n)
        places = {key: (start, end, dtype, shape) for start, end, key, dtype, shape in entries}
    built = BuiltIndex(body, compress(body) if len(body) > GZIP_INDEX_BYTES else None, places)
    with _indexes_lock:
        _indexes[_index_key(source)] = built
        total = sum(b.cost for b in _indexes.values())
        while total > INDEX_CACHE_BYTES and len(_indexes) > 1:
            _key, dropped = _indexes.popitem(last=False)
            total -= dropped.cost
    return built
