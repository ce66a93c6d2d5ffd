"""The recorder's own ATen ops, kept from what the program runs to watch its ops.

NOTE [the recorder's ops unseen]
    A program may watch its own ops: a profiler (``torch.profiler.profile``:
    ``prof.key_averages()`` lists every ATen op run on the thread while it was on), or a
    dispatch mode of its own (a ``TorchDispatchMode`` that logs, counts or changes each op,
    ``LoggingTensorMode``'s pattern). The recorder runs ops of its own there: copies of leaves
    before a step, of gradients it keeps, of saved parameters, comparisons of ``.grad``, the
    value steps' views and norms. Seen by the program, they changed what it printed (twenty
    ``aten::clone`` more in a two-layer MLP's profile; a logging mode's list of ops grew by
    clones, detaches and ``aten::equal``), and a mode that changes what ops return would have
    changed the recorder's copies. So the recorder's own work runs unseen:
    * in the C++ core, each copy and alias runs under ``Unseen`` (cxx/prelude.h): the Python
      dispatch keys excluded (what ``torch._C._DisableTorchDispatch`` does) unless the tensor's
      own ops run Python code (a subclass: NOTE [tensor subclasses] in odd_tensors.py, whose
      copy is its own ``__torch_dispatch__``'s), and, where an observer of ATen ops is
      registered, record functions off (``at::DisableRecordFunctionGuard``); both put back
      what they found. ``tensor_data()`` is among them: with a dispatch mode on, torch asks
      the mode to detach;
    * in Python, the recorder's entry points that run ops of their own (a backward call's
      bookkeeping, the gradient edits' checks, the Python kernels' copies) are wrapped by
      :func:`unseen`: record functions off while a profiler is on. torch has no Python call
      that reads that switch, only one that sets it; with a profiler on it was on (the
      program's ops are being recorded), so it is turned on again when the outermost wrapped
      call returns (``_depth``: a wrapped call within another leaves it off).
    The program's own ops that pass through the recorder's hooks (the output tap runs each op
    itself, a backward runs the engine) are left as they are: they are the program's.
    ``tests/capture/faithful_programs.py`` holds programs that print a profile's op counts and
    a FLOP counter's (a dispatch mode), compared with a bare run on both kernel sets;
    ``tests/capture/test_unseen.py`` holds a logging mode to the core's copies.

    What a program still tells apart:
    * a dispatch mode of its own sees the ops of the recorder's Python code (``aten::equal``
      of the gradient edits, the Python kernels' copies, a leaf's ``detach``): excluding the
      Python keys around that code breaks the tensor subclasses its ops must dispatch to
      (MaskedTensor, jagged nested tensors crashed), and popping the program's modes around
      each call would pop torch.compile's own. The C++ core's copies and aliases, the most of
      them, are hidden;
    * with the tensor file on, a profile: the engine sums two gradients of one tensor in place
      (``aten::add_``) only where it holds their last reference, and the recorder holds each
      gradient that flowed, to keep it (NOTE [kept tensors] in tensorfile.py); so such a sum
      is ``aten::add`` into a new buffer. The numbers are the same (addition commutes, bit for
      bit); ``tensor_budget=0`` keeps none and the counts are the bare run's;
    * with ``with_stack=True`` the profiler, and ``cProfile``, list the recorder's Python
      calls.
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


def unseen(fn: F) -> F:
    """``fn``, run with record functions off while a profiler is on (NOTE [the recorder's ops
    unseen])."""

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
