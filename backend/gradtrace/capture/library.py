"""Library code runs without the tap: the torch-function mode steps off the stack for library
modules and optimizer steps, and what they made is handed to discovery when they return.

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
    noted them. When the module raises, the tensors its frames still hold (the traceback
    keeps them) lead to what it made up to the error. What is not seen: nodes made inside a
    library module that nothing reaches (garbage when the module returns).

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
    both are met by asking the line tracer to wake us at the snippet's next line,
    which puts the mode back.
"""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from gradtrace.capture.compiled import _is_compiling
from gradtrace.capture.events import LimitReached
from gradtrace.capture.mode import CaptureMode
from gradtrace.capture.outputs import TAP_CODE
from gradtrace.capture.recorder import Recorder

_seq_nr = torch._C._autograd._get_sequence_nr

Switch = tuple[bool, list[tuple[torch.Tensor, int]] | None, int]
"""What a library call switched: (whether the mode stepped aside or back, the call's tensor
arguments with their versions or None for a snippet module inside a library one, the sequence
number at the call)."""
NO_SWITCH: Switch = (False, None, 0)


def tensors_within(out: Any, depth: int = 4) -> list[torch.Tensor]:
    """The tensors in a module's result: nested tuples, lists and dict values (an LSTM's
    ``(out, (h, c))``, a dict of heads), ``depth`` levels down."""
    if isinstance(out, torch.Tensor):
        return [out]
    if depth == 0:
        return []
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, tuple | list):
        found: list[torch.Tensor] = []
        for item in out:
            found += tensors_within(item, depth - 1)
        return found
    return []


def _held_by(exc: BaseException | None) -> list[torch.Tensor]:
    """The tensors the frames of ``exc``'s traceback still hold: when a library call raises,
    they lead to the nodes it made before the error, which the snippet must still see (NOTE
    [no tap inside library modules]: a shape error in the last layer of an ``nn.Sequential``
    left an empty graph)."""
    if exc is None:
        return []
    found: list[torch.Tensor] = []
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is not TAP_CODE:  # NOTE [the tap in a traceback] in outputs.py
            for value in list(tb.tb_frame.f_locals.values()):
                found += tensors_within(value, 2)
        tb = tb.tb_next
    return found


