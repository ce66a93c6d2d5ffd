"""The job child's life after lock-down: read one job, run its kind's handler, write, ``_exit``.

fd 0 carries the job (JSON, closed by the web process after writing), fds 1 and 2 are the raw
output pipe the supervisor caps, fd 3 carries the result (JSON). What the job does is its
kind's ``handle`` (NOTE [adding a job kind] in ``gradtrace/jobs.py``); the zygote imported
every kind before it forked. The child never returns into
the zygote's code: it ends with ``os._exit`` so no user ``__del__``, ``atexit`` handler or
thread outlives the job, and nothing is flushed twice.

NOTE [result framing]
    The result is the run document as JSON, written in one go and ended by the process's exit
    (EOF). A snippet can write to fd 3 itself, or monkeypatch ``json``; that only ever spoils
    its own result, which the web process size-caps, parses and schema-validates, and whose
    ``code``/``seed``/``id`` it overwrites from the job it sent.

NOTE [stop, then kill]
    A run that hits its time limit should still show the graph it built so far (a training loop
    that never ends is exactly when a user wants to look). SIGXCPU therefore stops the snippet
    rather than the process: the kernel sends it at the soft CPU limit, and the supervisor sends
    it at the wall-clock deadline. The handler raises :class:`TimeLimitExceeded` in the snippet's
    frame, capture ends the run as it does for any exception, and the result carries what was
    recorded; the web process turns that error into status ``timeout`` (``outcome.py``). A
    snippet that swallows the exception or blocks inside C++ gains nothing: the hard CPU limit
    and the supervisor's SIGKILL after a short grace still end it, without a graph. The handler
    raises only while snippet code is on the stack, so it never breaks capture's own work of
    finishing the document.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import sys
import time
from types import FrameType
from typing import Any

from gradtrace.sandbox import kinds
from gradtrace.sandbox.jail import RESULT_FD
from gradtrace.sandbox.kinds.registry import SNIPPET_FILENAME, ChildJob
from gradtrace.sandbox.protocol import TIME_LIMIT_ERROR

MAX_JOB_BYTES = 64 << 20
EXIT_OK = 0
EXIT_BAD_JOB = 65
EXIT_INTERNAL = 70
EXIT_NO_MEMORY = 71
EXIT_TIME_LIMIT = 73
"""``TimeLimitExceeded`` escaped a kind's handler (the run kind records it in its document)."""

# Bound before any user code runs: a snippet that replaces os._exit or os.close must not keep the
# child from ending (it could still patch these names here; then the supervisor's kill ends it).
_exit = os._exit
_close = os.close
_write = os.write
_read = os.read


class TimeLimitExceeded(BaseException):
    """Raised in the snippet when it hits its CPU or wall-clock limit (NOTE [stop, then kill])."""


assert TimeLimitExceeded.__name__ == TIME_LIMIT_ERROR


def _snippet_on_stack(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_filename == SNIPPET_FILENAME:
            return True
        frame = frame.f_back
    return False


def _install_time_limit_handler(cpu_limit_s: float) -> None:
    started = time.monotonic()

    def on_limit(_signum: int, frame: FrameType | None) -> None:
        if not _snippet_on_stack(frame):
            return
        cpu = time.process_time()
        if cpu >= cpu_limit_s - 0.05:
            raise TimeLimitExceeded(f"CPU time limit reached: stopped here after {cpu:.2f} s of CPU time")
        raise TimeLimitExceeded(f"wall-clock limit reached: stopped here after "
                                f"{time.monotonic() - started:.2f} s")

    signal.signal(signal.SIGXCPU, on_limit)




def _read_job() -> dict[str, Any]:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = _read(0, 1 << 16)
        if not chunk:
            break
        size += len(chunk)
        if size > MAX_JOB_BYTES:
            raise ValueError("job too large")
        chunks.append(chunk)
    job = json.loads(b"".join(chunks))
    if not isinstance(job, dict) or not isinstance(job.get("code"), str):
        raise ValueError("job is not an object with a code string")
    if not isinstance(job.get("params", {}), dict):
        raise ValueError("job params are not an object")
    return job


def _child_job(job: dict[str, Any], defaults: dict[str, Any]) -> ChildJob:
    return ChildJob(kind=str(job.get("kind", "run")), code=job["code"], device=str(job.get("device", "cpu")),
                    seed=job.get("seed"), params=job.get("params", {}),
                    max_nodes=int(job.get("max_nodes", defaults["max_nodes"])),
                    max_events=int(job.get("max_events", defaults["max_events"])),
                    output_bytes=int(job.get("output_bytes", defaults["output_bytes"])),
                    filename=SNIPPET_FILENAME)


def _tighten_limits(job: dict[str, Any]) -> None:
    """Lower the CPU limit when this job asks for less than the pool's (raising is impossible)."""
    cpu = job.get("cpu_s")
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if isinstance(cpu, int) and 0 < cpu < soft:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, min(hard, cpu + 1)))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = _write(fd, view)
        view = view[written:]


def _prefault() -> None:
    """Run capture's warm-up snippet once while idle, already locked down.

    NOTE [pre-fault while idle]
        A fresh child shares the zygote's memory copy-on-write, so the first run of capture in
        it takes ~1,200 page faults (~6-8 ms) that an in-process run does not. Doing one trusted
        warm-up run while the child waits for its job moves those faults off the request path.
        It runs after lock-down and before any user byte; a failure here is harmless. A child
        forked while jobs are queued skips it: it will be taken at once, and the faults would
        only delay that job (and cost CPU the queue needs).
    """
    try:
        from gradtrace.capture import WARM_UP_SNIPPET, run_snippet
        from gradtrace.schema.canonical import canonical_json

        canonical_json(run_snippet(WARM_UP_SNIPPET, seed=0, json_parts=True))
    except Exception:
        pass


def serve(defaults: dict[str, Any], *, prefault: bool = True) -> None:
    """Run one job and ``_exit``; ``defaults`` are the pool's capture limits."""
    if prefault:
        _prefault()
    try:
        job = _read_job()
        handle = kinds.kind(str(job.get("kind", "run"))).handle
    except (OSError, ValueError):
        _exit(EXIT_BAD_JOB)
    try:
        _tighten_limits(job)
        _install_time_limit_handler(float(resource.getrlimit(resource.RLIMIT_CPU)[0]))
        payload = handle(_child_job(job, defaults))
        signal.signal(signal.SIGXCPU, signal.SIG_IGN)  # finishing now; the hard limit still holds
        _flush_output()
        _write_all(RESULT_FD, payload)
        _close(RESULT_FD)  # EOF now: the web process answers without waiting for our teardown
    except BaseException as exc:
        _flush_output()
        if isinstance(exc, TimeLimitExceeded):  # the supervisor says so in the kind's answer
            _exit(EXIT_TIME_LIMIT)
        try:
            _write(2, f"gradtrace job child: internal error: {type(exc).__name__}\n".encode())
        finally:
            _exit(EXIT_NO_MEMORY if isinstance(exc, MemoryError) else EXIT_INTERNAL)
    _exit(EXIT_OK)


def _flush_output() -> None:
    """What a handler's user code printed reaches the output pipe before ``_exit`` (which
    flushes nothing); the run kind captures its output itself, so this is usually a no-op."""
    for stream in (sys.stdout, sys.stderr):
        # a snippet may have replaced or closed them: that spoils its own output only
        with contextlib.suppress(BaseException):
            stream.flush()
