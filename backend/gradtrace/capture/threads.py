"""Autograd work done on threads the block started, and whether the recorder saw it
(``RunDocument.threads_unrecorded``).

NOTE [other threads' graphs]
    The torch-function mode that records the graph is per thread (its stack is), so a graph a
    ``threading.Thread`` builds is seen only when something on the block's thread reaches it
    (a backward the block runs, a variable the sweep finds at the end: NOTE [other threads] in
    recorder.py). Four workers that each build a graph and run its backward left 0 nodes and
    0 passes, with status ``ok`` and nothing said. Now every thread started while the block
    runs gets a watching mode as its first Python event (``threading.setprofile``, which
    ``Thread`` hands to each new thread; the watcher removes itself from the profile at once
    and puts back what was there). The watcher records nothing and changes nothing: it counts
    the autograd nodes each torch call made there (the thread's own sequence numbers), keeps
    the latest graph root it saw, and notes each backward call and whether its roots were
    recorded nodes then. When the block ends (after the sweep), a thread whose backward
    ran on unrecorded nodes, or whose latest graph root the recorder never reached, is named
    in ``threads_unrecorded``, with what it did, and the analysis says so. Threads that were
    running before the block (a pool's workers) are not watched; after the block the
    watchers step aside (a daemon thread goes on at its bare speed).
"""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any

import torch
from torch.autograd.graph import Node
from torch.overrides import TorchFunctionMode

from gradtrace.capture.recorder import Recorder

_seq_nr = torch._C._autograd._get_sequence_nr
_BACKWARDS = {torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad}


def _is_backward(func: Any) -> bool:
    try:
        return func in _BACKWARDS
    except TypeError:  # an unhashable callable is no backward API
        return False


class _Work:
    """What one thread did with autograd."""

    __slots__ = ("backward_calls", "name", "nodes", "root", "unrecorded_backward")

    def __init__(self, name: str) -> None:
        self.name = name
        self.nodes = 0
        self.backward_calls = 0
        self.unrecorded_backward = 0
        self.root: Node | None = None


class _Watch(TorchFunctionMode):
    """The watcher on one thread (NOTE [other threads' graphs])."""

    def __init__(self, owner: OtherThreads, work: _Work) -> None:
        super().__init__()
        self.owner = owner
        self.work = work

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        if kwargs is None:
            kwargs = {}
        if not self.owner.active or torch.compiler.is_compiling():
            return func(*args, **kwargs)
        if _is_backward(func):
            self.owner.backward(self.work, args, kwargs)
        mark = _seq_nr()
        out = func(*args, **kwargs)
        made = _seq_nr() - mark
        if made > 0:
            self.work.nodes += made
            if isinstance(out, torch.Tensor) and out.grad_fn is not None:
                self.work.root = out.grad_fn
        return out


class OtherThreads:
    """Watches the threads started during the block (NOTE [other threads' graphs])."""

    def __init__(self, rec: Recorder) -> None:
        # Weakly: each thread's watcher stays on its mode stack for the thread's life (a pool's
        # workers outlive the block), and the recorder must not live as long (NOTE [no cycle
        # outlives the block] in recorder.py); the watchers step aside once the block ends.
        self.rec: Recorder = weakref.proxy(rec)
        self.active = False
        self.work: list[_Work] = []
        self._lock = threading.Lock()
        self._before: Any = None
        self._result: list[dict[str, Any]] | None = None

    def install(self) -> OtherThreads:
        self._before = threading.getprofile()
        self.active = True
        threading.setprofile(self._started)
        return self

    def remove(self) -> None:
        if self.active:
            self.active = False
            threading.setprofile(self._before)

    def _started(self, frame: Any, event: str, arg: Any) -> None:
        """A new thread's first Python event: put its watcher on, step out of the profile."""
        sys.setprofile(self._before)
        if not self.active:
            return
        try:
            work = _Work(threading.current_thread().name)
            with self._lock:
                self.work.append(work)
            _Watch(self, work).__enter__()  # type: ignore[no-untyped-call]  # for the thread's life
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            self.rec.internal_error(e)

    def backward(self, work: _Work, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        work.backward_calls += 1
        roots = args[0] if args else kwargs.get("tensors", kwargs.get("outputs"))
        roots = [roots] if isinstance(roots, torch.Tensor) else list(roots or ())
        try:
            with torch._C.DisableTorchFunction():
                if any(isinstance(t, torch.Tensor) and t.grad_fn is not None
                       and not self.rec.is_known(t.grad_fn) for t in roots):
                    work.unrecorded_backward += 1
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            self.rec.internal_error(e)

    def unrecorded(self) -> list[dict[str, Any]]:
        """The threads whose autograd work the document lacks, for ``threads_unrecorded``:
        worked out once, when the block ends (every document of it says the same)."""
        if self._result is not None:
            return self._result
        out = []
        with self._lock:
            work = list(self.work)
        for w in work:
            missed = w.unrecorded_backward > 0 or (w.root is not None and not self.rec.is_known(w.root))
            if missed:
                out.append({"name": w.name, "nodes": w.nodes, "backward_calls": w.backward_calls,
                            "unrecorded_backward_calls": w.unrecorded_backward})
            w.root = None  # the graph goes with the block
        self._result = out
        return out
