"""The Python twin's output tap on the ops' path: a Python kernel on a dispatch key of the
tap's own (``tap_fallback`` in ``cxx/tap.h`` is the C++ core's), which hands each node-making
op's outputs to the active ``OutputTap`` (capture/outputs.py).

NOTE [a key of the tap's own]
    The key (``TESTING_ONLY_GenericWrapper``; the C++ core's is the other one torch leaves
    free) is included in the recording thread's local key set while a block records and sits
    above autograd, so an op's outputs come back with their node set: each is held under
    ``(grad_fn, output_nr)`` at once. A composite op (``reshape``) reaches the key again for
    each op it calls, as in the C++ core.

    Not a ``TorchDispatchMode``: while any Python dispatch mode is on the stack, ATen's
    ``isTensorSubclassLike`` answers true, so a composite op may take another path than in a
    bare run (``reshape`` of a tensor that is not contiguous but can be viewed calls ``view``,
    ``ViewBackward0``, where a bare run calls ``_reshape_alias``): recording must not change
    which ops a program runs (tests/capture/test_reshape_names.py).

    Not a Python fallback alone either: while a dispatch mode is active, or an argument is a
    ``__torch_dispatch__`` subclass, torch calls a Python kernel through a trampoline that
    looks it up per operator, and finds no fallback there (an internal assert). So each
    operator gets a kernel of its own (``_Kernel``): the 3,600 known when a block first
    records (40 ms of CPU once per process), those ``torch.library`` or ``torch.ops.load_library``
    added since at the next block, and one ``Library.define`` adds while a block records at
    once (a snippet's ``custom_op`` under ``torch.compile``). The fallback runs an operator
    registered some other way (a C++ extension imported inside a block) until the next block.

NOTE [detach and alias pass by the tap's key]
    A Python kernel hands each output to Python, which ties the tensor to a plain ``Tensor``
    object for good. ``Tensor._make_subclass`` (``nn.Parameter``) and ``as_subclass`` (every op
    of a ``__torch_function__`` subclass) then fail: they wrap the result of their own
    ``detach`` / ``alias`` in a new subclass object. Both ops fall through the key, on both
    kernel sets (``cxx/tap.h`` registers the same), so an alias's output is never held: it is
    its input's numbers, held where that was made.

NOTE [wrapped numbers in Python]
    A Python kernel is handed autograd's wrapped numbers (the ``3`` of ``x * 3``, the ``2`` of
    ``sqrt``'s backward formula) as Python numbers, and ``redispatch_boxed`` takes no number
    for a Tensor. The ops Python may call with a number (``mul``, ``add``, ``div``, ``to``,
    ...: ``torch._C._should_allow_numbers_as_tensors``) are called as the program calls them
    (``OpOverload._op``: the number is a wrapped number again, with its type promotion) with
    the tap's key excluded for the call: pointwise ops, whose one node's outputs the kernel
    holds all the same. Any other op (a read of a saved wrapped number, ``where``'s internal
    scalar) is given the 0-dim tensor of the wrapped number's dtype.

NOTE [the tap in a traceback]
    An op that raises (a shape error in a library module) raises through the tap's kernel,
    the one Python frame between the program's call and the op's kernels: the op is
    redispatched through its C++ handle (no frame of torch/_ops.py), its arguments are let go
    before the error goes on (the recorder finds what a failed library call built from the
    tensors a traceback's frames hold, library.py), and the recorder's readers of tracebacks
    pass over this frame (``TAP_CODE``).
"""

from __future__ import annotations

import threading
from typing import Any

import torch
from torch.library import Library, fallthrough_kernel

KEY_NAME = "TESTING_ONLY_GenericWrapper"


def _key(name: str) -> torch._C.DispatchKey:
    key = torch._C._parse_dispatch_key(name)
    if key is None:
        raise RuntimeError(f"this torch has no dispatch key {name}")
    return key


