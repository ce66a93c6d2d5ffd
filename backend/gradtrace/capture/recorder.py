"""The recorder's state: what has been seen so far, and the hooks that see backward run.

One :class:`Recorder` lives for one run (``run_snippet``) or one ``with gradtrace.record()``
block. :mod:`gradtrace.capture.mode` feeds it forward calls and backward passes;
:mod:`gradtrace.capture.document` turns it into a run document at the end.

NOTE [limits]
    Past ``max_nodes`` or ``max_events`` the recorder records nothing more, and the document
    keeps what it has, with status ``graph_limit``. What happens to the program depends on who
    runs it (``stop_program``). A snippet in the sandbox is stopped: the recorder raises
    :class:`LimitReached` (a BaseException, so a snippet's ``except Exception`` cannot swallow
    it), which keeps a runaway loop from running on unrecorded. Code in an in-process
    ``gradtrace.record()`` block is the user's own program (a training loop in a notebook),
    which recording must never change: there the recorder raises :class:`RecordingStopped`
    inside itself only, every entry point from the program returns quietly (as the hooks on
    other threads do), the line tracer is halted, and the block runs to its end unrecorded;
    ``record`` warns once when the block ends. The same happens when the document would pass
    ``max_document_bytes``: a running over-estimate of its JSON size (``_COST`` per node, event,
    edge and TensorValue, plus a fixed 512 KiB for the values budget, code and stdout) keeps a
    big graph from turning into a result the sandbox must refuse as too large.

NOTE [other threads]
    Recording never changes what the program does, on any thread. A backward that another
    thread runs (``threading.Thread(target=y.backward)``) never passes through the
    torch-function mode (its stack is per thread), but the node hooks see it: it is recorded
    as an ``engine`` pass. Should a cap be hit in a hook there, the recorder stops recording
    (the document says ``graph_limit`` with its message) but raises nothing in that thread
    (:class:`RecordingStopped` stays inside the recorder's hooks): only the block's own thread
    is stopped by :class:`LimitReached`, and only when ``stop_program``. The core's budget for
    such a pass is kept current whenever the estimate changes (``_sync_bytes``), not only
    when the mode starts a pass, and what its hooks recorded is taken in at the end of the
    block too (``finish``).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson
import torch
from torch import nn
from torch.autograd.graph import Node

from gradtrace.capture import definitions, frames, native, pycore
from gradtrace.capture.dropouts import DropoutsInEval
from gradtrace.capture.events import LimitReached, ModulePath, PassInfo, RecordingStopped
from gradtrace.capture.gradedits import GradEdits
from gradtrace.capture.gradfn import grad_fn_or_none
from gradtrace.capture.graph import FnInfo, before_block
from gradtrace.capture.odd_tensors import shape_of
from gradtrace.capture.outputs import NativeTap, OutputTap
from gradtrace.capture.resets import GradResets
from gradtrace.capture.saved import saved_hooks_active
from gradtrace.capture.tangents import Tangents
from gradtrace.capture.tensorfile import TensorFile
from gradtrace.capture.timeline import LineTracer, SeqLog
from gradtrace.capture.unseen import unseen
from gradtrace.capture.values import ValueStore, device_name, dtype_name
from gradtrace.capture.valuesteps import ValueSteps

_seq_nr = torch._C._autograd._get_sequence_nr

_COST = {"function": 290, "saved": 150, "tensor": 500, "forward": 140, "backward": 140,
         "value": 185, "edge": 65, "step": 60, "series": 50}
"""Upper estimates of the canonical JSON bytes of each part (NOTE [limits]).

NOTE [what a node costs]
    A function node's fixed keys and numbers (ids, line, sequence number, dtype, a variable's
    name) take at most ``function`` bytes; its name, its first output's shape (8 bytes a
    dimension) and, for a node with several outputs, each output's meta (``OUTPUT_COST``) are
    charged by their length, as its module stack and saved arguments are. A flat 380 bytes a
    node charged a polynomial fit's ``MulBackward0`` 130 bytes more than it writes.

NOTE [what a value costs]
    A TensorValue is charged ``value`` bytes when its dtype is eight bytes wide or complex (a
    float64's stats are four 23-character numbers) and 35 bytes less otherwise (a float32's
    are at most 15 characters each). With the node costs above, a 2,000-iteration tutorial
    loop (``y = a + b x + c x² + d x³`` over 2,000 points, manual SGD) is estimated at 25 MB
    and writes 23 MB, within the default 28 MB; before, it was estimated at 28 MB by
    iteration 1,960 (``tests/api/test_full_length.py``).

