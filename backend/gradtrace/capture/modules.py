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
    inside keep the snippet line that called the module, as CONTRACT.md asks. (A snippet
    function called back from inside a library module, a forward hook say, is then attributed
    to that calling line too.)

NOTE [no tap inside library modules]
    For the same reason the torch-function mode steps off the stack while a library module
    runs (when it is on top; it steps back for a snippet module inside, and when the module
    returns). Its dispatch and handler cost ~10 µs on each of the 160 torch calls a
    transformer's layers make, a third of the forward-time capture. Nothing of the graph is
    lost: every node made inside is found from the module's result when it returns (then
    handed to discovery like a torch call's results), or, if nothing from the result reaches
    it, from whatever later uses it, or from the backward roots; its line and module follow
    from its sequence number either way. In-place changes the module made to its tensor
    arguments (``nn.ReLU(inplace=True)``) are noted against the calling line, as the mode
    noted them. What is not seen: nodes made inside a library module that nothing the
    snippet holds ever reaches (garbage when the module returns, or when it raises).

NOTE [optimizer steps]
    An optimizer's ``step()`` is library code too, called at the snippet's top level: the mode
    steps aside there as well (global optimizer step hooks). Before, every one of its torch
    calls went through the mode (Adam: a dozen per step), and its ``torch.zeros_like(p)`` and
    the like under ``no_grad`` were taken for cuts the snippet made: three unnamed "cut"
    tensor nodes per parameter per step, 200 of the 660 nodes of a 50-step training loop. The
    line tracer keeps running (the step is the snippet's line). Parameters the step changed in
    place are noted against its line, once each (NOTE [no tap ...]: the diagnosis of a
    backward through a graph whose saved parameter was updated). A step's post hook does not
    run when the step raises, and a closure (``LBFGS``) is snippet code run inside the step:
    both are met by asking the line tracer to wake the tracker at the snippet's next line,
    which puts the mode back.
"""

from __future__ import annotations

import threading
from typing import Any

import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from gradtrace.capture import frames
from gradtrace.capture.mode import tensors_within
from gradtrace.capture.recorder import Recorder

_seq_nr = torch._C._autograd._get_sequence_nr
_NO_TAP: tuple[bool, list[tuple[torch.Tensor, int]] | None, int] = (False, None, 0)


class ModuleTracker:
    """Keeps ``rec.module_stack`` in step with nn.Module calls, naming each from the snippet;
    takes the torch-function mode ``mode`` off inside library modules."""

    def __init__(self, rec: Recorder, mode: Any = None) -> None:
        self.rec = rec
        self.mode = mode
        self._tap: list[tuple[bool, list[tuple[torch.Tensor, int]] | None, int]] = []
        """Per running module: (whether the mode stepped aside at its call, its tensor
        arguments with their versions, the sequence number at its call)."""
        self._aside = False
        self._steps: list[tuple[bool, list[tuple[torch.Tensor, int]] | None, int]] = []
        """Per running optimizer step: as ``_tap``."""
        self._thread = threading.get_ident()
        """The recording thread (``install`` runs on it)."""
        self._children: dict[int, dict[int, str]] = {}
        self._deep: set[int] = set()
        """Parents whose child table lists every descendant already."""
        self._keep: list[nn.Module] = []
        self._parents: list[tuple[str | None, nn.Module]] = []
        self._roots: dict[int, tuple[nn.Module, str | None]] = {}
        self._own: dict[type, bool] = {}
        self._tracing: list[bool] = []

    def install(self) -> list[Any]:
        self._thread = threading.get_ident()
        pre = nn.modules.module.register_module_forward_pre_hook(self._pre)
        post = nn.modules.module.register_module_forward_hook(self._post, always_call=True)
        step_pre = register_optimizer_step_pre_hook(self._step_pre)
        step_post = register_optimizer_step_post_hook(self._step_post)
        return [pre, post, step_pre, step_post]

    # ------------------------------------------------------------------ optimizer steps
    def _step_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """NOTE [optimizer steps]: the mode steps aside for the step (when it is on)."""
        state = _NO_TAP
        try:
            if self._woken in self.rec.wake:  # an earlier step raised and nothing woke us since
                self._woken()
            if (self.mode is not None and not self._aside and self.rec.limit is None
                    and self.rec.tracer.active and threading.get_ident() == self._thread):
                mark = _seq_nr()
                if self.mode.step_aside():
                    self._aside = True
                    params = [p for group in optimizer.param_groups for p in group["params"]
                              if isinstance(p, torch.Tensor) and not p.is_inference()]
                    state = (True, [(p, p._version) for p in params], mark)
                    self.rec.wake.append(self._woken)
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            self.rec.internal_error(e)
        self._steps.append(state)
        return None

    def _step_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        state = self._steps.pop() if self._steps else _NO_TAP
        if not state[0]:
            return None
        if self._woken in self.rec.wake:
            self.rec.wake.remove(self._woken)
        name = f"{type(optimizer).__name__}.step"
        self._reset_tap(state, name, None)
        return None

    def _woken(self) -> None:
        """The snippet's next line ran inside or after a step (a closure, or a step that
        raised): the mode goes back on."""
        if self._woken in self.rec.wake:
            self.rec.wake.remove(self._woken)
        if self._aside and self.mode is not None:
            self.mode.step_back()
            self._aside = False

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

    def _own_code(self, module: nn.Module) -> bool:
        """Whether this module's forward is snippet code (a class defined in the snippet)."""
        cls = type(module)
        hit = self._own.get(cls)
        if hit is None:
            code = getattr(getattr(cls, "forward", None), "__code__", None)
            hit = self._own[cls] = code is not None and code.co_filename == self.rec.filename
        return hit

    def _pre(self, module: nn.Module, args: Any) -> None:
        stack = self.rec.module_stack
        path: str | None = None
        try:
            if stack and stack[-1] is not None and self._parents:
                parent_path, parent = self._parents[-1]
                sub = self._child_name(parent, module)
                path = f"{parent_path}.{sub}" if sub is not None else None
            if path is None:
                path = self._root_name(module)
        except Exception:
            path = None
        stack.append(path)
        self._parents.append((path, module))
        self.rec.module_log.note(path)
        own = self._own_code(module)
        self._tracing.append(self.rec.tracer.set_suspended(not own))
        self._tap.append(self._set_tap(own, args))
        return None

    def _set_tap(self, own: bool, args: Any) -> tuple[bool, list[tuple[torch.Tensor, int]] | None, int]:
        """NOTE [no tap inside library modules]: step the mode aside at a library module called
        with the mode on, back on at a snippet module called with it aside. Only on the
        recording thread (the mode stack is per thread: a module called on another thread
        never had the mode), and only while the line tracer runs: without it (a debugger or
        coverage holds tracing) nodes are placed when discovered, which the mode must then
        do call by call, inside the module that makes them."""
        mode = self.mode
        if (mode is None or own != self._aside or self.rec.limit is not None
                or not self.rec.tracer.active or threading.get_ident() != self._thread):
            return _NO_TAP
        if own:
            mode.step_back()
            self._aside = False
            return (True, None, 0)
        mark = _seq_nr()
        if not mode.step_aside():
            return _NO_TAP
        self._aside = True
        try:  # read with the mode aside: a tensor's attributes are torch calls to it
            inputs = [(a, a._version) for a in args if isinstance(a, torch.Tensor) and not a.is_inference()]
        except Exception:  # a tensor subclass that refuses: its in-place changes go unnoted
            inputs = []
        return (True, inputs, mark)

    def _reset_tap(self, state: tuple[bool, list[tuple[torch.Tensor, int]] | None, int],
                   op: str, output: Any) -> None:
        """The other half of ``_set_tap``, last in the post hook: what the library module (or
        optimizer step, ``op``) made goes to discovery (which may raise LimitReached, so the
        stacks are popped before); the tensors it changed in place are noted."""
        switched, inputs, mark = state
        if not switched:
            return
        mode = self.mode
        if inputs is None:  # a snippet module inside a library one returns
            if mode.step_aside():
                self._aside = True
            return
        rec = self.rec
        tracer = rec.tracer
        tracer.pause()
        try:  # with the mode still aside: the recorder's own reads are not the snippet's calls
            if rec.limit is None:
                tensors = tensors_within(output)
                for t, version in inputs:
                    if t._version != version:
                        rec.note_inplace(t, op)
                        tensors.append(t)
                mode.note_roots(tensors, mark)
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            rec.internal_error(e)
        finally:
            if self._aside:  # (not if a snippet module inside could not step it aside again)
                mode.step_back()
                self._aside = False
            tracer.resume()

    def restore(self) -> None:
        """At the end of the block: the mode back on the stack if a module left it aside (a
        module call that never returned to its hooks), so that it leaves as it came."""
        if self._aside and self.mode is not None:
            self.mode.step_back()
            self._aside = False

    def _post(self, module: nn.Module, args: Any, output: Any) -> None:
        tap = self._tap.pop() if self._tap else _NO_TAP
        if self._tracing:
            self.rec.tracer.set_suspended(self._tracing.pop())
        if self.rec.module_stack:
            self.rec.module_stack.pop()
        if self._parents:
            self._parents.pop()
        self.rec.module_log.note(self.rec.module_stack[-1] if self.rec.module_stack else None)
        if tap[0]:
            self._reset_tap(tap, type(module).__name__, output)
        return None
