"""``gradtrace.record``: the public, in-process way to record a block of PyTorch code.

Example (a notebook cell)::

    import gradtrace, torch
    with gradtrace.record() as rec:
        x = torch.tensor(2.0, requires_grad=True)
        y = x * x + 3 * x
        y.backward()
    doc = rec.document()        # a gradtrace.schema.RunDocument
    doc.graph.nodes[0].name     # 'AccumulateGrad'

Lines are lines of the file that contains the ``with`` statement; everything it calls (your
functions in the same file, library code, modules) is attributed to those lines. Inside library
modules the torch-function mode steps aside (NOTE [no tap inside library modules]): their nodes
are found from the module's result. Every hook and
the torch-function mode are removed when the block ends, also when it raises. A limit hit ends
the block quietly (the document's status says ``graph_limit``); any other exception propagates
after being recorded in the document.
"""

from __future__ import annotations

import contextlib
import functools
import linecache
import sys
import traceback
import warnings
from types import TracebackType
from typing import Any

from gradtrace.analysis.run import analyze_parts
from gradtrace.capture.captured import CapturedDocument
from gradtrace.capture.compiled import QuietGlobalHooks, backend_unavailable, hide_from_dynamo
from gradtrace.capture.definitions import watch_parameters
from gradtrace.capture.diagnose import describe_error, describe_raise
from gradtrace.capture.document import build_document, tensor_reader
from gradtrace.capture.events import LimitReached
from gradtrace.capture.folded import Folds
from gradtrace.capture.library import LibraryCalls
from gradtrace.capture.mode import CaptureMode
from gradtrace.capture.modules import ModuleTracker
from gradtrace.capture.recorder import Recorder
from gradtrace.capture.tensorfile import DEFAULT_RECORD_BUDGET
from gradtrace.capture.threads import OtherThreads
from gradtrace.capture.warnsite import WarningSite
from gradtrace.collector import BlockCollector, gc_paused
from gradtrace.notebook.run import NotebookRunDocument
from gradtrace.schema import RunDocument

MAX_SOURCE_CHARS = 512 * 1024
"""A block's file larger than this is not put in the document (its lines still are)."""


def source_of(filename: str) -> str | None:
    """The text of the file the block ran in, so the page and the widget show the code its
    node lines point at: a script, or a notebook cell (IPython registers cells in linecache).
    None when it cannot be read or is too large."""
    lines = linecache.getlines(filename)
    text = "".join(lines)
    return text if text and len(text) <= MAX_SOURCE_CHARS else None


def error_line(exc: BaseException, filename: str) -> int | None:
    """The line of the innermost snippet frame in the exception's traceback."""
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        return exc.lineno
    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == filename:
            line = lineno
    return line