KEY = _key(KEY_NAME)
KEY_SET = torch._C.DispatchKeySet(KEY)
_AFTER = torch._C._dispatch_keyset_full_after(KEY)
_FRONT_MODE = torch._C.DispatchKey.FuncTorchDynamicLayerFrontMode
_included = torch._C._dispatch_tls_is_dispatch_key_included
_seq_nr = torch._C._autograd._get_sequence_nr
_get_ident = threading.get_ident
_no_torch_function = torch._C.DisableTorchFunction
_tracing_state = torch._C._get_tracing_state
_set_tracing_state = torch._C._set_tracing_state  # type: ignore[attr-defined]  # in torch, not in its stubs
"""NOTE [the tap unseen by the JIT tracer]
    ``torch.jit.trace`` records every op run while it traces, and names each value after a
    Python variable that holds it in the frames it finds. The tap's notes of an output (Python,
    in these kernels) would be traced into the user's graph, and name its values after the
    tap's own locals (``%t``), differently at ``check_trace``'s second run: "Graphs differed
    across invocations", a trace the bare run makes. The tracer is set aside while the tap
    notes; the C++ core's tap runs no Python and meets no tracer."""
_KeyOff = torch._C._ExcludeDispatchKeyGuard
_NUMBERS = {bool: torch.bool, int: torch.int64, float: torch.float64, complex: torch.complex128}
_PASS_BY = ("aten::detach", "aten::alias")


class Active:
    """The tap whose block records now (``active_tap()`` in ``cxx/tap.h``): an ``OutputTap``
    with ``paused``, ``thread``, ``_by_storage``, ``values``, ``_copy_before_write`` and
    ``_note``."""

    tap: Any = None


def _overload(name: str) -> Any:
    """``ns::op.overload`` as its ``OpOverload``."""
    ns, _, rest = name.partition("::")
    base, _, overload = rest.partition(".")
    return getattr(getattr(getattr(torch.ops, ns), base), overload or "default")


