"""The service's parsed run documents: one bounded cache that compare, explain and gradcheck read
stored runs and shares through.

NOTE [parsed documents]
    A stored document never changes: its bytes are the canonical JSON its content hash names
    (NOTE [stored form] in ``storage/codec.py``). Decompressing and parsing it is most of the
    cost of a click that reads it (a GRU unrolled 200 steps is 4 MB of JSON, tens of
    milliseconds of parse), while the routes that read it only read it. So a route asks
    :class:`ParsedDocuments` for the document of the blob it fetched: the store is still asked
    for every request (the retention rule and the 404 stay the store's), only the parse is kept.

    The key is the content hash with the form the reader wants (``whole``: ``codec.load``;
    ``compare``: only what a comparison reads, NOTE [what a comparison reads] in
    ``analysis/compare/read.py``). The hash names the bytes: a run and a share of one document
    are one entry, and an id whose row changed could never hand back another row's parse.
    A blob without a content hash is parsed and not kept. Bounds, least-recently-used order,
    single flight and failures not kept: NOTE [comparison caches] in ``api/compare_cache.py``.
    Whoever gets a document must not change it: the next request gets the same object.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from gradtrace.api.compare_cache import PARSED_PER_BYTE, BoundedCache
from gradtrace.storage.codec import StoredBlob, load

Form = Literal["whole", "compare"]


class ParsedDocuments:
    """Stored documents parsed once, by content hash and form (NOTE [parsed documents])."""

    def __init__(self, max_cost: int, max_entries: int = 64) -> None:
        self.cache: BoundedCache[dict[str, Any]] = BoundedCache(max_cost, max_entries=max_entries)

    def get(self, blob: StoredBlob, form: Form = "whole",
            reader: Callable[[StoredBlob], dict[str, Any]] | None = None) -> dict[str, Any]:
        """``blob``'s document as ``form`` reads it (``reader``; by default ``codec.load``: the
        whole document at the current schema), shared with every other request: read it, never
        change it."""
        read = reader or load

        def parse() -> tuple[dict[str, Any], int]:
            return read(blob), PARSED_PER_BYTE * blob.size

        key = (form, blob.content_hash) if blob.content_hash else None
        return self.cache.get_or_make(key, parse)

