"""Bounded caches: the service's parsed documents (``api/documents.py``) and the comparison answers.

NOTE [comparison caches]
    A stored document never changes: its bytes are the canonical JSON its content hash names
    (NOTE [stored form] in ``storage/codec.py``), and a comparison is a pure function of its
    two documents (``analysis/compare/documents.py``). So the service keeps, keyed by content hash,

    * the parsed documents (a GRU unrolled 200 steps is 4 MB of JSON, ~40 ms of parse and
      ~19 MB of Python objects): the what-if slider compares the same run A with a new run B
      at every step, and the compare page's comparison follows the page that names the same
      two runs (explain and gradcheck read them too: NOTE [parsed documents] in
      ``api/documents.py``);
    * the answers (the comparison's JSON bytes), keyed by both hashes in order: the page, a
      reload, the slider going back to a value it had, ``POST`` and ``GET`` of the same pair.

    Both are least-recently-used and bounded by a cost (bytes, a parsed document counted at
    :data:`PARSED_PER_BYTE` times its JSON) and a number of entries, so they never grow
    without limit; an entry larger than the whole budget is made and returned, never kept.
    Each key is made once at a time (single flight): a request that asks for a key already
    being made waits for it instead of making it again, which is how the compare page's
    ``GET /api/compare/{a}..{b}`` joins the comparison its page request started (NOTE
    [comparison started with the page] in ``api/compare_page.py``). A failure is not kept:
    the next request makes the key again and meets the same error itself.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Generic, TypeVar

V = TypeVar("V")

PARSED_PER_BYTE = 5
"""A parsed document's memory per byte of its JSON, at most (measured on GRU-200, 4.0 MB of JSON: 19 MB
parsed whole, 13 MB as the comparison reads it, ``analysis/compare/read.py``)."""


class BoundedCache(Generic[V]):
    """A thread-safe LRU map of ``key → value`` with a total cost bound and single flight."""

    def __init__(self, max_cost: int, max_entries: int = 64) -> None:
        self.max_cost = max(0, max_cost)
        self.max_entries = max(0, max_entries)
        self._items: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._making: dict[Hashable, Future[V]] = {}
        self._lock = threading.Lock()
        self.cost = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def get_or_make(self, key: Hashable | None, make: Callable[[], tuple[V, int]]) -> V:
        """The value of ``key``, made by ``make() -> (value, cost)`` when it is not kept.
        ``key=None`` (nothing names the content) always makes and never keeps."""
        if key is None:
            return make()[0]
        with self._lock:
            kept = self._items.get(key)
            if kept is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return kept[0]
            waiting = self._making.get(key)
            if waiting is None:
                mine: Future[V] = Future()
                self._making[key] = mine
                self.misses += 1
        if waiting is not None:
            return waiting.result()
        try:
            value, cost = make()
        except BaseException as exc:
            with self._lock:
                del self._making[key]
            mine.set_exception(exc)
            raise
        with self._lock:
            del self._making[key]
            self._keep(key, value, cost)
        mine.set_result(value)
        return value

    def _keep(self, key: Hashable, value: V, cost: int) -> None:
        if not self.max_cost or not self.max_entries or cost > self.max_cost:
            return
        self._items[key] = (value, cost)
        self.cost += cost
        while self.cost > self.max_cost or len(self._items) > self.max_entries:
            _, (_, dropped) = self._items.popitem(last=False)
            self.cost -= dropped