class LibraryCalls:
    """Steps ``mode`` aside for library calls on the recording thread (NOTE [no tap inside
    library modules], NOTE [optimizer steps]); the module tracker reports module calls, the
    optimizer step hooks installed here report steps."""

    def __init__(self, rec: Recorder, mode: CaptureMode | None) -> None:
        self.rec = rec
        self.mode = mode
        self._aside = False
        self._steps: list[Switch] = []
        """Per running optimizer step: what its pre hook switched."""
        self._used: dict[int, tuple[Any, Any, int, int | None]] = {}
        """NOTE [one gradient, two optimizers]: by parameter ``id``, the last step that used its
        gradient: (the optimizer, the gradient, both held weakly, its version, the line)."""
        self._fresh: dict[int, list[torch.Tensor]] = {}
        """NOTE [an optimizer made afresh]: by optimizer ``id``, during its step, the parameters it
        updates that had no state in it at the step's start."""
        self._thread = threading.get_ident()
        """The recording thread (``install`` runs on it)."""

    def install(self) -> list[Any]:
        self._thread = threading.get_ident()
        return [register_optimizer_step_pre_hook(self._step_pre),
                register_optimizer_step_post_hook(self._step_post)]

    def enter_module(self, own: bool, args: Any) -> Switch:
        """NOTE [no tap inside library modules]: step the mode aside at a library module called
        with the mode on, back on at a snippet module called with it aside. Only on the
        recording thread (the mode stack is per thread: a module called on another thread
        never had the mode), and only while the line tracer runs: without it (a debugger or
        coverage holds tracing) nodes are placed when discovered, which the mode must then
        do call by call, inside the module that makes them."""
        mode = self.mode
        if (mode is None or own != self._aside or not self._may_step_aside()
                or threading.get_ident() != self._thread):
            return NO_SWITCH
        if own:
            mode.step_back()
            self._aside = False
            return (True, None, 0)
        mark = _seq_nr()
        if not mode.step_aside(checked=True):  # the module hook has asked ``_is_compiling``
            return NO_SWITCH
        self._aside = True
        try:  # read with the mode aside: a tensor's attributes are torch calls to it
            inputs = [(a, a._version) for a in args if isinstance(a, torch.Tensor) and not a.is_inference()]
        except Exception:  # a tensor subclass that refuses: its in-place changes go unnoted
            inputs = []
        return (True, inputs, mark)

    def _may_step_aside(self) -> bool:
        """With the line tracer placing nodes, or once recording has stopped at a limit (NOTE
        [limits] in recorder.py: the program runs on, and the less of the mode's handler it
        meets the closer to its bare speed)."""
        return self.rec.tracer.active or self.rec.limit is not None

    def leave(self, state: Switch, op: str, output: Any) -> None:
        """The other half of ``enter_module`` or of a step's pre hook: what the library module or
        optimizer step (``op``) made goes to discovery, and the tensors it changed in place are
        noted. Called last in a post hook: discovery may raise LimitReached, and the module
        tracker's stacks must be balanced by then."""
        switched, inputs, mark = state
        mode = self.mode
        if not switched or mode is None:
            return
        if inputs is None:  # a snippet module inside a library one returns
            if mode.step_aside():
                self._aside = True
            return
        rec = self.rec
        tracer = rec.tracer
        traced = not tracer.suspended  # a suspended tracer is neither paused nor resumed
        if traced:
            tracer.pause()
        try:  # with the mode still aside: the recorder's own reads are not the snippet's calls
            if rec.limit is None:
                tensors = tensors_within(output)
                if output is None:  # raised? (post hooks run in torch's ``except`` block then)
                    tensors += _held_by(sys.exc_info()[1])
                for t, version in inputs:
                    if t._version != version:
                        rec.note_inplace(t, op)
                        tensors.append(t)
                if mode.note_roots(tensors, mark) and rec.cuts:  # a detached input: its dashed edge
                    mode.cut_consumers(tuple(t for t, _ in inputs), output)
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            rec.internal_error(e)
        finally:
            if self._aside:  # (not if a snippet module inside could not step it aside again)
                mode.step_back()
                self._aside = False
            if traced:
                tracer.resume()

    def restore(self, exc: BaseException | None = None) -> None:
        """At the end of the block: the mode back on the stack if a library call left it aside
        (one that never returned to its hooks: the sandbox's time limit is a BaseException,
        which torch's module call does not stop for), so that it leaves as it came; what that
        call had made so far is found from the tensors ``exc``'s frames hold (a training loop
        stopped at its time limit inside the model still shows that step's graph)."""
        if not self._aside or self.mode is None:
            return
        try:
            if exc is not None and self.rec.limit is None:
                self.mode.note_roots(_held_by(exc), None)
        except LimitReached:
            pass  # the document says so (``rec.limit``)
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            self.rec.internal_error(e)
        finally:
            self.mode.step_back()
            self._aside = False

    def _step_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """NOTE [optimizer steps]: the mode steps aside for the step (when it is on)."""
        if _is_compiling():  # NOTE [invisible to dynamo] in compiled.py
            return None
        state = NO_SWITCH
        try:
            if threading.get_ident() == self._thread and self.rec.limit is None:
                self._note_optimized(optimizer)
            if self._woken in self.rec.wake:  # an earlier step raised and nothing woke us since
                self._woken()
            if (self.mode is not None and not self._aside and self._may_step_aside()
                    and threading.get_ident() == self._thread):
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

    def _note_optimized(self, optimizer: Any) -> None:
        """NOTE [leaves an optimizer holds]
            A leaf that no gradient reaches because a cut stands between is a mistake where an
            optimizer means to train it (an encoder detached from the loss), and by design where
            none does (a DQN's target network, a frozen teacher, an EMA copy, each read through
            ``.detach()``). The document cannot tell which from the graph: each optimizer that
            steps says so itself, its ``param_groups`` read here at every ``step()``, and the
            leaves among them are marked ``optimized`` (``capture/document.py``)."""
        held = self.rec.optimized
        params = [p for group in getattr(optimizer, "param_groups", ()) for p in group.get("params", ())
                  if isinstance(p, torch.Tensor)]
        for p in params:
            if id(p) not in held:
                held[id(p)] = weakref.ref(p)
        if not self._steps:  # a step inside another's (a Lookahead's base optimizer) is that update
            self._note_gradients_used(optimizer, params)
            state = getattr(optimizer, "state", None)
            if isinstance(state, dict):  # NOTE [an optimizer made afresh]
                with torch._C.DisableTorchFunction():  # the recorder's reads are no snippet's calls
                    self._fresh[id(optimizer)] = [p for p in params if p.grad is not None and not state.get(p)]

    def _note_gradients_used(self, optimizer: Any, params: list[torch.Tensor]) -> None:
        """NOTE [one gradient, two optimizers]
            A parameter two optimizers hold (``Adam(model.parameters())`` beside
            ``SGD(model.head.parameters())``, meant as a learning rate of its own) is updated by
            both steps from one backward's gradient: twice the step the program means. Each step
            notes, for each parameter it will update (a ``.grad``), that gradient, held weakly
            with its version: a step of another optimizer that finds the same tensor, unchanged
            (no backward accumulated into it, no ``zero_grad()`` replaced it), updates with it
            again, and both steps' lines are kept for the leaf (``Node.stepped_twice``). A freed
            gradient is never mistaken for a new one at the same address: its reference is dead.
            A step called inside another optimizer's step (a wrapper such as Lookahead stepping
            its base optimizer) is part of that one update, and is not counted."""
        rec = self.rec
        last = self._used
        line = rec.current_line()
        with torch._C.DisableTorchFunction():  # the recorder's reads are no snippet's calls
            for p in params:
                g = p.grad
                if g is None:
                    continue  # the step passes it by
                prev = last.get(id(p))
                if (prev is not None and prev[0]() is not optimizer and prev[1]() is g and prev[2] == g._version
                        and id(p) not in rec.stepped_twice and prev[3] is not None and line is not None):
                    rec.stepped_twice[id(p)] = [prev[3], line]
                last[id(p)] = (weakref.ref(optimizer), weakref.ref(g), g._version, line)

    def _note_state_kept(self, optimizer: Any, line: int | None) -> None:
        """NOTE [an optimizer made afresh]
            Adam's moments, SGD's momentum buffer and RMSprop's square average live in the
            optimizer object (``optimizer.state``, keyed by parameter). An optimizer made inside
            the training loop starts each step from empty state: Adam's every update is then its
            first, lr·g/(|g| + eps), about lr·sign(g) whatever the gradient's size, and momentum
            never builds. A step whose optimizer held no state for a parameter at its start
            (``_note_optimized``) and holds some after it is a fresh start of an optimizer that
            keeps state (plain SGD keeps none, and is never counted); a parameter's fresh starts
            after its first are its restarts (``Node.state_restarts``). A step inside another
            optimizer's step is that step's (a Lookahead's base optimizer), and is not counted."""
        fresh = {id(p) for p in self._fresh.pop(id(optimizer), ())}
        state = getattr(optimizer, "state", None)
        if not isinstance(state, dict):
            return
        kept = self.rec.state_restarts
        with torch._C.DisableTorchFunction():  # the recorder's reads are no snippet's calls
            params = [p for group in getattr(optimizer, "param_groups", ()) for p in group.get("params", ())
                      if isinstance(p, torch.Tensor) and p.grad is not None and state.get(p)]
        for p in params:
            row = kept.get(id(p))
            if row is None or row[0]() is not p:
                row = kept[id(p)] = [weakref.ref(p), type(optimizer).__name__, 0, -1, None]
            row[2] += 1
            if id(p) in fresh:
                row[3] += 1
                if row[3] == 1:
                    row[1], row[4] = type(optimizer).__name__, line

    def _step_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if _is_compiling():  # NOTE [invisible to dynamo] in compiled.py
            return None
        state = self._steps.pop() if self._steps else NO_SWITCH
        if threading.get_ident() == self._thread and self.rec.limit is None and not self._steps:
            try:
                self._note_state_kept(optimizer, self.rec.current_line())
            except Exception as e:  # NOTE [the recorder never breaks the snippet]
                self.rec.internal_error(e)
        if threading.get_ident() == self._thread and self.rec.limit is None:
            try:  # NOTE [gradient edits] in gradedits.py: what the step wrote into a .grad
                with torch._C.DisableTorchFunction():
                    self.rec.edits.check(None, deep=False, line=self.rec.current_line())
            except Exception as e:  # NOTE [the recorder never breaks the snippet]
                self.rec.internal_error(e)
        if not state[0]:
            return None
        if self._woken in self.rec.wake:
            self.rec.wake.remove(self._woken)
        name = f"{type(optimizer).__name__}.step"
        self.leave(state, name, None)
        return None

    def _woken(self) -> None:
        """The snippet's next line ran inside or after a step (a closure, or a step that
        raised): the mode goes back on."""
        if self._woken in self.rec.wake:
            self.rec.wake.remove(self._woken)
        if self._aside and self.mode is not None:
            self.mode.step_back()
            self._aside = False
