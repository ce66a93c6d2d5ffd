"""The stored tensor files the store has found, remembered by their owner.

NOTE [files the store has found]
    A page reads a run's tensors one Range request at a time, and finding the file (its hash,
    size and chunk count) was a query of its own before each read. Since a stored file never
    changes under its owner, the store remembers the last ``KNOWN_FILES`` it found, and
    ``Store.known_tensors`` answers from them with no query. What could have changed since is
    still caught: each read checks the length of every chunk it touches (a damaged file is
    still a 409), a read that finds the owner's file gone answers 404 (a purge or a delete,
    maybe by another replica: ``tensor_rows.StoredTensors``), and a run's retention is checked
    against the time it was stored, which only ever moves later. ``Store.run_tensors`` and
    ``Store.share_tensors`` always ask the database, so their full check (every chunk there)
    runs on each first look.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

from gradtrace.storage.tensor_rows import TensorSource

KNOWN_FILES = 512
"""Stored tensor files remembered: a few hundred bytes each."""


class KnownFiles:
    """(owner, id) -> the file found for it, and when its owner was stored (a run's)."""

    def __init__(self) -> None:
        self._files: OrderedDict[tuple[str, str], tuple[TensorSource, float | None]] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, owner: str, owner_id: str, source: TensorSource | None, stored: float | None = None) -> None:
        """What a lookup found (None: no file, forgotten)."""
        key = (owner, owner_id)
        with self._lock:
            if source is None:
                self._files.pop(key, None)
                return
            self._files[key] = (source, stored)
            self._files.move_to_end(key)
            while len(self._files) > KNOWN_FILES:
                self._files.popitem(last=False)

    def get(self, owner: str, owner_id: str, *, max_age_s: float | None = None) -> TensorSource | None:
        """The file found before, unless its owner was stored more than ``max_age_s`` ago."""
        with self._lock:
            found = self._files.get((owner, owner_id))
            if found is None:
                return None
            self._files.move_to_end((owner, owner_id))
        source, stored = found
        if max_age_s is not None and stored is not None and stored < time.time() - max_age_s:
            return None
        return source

    def forget(self, owner: str, owner_ids: list[str]) -> None:
        with self._lock:
            for owner_id in owner_ids:
                self._files.pop((owner, owner_id), None)
