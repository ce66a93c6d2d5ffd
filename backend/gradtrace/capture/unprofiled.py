"""The recorder's own ATen ops, kept out of a profiler the program runs.

NOTE [the recorder's ops unprofiled]
    A program may profile itself (``torch.profiler.profile``) and print, or check, the ops it
    saw: ``prof.key_averages()`` lists every ATen op run on the thread while it was on. The
    recorder runs ops of its own there: copies of leaves before a step, of gradients it keeps,
    of saved parameters, and the value steps' views and norms. Counted with the program's,
    they changed what it printed (twenty ``aten::clone`` more in a two-layer MLP). So the
    recorder's own work runs with record functions off on its thread, which keeps it from every
    observer of ATen ops:
    * in the C++ core, each copy runs under ``Unprofiled`` (``at::DisableRecordFunctionGuard``,
      cxx/prelude.h), which puts back what it found;
    * in Python, the recorder's entry points that run ops of their own (a backward call's
      bookkeeping, the Python kernels' copies) are wrapped by :func:`unprofiled`. torch has no
      Python call that reads the switch, only one that sets it, so it is turned off only while
      a profiler is on (the program's ops are then being recorded, so it was on) and turned on
      again when the outermost wrapped call returns (``_depth``: a wrapped call within another
      leaves it off).
    The program's own ops that pass through the recorder's hooks (the output tap runs each op
    itself, a backward runs the engine) are left as they are: they are the program's.
    ``tests/capture/faithful_programs.py`` holds programs that print a profile's op counts,
    compared with a bare run on both kernel sets.
    What a profile still tells apart, with the tensor file on: the engine sums two gradients
    of one tensor in place (``aten::add_``) only where it holds their last reference, and the
    recorder holds each gradient that flowed, to keep it (NOTE [kept tensors] in
    tensorfile.py); so such a sum is ``aten::add`` into a new buffer. The numbers are the same
    (addition commutes, bit for bit); ``tensor_budget=0`` keeps none and the counts are the
    bare run's. With ``with_stack=True`` the profiler also lists the recorder's Python calls.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from torch._C._autograd import _enable_record_function, _profiler_enabled

F = TypeVar("F", bound=Callable[..., Any])

_depth = threading.local()
"""How deep this thread is in wrapped calls that turned record functions off."""


def unprofiled(fn: F) -> F:
    """``fn``, run with record functions off while a profiler is on (NOTE [the recorder's ops
    unprofiled])."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        if not _profiler_enabled():
            return fn(*args, **kwargs)
        depth = getattr(_depth, "n", 0)
        if depth == 0:
            _enable_record_function(False)
        _depth.n = depth + 1
        try:
            return fn(*args, **kwargs)
        finally:
            _depth.n = depth
            if depth == 0:
                _enable_record_function(True)

    return run  # type: ignore[return-value]
