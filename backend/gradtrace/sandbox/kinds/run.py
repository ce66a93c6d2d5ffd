"""Kind ``run``: record a snippet's autograd graph and answer its run document.

Child side: :func:`gradtrace.capture.run_snippet` (the zygote has imported capture and torch).
Web side: :func:`validate_result` turns the child's bytes into the final run document, and
:func:`supervisor_document` writes one when the child left none. Both run in the web process
(or the queue's worker), so they trust nothing the job produced: the bytes are capped before
they get here, parsed as JSON (never unpickled), validated against
:class:`gradtrace.schema.RunDocument`, and their ``code``, ``seed``, ``device`` and ``id`` are
overwritten from the job that was sent.
"""

from __future__ import annotations

import threading
from typing import Any

from gradtrace.analysis import analyze
from gradtrace.analysis.dynamics import file_reader
from gradtrace.analysis.dynamics.read import Index
from gradtrace.collector import gc_paused
from gradtrace.errors import TensorFileDamaged
from gradtrace.jobs import RUN, Job, JobResult, Params
from gradtrace.sandbox.kinds.registry import JobKind
from gradtrace.sandbox.protocol import SNIPPET_FILENAME, TIME_LIMIT_ERROR
from gradtrace.sandbox.wire import Answer
from gradtrace.schema import RunDocument
from gradtrace.schema.canonical import CanonicalDocument, canonical_with_id, check_json
from gradtrace.schema.fast import validate_strict_json
from gradtrace.storage.tensor_header import check_header, header_length
from gradtrace.storage.tensor_rows import tensor_sha256

MAX_DEPTH = 64
"""Deepest nesting a job's document may have (as storage's ``MAX_DEPTH``)."""
VALIDATED = {"strict": 0, "general": 0}
"""Job results validated on each path since the process started (NOTE [fast path] in
:mod:`gradtrace.schema.fast`); ``/metrics`` reports them. ``general`` growing for ordinary
runs means capture writes something the fast path does not take: slower, never wrong."""
_validated_lock = threading.Lock()

_MEMORY_MARKERS = ("can't allocate memory", "not enough memory", "cannot allocate memory",
                   "out of memory")


def supervisor_document(job: Job, status: str, message: str, stdout: str) -> CanonicalDocument:
    """A run document for a run that produced no usable result of its own."""
    doc: dict[str, Any] = RunDocument(id="", status=status, message=message, stdout=stdout,  # type: ignore[arg-type]
                                      device=job.device, code=job.code, seed=job.seed,
                                      stdout_truncated=False).model_dump(mode="json", by_alias=True)
    doc["id"], canonical = canonical_with_id(doc)
    return CanonicalDocument(doc, canonical)


def validate_result(job: Job, raw: bytes, tensors: bytes | None = None) -> CanonicalDocument | None:
    """The validated document from the job's result bytes, or None when they are not one (or
    when ``tensors``, the tensor file that came with them, is not the file the document names).

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
        index = None
        if tensors is not None:
            index = _checked_index(doc, tensors)
            if index is None:
                return None  # a file the document does not name, or not the one it names
        _analyse(doc, tensors, index)
        doc["id"], canonical = canonical_with_id(doc)
    except (ValueError, RecursionError, TypeError, UnicodeError, OverflowError):
        return None
    with _validated_lock:
        VALIDATED["strict" if strict else "general"] += 1
    return CanonicalDocument(doc, canonical)


def _analyse(doc: dict[str, Any], tensors: bytes | None = None, index: Index | None = None) -> None:
    """NOTE [one analysis]: a document's ``analysis`` (:mod:`gradtrace.analysis`) is computed
    once, from the document itself, where the document becomes final: here for the service,
    on what was validated (never the job's own, which is dropped), and in capture's
    ``build_document`` for documents made in process (``record()``, ``gradtrace run``). Here
    the graph and events are parsed already, so it costs only the analysis itself. ``tensors``:
    the run's validated tensor file, which the dynamics read by key; ``index``: its header as
    checked (``_checked_index``), so that it is not parsed a second time."""
    doc.pop("analysis", None)
    with gc_paused():  # NOTE [fast path]: nothing it builds is cyclic
        found = analyze(doc, file_reader(tensors, index))
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


def handle(job: Job) -> Answer:
    """Run the snippet through capture; answer the document's JSON and its tensor file.

    NOTE [a stopped run keeps its tensors]
        A run stopped at a limit it can answer (its time, the graph, the output, an allocation
        refused inside the snippet) still hands in what it recorded, and its tensor file holds
        what had been kept by then: a partial file, named by the partial document's
        ``tensors``, is sent and stored like any other. A run killed before it could answer
        (no memory left to write it, the CPU limit's kill) has neither.
    """
    from gradtrace.capture import run_snippet  # imported by the zygote

    lim = job.limits
    captured = run_snippet(job.code, device=job.device, seed=job.seed, max_nodes=lim.max_nodes,
                           max_events=lim.max_events, output_bytes=lim.output_bytes, filename=SNIPPET_FILENAME,
                           analysis=False,  # the web process analyses what it validated (NOTE [one analysis])
                           tensor_budget=lim.tensor_bytes or None)
    # Data for the web process, which validates it and gives it its id (NOTE [who assigns the
    # id] in gradtrace/capture/document.py): the graph and events are the core's JSON.
    return Answer(captured.json_without_id(), attachment=captured.tensors)


def result(doc: CanonicalDocument, tensors: bytes | None = None) -> JobResult:
    """A validated run document (and the tensor file it names) as the runner's typed result."""
    return JobResult(RUN, doc.canonical, str(doc["id"]), str(doc["status"]), int(doc["schema_version"]), doc,
                     attachment=tensors)


def validate(job: Job, answer: Answer) -> JobResult | None:
    """The final result, or None (``crashed``) for an answer that is not one.

    The tensor file is the child's too, so it is trusted no more than the document: it is
    accepted only when the validated document names it (``tensors.sha256`` and ``bytes``) and
    its safetensors header parses; a file the document does not name, or a document naming
    a file that did not come, is not a valid answer.
    """
    if len(answer.document) > job.limits.result_bytes:
        return None  # NOTE [answer cap] in jobs.py: the document alone stays within its own cap
    doc = validate_result(job, answer.document, answer.attachment)
    if doc is None or (answer.attachment is None and doc.get("tensors") is not None):
        return None  # the document names a file that did not come
    return result(doc, answer.attachment)


def _checked_index(doc: dict[str, Any], data: bytes) -> Index | None:
    """The index of ``data`` (key -> code, shape, begin, end) when it is the file the document
    names (its length and SHA-256) and its header holds together, else None. The analysis
    reads the file through this index: its header, a JSON object per tensor (13,223 on
    GRU-200), is parsed and checked once in the web process, not once more by the reader."""
    named = doc.get("tensors")
    if not isinstance(named, dict) or named.get("bytes") != len(data) or named.get("sha256") != tensor_sha256(data):
        return None
    try:
        n = header_length(data[:8], len(data))
        with gc_paused():  # NOTE [gc while building documents]: a tuple per tensor, nothing cyclic
            entries = check_header(data[8:8 + n], size=len(data))
            return {key: (dtype, shape, start, end) for start, end, key, dtype, shape in entries}
    except TensorFileDamaged:
        return None


def failed(job: Job, status: str, message: str, stdout: str) -> JobResult:
    return result(supervisor_document(job, status, message, stdout))


KIND = JobKind(RUN, params=Params, handle=handle, validate=validate, failed=failed)
