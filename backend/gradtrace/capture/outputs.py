"""Forward outputs as the ops returned them, for the tensor file (NOTE [kept tensors] in
:mod:`gradtrace.capture.tensorfile`).

The C++ core's kernel set taps them in C++ (``NativeTap``, NOTE [the tap in C++] in
``cxx/tap.h``); ``OutputTap`` below is its Python twin, the Python kernel set's, fed by a
Python kernel on a dispatch key of its own. Both hold the same outputs and give the same file.

NOTE [forward outputs through a key of the tap's own]
    The torch-function tap (:mod:`gradtrace.capture.mode`) steps aside inside library modules,
    so it never sees what ``nn.Linear`` or an attention block computes inside. A kernel on a
    dispatch key of the tap's own sees every aten op, library code included, above autograd:
    each output is held under its node as the op returns (the C++ core's ``cxx/tap.h``, the
    Python twin's :mod:`gradtrace.capture.tapkernel`, NOTE [a key of the tap's own] there).

NOTE [copy on write]
    An output is held by reference with its version. Before an op writes into a tensor (an
    in-place op, an ``out=`` argument, ``.data`` writes too: the storage is what counts) every
    output still held on that storage is copied, so the file holds the numbers as they were
    made at the cost of a copy only where the program changes them. What changed behind the
    tap's back (another thread) is found at the end by its version and left out (``changed``).
"""

from __future__ import annotations

import threading
from typing import Any

import torch
import torch.autograd.forward_ad as _fwad

from gradtrace.capture import tapkernel
from gradtrace.capture.gradfn import grad_fn_or_none
from gradtrace.capture.heldvalues import STALE, HeldValues
from gradtrace.capture.tapkernel import KEY, KEY_SET
from gradtrace.capture.unseen import unseen

_get_ident = threading.get_ident
_dispatch_keys = torch._C._dispatch_keys
_NOT_HELD = (torch._C.DispatchKeySet(torch._C.DispatchKey.Python)
             | torch._C.DispatchKeySet(torch._C.DispatchKey.FuncTorchBatched)
             | torch._C.DispatchKeySet(torch._C.DispatchKey.FuncTorchGradWrapper))
"""A subclass, a fake tensor (dynamo tracing), a transform's wrapper: no output to hold."""
_no_torch_function = torch._C.DisableTorchFunction
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


def _is_dual(t: torch.Tensor) -> bool:
    """Whether ``t`` has a tangent at forward-mode AD's first level (``_fw_grad(0)``, read in
    C++ by ``cxx/tap.h``); read with the tap's key off, as the tap's own op."""
    with torch._C._ExcludeDispatchKeyGuard(KEY_SET):
        return torch._VF._unpack_dual(t, 0)[1] is not None


