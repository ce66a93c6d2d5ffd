"""The one home of gradtrace's control of Python's cyclic garbage collector.

Every ``gc.`` call of the package is here (``tests/capture/test_layering.py`` holds that), for
three situations that each cost tens of milliseconds otherwise:

NOTE [gc while building documents]
    Validating, building or writing a 4 MB document makes ~150,000 acyclic objects. Each young
    collection on the way, and every older one their growth triggers, walks them again (half
    the time of a validation; 50-80 ms pauses on a GRU-200's edge list), and in a process that
    imported torch a full collection also walks torch's million objects. :func:`gc_paused`
    turns collection off for the duration (reference counting frees all of it); with
    ``settle``, what was made is moved, unwalked, to the oldest generation before collection
    resumes (:func:`settle_young_objects`).

NOTE [gc around a recorded block]
    The recorder keeps ~40 container objects per node (entries, edges, saved tensors), all
    alive until the document is written. :class:`BlockCollector` freezes what already exists
    at the start of a ``with gradtrace.record()`` block (``gc.freeze()``: out of the
    collector's sight; ``unfreeze`` at the end) and raises the young generation's threshold
    from 700 to 200,000 allocations for the block: with 20,000, collections took a quarter of
    a GRU-200 capture (perf, steady state). A snippet's cyclic garbage is still collected, in
    batches of 200,000 objects (tens of MB at most, well inside the job's memory limit). At
    the end, the block's objects (~150,000 on a GRU-200) are settled before the threshold
    drops back: restoring 700 with 150,000 young objects pending made the very next
    allocation walk them all (15 ms of a GRU-200's exit).

NOTE [gc.freeze before fork]
    A collection in a forked child walks every object the zygote made and writes their
    headers, copying ~150 MB of pages per job (tens of ms). :func:`freeze_before_fork` collects
    once and freezes everything: frozen objects are never scanned, so children pay only for
    what the job itself allocates.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0
_was_enabled = False


def settle_young_objects() -> None:
    """Move every object the collector tracks to the oldest generation without walking them.

    ``freeze`` moves them all to the permanent generation and resets the young count;
    ``unfreeze`` puts them back, into the oldest. Cyclic garbage among them is still found by
    the next full collection.
    """
    gc.freeze()
    gc.unfreeze()


@contextmanager
def gc_paused(*, settle: bool = False) -> Iterator[None]:
    """No cyclic garbage collection inside the block (thread-safe, nestable): NOTE [gc while
    building documents]. ``settle``: when the outermost block ends and collection resumes, the
    objects made meanwhile go to the oldest generation unwalked."""
    global _holders, _was_enabled
    with _lock:
        if _holders == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _was_enabled:
                if settle:
                    settle_young_objects()
                gc.enable()


class BlockCollector:
    """The collector around one recorded block: NOTE [gc around a recorded block]."""

    YOUNG_THRESHOLD = 200_000

    def __init__(self) -> None:
        self._threshold: tuple[int, int, int] | None = None

    def enter(self) -> None:
        if not gc.isenabled():
            return
        gc.freeze()
        self._threshold = gc.get_threshold()
        gc.set_threshold(max(self._threshold[0], self.YOUNG_THRESHOLD), *self._threshold[1:])

    def exit(self) -> None:
        """Idempotent: the block's objects settled, then the threshold restored."""
        if self._threshold is None:
            return
        settle_young_objects()  # before the threshold drops back (and unfreezes the rest)
        gc.set_threshold(*self._threshold)
        self._threshold = None


def freeze_before_fork() -> None:
    """NOTE [gc.freeze before fork]."""
    gc.collect()
    gc.freeze()


__all__ = ["BlockCollector", "freeze_before_fork", "gc_paused", "settle_young_objects"]
