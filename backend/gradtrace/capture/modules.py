"""Which ``nn.Module`` is running: global forward pre/post hooks keep a stack of module paths.

NOTE [module hooks never return]
    A global forward hook that returns a value replaces the module's output. Ours return None,
    always, and the post hook uses ``always_call=True`` so the stack stays balanced when a
    forward raises. Each entry and exit is also noted against autograd's sequence counter
    (``rec.module_log``), so a node's module follows from its sequence number like its line
    (NOTE [lines by sequence number] in :mod:`gradtrace.capture.timeline`).

NOTE [no line tracing inside library modules]
    Inside a module whose ``forward`` is library code (``nn.Linear``, a transformer layer) no
    snippet line can change, so the line tracer is suspended there: every Python call inside
    would otherwise cost a call of the tracer (it doubled a transformer's forward). It is
    resumed inside modules defined in the snippet, and when the module returns. Nodes created
    inside keep the snippet line that called the module, as docs/CONTRACT.md promises. (A snippet
    function called back from inside a library module, a forward hook say, is then attributed
    to that calling line too.)

The torch-function mode steps aside inside library modules: :mod:`gradtrace.capture.library`.
"""

from __future__ import annotations

import sys
from typing import Any

import torch
from torch import nn
from torch.nn.modules.batchnorm import _NormBase

from gradtrace.capture import frames
from gradtrace.capture.compiled import _is_compiling
from gradtrace.capture.definitions import frozen_parameters, trainable_parameters
from gradtrace.capture.events import ModulePath
from gradtrace.capture.folded import inside_checkpoint_forward
from gradtrace.capture.library import NO_SWITCH, LibraryCalls, Switch
from gradtrace.capture.odd_tensors import shape_of
from gradtrace.capture.recorder import Recorder
from gradtrace.schema.canonical import canonical_json

_MODE_SENSITIVE = ("Dropout", "AlphaDropout", "FeatureAlphaDropout", "BatchNorm", "SyncBatchNorm",
                   "LazyBatchNorm")
"""Class-name prefixes of the modules whose training mode changes what they compute."""


