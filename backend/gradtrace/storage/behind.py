"""Runs written behind the answer: one writer thread and the runs waiting for it.

NOTE [runs written behind]
    ``Store.put_run_behind`` hands the run to one writer thread and returns: the answer to
    ``POST /api/runs`` no longer waits for the insert (a thread hand-over and a commit, 1-4 ms
    of a trivial run's ~19, 10 ms in the tail). Until it is written the run stays in memory,
    and ``get_run`` (and ``run_tensors``) answer from there, so a run can be read or shared by
    id the moment its answer leaves. ``close`` writes what is left before the engines go. The
    queue is bounded: past ``RUNS_BEHIND_MAX`` waiting runs, or ``RUNS_BEHIND_TENSOR_BYTES`` of
    waiting tensor files, ``offer`` refuses and the caller stores the run itself (the database
    is slower than the runs; waiting for it is then right).

NOTE [written after the answer]
    The writer's insert is mostly Python (building statements, a row per chunk of a tensor
    file), and a thread running Python keeps the GIL until the loop's thread has waited a
    switch interval (5 ms) for it. Started at once, it held the run's answer back by up to
    that much: a trivial run with a tensor file answered ~5 ms later than without. So the
    API offers a run with ``hold`` (readable by id from that moment) and releases it once
    its answer has been sent (``release``); ``close`` writes held runs too.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

from gradtrace.storage.codec import EncodedDocument
from gradtrace.storage.tensor_rows import MemoryTensors, tensor_sha256

RUNS_BEHIND_MAX = 256
"""Runs waiting for the writer thread at most."""
RUNS_BEHIND_TENSOR_BYTES = 256 << 20
"""Bytes of tensor files waiting for the writer thread at most."""
log = logging.getLogger("gradtrace.storage")


@dataclass(frozen=True)
class Waiting:
    """A run handed to the writer thread, with its tensor file if it has one."""

    doc: EncodedDocument
    tensors: MemoryTensors | None

    @property
    def tensor_bytes(self) -> int:
        return 0 if self.tensors is None else self.tensors.size


class WriteBehind:
    """Runs waiting to be written by ``write(doc, tensors, sha256)`` on one thread of its own
    (the file is hashed once, when it is offered)."""

    def __init__(self, write: Callable[[EncodedDocument, bytes | None, str | None], None]) -> None:
        self._write = write
        self._queue: queue.SimpleQueue[Waiting | None] = queue.SimpleQueue()
        self._waiting: dict[str, Waiting] = {}
        self._held: dict[str, Waiting] = {}
        self._lock = threading.Lock()
        self._writer: threading.Thread | None = None
        self._closed = False

    def offer(self, doc: EncodedDocument, tensors: bytes | None = None, *, hold: bool = False,
              tensors_sha256: str | None = None) -> bool:
        """Queue a run; False, queueing nothing, when too much is waiting already or closed.
        ``hold``: readable at once, written once released (NOTE [written after the answer]).
        ``tensors_sha256``: the file's hash where the caller checked it already."""
        sha = None if tensors is None else tensors_sha256 or tensor_sha256(tensors)
        waiting = Waiting(doc, None if tensors is None or sha is None else MemoryTensors(tensors, sha))
        with self._lock:
            queued = sum(w.tensor_bytes for w in self._waiting.values())
            if (len(self._waiting) >= RUNS_BEHIND_MAX or self._closed
                    or queued + waiting.tensor_bytes > RUNS_BEHIND_TENSOR_BYTES):
                return False
            self._waiting[doc.doc_id] = waiting
            if self._writer is None:
                self._writer = threading.Thread(target=self._run, name="gradtrace-runs", daemon=True)
                self._writer.start()
            if hold:
                self._held[doc.doc_id] = waiting
                return True
        self._queue.put(waiting)
        return True

    def release(self, run_id: str) -> None:
        """Write a run offered with ``hold`` (a second call, or one for a run not held, does nothing)."""
        with self._lock:
            waiting = self._held.pop(run_id, None)
        if waiting is not None:
            self._queue.put(waiting)

    def get(self, run_id: str) -> Waiting | None:
        """The run ``run_id`` if it is still waiting to be written."""
        with self._lock:
            return self._waiting.get(run_id)

    def close(self) -> None:
        """Write what is waiting, then stop the thread."""
        with self._lock:
            self._closed = True
            writer = self._writer
            held, self._held = list(self._held.values()), {}
        for waiting in held:
            self._queue.put(waiting)
        if writer is not None:
            self._queue.put(None)
            writer.join(timeout=30.0)

    def _run(self) -> None:
        while True:
            waiting = self._queue.get()
            if waiting is None:
                return
            doc = waiting.doc
            try:
                tensors = waiting.tensors
                self._write(doc, None if tensors is None else tensors.data, None if tensors is None else tensors.sha256)
            except Exception as exc:  # the run was answered; only sharing it by id is lost
                log.warning("a run could not be stored: %s", exc)
            finally:
                with self._lock:
                    if self._waiting.get(doc.doc_id) is waiting:
                        del self._waiting[doc.doc_id]
