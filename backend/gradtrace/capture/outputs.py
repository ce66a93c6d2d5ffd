"""Forward outputs as the ops returned them, for the tensor file (NOTE [kept tensors] in
:mod:`gradtrace.capture.tensorfile`).

The C++ core's kernel set taps them in C++ (``NativeTap``, NOTE [the tap in C++] in
``cxx/tap.h``: a Python dispatch mode costs ~11 us per op and changes what some programs run,
``reshape`` becoming ``view``); ``OutputTap`` below is its Python twin, the Python kernel
set's, and both give the same file.

NOTE [forward outputs through a dispatch mode]
    The torch-function tap (:mod:`gradtrace.capture.mode`) steps aside inside library modules,
    so it never sees what ``nn.Linear`` or an attention block computes inside. A
    ``TorchDispatchMode`` sees every aten op below autograd, library code included. An op that
    makes a node advances autograd's sequence counter before it reaches the mode; its outputs
    are then noted, and at the next op (or at the end) each is matched to its node through
    ``t.grad_fn`` and ``t.output_nr``, which autograd has set by then: the node is the tensor's
    own, never guessed from a counter. A view whose version moved since (an in-place change
    through it) is not asked for its ``grad_fn``: that would rebuild the view's node and shift
    every later sequence number of the program.

NOTE [copy on write]
    An output is held by reference with its version. Before an op writes into a tensor (an
    in-place op, an ``out=`` argument, ``.data`` writes too: the storage is what counts) every
    output still held on that storage is copied, so the file holds the numbers as they were
    made at the cost of a copy only where the program changes them. What changed behind the
    mode's back (another thread) is found at the end by its version and left out (``changed``).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.autograd.forward_ad as _fwad
from torch.utils._python_dispatch import TorchDispatchMode

_seq_nr = torch._C._autograd._get_sequence_nr
_is_compiling = torch.compiler.is_compiling
_transforms_active = torch._C._are_functorch_transforms_active
_WRITES: dict[Any, tuple[int, ...]] = {}


def _written_args(func: Any) -> tuple[int, ...]:
    """Positions of the arguments ``func`` writes into (cached per overload)."""
    hit = _WRITES.get(func)
    if hit is None:
        try:
            hit = tuple(i for i, a in enumerate(func._schema.arguments)
                        if a.alias_info is not None and a.alias_info.is_write)
        except AttributeError:
            hit = ()
        _WRITES[func] = hit
    return hit


def _storage_key(t: torch.Tensor) -> int | None:
    try:
        return int(t.untyped_storage().data_ptr())
    except Exception:  # no storage (sparse, meta, a subclass)
        return None


_WRAPPED = {float: torch.float64, int: torch.int64, complex: torch.complex128, bool: torch.bool}


def _scalars_as_tensors(func: Any, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """``args`` with Python numbers where ``func`` takes a Tensor made tensors again, or None.

    NOTE [wrapped numbers under a dispatch mode]
        A dispatch mode is handed autograd's wrapped numbers (the ``3`` of ``x * 3``, saved by
        ``MulBackward0``) as Python numbers; an op that takes one as its tensor ``self``
        (``detach`` when the recorder reads that saved value) then fails to bind. The same
        number as a 0-dim tensor of the wrapped number's dtype (int64 / float64 / complex128)
        is what the op was given."""
    try:
        schema = func._schema.arguments
    except AttributeError:
        return None
    out = list(args)
    changed = False
    for i, a in enumerate(args):
        if i < len(schema) and isinstance(a, bool | int | float | complex) and str(schema[i].type) == "Tensor":
            out[i] = torch.tensor(a, dtype=_WRAPPED.get(type(a)))
            changed = True
    return tuple(out) if changed else None


def _bump_foreach(func: Any, writes: tuple[int, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """NOTE [foreach versions under a dispatch mode]: an in-place ``_foreach_*`` op (an
    optimizer's ``zero_grad``, Adam's step) that reaches a dispatch mode skips the version bump
    it has without one; autograd's checks and the recorder's (NOTE [grad resets] in resets.py)
    read versions, so the tap makes the bump itself: recording must not change them."""
    schema = func._schema.arguments
    for i in writes:
        a = args[i] if i < len(args) else kwargs.get(schema[i].name)
        tensors = [t for t in (a if isinstance(a, list | tuple) else (a,)) if isinstance(t, torch.Tensor)]
        if tensors:
            torch.autograd.graph.increment_version(tensors)


def _release(*maps: dict[Any, dict[int, Kept | int]]) -> None:
    for m in maps:
        for slots in m.values():
            for kept in slots.values():
                if isinstance(kept, Kept):
                    kept.tensor = None  # type: ignore[assignment]
                    kept.copied = True


class Kept:
    """One forward output: the tensor (by reference until it would change) and its version."""

    __slots__ = ("copied", "tensor", "version")

    def __init__(self, tensor: torch.Tensor, version: int) -> None:
        self.tensor = tensor
        self.version = version
        self.copied = False

    def intact(self) -> bool:
        """Still the numbers the op made."""
        if self.copied:
            return True
        try:
            return int(self.tensor._version) == self.version
        except RuntimeError:  # an inference tensor: no version counter to trust
            return False


# NOTE [the tap in a traceback]
#     An op that raises (a shape error in a library module) raises through the tap's handler,
#     the one Python frame between the program's call and the kernel: the op is called as the
#     C++ builtin (``OpOverload._op``, no frame of torch/_ops.py), its arguments are let go
#     before the error goes on (the recorder finds what a failed library call built from the
#     tensors a traceback's frames hold, library.py), and the recorder's readers of
#     tracebacks pass over this frame (``TAP_CODE``).


class OutputTap(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Notes every node-making op's outputs (NOTE [forward outputs through a dispatch mode])."""

    def __init__(self, core: Any) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.core = core
        """The Python kernels (``PyCore``): what is held is charged to their keep budget, the
        one budget of everything held (NOTE [held within the budget] in tensorfile.py); an
        output past it is not held, only its size is."""
        self.by_node: dict[Any, dict[int, Kept | int]] = {}
        """node -> output_nr -> Kept, or the bytes of an output not held (past ``max_bytes``)."""
        self._by_storage: dict[int, list[Kept]] = {}
        self.by_seq: dict[int, dict[int, Kept | int]] = {}
        """Autograd sequence number -> output position -> the same, for outputs whose node is
        known only as the one made just before their op (a view's: see ``settle``)."""
        self._pending: list[tuple[torch.Tensor, int, int]] = []
        self._held: list[tuple[dict[int, Kept | int], int, Kept, int]] = []
        """What is held, in the order it was: the last let go first (``evict``)."""
        core.tap = self
        self._last = _seq_nr()
        self.paused = 0
        """Above 0 while a backward pass runs: its ops are no forward outputs."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """No ``torch._disable_dynamo`` wrapper around the handler: its two frames would sit in
        every traceback between the program and the op (NOTE [the tap in a traceback]), and
        dynamo skips gradtrace's frames already (NOTE [invisible to dynamo] in compiled.py)."""
        return False

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        """NOTE [invisible to dynamo] in compiled.py: by default ``torch.compile`` keeps eager
        semantics for an active dispatch mode (it would not compile what the bare run
        compiles); the tap steps aside while dynamo compiles and sees the compiled
        artifact's ops as it runs."""
        return True

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        if kwargs is None:
            kwargs = {}
        if _is_compiling() or _transforms_active() or _fwad._current_level >= 0:
            # dynamo's or AOT's tracing (fake tensors), inside a functorch transform (vmap,
            # grad) or forward-mode AD (dual tensors): their tensors must not outlive them, and
            # the tap's own reads of a dual tensor reach kernels meant for inference only
            return func(*args, **kwargs)
        if self._pending:
            self.settle()
        writes = _written_args(func)
        if writes and self._by_storage:
            self._copy_before_write(func, writes, args, kwargs)
        call = getattr(func, "_op", func)  # NOTE [the tap in a traceback]
        try:
            out = call(*args, **kwargs)
        except (RuntimeError, TypeError):
            fixed = _scalars_as_tensors(func, args)
            if fixed is None:
                del args, kwargs  # NOTE [the tap in a traceback]
                raise
            out = call(*fixed, **kwargs)
        if writes and func.__name__.startswith("_foreach_"):
            _bump_foreach(func, writes, args, kwargs)
        seq = _seq_nr()
        if seq != self._last:
            self._last = seq
            if not self.paused:
                self._note(out, seq - 1)
        elif writes and not self.paused:
            # an in-place op whose autograd kernel made a helper node first (``mul_`` clones
            # ``self`` for its backward): its node is found by ``grad_fn`` only
            self._note(out, -1)
        return out

    def _note(self, out: Any, seq: int) -> None:
        if isinstance(out, torch.Tensor):
            ts: Any = (out,)
        elif isinstance(out, tuple | list):
            ts = out
        else:
            return
        for k, t in enumerate(ts):
            # a plain dense tensor (an inference tensor has no node; nested and sparse ones
            # have no place in the file)
            if type(t) is torch.Tensor and t.layout == torch.strided and not t.is_nested and not t.is_inference():
                self._pending.append((t, seq, k))

    def settle(self) -> None:
        """Match the noted outputs to their nodes (autograd has set their ``grad_fn`` now):
        NOTE [forward outputs through a dispatch mode]."""
        pending, self._pending = self._pending, []
        for t, seq, k in pending:
            # NOTE [versions when settled]: autograd bumps an in-place op's version, and gives
            # a view its base's counter, after the op left this mode; before the next op's
            # own bump (after it too), the version read here is the output's as made
            version = int(t._version)
            if t._is_view() or t.grad_fn is None:
                if seq < 0:
                    continue
                # a view's grad_fn may be rebuilt when read; a view op's result below autograd
                # is a tensor autograd wraps anew: by the node made just before the op
                self._hold(self.by_seq.setdefault(seq, {}), k, t, version)
                continue
            self._hold(self.by_node.setdefault(t.grad_fn, {}), int(t.output_nr), t, version)

    def _hold(self, slots: dict[int, Kept | int], nr: int, t: torch.Tensor, version: int) -> None:
        if nr in slots:
            return
        nbytes = t.numel() * t.element_size()
        core = self.core
        if core._kept_bytes + nbytes > core._keep_budget:
            slots[nr] = nbytes if nbytes > 0 else 1
            return
        kept = Kept(t, version)
        slots[nr] = kept
        core._charge(nbytes)
        self._held.append((slots, nr, kept, nbytes))
        key = _storage_key(t)
        if key is not None:
            self._by_storage.setdefault(key, []).append(kept)

    def hold_saved(self, t: torch.Tensor, nbytes: int, version: int) -> dict[int, Kept | int]:
        """``Tap::hold_saved``: a saved tensor no node made (NOTE [saved tensors from no node] in
        saved.py), held as a forward output is, in the run's order (the outputs noted before it
        first, as the C++ tap holds them when made), but never copied before a write; its slot."""
        if self._pending:
            self.settle()
        slot: dict[int, Kept | int] = {}
        core = self.core
        if core._kept_bytes + nbytes > core._keep_budget:
            slot[0] = nbytes if nbytes > 0 else 1
            return slot
        kept = Kept(t.detach(), version)  # shares the version counter
        slot[0] = kept
        core._charge(nbytes)
        self._held.append((slot, 0, kept, nbytes))
        return slot

    def release(self) -> None:
        """Let go of every output held: NOTE [each tensor let go once written] in tensorfile.py."""
        _release(self.by_node, self.by_seq)
        self._held.clear()
        self._by_storage.clear()
        self._pending.clear()

    def evict(self, need: int) -> int:
        """Let go of the forward outputs held last until ``need`` bytes are free (a gradient
        comes before any forward value: NOTE [held within the budget] in tensorfile.py);
        the bytes let go (``Tap::evict`` in ``cxx/tap.h``)."""
        freed = 0
        while freed < need and self._held:
            slots, nr, kept, nbytes = self._held.pop()
            slots[nr] = nbytes if nbytes > 0 else 1
            kept.tensor = None  # type: ignore[assignment]
            kept.copied = True  # nothing left to copy before a write
            freed += nbytes
        return freed

    def _copy_before_write(self, func: Any, writes: tuple[int, ...], args: tuple[Any, ...],
                           kwargs: dict[str, Any]) -> None:
        """NOTE [copy on write]."""
        targets: list[Any] = []
        schema = func._schema.arguments
        for i in writes:
            if i < len(args):
                targets.append(args[i])
            else:
                targets.append(kwargs.get(schema[i].name))
        for a in targets:
            for t in (a if isinstance(a, list | tuple) else (a,)):
                if not isinstance(t, torch.Tensor):
                    continue
                key = _storage_key(t)
                held = self._by_storage.pop(key, None) if key is not None else None
                for kept in held or ():
                    if kept.copied:  # a copy already, or let go (``evict``)
                        continue
                    # the write's version bump comes after this mode (NOTE [versions when settled])
                    if int(kept.tensor._version) == kept.version:
                        kept.tensor = kept.tensor.clone()
                        kept.copied = True


    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)  # type: ignore[no-untyped-call]
        self.core.tap = None  # the block is over: nothing left to yield to a gradient

    def off_stack(self) -> bool:
        """Whether a torch call now runs inside the tap's handler (the mode is off the stack
        then): NOTE [the recorder's own read of a tangent] in mode.py."""
        return not torch._C._len_torch_dispatch_stack()


