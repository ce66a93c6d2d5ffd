"""Which snippet line and which module were current when autograd sequence number ``s`` was
handed out.

NOTE [lines by sequence number]
    Autograd numbers the nodes it creates from a per-thread counter. If we note the counter
    every time the snippet moves to another line (a ``sys.settrace`` line tracer restricted to
    the snippet's own frames) and every time an ``nn.Module`` is entered or left, then the line
    and module of *any* node follow from its sequence number, however late the recorder first
    sees it: nodes of custom ``autograd.Function``s, of ``torch.compile``d regions, of
    ``torch.ops`` calls, none of which pass through the torch-function mode at call time.

    With the C++ core the tracer is a C function (NOTE [a C line tracer] in ``cxx/tracer.h``);
    without it, ``sys.settrace`` costs one Python call per Python function call (a third of a
    training loop's capture). Either is installed only when no other tracer (a debugger,
    coverage) is active, and otherwise the recorder falls back to the line at discovery time
    (stale nodes then get no line rather than a wrong one). Consecutive notes without a node
    in between replace each other, so the log grows with the number of nodes, not of lines
    executed.
"""

from __future__ import annotations

import sys
import threading
from bisect import bisect_right
from types import FrameType
from typing import Any

import torch

_seq_nr = torch._C._autograd._get_sequence_nr


class SeqLog:
    """A step function from sequence numbers to values (line numbers, module paths)."""

    __slots__ = ("_seqs", "_values", "current")

    def __init__(self, initial: Any = None) -> None:
        self._seqs: list[int] = [-1]
        self._values: list[Any] = [initial]
        self.current = initial

    def note(self, value: Any) -> None:
        seq = _seq_nr()
        self.current = value
        if self._seqs[-1] == seq:
            self._values[-1] = value
        else:
            self._seqs.append(seq)
            self._values.append(value)

    @property
    def steps(self) -> tuple[list[int], list[Any]]:
        """The step function's sequence numbers and values: the very lists ``note`` appends to
        (never replaced), read by the core's discovery and its C line tracer."""
        return self._seqs, self._values

    def at(self, seq: int) -> Any:
        """The value noted last before autograd handed out ``seq``."""
        return self._values[bisect_right(self._seqs, seq) - 1]


class LineTracer:
    """Feeds a :class:`SeqLog` with the current line of the innermost snippet frame: with the
    C++ core, through its C trace function (NOTE [a C line tracer] in ``cxx/tracer.h``), else
    through ``sys.settrace``."""

    def __init__(self, filename: str, *, pending: list[Any] | None = None,
                 wake: list[Any] | None = None, core: Any = None) -> None:
        self.filename = filename
        self.log = SeqLog()
        self.active = False
        self._thread = 0
        self.suspended = False
        self.halted = False
        """Recording stopped at a limit and the program goes on (NOTE [limits] in recorder.py):
        nothing turns tracing on again."""
        self.on_step: Any = None
        """Called (no arguments) when the snippet moves to another line or returns from one of
        its functions, before the move is noted: NOTE [discovery in batches] in recorder.py.
        The C tracer calls it only while ``pending`` or ``wake`` holds something."""
        self._pending = pending if pending is not None else []
        self._wake = wake if wake is not None else []
        self._c = core.Tracer() if core is not None else None

    def install(self) -> bool:
        """Start tracing this thread; False (and no tracing) when another tracer is active."""
        if sys.gettrace() is not None:
            return False
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename != self.filename:
            frame = frame.f_back  # type: ignore[assignment]
        if frame is not None:  # the `with gradtrace.record()` block itself
            if self._c is None:
                frame.f_trace = self._local
            self.log.note(frame.f_lineno)
        if self._c is not None:
            self._c.start(self.filename, self.log, self.on_step, self._pending, self._wake)
        else:
            sys.settrace(self._global)
        self._thread = threading.get_ident()
        self.active = True
        return True

    def _set(self, on: bool) -> None:
        if self._c is not None:
            self._c.set_enabled(on)
        else:
            sys.settrace(self._global if on else None)

    def halt(self) -> None:
        """Stop tracing for good, on the block's thread (safe from inside a trace callback)."""
        if self.active and threading.get_ident() == self._thread:
            self._set(False)
        self.halted = True

    def set_suspended(self, suspended: bool) -> bool:
        """Suspend (or resume) tracing across a whole module call; returns the previous state.
        NOTE [no line tracing inside library modules] in :mod:`gradtrace.capture.modules`."""
        previous = self.suspended
        if (suspended != previous and self.active and not self.halted
                and threading.get_ident() == self._thread):
            self._set(not suspended)
        self.suspended = suspended
        return previous

    def pause(self) -> None:
        """Stop tracing while the recorder works (its own calls are not the snippet's, and
        tracing them would cost a Python call each). Only on the snippet's thread: hooks of
        CUDA backward passes run on autograd's device threads, which are never traced."""
        if self.active and not self.suspended and threading.get_ident() == self._thread:
            self._set(False)

    def resume(self) -> None:
        if (self.active and not self.suspended and not self.halted
                and threading.get_ident() == self._thread):
            self._set(True)

    def uninstall(self) -> None:
        if self.active:
            if self._c is not None:
                self._c.stop()
            else:
                sys.settrace(None)
            self.active = False

    def _global(self, frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == self.filename:
            return self._local
        return None

    def _local(self, frame: FrameType, event: str, arg: Any) -> Any:
        if self.halted:
            return None  # this frame's local tracing ends too
        if event == "line":
            if self.on_step is not None:
                self.on_step()
            self.log.note(frame.f_lineno)
        elif event == "return":
            if self.on_step is not None:
                self.on_step()
            # back to the innermost snippet frame still running (maybe via library code)
            back = frame.f_back
            while back is not None and back.f_code.co_filename != self.filename:
                back = back.f_back
            if back is not None:
                self.log.note(back.f_lineno)
        return self._local