class OutputTap:
    """Holds every node-making op's outputs (NOTE [forward outputs through a key of the tap's
    own]), as ``Tap`` in ``cxx/tap.h`` holds them."""

    def __init__(self, core: Any) -> None:
        self.core = core
        """The Python kernels (``PyCore``): what is held is charged to their keep budget, the
        one budget of everything held (NOTE [held within the budget] in tensorfile.py); an
        output past it is not held, only its size is."""
        self.by_node: dict[Any, dict[int, Kept | int]] = {}
        """node -> output_nr -> Kept, or the bytes of an output not held (past ``max_bytes``)."""
        self._by_storage: dict[int, list[Kept]] = {}
        self.values = HeldValues()
        """The core's gradients held by alias: NOTE [held gradients copied before a write] in
        ``cxx/tap.h``."""
        self._held: list[tuple[dict[int, Kept | int], int, Kept, int]] = []
        """What is held, in the order it was: the last let go first (``evict``)."""
        core.tap = self
        self.paused = 0
        """Above 0 while a backward pass runs: its ops are no forward outputs (not for a
        ``create_graph=True`` pass, whose ops make the nodes it records: ``CaptureMode._backward``
        in mode.py)."""
        self.thread = _get_ident()
        self._before: OutputTap | None = None
        self._included = False

    def __enter__(self) -> OutputTap:
        tapkernel.install()
        _higher_order_ops_pass_by(KEY.value)
        self.thread = _get_ident()
        self._before, tapkernel.Active.tap = tapkernel.Active.tap, self
        self._included = torch._C._dispatch_tls_is_dispatch_key_included(KEY)
        torch._C._dispatch_tls_set_dispatch_key_included(KEY, True)
        return self

    def __exit__(self, *exc: object) -> None:
        torch._C._dispatch_tls_set_dispatch_key_included(KEY, self._included)
        if tapkernel.Active.tap is self:
            tapkernel.Active.tap = self._before
        if tapkernel.Active.tap is None:
            tapkernel.uninstall()
        self.core.tap = None  # the block is over: nothing left to yield to a gradient

    def _note(self, t: torch.Tensor) -> None:
        """``Tap::note``: one output, held under its node at once."""
        if t.layout != torch.strided or t.is_nested or t.is_inference():
            return
        if (_dispatch_keys(t) & _NOT_HELD).raw_repr():
            return
        fn = grad_fn_or_none(t)  # NOTE [a view's grad_fn read after an in-place change] in gradfn.py
        if fn is None:
            return
        if _fwad._current_level >= 0 and _is_dual(t):
            return  # forward AD's dual tensors: their levels are left alone
        nr = int(t.output_nr)
        slots = self.by_node.get(fn)
        if slots is None:
            slots = self.by_node[fn] = {}
        elif nr in slots:
            return
        self._hold(slots, nr, t, int(t._version))

    def settle(self) -> None:
        """Nothing waits: each output was held under its node when made (``NativeTap.settle``
        hands the C++ core's over once)."""

    @unseen
    def _hold(self, slots: dict[int, Kept | int], nr: int, t: torch.Tensor, version: int) -> None:
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

    @unseen
    def hold_saved(self, t: torch.Tensor, nbytes: int, version: int) -> dict[int, Kept | int]:
        """``Tap::hold_saved``: a saved tensor no node made (NOTE [saved tensors from no node] in
        saved.py), held as a forward output is, in the run's order, and copied before a write
        (NOTE [copy on write]); its slot."""
        slot: dict[int, Kept | int] = {}
        core = self.core
        if core._kept_bytes + nbytes > core._keep_budget:
            slot[0] = nbytes if nbytes > 0 else 1
            return slot
        kept = Kept(t.detach(), version)  # shares the version counter
        slot[0] = kept
        core._charge(nbytes)
        self._held.append((slot, 0, kept, nbytes))
        key = _storage_key(t)
        if key is not None:
            self._by_storage.setdefault(key, []).append(kept)
        return slot

    def release(self) -> None:
        """Let go of every output held: NOTE [each tensor let go once written] in tensorfile.py."""
        _release(self.by_node)
        self._held.clear()
        self._by_storage.clear()
        self.values.clear()

    def stale(self, t: torch.Tensor) -> None:
        """``Tap::stale``: a write no op announced on ``t``'s memory (numpy, a kernel that
        moves no version), found afterwards by its values: what was held there by alias is
        left out as ``changed``, never written wrong."""
        key = _storage_key(t)
        if key is None:
            return
        self.values.stale(key)
        for kept in self._by_storage.pop(key, ()):
            if not kept.copied:
                kept.version = STALE

    def hold_value(self, v: Any, t: torch.Tensor) -> None:
        """``Tap::hold_value``: the core's value ``v`` holds ``t`` by alias."""
        key = _storage_key(t)
        if key is not None:
            self.values.hold(key, v)

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

    def _copy_before_write(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """NOTE [copy on write] (``Tap::copy_before_write``): a plain copy, with the tap's key
        off and below autograd (no node, no version bump)."""
        schema = func._schema.arguments
        for i in _written_args(func):
            a = args[i] if i < len(args) else kwargs.get(schema[i].name)
            for t in (a if isinstance(a, list | tuple) else (a,)):
                if isinstance(t, torch.Tensor):
                    self._copy_held(t)

    @unseen
    def _copy_held(self, t: torch.Tensor) -> None:
        with _no_torch_function():
            key = _storage_key(t)
            if key is None:
                return
            values = key in self.values.by_storage
            held = self._by_storage.pop(key, None)
            if not held and not values:
                return
            with torch._C._ExcludeDispatchKeyGuard(KEY_SET), torch._C._AutoDispatchBelowADInplaceOrView():
                if values:
                    self.values.copy(key)
                for kept in held or ():
                    if kept.copied:  # a copy already, or let go (``evict``)
                        continue
                    if int(kept.tensor._version) == kept.version:
                        kept.tensor = kept.tensor.clone()
                        kept.copied = True



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
    ``by_node`` / ``settle`` / ``paused`` for the document, with no Python on the ops' path:
    above autograd each output comes back with its node, views included."""

    def __init__(self, core: Any) -> None:
        self.core = core
        self.by_node: dict[Any, dict[int, Kept | int]] = {}
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

    def release(self) -> None:
        """``OutputTap.release``; the core lets go of its own (``Recorder::release_kept``)."""
        _release(self.by_node)

    def stale(self, t: torch.Tensor) -> None:
        """``OutputTap.stale``, in the core (``Tap::stale``)."""
        self.core.tap_stale(t)

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


TAP_CODE = tapkernel.TAP_CODE
"""The Python tap's kernel code, which readers of a traceback pass over (NOTE [the tap in a
traceback] in tapkernel.py)."""
