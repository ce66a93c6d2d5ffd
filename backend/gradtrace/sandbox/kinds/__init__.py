"""Job kinds: one module each, listed once here in ``BUILTIN``.

NOTE [adding a job kind] in :mod:`gradtrace.jobs`. The zygote builds its table before it
forks; the pool and the queue build theirs on the web side. No module here imports torch at
its top level.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gradtrace.sandbox.kinds import gradcheck, run
from gradtrace.sandbox.kinds.registry import JobKind, KindTable, failure_result, load_kind_file

BUILTIN: tuple[JobKind, ...] = (run.KIND, gradcheck.KIND)
"""Every kind of the package."""

__all__ = ["BUILTIN", "JobKind", "KindTable", "failure_result", "load_kind_file", "table"]


def table(kind_files: Sequence[str | Path] = ()) -> KindTable:
    """The package's kinds and those of ``kind_files`` (kinds that exist only in the tests)."""
    return KindTable([*BUILTIN, *(load_kind_file(path) for path in kind_files)])
