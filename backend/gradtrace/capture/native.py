"""The kernels a recorder runs on: the C++ core (``_native.cpp``) when it was built (NOTE
[building the core] in :mod:`gradtrace.capture.build_native`), else its Python twin
(:class:`gradtrace.capture.pycore.PyCore`, NOTE [one recorder, two kernel sets] there).

``GRADTRACE_KERNELS=python`` (or ``gradtrace.record(native=False)``) chooses the twin even
where the core is built: the tests run every capture test on each kernel set that way.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from typing import Any


def _load() -> ModuleType | None:
    try:
        return importlib.import_module("gradtrace.capture._native")
    except ImportError:  # not built in the package (a wheel): build it on first use, or fall back
        from gradtrace.capture.build_native import load_or_build

        return load_or_build()


core = _load()
_warned: set[str] = set()


def available() -> bool:
    """Whether the C++ core is importable here."""
    return core is not None


def default_native() -> bool:
    """The kernel set a recorder uses unless told: the core when built, unless
    ``GRADTRACE_KERNELS=python``."""
    kernels = os.environ.get("GRADTRACE_KERNELS", "").strip().lower()
    if kernels not in ("", "native", "python") and kernels not in _warned:
        _warned.add(kernels)  # said once, not at every recording
        print(f"gradtrace: GRADTRACE_KERNELS={kernels!r} is not 'native' or 'python'; "
              "using the default", file=sys.stderr)
    return available() and kernels != "python"


def make_core(use_native: bool | None = None) -> Any:
    """A fresh core for one recorder: ``_native.Recorder`` or ``PyCore``, which answer the same
    calls (NOTE [one recorder, two kernel sets] in pycore.py)."""
    if use_native is None:
        use_native = default_native()
    if not use_native:
        from gradtrace.capture.pycore import PyCore

        return PyCore()
    if core is None:
        raise RuntimeError("gradtrace's C++ capture core is not built "
                           "(make native, or python backend/gradtrace/capture/build_native.py)")
    return core.Recorder()


def is_native(kernels: Any) -> bool:
    """Whether a core made by :func:`make_core` is the C++ one."""
    return core is not None and isinstance(kernels, core.Recorder)
