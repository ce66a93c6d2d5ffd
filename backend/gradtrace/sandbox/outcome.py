"""Turning what a job left behind into a run document: validate, or explain in a sentence.

Runs in the web process, so it trusts nothing the job produced: the result bytes are capped
before they get here, parsed as JSON (never unpickled), validated against
:class:`gradtrace.schema.RunDocument`, and their ``code``, ``seed`` and ``id`` are overwritten
from the job that was sent. When the job produced nothing usable, the supervisor writes the
document itself with a message a user understands.
"""

from __future__ import annotations

import signal
import threading
from dataclasses import dataclass
from typing import Any

from gradtrace.analysis import analyze
from gradtrace.collector import gc_paused
from gradtrace.jobs import Job
from gradtrace.sandbox.protocol import TIME_LIMIT_ERROR, WALL_STOP_SIGNAL
from gradtrace.schema import RunDocument
from gradtrace.schema.canonical import CanonicalDocument, canonical_with_id, check_json
from gradtrace.schema.fast import validate_strict_json

MAX_DEPTH = 64
"""Deepest nesting a job's document may have (as storage's ``MAX_DEPTH``)."""
EXIT_INTERNAL = 70
EXIT_NO_MEMORY = 71  # mirrors gradtrace.sandbox.child (which the web process must not import)
EXIT_SETUP_FAILED = 72
EXIT_STOP_IGNORED_WALL = 73
EXIT_STOP_IGNORED_CPU = 74
_CAUGHT = (" Nothing it recorded could be kept: it caught the exception that stops it and went on, "
           "so it was ended without its graph.")
EXIT_CPU_LIMIT = 75
EXIT_WALL_LIMIT = 76
TRUNCATION_MARKER = "\n[output cut: the snippet wrote more than {limit}]\n"

VALIDATED = {"strict": 0, "general": 0}
"""Job results validated on each path since the process started (NOTE [fast path] in
:mod:`gradtrace.schema.fast`); ``/metrics`` reports them. ``general`` growing for ordinary
runs means capture writes something the fast path does not take: slower, never wrong."""
_validated_lock = threading.Lock()

_MEMORY_MARKERS = ("can't allocate memory", "not enough memory", "cannot allocate memory",
                   "out of memory")


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


def supervisor_document(job: Job, status: str, message: str, stdout: str) -> CanonicalDocument:
    """A run document for a run that produced no usable result of its own."""
    doc: dict[str, Any] = RunDocument(id="", status=status, message=message, stdout=stdout,  # type: ignore[arg-type]
                                      device=job.device, code=job.code, seed=job.seed,
                                      stdout_truncated=False).model_dump(mode="json", by_alias=True)
    doc["id"], canonical = canonical_with_id(doc)
    return CanonicalDocument(doc, canonical)


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


def validate_result(job: Job, raw: bytes) -> CanonicalDocument | None:
    """The validated document from the job's result bytes, or None when they are not one.

    Validated once and serialised once: the answer carries its canonical JSON, which storage
    keeps as it is. Documents as capture writes them take the fast path (NOTE [fast path] in
    :mod:`gradtrace.schema.fast`); anything else is validated by :class:`RunDocument` itself,
    which decides what is accepted either way. The child's ``id`` is never read: the id is
    the hash of what was validated, with the job's fields set (NOTE [who assigns the id] in
    :mod:`gradtrace.capture.document`).
    """
    try:
        doc = validate_strict_json(raw)
        strict = doc is not None
        if doc is None:
            with gc_paused():
                # Parsed and validated in one pass by pydantic's Rust core.
                doc = RunDocument.model_validate_json(raw).model_dump(mode="json", by_alias=True)
                check_json(doc, MAX_DEPTH)
        doc["code"] = job.code
        doc["seed"] = job.seed
        doc["device"] = job.device
        _memory_error_is_a_limit(job, doc)
        _time_limit_error_is_a_timeout(job, doc)
        _analyse(doc)
        doc["id"], canonical = canonical_with_id(doc)
    except (ValueError, RecursionError, TypeError, UnicodeError, OverflowError):
        return None
    with _validated_lock:
        VALIDATED["strict" if strict else "general"] += 1
    return CanonicalDocument(doc, canonical)


def _analyse(doc: dict[str, Any]) -> None:
    """NOTE [one analysis]: a document's ``analysis`` (:mod:`gradtrace.analysis`) is computed
    once, from the document itself, where the document becomes final: here for the service,
    on what was validated (never the job's own, which is dropped), and in capture's
    ``build_document`` for documents made in process (``record()``, ``gradtrace run``). Here
    the graph and events are parsed already, so it costs only the analysis itself."""
    doc.pop("analysis", None)
    with gc_paused():  # NOTE [fast path]: nothing it builds is cyclic
        found = analyze(doc)
    if found is not None:
        doc["analysis"] = found


def _time_limit_error_is_a_timeout(job: Job, doc: dict[str, Any]) -> None:
    """A snippet stopped at its time limit (NOTE [stop, then kill] in child.py) ran out of time.

    The graph and events it recorded stay; the error keeps the line where it was stopped, and
    the message is the supervisor's own, not text from the job.
    """
    error = doc.get("error")
    if doc.get("status") != "error" or not isinstance(error, dict) or error.get("type") != TIME_LIMIT_ERROR:
        return
    doc["status"] = "timeout"
    if str(error.get("message", "")).startswith("CPU"):
        doc["message"] = f"Stopped: the snippet used more than {job.limits.cpu_s} s of CPU time."
    else:
        doc["message"] = f"Stopped: the snippet ran longer than {job.limits.timeout_s:g} s."


def _memory_error_is_a_limit(job: Job, doc: dict[str, Any]) -> None:
    """An allocation refused by RLIMIT_AS surfaces as the snippet's error; call it memory_limit."""
    error = doc.get("error")
    if doc.get("status") != "error" or not isinstance(error, dict):
        return
    message = str(error.get("message", "")).lower()
    if error.get("type") == "MemoryError" or any(m in message for m in _MEMORY_MARKERS):
        doc["status"] = "memory_limit"
        doc["message"] = f"Stopped: the snippet used more than {job.limits.memory_mb} MiB of memory."
