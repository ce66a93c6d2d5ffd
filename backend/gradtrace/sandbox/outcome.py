"""How a job ended, in a sentence: the supervisor's status and message for a job of any kind.

When a job left no valid answer (or the kernel or the supervisor stopped it at a limit), its
kind's ``failed`` writes the answer with the status and message :func:`classify_failure`
gives (NOTE [adding a job kind] in :mod:`gradtrace.jobs`). Validating what a job did answer is
its kind's own work (``sandbox/kinds/``).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

from gradtrace.jobs import Job
from gradtrace.sandbox.protocol import (
    EXIT_CPU_LIMIT,
    EXIT_INTERNAL,
    EXIT_NO_MEMORY,
    EXIT_SETUP_FAILED,
    EXIT_STOP_IGNORED_CPU,
    EXIT_STOP_IGNORED_WALL,
    EXIT_WALL_LIMIT,
    WALL_STOP_SIGNAL,
)

_CAUGHT = (" Nothing it recorded could be kept: it caught the exception that stops it and went on, "
           "so it was ended without its graph.")
TRUNCATION_MARKER = "\n[output cut: the snippet wrote more than {limit}]\n"


@dataclass
class Ending:
    """How the job's process ended, as the supervisor saw it."""

    code: int | None = None
    signal: int | None = None
    cpu_s: float = 0.0
    oom: bool = False
    wall_timeout: bool = False
    output_flood: bool = False
    result_too_large: bool = False
    lost: bool = False
    """The zygote went away before reporting how the job ended."""
    result_bytes: int = 0
    stop_unanswered: str | None = None
    """Why a job stopped at its deadline handed in no partial document, when it did not
    (NOTE [grace under load] in ``stopgrace.py``): "it made no progress for 1 s", ..."""


def human_bytes(n: int) -> str:
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n >= 1024 and n % 1024 == 0:
        return f"{n >> 10} KiB"
    return f"{n} bytes"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def classify_failure(job: Job, ending: Ending) -> tuple[str, str]:
    """(status, message) for a run without a usable result, or with a limit hit by the kernel."""
    lim = job.limits
    if ending.wall_timeout:
        why = (f" Nothing it recorded could be kept: it was asked to stop and hand in its graph, and "
               f"{ending.stop_unanswered} (a snippet that catches the stop, or a call that does not "
               "return, is ended without its graph)." if ending.stop_unanswered else "")
        return "timeout", f"Stopped: the snippet ran longer than {lim.timeout_s:g} s.{why}"
    if ending.output_flood:
        return "output_limit", (f"Stopped: the snippet wrote more than {human_bytes(lim.output_bytes)} "
                                "of output.")
    if ending.result_too_large:
        return "output_limit", (f"Stopped: the run's result was larger than "
                                f"{human_bytes(lim.result_bytes)}.")
    if ending.code == EXIT_STOP_IGNORED_WALL or ending.signal == WALL_STOP_SIGNAL:
        return "timeout", f"Stopped: the snippet ran longer than {lim.timeout_s:g} s.{_CAUGHT}"
    if ending.code == EXIT_STOP_IGNORED_CPU:
        return "timeout", f"Stopped: the snippet used more than {lim.cpu_s} s of CPU time.{_CAUGHT}"
    if ending.oom or ending.code == EXIT_NO_MEMORY:
        return "memory_limit", (f"Stopped: the snippet used more than {lim.memory_mb} MiB of memory. "
                                "Nothing it recorded could be kept: no memory was left to write it.")
    if ending.signal == signal.SIGXCPU or (ending.signal == signal.SIGKILL and ending.cpu_s >= lim.cpu_s):
        return "timeout", (f"Stopped: the snippet used more than {lim.cpu_s} s of CPU time. Nothing it "
                           "recorded could be kept: its process was ended at the CPU limit before it "
                           "could hand in its graph.")
    if ending.lost:
        return "crashed", "The sandbox worker stopped while the snippet ran; it has been restarted."
    if ending.signal is not None:
        name = _signal_name(ending.signal)
        return "crashed", f"The snippet's process was killed by {name} before it finished."
    if ending.code == EXIT_SETUP_FAILED:
        return "crashed", "The sandbox could not prepare a worker for this run; please try again."
    if ending.code == EXIT_CPU_LIMIT:  # a kind's handler let TimeLimitExceeded escape
        return "timeout", f"Stopped: the snippet used more than {lim.cpu_s} s of CPU time."
    if ending.code == EXIT_WALL_LIMIT:
        return "timeout", f"Stopped: the snippet ran longer than {lim.timeout_s:g} s."
    if ending.code == 0 and ending.result_bytes:
        return "crashed", "The snippet's process returned an invalid result."
    if ending.code == EXIT_INTERNAL:
        return "crashed", "The sandbox failed while running the snippet (internal error)."
    return "crashed", (f"The snippet's process exited with code {ending.code} before it finished "
                       "(sys.exit/os._exit ends the run without a result).")


def cut_output(raw: bytes, limit: int) -> str:
    text = raw[:limit].decode("utf-8", "replace")
    if len(raw) > limit:
        text += TRUNCATION_MARKER.format(limit=human_bytes(limit))
    return text


