"""The tap: a TorchFunctionMode that sees each torch call the snippet makes (module hooks are in
:mod:`gradtrace.capture.modules`).

NOTE [why a TorchFunctionMode]
    It is called once per *user-level* torch call (``x * y``, ``F.linear``, the ops of the
    snippet's own modules), never per aten op, which makes it the cheapest place that still
    sees every tensor the snippet receives. Inside library modules it steps aside (NOTE [no tap
    inside library modules] in :mod:`gradtrace.capture.library`): what they make is found from
    what they return. Inside its handler the mode is off, so the recorder's own torch calls are
    not recorded. Backward APIs (``Tensor.backward``, ``torch.autograd.backward`` / ``grad``)
    also pass through it, which is how a pass gets its api, line, roots and flags.

NOTE [the recorder never breaks the snippet]
    Whatever the recorder does after a torch call (discovery, naming, values) runs under a
    ``try``: a failure there is counted in the document (``recorder_errors``) and the snippet
    goes on exactly as without gradtrace. Only :class:`LimitReached` (a BaseException) is
    meant to stop it.

NOTE [torch.compile]
    Dynamo traces active torch-function modes into the graph it compiles. Under tracing
    (``torch.compiler.is_compiling()``, constant-folded by dynamo) the handler is a plain call,
    so the compiled graph holds nothing of the recorder and runs at compiled speed (NOTE
    [invisible to dynamo] in compiled.py: the module and step hooks do the same, and dynamo's
    frame hook skips the recorder's frames). While dynamo compiles (a ``TracingContext`` is
    set) its own tensor accesses on fake tensors are not recorded either. The compiled
    region's single ``CompiledFunctionBackward`` node is then discovered like any other node
    from the tensors the compiled call returns.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from typing import Any

import torch
import torch.autograd.forward_ad as _fwad
from torch.overrides import TorchFunctionMode

from gradtrace.capture import frames
from gradtrace.capture.anomaly import scrub_stacks
from gradtrace.capture.dropouts import DEFAULT_TRAINING
from gradtrace.capture.events import RecordingStopped
from gradtrace.capture.odd_tensors import shape_of
from gradtrace.capture.recorder import Recorder

_seq_nr = torch._C._autograd._get_sequence_nr
_is_compiling = torch.compiler.is_compiling
_GUARDS_TLS = torch._guards._TLS
_DATA = torch._C.TensorBase.__dict__["data"]
_GRAD = torch._C.TensorBase.__dict__["grad"]
_DETACH = torch.Tensor.detach
_REQUIRES_GRAD = torch._C.TensorBase.__dict__["requires_grad"]
_REQUIRES_GRAD_ = torch.Tensor.requires_grad_
_grad_enabled = torch.is_grad_enabled


_METHOD_WRAPPER = type(_DATA.__get__)
_stack_len = torch._C._len_torch_function_stack
_stack_at = torch._C._get_function_stack_at
_stack_pop = torch._C._pop_torch_function_stack
_stack_push = torch._C._push_on_torch_function_stack


def _is_data_get(func: Any) -> bool:
    """``tensor.data`` reaches the mode as the descriptor's ``__get__`` (a new bound object each
    time, so compare its owner). The type is checked first: asking any other callable for a
    missing ``__self__`` raises inside ``getattr``, a microsecond on every torch call."""
    return type(func) is _METHOD_WRAPPER and func.__self__ is _DATA


def _is_grad_get(func: Any) -> bool:
    """``tensor.grad``: under ``no_grad`` it hands back a tensor without history from one with
    history, but it is not computed from that tensor, so it is no cut (a manual SGD step's
    ``w -= lr * w.grad``, ``clip_grad_norm_``'s reads of every ``.grad``)."""
    return type(func) is _METHOD_WRAPPER and func.__self__ is _GRAD


_ZEROS = {torch.Tensor.zero_, torch._foreach_zero_}
"""In-place calls that zero a ``.grad`` (NOTE [grad resets] in resets.py)."""

def _zeroes(func: Any) -> bool:
    try:
        return func in _ZEROS
    except TypeError:  # unhashable callable
        return False


def _is_grad_set(func: Any) -> bool:
    """``tensor.grad = value`` (``zero_grad()``'s ``p.grad = None`` too)."""
    return type(func) is _METHOD_WRAPPER and func.__self__ is _GRAD and func.__name__ == "__set__"


_NO_VALUE_TAKEN = {torch.zeros_like, torch.ones_like, torch.empty_like, torch.full_like,
                   torch.rand_like, torch.randn_like, torch.randint_like, torch.Tensor.new_zeros,
                   torch.Tensor.new_ones, torch.Tensor.new_empty, torch.Tensor.new_full}
"""Calls that take only the shape, dtype and device of their tensor argument: under ``no_grad``
their result carries none of its values, so it is no cut either (``m = torch.zeros_like(w)``)."""


def _takes_no_value(func: Any) -> bool:
    try:
        return func in _NO_VALUE_TAKEN or _is_grad_get(func)
    except TypeError:  # unhashable callable
        return False


_MUTATES: dict[Any, bool] = {}


def _mutates(func: Any) -> bool:
    """Whether ``func`` changes its first argument in place (``add_``, ``__iadd__``,
    ``__setitem__``): then that argument's new ``grad_fn`` (or ``CopySlices``) is a new node."""
    try:
        hit = _MUTATES.get(func)
    except TypeError:  # unhashable callable
        hit = None
    if hit is None:
        name = getattr(func, "__name__", "")
        hit = (name.endswith("_") and not name.startswith("__")) or name in _DUNDER_INPLACE
        with contextlib.suppress(TypeError):
            _MUTATES[func] = hit
    return hit


_DUNDER_INPLACE = {"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
                   "__ifloordiv__", "__imod__", "__ipow__", "__imatmul__", "__iand__", "__ior__",
                   "__ixor__", "__ilshift__", "__irshift__"}


_NO_KWARGS: dict[str, Any] = {}
"""The keyword arguments of a call that has none (read only: a special handler gets a copy)."""

_K_MUT, _K_ZERO, _K_GGET, _K_GSET, _K_RGSET, _K_RG_, _K_CUT, _K_NOVAL, _K_SPECIAL, _K_DROP = (1 << i for i in range(10))
_SPECIAL = {torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad,
            torch.Tensor.register_hook, torch.Tensor.retain_grad}
"""The calls ``CaptureMode`` hands to a handler of its own (``_special``)."""
_KINDS: dict[Any, int] = {}
"""NOTE [a call's kind]: what the recorder watches about each callable, worked out at its
first call (``_kind_of``) and then one dictionary look-up per call; 0 for most (the fast
path). Bits: ``_K_MUT`` changes its first argument in place, ``_K_ZERO`` zeroes a ``.grad``,
``_K_GGET`` / ``_K_GSET`` reads / sets ``.grad``, ``_K_RGSET`` sets ``requires_grad``, ``_K_RG_`` is
``requires_grad_``, ``_K_CUT`` is ``detach`` or ``.data``, ``_K_NOVAL`` takes no value from
its tensor, ``_K_SPECIAL`` is a backward or hook API, ``_K_DROP`` a functional dropout whose
``training`` defaults to True (NOTE [functional dropout ignores eval()] in dropouts.py). A bound descriptor method
(``t.grad``'s ``__get__``) is a new object at each access but equal to the last, so it is
found too."""


def _is_default_training_dropout(func: Any) -> bool:
    try:
        return func in DEFAULT_TRAINING
    except TypeError:  # unhashable callable
        return False


def _kind_of(func: Any) -> int:
    """``func``'s kind (NOTE [a call's kind]), remembered when ``func`` can be a key."""
    try:
        special = func in _SPECIAL
    except TypeError:  # unhashable callable
        special = False
    kind = ((_K_SPECIAL if special else 0) | (_K_MUT if _mutates(func) else 0)
            | (_K_ZERO if _zeroes(func) else 0)
            | (_K_GGET if _is_grad_get(func) and func.__name__ == "__get__" else 0)
            | (_K_GSET if _is_grad_set(func) else 0)
            | (_K_RGSET if type(func) is _METHOD_WRAPPER and func.__self__ is _REQUIRES_GRAD
               and func.__name__ == "__set__" else 0)
            | (_K_RG_ if func is _REQUIRES_GRAD_ else 0)
            | (_K_CUT if func is _DETACH or _is_data_get(func) else 0)
            | (_K_NOVAL if _takes_no_value(func) else 0)
            | (_K_DROP if not special and _is_default_training_dropout(func) else 0))
    with contextlib.suppress(TypeError):
        _KINDS[func] = kind
    return kind


def _tensors_of(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, tuple | list):
        return [t for t in out if isinstance(t, torch.Tensor)]
    return []


def _cut_possible(args: tuple[Any, ...], out: Any) -> bool:
    """Whether a call without history could be a cut (NOTE in ``_maybe_cut``): an argument
    with history and a result without. Asked before anything else is done for the call: an
    optimizer's step makes dozens of such calls per parameter, none of them a cut."""
    for a in args:  # a loop, not ``any`` over a generator: this runs for most no_grad calls
        if isinstance(a, torch.Tensor) and a.requires_grad:
            break
    else:
        return False
    return any(not t.requires_grad for t in _tensors_of(out))


def _as_list(x: Any) -> list[Any]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, tuple | list):
        return list(x)
    return []


