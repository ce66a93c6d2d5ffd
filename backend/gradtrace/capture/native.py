"""The C++ capture core (``_native.cpp``), when it was built (NOTE [building the core] in
:mod:`gradtrace.capture.build_native`).

With it, every node's backward hook, the gradients' values and stats, and the events' JSON are
C++ (NOTE [why C++] in the source); without it the recorder does the same in Python, several
times slower. ``make install`` builds it; ``gradtrace.record(native=False)`` forces the Python
path (the tests run both and compare them).
"""

from __future__ import annotations

import importlib
from types import ModuleType


def _load() -> ModuleType | None:
    try:
        return importlib.import_module("gradtrace.capture._native")
    except ImportError:  # not built in the package (a wheel): build it on first use, or fall back
        from gradtrace.capture.build_native import load_or_build

        return load_or_build()


core = _load()

NULL_LINE = -(2**31)
"""The core's ``None`` for a line number (an int32)."""


def available() -> bool:
    """Whether the C++ core is importable here."""
    return core is not None
