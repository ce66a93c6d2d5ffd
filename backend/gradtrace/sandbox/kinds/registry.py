"""What a job kind is, and the table of kinds a runner carries.

NOTE [adding a job kind] in :mod:`gradtrace.jobs` says what each part receives and must do.
The package's kinds are listed once, in ``BUILTIN`` (``sandbox/kinds/__init__.py``); a runner
adds kinds that exist only in the tests from their files (``kind_files``), each of which
defines ``KIND``. Nothing registers itself by being imported. This module is imported by the
zygote (before it forks), the pool and the queue; it never imports torch.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gradtrace.jobs import Job, JobResult, Params
from gradtrace.sandbox.wire import Answer, decode_job
from gradtrace.schema.canonical import canonical_with_id

FAILURE_SCHEMA_VERSION = 1
"""``schema_version`` of :func:`failure_result`'s answer."""
_FILE_TAG = 8
"""Hex digits of the path's hash in the module name of a job kind loaded from a file (not a
document id: ``tests/capture/test_one_writer.py``)."""

Handler = Callable[[Job], Answer]
Validator = Callable[[Job, Answer], "JobResult | None"]
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
    params: type[Params]
    """The model of its :attr:`Job.params`."""
    handle: Handler
    """Child side, after lock-down: run the job, return its :class:`Answer`."""
    validate: Validator
    """Web side: the answer as a final, typed result, or None when it is not a valid one."""
    failed: Failure = field(default=failure_result)
    """Web side: the supervisor's answer when the child left no valid result."""


class KindTable:
    """The kinds one runner (and its zygote, its children) carries, by name."""

    def __init__(self, kinds: Iterable[JobKind]) -> None:
        self._kinds: dict[str, JobKind] = {}
        for kind in kinds:
            if kind.name in self._kinds:
                raise ValueError(f"job kind {kind.name!r} is listed twice")
            self._kinds[kind.name] = kind

    def kind(self, name: str) -> JobKind:
        """The kind called ``name``; ValueError for one this table does not list."""
        try:
            return self._kinds[name]
        except KeyError:
            raise ValueError(f"unknown job kind {name!r}; known: {sorted(self._kinds)}") from None

    def check(self, job: Job) -> JobKind:
        """``job``'s kind, after checking that its params are that kind's model (ValueError)."""
        kind = self.kind(job.kind)
        if type(job.params) is not kind.params:
            raise ValueError(f"a {job.kind!r} job takes {kind.params.__name__} params, "
                             f"not {type(job.params).__name__}")
        return kind

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._kinds))

    def decode(self, raw: bytes) -> Job:
        """A job's wire form read back, its params validated by its kind's model."""
        return decode_job(raw, lambda name: self.kind(name).params)


def load_kind_file(path: str | Path) -> JobKind:
    """The ``KIND`` that a module outside the package defines (tests add kinds this way; a
    pool passes the same files to its zygote: ``ZygoteConfig.kind_files``)."""
    path = Path(path).resolve()
    name = f"gradtrace_kind_file_{path.stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:_FILE_TAG]}"
    module = sys.modules.get(name)
    if module is None:
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
    kind = getattr(module, "KIND", None)
    if not isinstance(kind, JobKind):
        raise ValueError(f"{path} defines no KIND (a JobKind)")
    return kind

