"""The job child's life after lock-down: read one job, run its kind's handler, write, ``_exit``.

fd 0 carries the job (its wire form, :func:`gradtrace.sandbox.wire.encode_job`, closed by the web
process after writing), fds 1 and 2 are the raw output pipe the supervisor caps, fd 3 carries
the answer. What the job does is its kind's ``handle`` (NOTE [adding a job kind] in
``gradtrace/jobs.py``); the zygote built the table of kinds before it forked. The
child never returns into the zygote's code: it ends with ``os._exit`` so no user ``__del__``,
``atexit`` handler or thread outlives the job, and nothing is flushed twice.

NOTE [result framing]
    The answer is one frame (NOTE [answer frames] in ``gradtrace/sandbox/wire.py``): the result's
    JSON and the kind's attachment, written in one go and ended by closing fd 3 (EOF). A
    snippet can write to fd 3 itself, or monkeypatch ``json``; that only ever spoils its own
    answer, which the web process size-caps, unframes, parses and schema-validates, and whose
    ``code``/``seed``/``id`` it overwrites from the job it sent.

NOTE [stop, then kill]
    A run that hits its time limit should still show the graph it built so far (a training loop
    that never ends is exactly when a user wants to look). SIGXCPU therefore stops the snippet
    rather than the process: the kernel sends it at the soft CPU limit; the supervisor sends
    ``WALL_STOP_SIGNAL`` (SIGUSR2, ``protocol.py``) at the wall-clock deadline, so the message
    names the limit that was hit (the kernel's tick-sampled CPU time runs ahead of
    ``time.process_time()`` on a busy machine: a clock cannot tell the two apart). The handler
    raises :class:`TimeLimitExceeded` in the snippet's frame, capture ends the run as it does
    for any exception, and the result carries what was recorded; the web process turns that
    error into status ``timeout`` (``sandbox/kinds/run.py``). The handler raises only while snippet code
    is on the stack (and waits for capture's hook between two ops to finish: NOTE [a stop
    between two ops]), so it never breaks capture's own work of finishing the document; the
    supervisor waits for that while the child keeps getting CPU (NOTE [grace under load] in
    ``stopgrace.py``) and repeats the stop meanwhile. A repeated stop that finds the snippet
    still running means it caught the exception and went on: the child ends at once with
    ``EXIT_STOP_IGNORED_*``, and the message says nothing could be kept. A snippet that blocks
    inside C++ gains nothing either: the hard CPU limit and the supervisor's SIGKILL at the end
    of the grace still end it, without a graph.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import sys
import time
from types import FrameType

from gradtrace.jobs import Job
from gradtrace.sandbox.jail import RESULT_FD
from gradtrace.sandbox.kinds import KindTable
from gradtrace.sandbox.protocol import (
    EXIT_BAD_JOB,
    EXIT_CPU_LIMIT,
    EXIT_INTERNAL,
    EXIT_NO_MEMORY,
    EXIT_OK,
    EXIT_STOP_IGNORED_CPU,
    EXIT_STOP_IGNORED_WALL,
    EXIT_WALL_LIMIT,
    SNIPPET_FILENAME,
    TIME_LIMIT_ERROR,
    WALL_STOP_SIGNAL,
)
from gradtrace.sandbox.wire import encode_answer

MAX_JOB_BYTES = 64 << 20

# Bound before any user code runs: a snippet that replaces os._exit or os.close must not keep the
# child from ending (it could still patch these names here; then the supervisor's kill ends it).
_exit = os._exit
_close = os.close
_write = os.write
_read = os.read


class TimeLimitExceeded(BaseException):
    """Raised in the snippet when it hits its CPU or wall-clock limit (NOTE [stop, then kill])."""


assert TimeLimitExceeded.__name__ == TIME_LIMIT_ERROR


_GRADTRACE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_RETRY_S = 0.002
_MAX_DEFERRALS = 250  # ~0.5 s of retries: capture's bookkeeping between two ops takes microseconds


def _where_stopped(frame: FrameType | None) -> str:
    """``"snippet"`` where the snippet's code runs, ``"capture"`` where gradtrace's own code runs
    on its behalf (a hook half way through recording a node), ``"outside"`` with no snippet on
    the stack (capture finishing the document)."""
    inside_gradtrace = False
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename == SNIPPET_FILENAME:
            return "capture" if inside_gradtrace else "snippet"
        if filename.startswith(_GRADTRACE_DIR):
            inside_gradtrace = True
        frame = frame.f_back
    return "outside"


def _install_time_limit_handler() -> None:
    """NOTE [a stop between two ops]
        The stop lands between two bytecodes of whatever Python code runs. If that is capture's
        hook recording an op the snippet called (its frame above the snippet's), raising there
        would leave the record half written (an event without its node). So the handler
        defers: it asks for itself again in ``_RETRY_S`` (``SIGALRM``; the kernel sends SIGXCPU
        only once before the hard limit) and raises at the first signal that finds the snippet's
        own code, or gradtrace code outside capture's hooks, running. Work that stays inside
        gradtrace for long (a backward pass the engine runs) is stopped after ``_MAX_DEFERRALS``
        retries wherever it is: a half-recorded pass is better than no graph at all."""
    started = time.monotonic()
    stopped = False
    deferred = 0
    pending_cpu = False

    def on_limit(signum: int, frame: FrameType | None) -> None:
        nonlocal stopped, deferred, pending_cpu
        where = _where_stopped(frame)
        if where == "outside":
            return  # capture is finishing the document (NOTE [stop, then kill])
        cpu = signum == signal.SIGXCPU or (signum == signal.SIGALRM and pending_cpu)
        if stopped:  # the snippet caught the stop and went on: end it, there is no graph to keep
            _exit(EXIT_STOP_IGNORED_CPU if cpu else EXIT_STOP_IGNORED_WALL)
        if where == "capture" and deferred < _MAX_DEFERRALS:
            deferred += 1
            pending_cpu = cpu
            signal.setitimer(signal.ITIMER_REAL, _RETRY_S)
            return
        stopped = True
        signal.setitimer(signal.ITIMER_REAL, 0)
        if cpu:
            raise TimeLimitExceeded(f"CPU time limit reached: stopped here after {time.process_time():.2f} s "
                                    "of CPU time")
        raise TimeLimitExceeded(f"wall-clock limit reached: stopped here after "
                                f"{time.monotonic() - started:.2f} s")

    signal.signal(signal.SIGXCPU, on_limit)
    signal.signal(WALL_STOP_SIGNAL, on_limit)
    signal.signal(signal.SIGALRM, on_limit)


def _read_job(table: KindTable) -> Job:
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
    return table.decode(b"".join(chunks))


def _tighten_limits(job: Job) -> None:
    """Lower the CPU limit when this job asks for less than the pool's (raising is impossible)."""
    cpu = job.limits.cpu_s
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if 0 < cpu < soft:
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
        from gradtrace.capture import WARM_UP_SNIPPET, WARM_UP_TENSOR_BUDGET, run_snippet

        run_snippet(WARM_UP_SNIPPET, seed=0, tensor_budget=WARM_UP_TENSOR_BUDGET).json_without_id()
    except Exception:
        pass


def serve(table: KindTable, *, prefault: bool = True) -> None:
    """Run one job of a kind in ``table`` and ``_exit``."""
    if prefault:
        _prefault()
    try:
        job = _read_job(table)
        handle = table.kind(job.kind).handle
    except (OSError, ValueError):
        _exit(EXIT_BAD_JOB)
    try:
        _tighten_limits(job)
        _install_time_limit_handler()
        payload = encode_answer(handle(job))
        signal.signal(signal.SIGXCPU, signal.SIG_IGN)  # finishing now; the hard limit still holds
        signal.signal(WALL_STOP_SIGNAL, signal.SIG_IGN)
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        _flush_output()
        _write_all(RESULT_FD, payload)
        _close(RESULT_FD)  # EOF now: the web process answers without waiting for our teardown
    except BaseException as exc:
        _flush_output()
        if isinstance(exc, TimeLimitExceeded):  # the supervisor says so in the kind's answer
            _exit(EXIT_CPU_LIMIT if str(exc).startswith("CPU") else EXIT_WALL_LIMIT)
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