NOTE [what a step costs]
    A leaf's ``value_steps`` entry (``{"at", "delta", "norm"}``, two float32 norms) writes at
    most ``step`` bytes, and each backward adds one row per leaf to the dynamics' series in
    the analysis (‖grad‖, mean and max |grad|, an update ratio) of at most ``series`` bytes:
    charged after each backward call, so a long training loop's estimate stays an upper bound
    (``tests/capture/test_flows.py``)."""



class Recorder:
    """Everything recorded so far, plus the bookkeeping to keep recording."""

    name_results_on = True
    """Whether intermediates get their variables (NOTE [variables of intermediates] in
    definitions.py); off only for ``bench/bench_capture.py``'s old-vs-new row."""

    def __init__(self, filename: str, *, max_nodes: int, max_events: int,
                 max_document_bytes: int = 28 << 20, use_native: bool | None = None,
                 stop_program: bool = True, tensor_budget: int | None = None) -> None:
        self.filename = filename
        self.tensor_budget = tensor_budget
        """The tensor file's byte budget; None: no tensor file (NOTE [kept tensors] in
        tensorfile.py)."""
        self.outputs: OutputTap | NativeTap | None = None
        """Forward outputs (NOTE [forward outputs through a key of the tap's own] in outputs.py), set
        with the kernels below."""
        self.tensor_file: TensorFile | None = None
        """The last document's tensor file (``build_document``)."""
        self.stop_program = stop_program
        """Whether a limit stops the program too, or only the recording (NOTE [limits])."""
        self.max_document_bytes = max_document_bytes
        # fixed part: top-level fields, code and stdout (each capped at 64 KiB by the service)
        # and the values budget (10,000 numbers)
        self.size_estimate = 512 << 10
        self.max_nodes = max_nodes
        self.max_events = max_events
        self.nodes: list[dict[str, Any] | None] = []
        """Entries by index; ``None``: a function node whose entry the core keeps (NOTE [node
        entries in C++])."""
        self._fn_by_id: dict[str, FnInfo] = {}
        self._n_infos = 0
        self._infos_changes = 0
        self.tensors: dict[int, tuple[torch.Tensor, dict[str, Any]]] = {}
        self.optimized: dict[int, weakref.ref[torch.Tensor]] = {}
        """NOTE [leaves an optimizer holds]: every tensor in the ``param_groups`` of an optimizer
        whose ``step()`` ran during the block (``LibraryCalls._step_pre``), by ``id``, held weakly
        (a ``WeakSet`` compares tensors with ``==``, elementwise): ``is_optimized``."""
        self.stepped_twice: dict[int, list[int]] = {}
        """NOTE [one gradient, two optimizers] in library.py: the lines of the two steps that
        updated a leaf (by ``id``, among ``optimized``) with one and the same gradient."""
        self.state_restarts: dict[int, list[Any]] = {}
        """NOTE [an optimizer made afresh] in library.py: by parameter ``id``, [the parameter held
        weakly, the optimizer's class, the steps of optimizers keeping state that updated it,
        how many of them after its first started from no state, the line of the first such]."""
        self.edges: list[dict[str, Any] | range] = []
        """Edges in document order; a ``range``: the edges of those function nodes, kept by the
        core (NOTE [node entries in C++])."""
        self.passes: list[PassInfo] = []
        self._active_pass: int | None = None
        self.core: Any = native.make_core(use_native)
        """The kernels (NOTE [one recorder, two kernel sets] in pycore.py)."""
        self.core.set_keep_budget(tensor_budget or 0)  # NOTE [held within the budget] in tensorfile.py
        if tensor_budget is not None:  # the tap charges the same budget (NOTE [the tap in C++])
            self.outputs = NativeTap(self.core) if native.is_native(self.core) else OutputTap(self.core)
        self.values = ValueStore(self.core)
        self.boundary = 0
        """Autograd's sequence number when the block began: NOTE [nodes from before the block]
        in graph.py."""
        self._thread = threading.get_ident()
        """The block's thread (NOTE [other threads])."""
        self.limit: str | None = None
        self.module_stack: list[ModulePath | None] = []
        self.module_calls: dict[str, list[Any]] = {}
        self.module_train_lines: dict[str, list[int]] = {}
        self.module_modes: dict[str, list[dict[str, Any]]] = {}
        """NOTE [a module's modes] in modules.py."""
        self.dropouts = DropoutsInEval(filename)
        """Functional dropouts left training in modules in eval mode (NOTE [functional dropout
        ignores eval()] in dropouts.py)."""
        self.module_frozen: dict[str, list[str]] = {}
        self.module_params: dict[str, list[tuple[str, torch.Tensor]]] = {}
        """Each called module's own parameters that required grad at its first call
        (NOTE [frozen parameters] in definitions.py)."""
        """NOTE [frozen parameters] in definitions.py."""
        """NOTE [training mode under no_grad] in capture/modules.py."""
        """Named modules called so far: path -> [class name, calls] (NOTE [module calls] in
        modules.py)."""
        self.module_error: tuple[BaseException, str | None, str, list[list[int]]] | None = None
        """The innermost module the latest exception was raised in: (exception, path, class
        name, shapes of its tensor arguments)."""
        self.op_error: tuple[BaseException, str, list[list[int]], str | None] | None = None
        """The innermost torch call the tap saw raise: (exception, its name, shapes of its tensor
        arguments, the node of the first of them when it has one)."""
        self.cuts: dict[int, tuple[torch.Tensor, str]] = {}
        self.tensor_edges: set[tuple[str, str]] = set()
        """(source, target) of the edges from a function node to a root's or a retained
        tensor's node, so that a pass's root edge is added once without a scan of ``edges``
        (a 2,000-pass loop's look through every edge each pass was quadratic)."""
        self.inplace_log: deque[tuple[int, int | None, str, int, Node | None]] = deque(maxlen=10_000)
        """(storage address, line, op, nodes so far, the node it made) of in-place changes, the
        latest kept (a diagnosis looks for the last change after a node was made)."""
        self.resets = GradResets()
        """Accumulated leaves' ``.grad`` as last seen: NOTE [grad resets] in resets.py."""
        self._names_cache: tuple[Any, int, frames.NameIndex] | None = None
        self.threads_unrecorded: list[dict[str, Any]] = []
        """NOTE [other threads' graphs] in threads.py: worked out when the block ends."""
        self.namespace: dict[str, Any] | None = None
        """The snippet's globals, for naming tensors at the end (NOTE [names])."""
        self.recorder_errors: list[str] = []
        self.n_recorder_errors = 0
        self.leaf_lines = definitions.LeafLines()
        """NOTE [where leaves are defined] in definitions.py."""
        self.var_names: set[int] = set()
        """Function nodes (by index) already given their variable (NOTE [variables of
        intermediates] in definitions.py)."""
        self._named_upto = 0
        self.fresh_views: dict[int, tuple[torch.Tensor, Node]] = {}
        """View results of the torch calls since the last look, with their nodes: NOTE
        [variables of intermediates] in definitions.py."""
        self._in_step = False
        self._name_wake: Callable[[], None] | None = self._wake_for_names
        self.ended = False
        """The block is over (``let_go``): what its hooks see later is not the block's."""
        self.pending: list[Node] = []
        """Nodes made by the current line, not walked yet (NOTE [discovery in batches]); one
        list for the whole run (the C line tracer looks at it)."""
        self.wake: list[Callable[[], None]] = []
        """Called at the snippet's next line (NOTE [optimizer steps] in library.py), then
        dropped: each removes itself."""
        self.edits = GradEdits(self.values.capture_copy, self.wake, self._accumulated_hook, self._edit_cost)
        """Accumulated leaves' ``.grad`` as last seen: NOTE [gradient edits] in gradedits.py."""
        if self.outputs is not None:  # NOTE [held gradients copied before a write] in cxx/tap.h
            self.edits.unseen = self.outputs.stale
        self.steps = ValueSteps()
        """Leaves' values after their last backward: NOTE [a leaf's value around each step] in valuesteps.py."""
        self.tracer = LineTracer(filename, pending=self.pending, wake=self.wake,
                                 core=native.core if native.is_native(self.core) else None)
        self.tracer.on_step = self._on_step
        self.module_log = SeqLog()
        self.core.configure(
            max_events, _COST["backward"], _COST["value"],
            f"the run reached the event limit ({max_events:,} events)",
            f"the document reached its size limit ({max_document_bytes >> 20} MB)",
            self._stop_from_core, self._created_in_backward,
            max_nodes, f"the graph reached the node limit ({max_nodes:,} nodes)",
            _COST["function"] + _COST["forward"], _COST["saved"], _COST["edge"],
            nn.Parameter, self.tracer.log.steps, self.module_log.steps)
        self.folded: list[dict[str, Any]] = []
        """torch's checks run in the block (NOTE [torch's own checks are folded] in folded.py)."""
        self.folding = 0
        self.tangents = Tangents()
        """Forward-mode AD's steps (NOTE [forward-mode AD] in tangents.py)."""
        """How deep inside such a check the block's thread is now."""
        self._pending_mark = 0
        self._pending_read = True
        self._sync_bytes()  # NOTE [other threads]: a budget before any backward call

    # ---------------------------------------------------------------- ids and limits
    def _new_id(self) -> str:
        return f"n{len(self.nodes)}"

    def _check_nodes(self) -> None:
        if len(self.nodes) >= self.max_nodes:
            self.stop(f"the graph reached the node limit ({self.max_nodes:,} nodes)")

    def _grow(self, nbytes: int) -> None:
        self.size_estimate += nbytes
        if self.size_estimate > self.max_document_bytes:
            self.stop(f"the document reached its size limit ({self.max_document_bytes >> 20} MB)")
        self._sync_bytes()  # tensor nodes: the core's budget stays exact (NOTE [other threads])

    def grow(self, nbytes: int) -> None:
        """The document grows by ``nbytes`` outside nodes and events (forward-mode AD's steps):
        charged against its size limit (NOTE [limits])."""
        self._grow(nbytes)

    def begin_block(self) -> None:
        """The block starts now: nodes made before it are not walked into (NOTE [nodes from
        before the block] in graph.py)."""
        self.boundary = _seq_nr()
        self.core.set_boundary(self.boundary)

    def stop(self, message: str) -> None:
        """Stop recording at a limit (NOTE [limits]); always raises."""
        if self.limit is None:
            self.limit = message
        self.core.stop()
        if threading.get_ident() != self._thread:
            raise RecordingStopped(message)  # NOTE [other threads]
        if not self.stop_program:
            self.tracer.halt()
            raise RecordingStopped(message)
        raise LimitReached(message)

    def _stop_from_core(self, message: str) -> None:
        """The core's hook hit a cap: ``stop``, returning normally where the program goes on (on
        another thread, or anywhere in process): the core then returns from its hook quietly
        (NOTE [limits], NOTE [other threads])."""
        with contextlib.suppress(RecordingStopped):
            self.stop(message)

    def _sync_bytes(self) -> None:
        """Take in what the core's hooks added to the estimate and give it the budget left."""
        self.size_estimate += self.core.sync_bytes(self.max_document_bytes - self.size_estimate)

    def finish(self) -> None:
        """The block ended: take in what the core's hooks recorded since the last backward call
        of the block's thread (a backward run by another thread: NOTE [other threads])."""
        self.after_backward(outermost=True)
        try:
            self.edits.check(None, deep=True, line=None)  # NOTE [gradient edits]: the last look
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            self.internal_error(e)

    def is_optimized(self, t: torch.Tensor) -> bool:
        """Whether an optimizer that stepped held ``t`` (NOTE [leaves an optimizer holds] in
        capture/library.py)."""
        ref = self.optimized.get(id(t))
        return ref is not None and ref() is t

    def steps_twice(self, t: torch.Tensor) -> list[int] | None:
        """The lines of two steps of different optimizers that used one gradient of ``t`` (NOTE
        [one gradient, two optimizers] in capture/library.py), or None."""
        return self.stepped_twice.get(id(t)) if self.is_optimized(t) else None

    def restarts_of(self, t: torch.Tensor) -> dict[str, Any] | None:
        """``Node.state_restarts`` of ``t`` (NOTE [an optimizer made afresh] in
        capture/library.py), or None when its optimizer's state never started afresh."""
        row = self.state_restarts.get(id(t))
        if row is None or row[0]() is not t or row[3] < 1:
            return None
        return {"optimizer": row[1], "steps": row[2], "restarts": row[3], "line": row[4]}

    def let_go(self) -> None:
        """NOTE [no cycle outlives the block]: the block is over (``finish`` and ``sweep`` ran):
        the callbacks that tie the recorder to itself are dropped, and so is the snippet frame
        the name cache held.

        The recorder's objects live through the block's whole run, so the collector holds them
        in its oldest generation (NOTE [gc around a recorded block] in gradtrace/collector.py),
        which a full collection alone walks, and that comes rarely: a recorder in a reference
        cycle (a bound method of its own in its ``wake`` list, the tracer's ``on_step``, the
        gradient edits' callbacks; the snippet's frame, whose caller holds the ``record``)
        outlived its ``record`` and its documents, tens of MB each (a GRU-200 recorded twenty
        times in a loop held 700 MB, and each record was slower than the one before). With
        these gone, the last reference to the ``record`` and its documents frees all of it
        (``tests/capture/test_let_go.py``)."""
        self.ended = True
        self._names_cache = None
        self.wake.clear()
        self._name_wake = None
        self.tracer.on_step = None
        self.edits.let_go()

    @property
    def active_pass(self) -> int | None:
        """The backward pass the recorder started and that is running now (innermost)."""
        return self._active_pass

    @active_pass.setter
    def active_pass(self, idx: int | None) -> None:
        self._active_pass = idx
        self.core.set_active(-1 if idx is None else idx)

    # ---------------------------------------------------------------- recorded nodes
    # The function nodes' FnInfo objects are made only when asked for (diagnosing an error):
    # the core keeps what is needed while recording (NOTE [discovery in C++]); ``is_known``
    # and ``fn_id`` answer the hot questions without them.
    @property
    def fn_by_id(self) -> dict[str, FnInfo]:
        """Every recorded function node's FnInfo, by id."""
        self._sync_infos()
        return self._fn_by_id

    def _sync_infos(self) -> None:
        changes = self.core.changes()
        if changes != self._infos_changes:  # entries changed since read (freed saved tensors)
            self._fn_by_id.clear()
            self._n_infos = 0
            self._infos_changes = changes
        for node, doc_json, private, acc in self.core.infos(self._n_infos):
            doc = orjson.loads(doc_json)
            info = FnInfo(doc["id"], node, doc, acc=acc, private=private)
            self._fn_by_id[info.id] = info
            self._n_infos += 1

    def is_known(self, node: Node) -> bool:
        """Whether ``node`` was recorded."""
        return bool(self.core.index_of(node) >= 0)

    def fn_id(self, node: Node) -> str:
        """The id of a recorded function node."""
        index = self.core.index_of(node)
        if index < 0:
            raise KeyError(node)
        return f"n{index}"

    # ---------------------------------------------------------------- forward
    def current_line(self) -> int | None:
        """The snippet line executing now."""
        if self.tracer.active:
            line: int | None = self.tracer.log.current
            return line
        return frames.snippet_line(self.filename, 3)

    # NOTE [discovery in batches]
    #     With the line tracer on, a node's line and module follow from its sequence number
    #     (NOTE [lines by sequence number]), not from when it is walked. So the results of the
    #     torch calls of one snippet line are only noted (``defer``), and walked together when
    #     the snippet moves to another line or returns from one of its functions (the tracer's
    #     ``on_step``, while the frame whose variables name the new leaves still runs), or
    #     earlier when something needs them: before an in-place op (saved tensors are read
    #     before it changes them), a backward call, any direct ``discover``, the end of the
    #     block, or every 256 notes / 4,096 new nodes (the node limit stays timely). A
    #     transformer's ``encoder(x)`` is then one walk instead of 300; a GRU step, one
    #     instead of five. The graph is the same; the recorder holds the noted nodes, which
    #     it would hold once walked anyway (NOTE [keeping nodes alive] in graph.py).
    def defer(self, roots: list[Node]) -> None:
        """Note the new nodes of a torch call, to walk with the rest of its line. Nodes made
        under ``saved_tensors_hooks`` (checkpoint) are walked apart, their saved tensors unread
        (NOTE [reading saved tensors]): whether hooks are on is noted with them."""
        read = not saved_hooks_active()
        if self.pending and read != self._pending_read:
            self.flush()
        if not self.pending:
            self._pending_mark = _seq_nr()
            self._pending_read = read
        self.pending += roots
        if len(self.pending) > 256 or _seq_nr() - self._pending_mark > 4096:
            self.flush()

    def flush(self) -> None:
        """Walk what ``defer`` noted (a LimitReached goes on to the snippet)."""
        if not self.pending:
            return
        roots = self.pending[:]
        self.pending.clear()
        try:
            self._walk(roots, self.tracer.log.current, None, None, None, True, self._pending_read)
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            self.internal_error(e)

    def _on_step(self) -> None:
        if self.wake:
            for wake in list(self.wake):
                wake()
        if self.limit is not None:
            return
        self._in_step = True
        try:
            if self.pending:
                self.flush()
            if len(self.nodes) > self._named_upto and self.name_results_on:
                self.name_results(definitions.frame_space(frames.snippet_frame(self.filename, 2)))
        finally:
            self._in_step = False

    def _wake_for_names(self) -> None:
        """Nodes were walked outside a line step: the next step names them (``_on_step``)."""
        if self._name_wake in self.wake:
            self.wake.remove(self._name_wake)

    def name_results(self, space: dict[str, Any] | None) -> None:
        """NOTE [variables of intermediates] in definitions.py."""
        self._named_upto = len(self.nodes)
        try:
            if space is not None and self.name_results_on:
                definitions.name_results(self, space)
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            self.internal_error(e)
        finally:
            self.fresh_views.clear()

    @unseen
    def discover(self, roots: list[Node], *, line: int | None, seq_mark: int | None,
                 created_in_pass: int | None = None, names: frames.NameIndex | None = None,
                 hooks: bool = True, read: bool | None = None) -> None:
        """Register every node reachable from ``roots`` that is new (NOTE [discovery]);
        ``read``: read their saved tensors (default: unless saved-tensor hooks are on now)."""
        if self.pending:  # older nodes first: they were created first
            self.flush()
        if read is None:
            read = not saved_hooks_active()
        self._walk(roots, line, seq_mark, created_in_pass, names, hooks, read)

    @unseen
    def _walk(self, roots: list[Node], line: int | None, seq_mark: int | None,
              created_in_pass: int | None, names: frames.NameIndex | None, hooks: bool,
              read: bool) -> None:
        """``discover``'s work, with nothing pending (``flush`` calls it directly: NOTE
        [discovery in batches] runs it at every line that made nodes)."""
        nodes = self.nodes
        first = len(nodes)
        stack = self.module_stack
        core = self.core
        n, leaves, used, stopped = core.discover(
            roots, read, first, self.max_document_bytes - self.size_estimate, created_in_pass,
            self.tracer.active, line, stack[-1] if stack else None, seq_mark, hooks)
        if n:
            nodes += itertools.repeat(None, n)
            self.edges.append(range(first, first + n))
            wake = self._name_wake  # None once the block is over (``let_go``)
            if wake is not None and not self._in_step and self.name_results_on and wake not in self.wake:
                self.wake.append(wake)  # NOTE [variables of intermediates]
        self.size_estimate += used
        if stopped is not None:
            self.stop(stopped)
        self.size_estimate += core.sync_bytes(self.max_document_bytes - self.size_estimate)  # _sync_bytes
        if leaves:
            self._leaf_nodes(leaves, names)

    def _leaf_nodes(self, leaves: list[tuple[torch.Tensor | None, str, int | None]],
                    names: frames.NameIndex | None) -> None:
        """The tensor node of each new AccumulateGrad's leaf, with its edge to it."""
        if leaves and names is None:
            names = self.names_here()  # one look-up of the snippet's frame for all of them
        for leaf, fid, n_line in leaves:
            if leaf is not None:
                tid = self.tensor_node(leaf, role="leaf", line=n_line, names=names)
                self.edges.append({"source": tid, "target": fid, "input_nr": None})

    def edge_list(self) -> list[dict[str, Any]]:
        """Every edge as a dict (the core's, NOTE [node entries in C++], read back): for a
        diagnosis, not the hot path."""
        out: list[dict[str, Any]] = []
        for e in self.edges:
            if isinstance(e, range):
                out += orjson.loads(b"[" + self.core.edges_json(e.start, e.stop) + b"]")
            else:
                out.append(e)
        return out

    def names_here(self) -> frames.NameIndex:
        """A name index for the innermost snippet frame, reused while execution stays at the
        same instruction (all leaves met by one call share it)."""
        frame = frames.snippet_frame(self.filename, 2)
        key = (frame, frame.f_lasti if frame is not None else -1)
        cached = self._names_cache
        if cached is not None and cached[0] is key[0] and cached[1] == key[1]:
            return cached[2]
        index = frames.NameIndex.during_run(frame)
        self._names_cache = (key[0], key[1], index)
        return index

    def sweep(self) -> None:
        """At the end: nodes behind the snippet's variables that no later op revealed (a
        ``torch.compile``d call's result that was only printed), placed by sequence number.
        No hooks are registered on them: the block is over."""
        if not self.namespace:
            return
        roots = []
        for v in list(self.namespace.values()):
            if not isinstance(v, torch.Tensor):
                continue
            before = torch._C._autograd._get_sequence_nr()
            g = v.grad_fn
            if torch._C._autograd._get_sequence_nr() != before:
                continue  # reading grad_fn just rebuilt a stale view's node: ours, not the snippet's
            if g is not None and not self.is_known(g) and not before_block(g, self.boundary):
                roots.append(g)
        if roots:
            self.discover(roots, line=None, seq_mark=None, hooks=False)

    @unseen
    def tensor_node(self, t: torch.Tensor, *, role: str, line: int | None,
                    names: frames.NameIndex | None = None) -> str:
        """The id of ``t``'s tensor node, creating it (with its name) when new."""
        hit = self.tensors.get(id(t))
        if hit is not None and hit[0] is t:
            doc = hit[1]
            if role == "root" and doc.get("role") != "root":
                doc["roles"] = sorted({*doc.get("roles", [doc["role"]]), role})
            return str(doc["id"])
        self._check_nodes()
        self._grow(_COST["tensor"] + _COST["edge"])
        if names is None:
            names = self.names_here()
        tid = self._new_id()
        doc = {"id": tid, "kind": "tensor", "name": frames.name_through_transforms(names, t), "line": line,
               "module": None, "shape": shape_of(t), "dtype": dtype_name(t.dtype),
               "device": device_name(t.device), "role": role}
        if role != "leaf":
            doc["value"] = self.values.capture(t)
        else:
            if self.tensor_budget is not None:  # its value at the start (NOTE [kept tensors])
                doc["value"] = self.values.capture_copy(t)
            self.edits.leaves.append(t)  # NOTE [gradient edits] in gradedits.py
            def_line = self.leaf_lines.line_of(t)
            if def_line is not None:  # NOTE [where leaves are defined] in definitions.py
                doc["def_line"] = def_line
        self.nodes.append(doc)
        self.tensors[id(t)] = (t, doc)
        return tid

    # ---------------------------------------------------------------- backward
    @unseen
    def begin_pass(self, api: str, line: int | None, roots: list[str], *,
                   retain_graph: bool, create_graph: bool) -> int:
        try:
            self.edits.check(None, deep=False, line=None)  # NOTE [gradient edits]
            self.edits.guard()
            self.resets.check()  # NOTE [grad resets]
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            self.internal_error(e)
        self._sync_engine_passes()
        idx = int(self.core.begin_pass(line))
        assert idx == len(self.passes)
        doc = {"index": idx, "api": api, "line": line, "roots": roots,
               "retain_graph": retain_graph, "create_graph": create_graph,
               "freed_bytes": 0, "completed": False}
        if self._active_pass is not None:  # NOTE [reentrant checkpoint recomputation] in folded.py
            doc["within"] = self._active_pass
        self.passes.append(PassInfo(doc))
        return idx

    def _engine_pass(self, outer: int | None) -> PassInfo:
        """A backward the recorder did not start (a reentrant checkpoint's inner backward)."""
        doc = self.passes[outer].doc if outer is not None else None
        info: dict[str, Any] = {"index": len(self.passes), "api": "engine",
                "line": doc["line"] if doc else None, "roots": [],
                "retain_graph": bool(doc and doc["retain_graph"]),
                "create_graph": bool(doc and doc["create_graph"]),
                "freed_bytes": 0, "completed": True}
        if outer is not None:
            info["within"] = outer
        return PassInfo(info)

    def _sync_engine_passes(self) -> None:
        for idx, outer in self.core.new_engine_passes():
            assert idx == len(self.passes)
            self.passes.append(self._engine_pass(outer if outer >= 0 else None))

    # ---------------------------------------------------------------- the core's hooks
    def before_backward(self) -> None:
        """A backward call is about to run: what the document may still grow by."""
        self._sync_bytes()

    @unseen
    def after_backward(self, *, outermost: bool) -> None:
        """A backward call returned (or raised): take in what the core's hooks recorded that
        Python needs (new engine passes, ``.grad`` histories, bytes)."""
        core = self.core
        self._sync_bytes()
        self._sync_engine_passes()
        last: dict[int, tuple[torch.Tensor, dict[str, Any], int, int, int]] = {}
        for leaf, grad, version, cdata in core.take_accumulations():
            if grad < 0 or leaf is None:
                continue
            hit = self.tensors.get(id(leaf))
            if hit is not None and hit[0] is leaf:
                hit[1].setdefault("grad_history", []).append(grad)
                last[id(leaf)] = (leaf, hit[1], grad, version, cdata)
        if last:
            self._accumulations(list(last.values()))
        if outermost:
            core.end_backward()

    def _accumulations(self, last: list[tuple[torch.Tensor, dict[str, Any], int, int, int]]) -> None:
        """Each leaf's last accumulation of a backward call: edits and clears made within
        that call, then what later looks compare against (NOTE [gradient edits])."""
        line = self.current_line() if threading.get_ident() == self._thread else None
        with torch._C.DisableTorchFunction():
            try:
                # NOTE [a leaf's value around each step] in valuesteps.py
                steps = self.steps.accumulated([(leaf, doc) for leaf, doc, *_ in last])
                # NOTE [what a step costs]: each step's entry, and each leaf's row of the
                # dynamics' series (analysis/dynamics/) for this backward
                self.size_estimate += steps * _COST["step"] + len(last) * _COST["series"]
            except Exception as e:  # NOTE [the recorder never breaks the snippet]
                self.internal_error(e)
            for leaf, doc, grad, version, cdata in last:
                try:
                    now = leaf.grad if self.edits.accumulated(leaf, doc, grad, version, cdata, line) else None
                    if now is not None:
                        self.resets.accumulated(leaf, now, doc)
                    else:
                        self.resets.forget(leaf)
                except Exception as e:  # NOTE [the recorder never breaks the snippet]
                    self.internal_error(e)

    def _edit_cost(self) -> None:
        """A gradient edit's entry and value, counted as the document grows (the next check of
        a limit sees it; an edit never stops the program itself)."""
        self.size_estimate += _COST["value"] + 60

    def _accumulated_hook(self, leaf: torch.Tensor) -> None:
        """The recorder's post-accumulate hook, first on its leaf (NOTE [gradient edits])."""
        try:
            self.core.accumulated(leaf)
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            self.internal_error(e)

    @unseen
    def _created_in_backward(self, pass_: int, line: int, grads: list[torch.Tensor]) -> None:
        """The core's hook saw gradients with history (a ``create_graph`` pass): their nodes
        are new nodes of the graph, recorded now, in the engine's order."""
        if self.limit is not None:
            return
        self.tracer.pause()
        try:
            with torch._C.DisableTorchFunction():
                roots = [g.grad_fn for g in grads if g.grad_fn is not None]
                if roots:
                    self.discover(roots, line=None if line == pycore.NULL_LINE else line,
                                  seq_mark=None, created_in_pass=pass_)
        except RecordingStopped:
            pass  # NOTE [limits], NOTE [other threads]
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            self.internal_error(e)
        finally:
            self.tracer.resume()

    def end_pass(self, idx: int, *, completed: bool) -> None:
        """Close a pass; without retain_graph, autograd released the saved tensors of every node
        it executed in it (``release_variables``), so those are marked freed."""
        p = self.passes[idx]
        p.doc["completed"] = completed
        if not p.doc["retain_graph"]:
            p.doc["freed_bytes"] = self.core.mark_freed(idx)

    def note_hook_change(self, before: Any, after: Any) -> None:
        """A tensor hook replaced a gradient: remember both values for the node now running."""
        self.core.hook_change(before, after)

    def note_inplace(self, t: torch.Tensor, op: str) -> None:
        """An in-place change of ``t``: kept (storage address, line, op, nodes so far) so that
        an invalidated saved tensor can later be traced to the line that changed it. The
        address never reaches the document."""
        try:
            ptr = t.untyped_storage().data_ptr()
        except Exception:  # no storage (sparse, meta, ...): nothing to match later
            return
        node = grad_fn_or_none(t) if t.requires_grad else None
        self.inplace_log.append((ptr, self.current_line(), op, len(self.nodes), node))

    def internal_error(self, exc: Exception) -> None:
        """A recorder failure (never the snippet's): counted, first few messages kept. A
        :class:`RecordingStopped` reaching here is no failure: recording ended at a limit."""
        if isinstance(exc, RecordingStopped):
            return
        if len(self.recorder_errors) < 5:
            self.recorder_errors.append(f"{type(exc).__name__}: {exc}")
        self.n_recorder_errors += 1

    def remove_hooks(self) -> None:
        self.core.close()
        self.edits.remove_hooks()