class record:
    """Record every autograd node and backward pass created inside the ``with`` block."""

    def __init__(self, *, max_nodes: int = 50_000, max_events: int = 200_000,
                 max_document_bytes: int = 28 << 20, native: bool | None = None,
                 _filename: str | None = None, _namespace: dict[str, Any] | None = None,
                 tensor_budget: int | None = DEFAULT_RECORD_BUDGET, dynamics: bool = True,
                 _fresh: bool = False, _stop_program: bool = False) -> None:
        for name, value in (("max_nodes", max_nodes), ("max_events", max_events),
                            ("max_document_bytes", max_document_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"gradtrace.record: {name} must be a positive whole number, "
                                 f"not {value!r}")
        if tensor_budget is not None and (isinstance(tensor_budget, bool) or not isinstance(tensor_budget, int)
                                          or tensor_budget < 0):
            raise ValueError("gradtrace.record: tensor_budget must be a whole number of bytes (0 or more) "
                             f"or None for no tensor file, not {tensor_budget!r}")
        if not isinstance(dynamics, bool):
            raise ValueError(f"gradtrace.record: dynamics must be True or False, not {dynamics!r}")
        self.tensor_budget = tensor_budget
        self.dynamics = dynamics
        """Follow the leaves' values around each step and compute the training dynamics
        (NOTE [a leaf's value around each step] in valuesteps.py, analysis/dynamics/); False:
        the document has no ``value_steps``, no ``analysis.dynamics`` and no hint from them."""
        """The tensor file's byte budget (NOTE [what the budget keeps first] in tensorfile.py);
        None: no tensor file."""
        self.max_nodes = max_nodes
        self.max_events = max_events
        self.max_document_bytes = max_document_bytes
        self.native = native
        """The kernel set (NOTE [one recorder, two kernel sets] in pycore.py): None = the C++
        core when built (unless GRADTRACE_KERNELS=python), True = the core, False = its Python
        twin."""
        self._filename = _filename
        self._namespace = _namespace
        self._fresh = _fresh
        """The block runs in a namespace made for it (``run_snippet``): no older graph can be
        reached, so none is cut off (NOTE [nodes from before the block] in graph.py)."""
        self._stop_program = _stop_program
        """A limit stops the program, not only the recording (``run_snippet``: NOTE [limits]
        in recorder.py)."""
        self._rec: Recorder | None = None
        self._mode: CaptureMode | None = None
        self._library: LibraryCalls | None = None
        self._threads: OtherThreads | None = None
        self._module_handles: list[Any] = []
        self.status = "ok"
        self.error: dict[str, Any] | None = None
        self._stopped_at: int | None = None
        """The snippet line a limit stopped the program at (NOTE [limits] in recorder.py)."""
        self._note: str | None = None
        """What the document's ``message`` says when no limit does (NOTE [a backend that
        cannot run here] in compiled.py)."""
        self._collector = BlockCollector()  # NOTE [gc around a recorded block] in gradtrace/collector.py

    def __enter__(self) -> record:
        hide_from_dynamo()  # NOTE [invisible to dynamo] in compiled.py
        caller = sys._getframe(1)
        filename = self._filename or caller.f_code.co_filename
        rec = Recorder(filename, max_nodes=self.max_nodes, max_events=self.max_events,
                       max_document_bytes=self.max_document_bytes, use_native=self.native,
                       stop_program=self._stop_program, tensor_budget=self.tensor_budget)
        rec.namespace = self._namespace if self._namespace is not None else caller.f_globals
        rec.steps.on = self.dynamics
        if not self._fresh:
            # a block in a namespace that lived before it (a notebook cell, a script): older
            # graphs live there; a snippet's fresh namespace holds none (NOTE [nodes from
            # before the block] in graph.py)
            rec.begin_block()
        self._rec = rec
        self._mode = CaptureMode(rec)
        self._library = LibraryCalls(rec, self._mode)
        threads = self._threads = OtherThreads(rec)
        module_hooks = ModuleTracker(rec, self._library).install()
        self._module_handles = [*module_hooks, QuietGlobalHooks(module_hooks), *self._library.install(),
                                watch_parameters(rec), threads.install(), WarningSite(self._mode.pass_through()),
                                *Folds(rec, self._mode).install()]
        self._collector.enter()
        try:
            self._mode.__enter__()  # type: ignore[no-untyped-call]
            if rec.outputs is not None:
                rec.outputs.__enter__()  # type: ignore[no-untyped-call]
            rec.tracer.install()
        except BaseException:
            self._remove()
            raise
        return self

    def _remove(self) -> None:
        self._collector.exit()
        if self._rec is not None:
            self._rec.tracer.uninstall()
        handles, self._module_handles = self._module_handles, []
        for h in handles:
            h.remove()
        if self._rec is not None:
            self._rec.remove_hooks()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        try:
            if self._library is not None:
                self._library.restore(exc)
            if self._rec is not None and self._rec.outputs is not None:
                self._rec.outputs.__exit__(exc_type, exc, tb)  # type: ignore[no-untyped-call]
            if self._mode is not None:
                self._mode.__exit__(exc_type, exc, tb)  # type: ignore[no-untyped-call]
            if self._rec is not None and self._rec.limit is None:
                self._rec.tracer.pause()
                with contextlib.suppress(LimitReached):
                    self._rec.flush()  # NOTE [discovery in batches]: the last line's nodes
                # NOTE [variables of intermediates]: the last line's results, by the frame
                # that ran the block (the snippet's globals, or a function's locals)
                self._rec.name_results(self._namespace if self._namespace is not None
                                       else sys._getframe(1).f_locals)
        finally:
            self._remove()
        rec = self._rec
        assert rec is not None
        try:
            rec.finish()
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            rec.internal_error(e)
        if rec.limit is None:
            try:
                rec.sweep()
            except LimitReached:
                pass
            except Exception as e:  # NOTE [the recorder never breaks the snippet]
                rec.internal_error(e)
        if rec.limit is not None:
            self.status = "graph_limit"
            if not self._stop_program:  # NOTE [limits] in recorder.py: the block ran to its end
                warnings.warn(f"gradtrace.record: recording stopped early: {rec.limit}. The rest "
                              "of the block ran unrecorded; rec.document() has what was recorded "
                              "(status 'graph_limit'). Raise the limit with gradtrace.record("
                              "max_nodes=..., max_events=..., max_document_bytes=...).",
                              RuntimeWarning, stacklevel=2)
        if exc is not None and not isinstance(exc, LimitReached):
            self.note_error(exc)
        if isinstance(exc, LimitReached):
            self._stopped_at = error_line(exc, rec.filename)
        if self._threads is not None:  # NOTE [other threads' graphs] in threads.py
            try:
                rec.threads_unrecorded = self._threads.unrecorded()
            except Exception as e:  # NOTE [the recorder never breaks the snippet]
                rec.internal_error(e)
            self._threads = None
        if not self._stop_program:
            # NOTE [no cycle outlives the block] in recorder.py, in process only: a sandbox or
            # CLI run (``run_snippet``) is a process of its own that ends with its one run, so
            # freeing the recorder early gains nothing there; and a run its time limit stopped
            # inside the core has crashed (SIGSEGV, tests/sandbox/test_stop_under_load.py) when
            # the core was destroyed before the process ended, which it otherwise never is
            self._let_go()
        return isinstance(exc, LimitReached)

    def _let_go(self) -> None:
        """NOTE [no cycle outlives the block] in recorder.py."""
        rec = self._rec
        assert rec is not None
        try:
            if self._mode is not None:
                self._mode.let_go()
            rec.let_go()
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            rec.internal_error(e)

    def note_error(self, exc: BaseException) -> None:
        """Record ``exc`` as the run's error (type, message, line, and for autograd errors the
        node concerned)."""
        rec = self._rec
        assert rec is not None
        if self.status == "ok":
            self.status = "error"
        self.error = {"type": type(exc).__name__, "message": str(exc),
                      "line": error_line(exc, rec.filename)}
        try:
            self.error.update(describe_raise(rec, exc))
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            rec.internal_error(e)
        self.error.update(describe_error(rec, exc))
        words = backend_unavailable(exc)  # NOTE [a backend that cannot run here] in compiled.py
        if words is not None:
            self.error["detail"] = words
            self._note = words

    @property
    def recorder(self) -> Recorder:
        if self._rec is None:
            raise RuntimeError("gradtrace.record: use it as a `with` block first")
        return self._rec

    def document(self, *, code: str | None = None) -> RunDocument:
        """The run document of what was recorded (a pydantic ``RunDocument``), built from
        capture's one exit (NOTE [capture's one exit] in capture/captured.py). ``code``: the
        text the document shows as the run's code (the cell magic's cell); by default the
        file the block ran in.

        NOTE [documents in process]: the graph and events are kept as their canonical JSON
        (the C++ core's parts as they are), read as read-only views of it when first read,
        and validated as pydantic models when something needs the models, or on
        ``doc.validated()`` (NOTE [a document built on first use] in
        gradtrace/notebook/run.py); the analysis and the id are computed when first read
        (NOTE [an id and an analysis on first use] there). The cyclic collector is paused
        meanwhile (NOTE [gc while building documents] in gradtrace/collector.py)."""
        fields: dict[str, Any] = {"analysis": False}
        if code is not None:
            fields["code"] = code
        captured = self._captured(**fields)
        with gc_paused(settle=True):
            out = NotebookRunDocument.from_capture(  # the dynamics read the kept tensors
                captured.fields, functools.partial(analyze_parts, tensors=tensor_reader(self.recorder),
                                                   dynamics=self.dynamics))
        out._tensor_store = self.recorder.tensor_file  # NOTE [tensors by key] in notebook/run.py
        return out

    def _captured(self, **fields: Any) -> CapturedDocument:
        """What was recorded as capture's one exit (NOTE [capture's one exit] in
        capture/captured.py): the document without its id, built once by
        :func:`~gradtrace.capture.document.build_document` (``fields`` override its top-level
        fields), and the tensor file's bytes when one was kept. :func:`run_snippet` answers it;
        :meth:`document` reads it."""
        rec = self.recorder
        message = rec.limit
        if message is not None and not self._stop_program:  # NOTE [limits] in recorder.py
            message += "; recording stopped there, and the rest of the block ran unrecorded"
        elif message is not None:  # the program was stopped: where, and what is kept
            at = f" at line {self._stopped_at}" if self._stopped_at is not None else ""
            done = sum(1 for p in rec.passes if p.doc["completed"] and "within" not in p.doc)
            message += (f"; the program was stopped there{at}, after {done:,} completed backward "
                        f"pass{'es' if done != 1 else ''}; what it printed until then is kept")
        if message is None:
            message = self._note
        base: dict[str, Any] = {"status": self.status, "error": self.error, "message": message,
                                "code": source_of(rec.filename)}
        base.update(fields)
        doc = build_document(rec, **base)
        kept = rec.tensor_file
        return CapturedDocument(doc, kept.data if kept is not None else None)