class _Kernel:
    """The tap's kernel for one operator: NOTE [a key of the tap's own]."""

    __slots__ = ("call", "composite", "mutable", "name", "numbers_ok", "op", "redispatch", "tensor_args")

    def __init__(self, name: str, op: Any = None) -> None:
        self.name = name
        self.op = op
        self.call: Any = None
        """``op._op``; None until the first call (resolving 3,600 overloads up front costs)."""

    def _resolve(self) -> None:
        op = self.op if self.op is not None else _overload(self.name)
        schema = op._schema
        self.redispatch = op._handle.redispatch_boxed
        self.call = op._op
        self.mutable = bool(schema.is_mutable)
        self.tensor_args = tuple((i, a.name) for i, a in enumerate(schema.arguments)
                                 if str(a.type) in ("Tensor", "Optional[Tensor]"))
        self.numbers_ok = bool(torch._C._should_allow_numbers_as_tensors(schema.name.partition("::")[2]))
        has = torch._C._dispatch_has_kernel_for_dispatch_key
        self.composite = bool(has(op.name(), "CompositeImplicitAutograd")
                              or has(op.name(), "CompositeImplicitAutogradNestedTensor"))
        """Its parts are ops of their own, each tapped; any other op runs with the key off
        (NOTE [ops inside a kernel pass by the tap] in ``cxx/tap.h``)."""
        self.op = op

    def _numbers(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | bool:
        """False where no Python number stands for a Tensor; True where ``_op`` takes it back
        as a wrapped number; else ``args`` with 0-dim tensors for them (NOTE [wrapped numbers in
        Python])."""
        for i, name in self.tensor_args:
            if type(args[i] if i < len(args) else kwargs.get(name)) in _NUMBERS:
                break
        else:
            return False
        if self.numbers_ok:
            return True
        at = {i for i, _ in self.tensor_args}
        with _no_torch_function():
            return tuple(torch.tensor(a, dtype=_NUMBERS[type(a)]) if i in at and type(a) in _NUMBERS else a
                         for i, a in enumerate(args))

    def __call__(self, keys: Any, /, *args: Any, **kwargs: Any) -> Any:
        if self.call is None:
            self._resolve()
        numbers = self._numbers(args, kwargs) if self.tensor_args else False
        if type(numbers) is tuple:
            args, numbers = numbers, False
        tap = Active.tap
        if tap is None or _get_ident() != tap.thread or _included(_FRONT_MODE):
            # a functorch transform (vmap, grad) is active: its levels' tensors are no forward outputs
            if numbers:
                with _KeyOff(KEY_SET):
                    return self.call(*args, **kwargs)
            return self.redispatch(keys & _AFTER, *args, **kwargs)
        mutable = self.mutable
        if mutable and (tap._by_storage or tap.values.by_storage):
            # backward passes too: NOTE [held gradients copied before a write] in cxx/tap.h
            tap._copy_before_write(self.op, args, kwargs)
        if tap.paused:  # a backward's ops are no forward outputs
            if numbers:
                with _KeyOff(KEY_SET):
                    return self.call(*args, **kwargs)
            return self.redispatch(keys & _AFTER, *args, **kwargs)
        mark = _seq_nr()
        try:
            if numbers:
                with _KeyOff(KEY_SET):
                    out = self.call(*args, **kwargs)
            elif self.composite:
                out = self.redispatch(keys & _AFTER, *args, **kwargs)
            else:
                with _KeyOff(KEY_SET):  # NOTE [ops inside a kernel pass by the tap] in cxx/tap.h
                    out = self.redispatch(keys & _AFTER, *args, **kwargs)
        except Exception:
            del args, kwargs  # NOTE [the tap in a traceback]
            raise
        if _seq_nr() == mark and not mutable:
            return out  # no node made, nothing written
        tracing = _tracing_state()
        if tracing is not None:  # NOTE [the tap unseen by the JIT tracer]
            _set_tracing_state(None)
        try:
            with _no_torch_function():  # the tap's reads of a subclass's outputs run no Python of it
                if isinstance(out, torch.Tensor):
                    tap._note(out)
                elif isinstance(out, tuple | list):
                    for o in out:
                        if isinstance(o, torch.Tensor):
                            tap._note(o)
                        elif isinstance(o, list):
                            for t in o:
                                if isinstance(t, torch.Tensor):
                                    tap._note(t)
        finally:
            if tracing is not None:
                _set_tracing_state(tracing)
        return out


TAP_CODE = _Kernel.__call__.__code__
"""The kernel's code, which readers of a traceback pass over (NOTE [the tap in a traceback])."""

_libraries: dict[str, Library] = {}
_registered: set[str] = set()
_late: dict[str, Any] = {}
"""Operators the fallback met (defined after the last registration), by name."""
_known = [-1, -1]
"""How many operators Python had defined (``torch.library``) and C++ libraries torch had loaded
at the last registration: when either moved, operators may have been added."""
_define = Library.define


def _fallback(keys: Any, op: Any, *args: Any, **kwargs: Any) -> Any:
    """An operator defined after the kernels were registered, outside ``Library.define``: its
    kernel now, its own registration at the next block (registering one while it runs would
    free the kernel running)."""
    kernel = _late.get(op.name())
    if kernel is None:
        kernel = _late[op.name()] = _Kernel(op.name(), op)
    try:
        return kernel(keys, *args, **kwargs)
    except Exception:
        del args, kwargs  # NOTE [the tap in a traceback]
        raise


def _library(ns: str) -> Library:
    lib = _libraries.get(ns)
    if lib is None:
        lib = _libraries[ns] = Library(ns, "IMPL")  # type: ignore[no-untyped-call]
    return lib


def _register(names: Any) -> None:
    for name in names:
        if name in _registered:
            continue
        ns, _, op = name.partition("::")
        _library(ns).impl(op, _late.pop(name, None) or _Kernel(name), KEY_NAME, with_keyset=True)  # type: ignore[no-untyped-call]
        _registered.add(name)


def _defined(self: Library, *args: Any, **kwargs: Any) -> Any:
    """``Library.define`` while a block records: the new operator gets its kernel at once (a
    snippet's ``custom_op`` may run under ``torch.compile``'s fake tensor mode in the same
    block). Only operators not running yet are registered."""
    result = _define(self, *args, **kwargs)  # type: ignore[no-untyped-call]
    _register(torch._C._dispatch_get_all_op_names())
    _known[0] = len(torch.library._defs)
    return result


def install() -> None:
    """The kernels on the tap's key, for every operator not registered yet (NOTE [a key of the
    tap's own]); ``detach`` and ``alias`` fall through (NOTE [detach and alias pass by the
    tap's key]). Outside any dispatch; ``uninstall`` at the block's end."""
    if not _registered:
        _library("_").fallback(_fallback, KEY_NAME, with_keyset=True)  # type: ignore[no-untyped-call]
        for name in _PASS_BY:
            ns, _, op = name.partition("::")
            _library(ns).impl(op, fallthrough_kernel, KEY_NAME)  # type: ignore[no-untyped-call]
            _registered.add(name)
    known = [len(torch.library._defs), len(torch.ops.loaded_libraries)]
    if known != _known:
        _register(torch._C._dispatch_get_all_op_names())
        _known[:] = known
    elif _late:
        _register(list(_late))
    Library.define = _defined  # type: ignore[method-assign]


def uninstall() -> None:
    """``Library.define`` as torch has it."""
    Library.define = _define  # type: ignore[method-assign]