class ModuleTracker:
    """Keeps ``rec.module_stack`` in step with nn.Module calls, naming each from the snippet,
    and tells ``library`` where library modules begin and end."""

    def __init__(self, rec: Recorder, library: LibraryCalls | None = None) -> None:
        self.rec = rec
        self.library = library
        self._tap: list[Switch] = []
        """Per running module: what ``library.enter_module`` switched at its call."""
        self._children: dict[int, dict[int, str]] = {}
        self._deep: set[int] = set()
        """Parents whose child table lists every descendant already."""
        self._keep: list[nn.Module] = []
        self._parents: list[tuple[str | None, nn.Module]] = []
        self._roots: dict[int, tuple[nn.Module, str | None]] = {}
        self._own: dict[type, tuple[bool, bool, bool]] = {}
        """Per module class: ``_class_of``'s answer."""
        self._stats_called: set[int] = set()
        """The modules keeping running statistics called in training mode since this tracker
        last walked the pending nodes (NOTE [running statistics walked before they change])."""
        self._tracing: list[bool] = []
        self._calls: list[ModulePath | None] = []
        """Per running module: the innermost named module call on the stack down to it (NOTE
        [module calls])."""
        self._path_json: dict[str, str] = {}
        """Each module path's canonical JSON string."""

    def install(self) -> list[Any]:
        pre = nn.modules.module.register_module_forward_pre_hook(self._pre)
        post = nn.modules.module.register_module_forward_hook(self._post, always_call=True)
        return [pre, post]

    def _child_name(self, parent: nn.Module, child: nn.Module) -> str | None:
        """``child``'s path under ``parent``: a direct child's name, else its path among all
        descendants (a layer that ``parent.forward`` takes from a ModuleList, which is never
        called itself: ``layers.0``). Before, such a layer fell through to a look-up of its
        name over every module variable, per layer and per block: a third of a transformer's
        forward overhead. The descendants are listed only when a direct look-up misses."""
        table = self._children.get(id(parent))
        if table is None:
            table = {id(m): n for n, m in parent.named_children()}
            self._children[id(parent)] = table
            self._keep.append(parent)
        name = table.get(id(child))
        if name is None and id(parent) not in self._deep:
            for n, m in parent.named_modules():
                if n:
                    table.setdefault(id(m), n)
            self._deep.add(id(parent))
            name = table.get(id(child))
        return name

    def _root_name(self, module: nn.Module) -> str | None:
        """The variable (or ``var.sub`` path) of a module called from outside any other module;
        looked up once per module, deep only when the shallow look-up finds nothing."""
        hit = self._roots.get(id(module))
        if hit is not None and hit[0] is module:
            return hit[1]
        frame = frames.snippet_frame(self.rec.filename, 4)
        path = frames.NameIndex.during_run(frame).name_of(module)
        if path is None:
            path = frames.NameIndex(frame).name_of(module)
        self._roots[id(module)] = (module, path)
        return path

    def _class_of(self, cls: type) -> tuple[bool, bool, bool]:
        """Per module class, looked up once: whether its forward is snippet code (a class
        defined in the snippet), whether its training mode changes what it computes (NOTE
        [training mode under no_grad]), and whether it may keep running statistics (batch and
        instance norm: NOTE [running statistics walked before they change])."""
        code = getattr(getattr(cls, "forward", None), "__code__", None)
        hit = self._own[cls] = (code is not None and code.co_filename == self.rec.filename,
                                cls.__name__.startswith(_MODE_SENSITIVE), issubclass(cls, _NormBase))
        return hit

    # NOTE [running statistics walked before they change]
    #     Batch norm's node saves the module's running-statistics buffers themselves, and its
    #     kernel updates them in place without moving their version (NOTE [running statistics
    #     copied] in saved.py): the copy the walk makes is right only if the node is walked
    #     before the module runs again. The results of one line are walked together (NOTE
    #     [discovery in batches] in recorder.py), so ``z1, z2 = enc(v1), enc(v2)`` (two views
    #     of a batch through one encoder: SimCLR, BYOL, Barlow Twins) would give the first
    #     call's node the second call's statistics. So a module that keeps them, called again
    #     in training mode while nodes wait to be walked, has them walked first: one more walk
    #     only where a line calls such a module twice.
    def _running_stats(self, module: nn.Module) -> None:
        called = self._stats_called
        key = id(module)
        if key in called and self.rec.pending:
            called.clear()
            self.rec.flush()
        called.add(key)

    # NOTE [module calls]
    #     Each call of a named module gets its index among that path's calls in the run
    #     (``rec.module_calls`` counts them, with the class name: ``RunDocument.modules``), and
    #     the path noted for the call (``rec.module_stack``, ``rec.module_log``, from which
    #     each node takes its ``module``) is a :class:`ModulePath` carrying the (path, call)
    #     pairs of every named module on the stack: ``Node.module_stack``, the same object for
    #     every node of the call, so both recorders write it as they write ``module``. An
    #     unnamed module (no variable leads to it) is left out of the stack.
    def _note_call(self, path: str | None, module: nn.Module) -> ModulePath | None:
        outer = self._calls[-1] if self._calls else None
        if path is None:
            self._calls.append(outer)
            return None
        counts = self.rec.module_calls.get(path)
        if counts is None:
            counts = self.rec.module_calls[path] = [type(module).__name__, 0]
            self._path_json[path] = canonical_json(path).decode()
            frozen = frozen_parameters(module)  # NOTE [frozen parameters] in definitions.py
            if frozen:
                self.rec.module_frozen[path] = frozen
            self.rec.module_params[path] = trainable_parameters(module)
        call = counts[1]
        counts[1] += 1
        # the stack's canonical JSON, extended from the enclosing call's (sorted keys)
        text = f'{{"call":{call},"path":{self._path_json[path]}}}'
        noted = ModulePath(path)
        noted.stack_json = f"[{text}]" if outer is None else f"{outer.stack_json[:-1]},{text}]"
        self._calls.append(noted)
        return noted

    # NOTE [training mode under no_grad]
    #     Dropout and batch norm behave differently in training mode (random masks, batch
    #     statistics and running-stat updates). Called in training mode while gradients are
    #     disabled, they usually sit in an evaluation block that forgot ``model.eval()``; no
    #     autograd node records that call, so the call's snippet line is noted here, per module
    #     path (``ModuleInfo.training_no_grad_lines``), for the ``train-mode-in-eval`` hint
    #     (gradtrace/analysis/hints/flow.py). Only these module types pay for the check.
    def _note_train_mode(self, path: str, module: nn.Module) -> None:
        """Called for a mode-sensitive module with a path, in training mode, gradients off."""
        if self.rec.folding or inside_checkpoint_forward():  # no evaluation: NOTE in folded.py
            return
        line = self._calling_line()
        if line is None:
            return
        lines = self.rec.module_train_lines.setdefault(path, [])
        if len(lines) < 10 and line not in lines:
            lines.append(line)

    def _calling_line(self) -> int | None:
        """The snippet line that called the model: not a ``forward`` of the snippet's own
        module class."""
        frame = frames.snippet_frame(self.rec.filename, 4)
        while frame is not None and frame.f_code.co_name == "forward":
            outer = frame.f_back
            while outer is not None and outer.f_code.co_filename != self.rec.filename:
                outer = outer.f_back
            if outer is None:
                break
            frame = outer
        return frame.f_lineno if frame is not None else None

    # NOTE [a module's modes]
    #     ``model.eval()`` before an evaluation and no ``model.train()`` after it leaves the
    #     next epochs training in eval mode (dropout off, batch norm normalising by running
    #     statistics it no longer updates): no error, a worse model. Each mode-sensitive
    #     module's calls are noted when their mode (training or not, gradients on or off)
    #     changes from its last call (``ModuleInfo.modes``, the first 32 changes), with the call's
    #     number, its line, and the outermost named module call around it (its root's call: a
    #     dropout in eval mode makes no node, its model's other layers do), from which the
    #     ``eval-mode-in-training`` hint (analysis/hints/flow.py) tells whether a backward pass
    #     went through an eval-mode call after an evaluation.
    def _note_mode(self, path: str, training: bool, grad: bool, noted: ModulePath | None) -> None:
        modes = self.rec.module_modes.get(path)
        if modes is not None and (modes[-1]["training"], modes[-1]["grad"]) == (training, grad):
            return  # the usual case: as its last call
        if (modes is not None and len(modes) >= 32) or self.rec.folding or inside_checkpoint_forward():
            return
        root = noted.stack[0] if noted is not None else None
        entry = {"call": self.rec.module_calls[path][1] - 1, "training": training, "grad": grad,
                 "line": self._calling_line(), "root": root}
        self.rec.module_modes.setdefault(path, []).append(entry)

    def _note_raise(self, path: str | None, module: nn.Module, args: Any) -> None:
        """The innermost module a forward raised in (post hooks run with ``output`` None then,
        inside torch's ``except`` block): its path, class and the shapes of the tensors it got,
        for the run's error (``RunError.module``). Outer modules see the same exception and
        leave it."""
        exc = sys.exc_info()[1]
        known = self.rec.module_error
        if not isinstance(exc, Exception) or (known is not None and known[0] is exc):
            return
        shapes = [shape_of(a) for a in args if isinstance(a, torch.Tensor)] if isinstance(args, tuple) else []
        self.rec.module_error = (exc, path, type(module).__name__, shapes)

    # NOTE [module hooks per call]
    #     Both hooks run at every module call (a GRU unrolled 200 steps calls them 200 times
    #     per forward), so the common case is kept to few calls and look-ups: the class's three
    #     facts come from one dict, a root module's name from ``_roots`` without a call, the
    #     training-mode check runs only for the module types it concerns, and the line
    #     tracer is switched, and the library call entered and left, only where something
    #     changes (the same calls as before, without the ones that would do nothing).
    def _pre(self, module: nn.Module, args: Any) -> None:
        if _is_compiling():  # NOTE [invisible to dynamo] in compiled.py
            return None
        rec = self.rec
        cls = type(module)
        facts = self._own.get(cls) or self._class_of(cls)
        if facts[2] and module.training and rec.limit is None and getattr(module, "track_running_stats", False):
            self._running_stats(module)  # first: nothing of this call is pushed yet
        stack = rec.module_stack
        parents = self._parents
        path: str | None = None
        try:
            if stack and stack[-1] is not None and parents:
                parent_path, parent = parents[-1]
                sub = self._child_name(parent, module)
                path = f"{parent_path}.{sub}" if sub is not None else None
            if path is None:
                hit = self._roots.get(id(module))
                path = hit[1] if hit is not None and hit[0] is module else self._root_name(module)
        except Exception:
            path = None
        noted = self._note_call(path, module)
        if facts[1] and path is not None:
            try:
                grad = torch.is_grad_enabled()
                if module.training and not grad:
                    self._note_train_mode(path, module)
                self._note_mode(path, module.training, grad, noted)
            except Exception as e:  # NOTE [the recorder never breaks the snippet]
                rec.internal_error(e)
        stack.append(noted)
        parents.append((path, module))
        if rec.limit is None:  # past a limit nothing is placed by it (NOTE [limits])
            rec.module_log.note(noted)
        own = facts[0]
        tracer = rec.tracer
        if tracer.suspended == (not own):  # nothing to switch: ``set_suspended``'s answer
            self._tracing.append(not own)
        else:
            self._tracing.append(tracer.set_suspended(not own))
        library = self.library
        self._tap.append(library.enter_module(own, args) if library is not None else NO_SWITCH)
        return None

    def _post(self, module: nn.Module, args: Any, output: Any) -> None:
        if _is_compiling():  # NOTE [invisible to dynamo] in compiled.py
            return None
        rec = self.rec
        tap = self._tap.pop() if self._tap else NO_SWITCH
        tracing = self._tracing.pop() if self._tracing else None
        stack = rec.module_stack
        if stack:
            stack.pop()
        if self._calls:
            self._calls.pop()
        if self._parents:
            path = self._parents.pop()[0]
            if output is None:
                try:
                    self._note_raise(path, module, args)
                except Exception as e:  # NOTE [the recorder never breaks the snippet]
                    rec.internal_error(e)
        if rec.limit is None:
            rec.module_log.note(stack[-1] if stack else None)
        # the tracer is resumed after ``leave``, which pauses it for its own work: resuming it
        # first switched it on, off and on again per library module
        try:
            if tap[0] and self.library is not None:
                self.library.leave(tap, type(module).__name__, output)
        finally:
            if tracing is not None and tracing != rec.tracer.suspended:
                rec.tracer.set_suspended(tracing)
        return None
