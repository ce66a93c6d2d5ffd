"""Job kinds: one module each, imported (and so registered) when this package is imported.

NOTE [adding a job kind] in :mod:`gradtrace.jobs`. The zygote imports this package before it
forks; the pool and the queue runner import it on the web side. No module here imports torch
at its top level.
"""

from __future__ import annotations

import importlib
import pkgutil

from gradtrace.sandbox.kinds.registry import ChildJob, JobKind, failure_result, kind, kinds, load_kind_file, register

__all__ = ["ChildJob", "JobKind", "failure_result", "kind", "kinds", "load_kind_file", "register"]

for _info in pkgutil.iter_modules(__path__, prefix=f"{__name__}."):
    if _info.name != f"{__name__}.registry":
        importlib.import_module(_info.name)
