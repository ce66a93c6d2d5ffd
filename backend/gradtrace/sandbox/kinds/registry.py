"""The table of job kinds: for each, its child-side handler and how the web side reads its answer.

NOTE [adding a job kind] in :mod:`gradtrace.jobs` says what each part receives and must do.
This module is imported by the zygote (before it forks), the pool and the queue runner; it
never imports torch.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gradtrace.jobs import Job, JobResult
from gradtrace.schema.canonical import canonical_with_id

SNIPPET_FILENAME = "<snippet>"
"""The file name user code is compiled with (NOTE [stop, then kill] in ``sandbox/child.py``)."""
FAILURE_SCHEMA_VERSION = 1
"""``schema_version`` of :func:`failure_result`'s answer."""


@dataclass(frozen=True)
class ChildJob:
    """What a kind's handler receives in the locked-down child (read from the job pipe)."""

    kind: str
    code: str
    device: str
    seed: int | None
    params: Mapping[str, Any]
    max_nodes: int
    max_events: int
    output_bytes: int
    filename: str = SNIPPET_FILENAME


Handler = Callable[[ChildJob], bytes]
Validator = Callable[[Job, bytes], "JobResult | None"]
Failure = Callable[[Job, str, str, str], JobResult]


def failure_result(job: Job, status: str, message: str, stdout: str) -> JobResult:
    """The supervisor's answer for a job of a kind without its own ``failed``: a small JSON
    object saying how the job ended, with its content id."""
    doc: dict[str, Any] = {"id": "", "kind": job.kind, "schema_version": FAILURE_SCHEMA_VERSION,
                           "status": status, "message": message, "stdout": stdout,
                           "device": job.device, "seed": job.seed}
    doc["id"], canonical = canonical_with_id(doc)
    return JobResult(job.kind, canonical, doc["id"], status, FAILURE_SCHEMA_VERSION, doc)


@dataclass(frozen=True)
class JobKind:
    """One kind of sandboxed job (NOTE [adding a job kind] in :mod:`gradtrace.jobs`)."""

    name: str
    handle: Handler
    """Child side, after lock-down: run the job, return the result's JSON bytes."""
    validate: Validator
    """Web side: the result bytes as a typed result, or None when they are not a valid one."""
    failed: Failure = field(default=failure_result)
    """Web side: the supervisor's answer when the child left no valid result."""


_KINDS: dict[str, JobKind] = {}


def register(kind: JobKind) -> JobKind:
    """Add ``kind`` to the table; a second kind under a taken name is a ValueError."""
    known = _KINDS.get(kind.name)
    if known is not None and known is not kind:
        raise ValueError(f"job kind {kind.name!r} is registered twice")
    _KINDS[kind.name] = kind
    return kind


def kind(name: str) -> JobKind:
    """The registered kind called ``name``; ValueError for one no module registers."""
    try:
        return _KINDS[name]
    except KeyError:
        raise ValueError(f"unknown job kind {name!r}; known: {sorted(_KINDS)}") from None


def kinds() -> tuple[str, ...]:
    """The names of every registered kind."""
    return tuple(sorted(_KINDS))


def load_kind_file(path: str | Path) -> None:
    """Import a kind's module from a file outside the package (tests register theirs this way;
    a pool passes the same files to its zygote: ``ZygoteConfig.kind_files``)."""
    path = Path(path).resolve()
    name = f"gradtrace_kind_file_{path.stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"
    if name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot import a job kind from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