def _higher_order_ops_pass_by(key: int) -> None:
    """NOTE [higher-order ops and the tap's key]: a higher-order operator (``torch.func`` on
    an ``autograd.Function``, ``cond``, checkpointing's ``tag_activation_checkpoint``, ...)
    is dispatched in Python from the highest key of the thread's included set, where it has
    no kernel for the tap's key (``cxx/tap.h``); like the Autocast and ADInplaceOrView keys,
    the key is a fall-through for them (every one made so far, and by default every one made
    later). The ops a higher-order operator runs reach the tap as any other ops."""
    from torch import _ops

    k = torch._C.DispatchKey(key)
    if k not in _ops._HIGHER_ORDER_OP_DEFAULT_FALLTHROUGH_DISPATCH_KEYS:
        _ops._HIGHER_ORDER_OP_DEFAULT_FALLTHROUGH_DISPATCH_KEYS.append(k)
    for op in list(_ops._higher_order_ops.values()):
        if op.non_fallthrough_keys.has(k):
            op.fallthrough(k)  # type: ignore[no-untyped-call]


class NativeTap:
    """``OutputTap`` in the C++ core (NOTE [the tap in C++] in ``cxx/tap.h``): the same
    ``by_node`` / ``by_seq`` / ``settle`` / ``paused`` for the document, with no Python on the
    ops' path. Views need no ``by_seq``: above autograd each output comes back with its node."""

    def __init__(self, core: Any) -> None:
        self.core = core
        self.by_node: dict[Any, dict[int, Kept | int]] = {}
        self.by_seq: dict[int, dict[int, Kept | int]] = {}
        self._settled = False

    @property
    def paused(self) -> int:
        return int(self.core.tap_paused())

    @paused.setter
    def paused(self, value: int) -> None:
        self.core.tap_pause(value - self.core.tap_paused())

    def __enter__(self) -> NativeTap:
        from gradtrace.capture import native

        assert native.core is not None
        _higher_order_ops_pass_by(native.core.tap_key())
        self.core.tap_start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.core.tap_stop()

    def off_stack(self) -> bool:
        return False  # no handler of the tap's ever runs Python

    def release(self) -> None:
        """``OutputTap.release``; the core lets go of its own (``Recorder::release_kept``)."""
        _release(self.by_node, self.by_seq)

    def settle(self) -> None:
        """What the core holds, as ``OutputTap.by_node`` holds it (once)."""
        if self._settled:
            return
        self._settled = True
        for fn, nr, t, version, copied, dropped in self.core.tap_entries():
            slots = self.by_node.setdefault(fn, {})
            if t is None:
                slots[nr] = dropped
                continue
            kept = Kept(t, version)
            kept.copied = copied
            slots[nr] = kept
        self.core.tap_clear()  # the entries' tensors are the ones by_node now holds


TAP_CODE = OutputTap.__torch_dispatch__.__code__
"""The handler's code, which readers of a traceback pass over (NOTE [the tap in a traceback])."""