class CaptureMode(TorchFunctionMode):
    """Hands every torch call's results to the recorder."""

    def __init__(self, rec: Recorder) -> None:
        super().__init__()
        self.rec = rec
        self._special: dict[Any, Callable[[Any, tuple[Any, ...], dict[str, Any]], Any]] = {
            torch.Tensor.backward: self._backward,
            torch.autograd.backward: self._backward,
            torch.autograd.grad: self._backward,
            torch.Tensor.register_hook: self._register_hook,
            torch.Tensor.retain_grad: self._retain_grad,
        }

    def let_go(self) -> None:
        """The block is over: its backward APIs' handlers (bound methods, a cycle through this
        mode to the recorder) are dropped (NOTE [no cycle outlives the block] in recorder.py)."""
        self._special = {}

    def pass_through(self) -> set[Any]:
        """The code objects that call the snippet's own torch functions (NOTE [warnings from
        the tap] in warnsite.py)."""
        return {f.__code__ for f in (CaptureMode.__torch_function__, CaptureMode._marked, CaptureMode._backward,
                                     CaptureMode._register_hook, CaptureMode._retain_grad)}

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        if kwargs is None:
            kwargs = _NO_KWARGS
        if _is_compiling():  # NOTE [torch.compile]
            return func(*args, **kwargs)
        rec = self.rec
        if rec.limit is not None:
            return func(*args, **kwargs)
        try:
            kind = _KINDS[func]
        except (KeyError, TypeError):
            kind = _kind_of(func)
        if kind:
            return self._marked(func, kind, args, kwargs)
        # NOTE [fast path]: a call that is no backward, changes nothing in place and is none
        # of the attribute accesses the recorder watches (most calls: ``x * w``, ``sum``).
        if rec.pending and "out" in kwargs:
            self._flush()  # NOTE [discovery in batches]: saved tensors are read before the change
        mark = _seq_nr()
        try:
            out = func(*args, **kwargs)
        except Exception as e:
            self._raised(func, args, e)
            raise
        if _fwad._current_level >= 0:  # NOTE [forward-mode AD] in tangents.py
            self._tangents(func, args, kwargs, out)
        if kwargs and kwargs.get("requires_grad"):
            rec.leaf_lines.note(out, rec.current_line())  # NOTE [where leaves are defined]
        if _seq_nr() != mark:
            # no sequence number handed out means no node was created: one counter read
            if (rec.tracer.active and rec.active_pass is None and not rec.cuts and not kwargs
                    and type(out) is torch.Tensor and self._deferred(out)):
                return out  # NOTE [one new result, deferred]
            work = self._after
        elif _grad_enabled() or rec.module_stack or not _cut_possible(args, out):
            return out  # an optimizer's update under no_grad, say: nothing to record
        else:
            work = self._cuts_only
        self._work(work, func, args, kwargs, out, mark)
        return out

    def _deferred(self, out: torch.Tensor) -> bool:
        """NOTE [one new result, deferred]: the commonest recorded call, one plain tensor with
        a new node made by a snippet line outside a backward pass and before any cut, only
        notes that node for its line's walk (NOTE [discovery in batches]) as ``note_roots``
        would, without pausing the line tracer: the note runs no torch call, and a pause and
        resume cost more than the tracer's look at the few frames it runs. False, with
        nothing done, when the call needs ``_after``'s general handling."""
        rec = self.rec
        g = out.grad_fn
        if g is None or rec.is_known(g) or getattr(_GUARDS_TLS, "tracing_context", None) is not None:
            return False  # (``_tracing_context()``'s own look, without its call)
        try:
            if out._is_view() and rec.name_results_on and len(rec.fresh_views) < 4096:
                rec.fresh_views[id(out)] = (out, g)  # NOTE [variables of intermediates]
            rec.defer([g])
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            rec.internal_error(e)
        return True

    def _work(self, work: Callable[..., None], func: Any, args: tuple[Any, ...],
              kwargs: dict[str, Any], out: Any, mark: int) -> None:
        """The recorder's ``work`` after a call, with the line tracer paused."""
        rec = self.rec
        tracer = rec.tracer
        tracer.pause()
        try:
            work(func, args, kwargs, out, mark)
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            rec.internal_error(e)
        finally:
            tracer.resume()

    def _marked(self, func: Any, kind: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A call the recorder watches (``_kind_of``): a backward or hook API, an in-place
        change, or an access to ``.grad``, ``.data`` or ``requires_grad``."""
        rec = self.rec
        if kind & _K_SPECIAL:
            if rec.pending:
                self._flush()
            return self._special[func](func, args, dict(kwargs))
        if kind & _K_DROP:
            self._quietly(lambda: rec.dropouts.note(rec.module_stack[-1] if rec.module_stack else None, kwargs))
        mutates = kind & _K_MUT
        if rec.pending and (mutates or "out" in kwargs):
            self._flush()  # NOTE [discovery in batches]: saved tensors are read before the change
        if rec.edits.seen and args and kind & (_K_ZERO | _K_GSET):
            self._before_clear(args[0])  # NOTE [gradient edits] in gradedits.py
        mark = _seq_nr()
        try:
            out = func(*args, **kwargs)
        except Exception as e:
            self._raised(func, args, e)
            raise
        if _fwad._current_level >= 0:  # NOTE [forward-mode AD] in tangents.py
            self._tangents(func, args, kwargs, out)
        if mutates and args:
            if isinstance(args[0], torch.Tensor):
                rec.note_inplace(args[0], getattr(func, "__name__", "?"))
            if rec.resets.last and kind & _K_ZERO:  # NOTE [grad resets] in resets.py
                rec.resets.note_zero(args[0], rec.current_line)
            if rec.edits.seen:  # NOTE [gradient edits] in gradedits.py
                rec.edits.touch(args[0], rec.current_line)
        elif kind & _K_GGET:
            if rec.edits.seen:
                rec.edits.touch(out, rec.current_line)  # NOTE [gradient edits]
        elif kind & _K_GSET:
            if rec.resets.last:
                rec.resets.note_set(args, rec.current_line)  # `x.grad = None`, in zero_grad() too
        elif kind & _K_RGSET and args:
            rec.leaf_lines.note(args[0], rec.current_line())  # NOTE [where leaves are defined]
        if (kwargs and kwargs.get("requires_grad")) or kind & _K_RG_:
            rec.leaf_lines.note(out, rec.current_line())  # NOTE [where leaves are defined]
        if _seq_nr() != mark:
            work = self._after
        elif not _grad_enabled() or kind & _K_CUT:
            if rec.module_stack or not _cut_possible(args, out) or kind & _K_NOVAL:
                return out  # an optimizer's update under no_grad, say: nothing to record
            work = self._cuts_only
        else:
            return out
        self._work(work, func, args, kwargs, out, mark)
        return out

    def _tangents(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        rec = self.rec
        self._quietly(lambda: rec.tangents.note(func, args, kwargs, out, rec.current_line(), rec.values, rec.grow))

    def _before_clear(self, target: Any) -> None:
        """``.grad`` is about to be cleared or replaced: NOTE [gradient edits]. Nothing to do
        (and no pause of the line tracer) when ``target`` is no remembered leaf or gradient."""
        rec = self.rec
        if not rec.edits.remembers(target):
            return
        self._quietly(lambda: rec.edits.before_clear(target, rec.current_line()))

    def _quietly(self, work: Callable[[], None]) -> None:
        """Run the recorder's ``work`` with the line tracer paused; its failure is the recorder's."""
        rec = self.rec
        rec.tracer.pause()
        try:
            work()
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            rec.internal_error(e)
        finally:
            rec.tracer.resume()

    def _raised(self, func: Any, args: tuple[Any, ...], exc: Exception) -> None:
        """The innermost torch call that raised ``exc``, for the run's error (``RunError.op``)."""
        rec = self.rec
        if rec.op_error is not None and rec.op_error[0] is exc:
            return  # an outer call that sees the same exception
        try:
            tensors = [t for a in args for t in _tensors_of(a)]
            held = rec.tensors.get(id(tensors[0])) if tensors else None  # the tensor the op changes or reads first
            node = str(held[1]["id"]) if held is not None and held[0] is tensors[0] else None
            rec.op_error = (exc, getattr(func, "__name__", type(func).__name__), [shape_of(t) for t in tensors], node)
        except Exception as e:  # NOTE [the recorder never breaks the snippet]
            rec.internal_error(e)

    def _flush(self) -> None:
        tracer = self.rec.tracer
        tracer.pause()
        try:
            self.rec.flush()
        finally:
            tracer.resume()

    def _cuts_only(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any,
                   mark: int) -> None:
        self._maybe_cut(func, args, out)  # reached only when ``_cut_possible``

    def _after(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any,
               mark: int) -> None:
        tensors = _tensors_of(out)
        if args and isinstance(args[0], torch.Tensor) and _mutates(func):
            tensors.append(args[0])
        if kwargs.get("out") is not None:
            tensors += _tensors_of(kwargs["out"])
        if self.note_roots(tensors, mark):
            if self.rec.cuts:
                self.cut_consumers(args, out)
        elif not _grad_enabled() or func is _DETACH or _is_data_get(func):
            self._maybe_cut(func, args, out)

    def note_roots(self, tensors: list[torch.Tensor], mark: int | None) -> bool:
        """Hand the unknown nodes behind ``tensors`` (made since sequence number ``mark``) to
        discovery, batched by line when it can be (NOTE [discovery in batches]); whether
        there were any."""
        rec = self.rec
        roots = []
        index_of = rec.core.index_of  # (``rec.is_known``, without its call)
        for t in tensors:
            g = t.grad_fn
            if g is not None and index_of(g) < 0:
                roots.append(g)
                if t._is_view() and rec.name_results_on and len(rec.fresh_views) < 4096:
                    rec.fresh_views[id(t)] = (t, g)  # NOTE [variables of intermediates]
        if not roots or getattr(_GUARDS_TLS, "tracing_context", None) is not None:
            return False  # (``_tracing_context()``'s own look, without its call)
        if rec.tracer.active and rec.active_pass is None and not rec.cuts:
            rec.defer(roots)
        else:
            rec.discover(roots, line=rec.current_line(), seq_mark=mark, created_in_pass=rec.active_pass)
        return True

    # ------------------------------------------------------------------ library modules
    def step_aside(self, checked: bool = False) -> bool:
        """Take the mode off the stack while a library module runs (NOTE [no tap inside library
        modules] in :mod:`gradtrace.capture.modules`); False when it is not on top (a mode of
        the snippet's own above it, or torch running one of our handlers): then it stays.
        ``checked``: the caller has asked ``_is_compiling`` already."""
        if not checked and _is_compiling():
            return False
        n = _stack_len()
        if n == 0 or _stack_at(n - 1) is not self:
            return False
        _stack_pop()
        return True

    def step_back(self) -> None:
        _stack_push(self)

    # ------------------------------------------------------------------ cuts
    def _maybe_cut(self, func: Any, args: tuple[Any, ...], out: Any) -> None:
        """A result without history computed, directly in the snippet, from a tensor with
        history: ``detach()``, ``.data`` or an op under ``no_grad`` / ``inference_mode``."""
        rec = self.rec
        if rec.module_stack:
            return
        outs = [t for t in _tensors_of(out) if not t.requires_grad]
        if not outs:
            return
        sources = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
        if not sources:
            return
        frame = frames.direct_caller(rec.filename, 3)
        if frame is None or frames.inside_custom_function(frame):
            return
        if func is torch.Tensor.detach:
            kind = "detach"
        elif _is_data_get(func):
            kind = "data"
        elif torch.is_inference_mode_enabled():
            kind = "inference_mode"
        else:
            kind = "no_grad"
        src = sources[0]
        try:
            src_fn = src.grad_fn
        except RuntimeError:  # NOTE [a view's grad_fn read after an in-place change] in gradfn.py
            return  # its history cannot be read without breaking the program: no cut drawn
        if src_fn is not None:
            rec.discover([src_fn], line=frame.f_lineno, seq_mark=None)
            source = rec.fn_id(src_fn)
        else:
            source = rec.tensor_node(src, role="leaf", line=frame.f_lineno)
        names = frames.NameIndex.during_run(frame)
        for t in outs:
            tid = rec.tensor_node(t, role="cut", line=frame.f_lineno, names=names)
            rec.cuts[id(t)] = (t, tid)
            doc = rec.tensors[id(t)][1]
            doc.setdefault("cut", {"kind": kind, "line": frame.f_lineno, "source": source})

    def cut_consumers(self, args: tuple[Any, ...], out: Any) -> None:
        """An edge (marked ``cut``) from a cut tensor to the node of the op that used it: the
        value flows forward there, and no gradient flows back. A library module's call (its ops
        unseen: NOTE [no tap inside library modules] in modules.py) is one op here, its output's
        node the target (``LibraryCalls.leave``)."""
        rec = self.rec
        outs = [t.grad_fn for t in _tensors_of(out) if t.grad_fn is not None]
        if not outs:
            return
        target = rec.fn_id(outs[0])
        for a in args:
            for t in _tensors_of(a):
                hit = rec.cuts.get(id(t))
                if hit is not None and hit[0] is t:
                    rec.edges.append({"source": hit[1], "target": target, "input_nr": None,
                                      "cut": True})

    # ------------------------------------------------------------------ backward
    def _backward(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        rec = self.rec
        try:
            idx, line, create_graph = self._begin_backward(func, args, kwargs)
        except RecordingStopped:  # a limit before the call: it runs unrecorded (NOTE [limits])
            return func(*args, **kwargs)
        outer, rec.active_pass = rec.active_pass, idx
        completed = False
        rec.before_backward()
        # a backward's ops are no forward outputs (outputs.py), but a create_graph pass's ops
        # that make a node are that node's forward: the tap keeps holding what they return
        # (a gradient penalty's TanhBackwardBackward0 holds the gradient it computed)
        tap = None if create_graph else rec.outputs
        if tap is not None:
            tap.paused += 1
        try:
            with contextlib.suppress(Exception):  # NOTE [the recorder never breaks the snippet]
                scrub_stacks(_tensors_of(args[0]) if args else _tensors_of(kwargs.get("tensors")))
            result = func(*args, **kwargs)
            completed = True
        finally:
            if tap is not None:
                tap.paused -= 1
            rec.active_pass = outer
            rec.after_backward(outermost=outer is None)
            rec.end_pass(idx, completed=completed)
        if create_graph:
            grads = [g.grad_fn for g in _tensors_of(result) if g.grad_fn is not None]
            if grads:
                with contextlib.suppress(RecordingStopped):  # NOTE [limits]
                    rec.discover(grads, line=line, seq_mark=None, created_in_pass=idx)
        return result

    def _begin_backward(self, func: Any, args: tuple[Any, ...],
                        kwargs: dict[str, Any]) -> tuple[int, int | None, bool]:
        """The pass a backward call is about to run, with its roots' nodes: (its index, its
        line, whether it builds a graph)."""
        rec = self.rec
        if func is torch.autograd.grad:
            api = "torch.autograd.grad"
        elif func is torch.autograd.backward:
            api = "torch.autograd.backward"
        else:
            api = "Tensor.backward"
        roots = _as_list(args[0] if args else kwargs.get("tensors", kwargs.get("outputs")))
        create_graph = bool(kwargs.get("create_graph", False))
        retain = kwargs.get("retain_graph")
        retain_graph = create_graph if retain is None else bool(retain)
        frame = frames.snippet_frame(rec.filename, 4)
        line = frame.f_lineno if frame is not None else None
        names = frames.NameIndex.during_run(frame)
        root_ids = []
        for t in roots:
            if isinstance(t, torch.Tensor):
                if t.grad_fn is not None:
                    rec.discover([t.grad_fn], line=line, seq_mark=None, names=names)
                tid = rec.tensor_node(t, role="root", line=line, names=names)
                if t.grad_fn is not None:
                    source = rec.fn_id(t.grad_fn)
                    if (source, tid) not in rec.tensor_edges:
                        rec.tensor_edges.add((source, tid))
                        rec.edges.append({"source": source, "target": tid, "input_nr": None})
                root_ids.append(tid)
        idx = rec.begin_pass(api, line, root_ids, retain_graph=retain_graph, create_graph=create_graph)
        return idx, line, create_graph

    # ------------------------------------------------------------------ tensor hooks
    def _register_hook(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        # Weakly: the wrapper stays on the program's tensor after the block, and the tensor may
        # be held by the recorder's own C++ side (a kept output), a cycle the collector cannot
        # see (NOTE [no cycle outlives the block] in recorder.py); a backward after the block is
        # not the block's.
        recorder = weakref.ref(self.rec)
        tensor, hook = args[0], args[1] if len(args) > 1 else kwargs.pop("hook")

        def watched(grad: Any) -> Any:
            new = hook(grad)
            if new is not None and new is not grad:
                rec = recorder()
                if rec is not None and not rec.ended:
                    rec.note_hook_change(grad, new)
            return new

        watched.__wrapped__ = hook  # type: ignore[attr-defined]
        return func(tensor, watched, *args[2:], **kwargs)

    def _retain_grad(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        out = func(*args, **kwargs)
        t = args[0]
        rec = self.rec
        if isinstance(t, torch.Tensor) and t.grad_fn is not None and rec.limit is None:
            frame = frames.snippet_frame(rec.filename, 3)
            line = frame.f_lineno if frame is not None else None
            with contextlib.suppress(RecordingStopped):  # NOTE [limits]
                rec.discover([t.grad_fn], line=line, seq_mark=None)
                tid = rec.tensor_node(t, role="retained", line=line,
                                      names=frames.NameIndex.during_run(frame))
                source = rec.fn_id(t.grad_fn)
                rec.tensor_edges.add((source, tid))
                rec.edges.append({"source": source, "target": tid, "input_nr": None})
        return out
