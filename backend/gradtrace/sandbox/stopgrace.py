"""How long a job stopped at its wall-clock deadline may take to hand in its partial document.

NOTE [grace under load]
    A job stopped at its deadline (NOTE [stop, then kill] in ``child.py``) still has to finish
    its document: tens of thousands of nodes to serialise and write, a fraction of a second of
    CPU. The supervisor used to wait a fixed 0.5 s of wall clock. On two cores shared with other
    work the child gets a small share of a core, so it missed that, was killed, and about one
    runaway-graph run in 16 came back as an empty ``timeout`` with no line; with the cores kept
    busy on purpose, finishing a 30k-node document took 3 s and more of wall clock.

    So the grace is counted in the child's own progress, read from ``/proc/<pid>/stat``, not in
    wall clock: the child may go on while it keeps getting CPU or waits for a core (state
    ``R``), or is writing its result, until it has used ``STOP_CPU_S`` of CPU since the stop,
    or has made no progress for ``IDLE_S`` (a call that blocks), or ``MAX_WALL_S`` have passed
    (the bound on how late an answer may be). A snippet that catches the stop and goes on ends
    at the next stop, repeated every ``POLL_S`` (NOTE [stop, then kill] in ``child.py``).
    Where ``/proc`` does not show the child, the grace is ``IDLE_S`` scaled by the load average
    per core, within the same bound. A job that hands in nothing is then killed and
    its message says that nothing it recorded could be kept, and why (``outcome.py``).
"""

from __future__ import annotations

import os
import time

from gradtrace.sandbox.streams import CappedReader

POLL_S = 0.25
IDLE_S = 2.0
STOP_CPU_S = 2.0
MAX_WALL_S = 12.0
_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def cpu_and_state(pid: int) -> tuple[float, str] | None:
    """User + system CPU time of process ``pid`` so far and its state letter (``R`` running or
    waiting for a core, ``S`` sleeping, ...), or None when ``/proc`` does not show it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * _TICK_S, fields[0].decode("ascii", "replace")
    except (OSError, IndexError, ValueError):
        return None


def _load_per_core() -> float:
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except OSError:
        return 1.0


class StopGrace:
    """Watches one stopped job (NOTE [grace under load]); ask :meth:`working` every ``POLL_S``."""

    poll_s = POLL_S

    def __init__(self, pid: int, result: CappedReader) -> None:
        self.pid = pid
        self.result = result
        self.started = self.progressed = time.monotonic()
        seen = cpu_and_state(pid)
        self.cpu_at_stop = self.cpu_seen = seen[0] if seen is not None else None
        self.bytes_seen = result.size
        self.why = ""

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def working(self) -> bool:
        """Whether the job may go on finishing its document; when not, :attr:`why` says why."""
        now = time.monotonic()
        if self.result.size > self.bytes_seen:
            self.bytes_seen, self.progressed = self.result.size, now
        seen = cpu_and_state(self.pid) if self.cpu_at_stop is not None else None
        cpu = seen[0] if seen is not None else None
        if seen is not None and self.cpu_seen is not None and (
                seen[0] > self.cpu_seen or seen[1] == "R" or self.bytes_seen):
            # getting CPU, waiting for a core, or blocked on writing its result to us: progress
            self.cpu_seen, self.progressed = seen[0], now
        if now - self.started >= MAX_WALL_S:
            self.why = f"it had not done so {MAX_WALL_S:g} s later"
        elif cpu is not None and self.cpu_at_stop is not None and cpu - self.cpu_at_stop >= STOP_CPU_S:
            self.why = f"it went on computing for {STOP_CPU_S:g} s of CPU time instead"
        elif cpu is None and now - self.started >= min(MAX_WALL_S, IDLE_S * max(1.0, _load_per_core())):
            self.why = f"it had not done so {now - self.started:.1f} s later"
        elif now - self.progressed >= IDLE_S:
            self.why = f"it made no progress for {IDLE_S:g} s"
        return not self.why
