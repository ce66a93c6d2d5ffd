"""Changes made to a leaf's ``.grad`` other than autograd's accumulation (``Node.grad_edits``).

NOTE [gradient edits]
    Many things change a ``.grad`` in place after backward put it there: ``GradScaler``'s
    unscale (``scaler.unscale_(opt)``, or inside ``scaler.step``), ``clip_grad_norm_``,
    ``.grad.mul_()``, ``_foreach_*`` and fused kernels, an optimizer's internals, and, within a
    backward, a post-accumulate hook that scales another parameter's ``.grad`` (what DDP's
    bucket all-reduce does). They are found by what changed, never from a list of ops: after
    each backward call every accumulated leaf's ``.grad`` is remembered (the tensor, its
    version, and a copy of its values, or a fingerprint of them when it is large), and
    compared again later. Some kernels write without moving the version counter
    (``_amp_foreach_non_finite_check_and_unscale_``, GradScaler's unscale), so identity and
    version are only the cheap first test; the values are compared where something may have
    written unseen:

    * at the snippet's next line after a line read a remembered ``.grad`` or passed one to an
      in-place call (the torch-function mode sees both on the block's thread): the values of
      those leaves, and the edit is given that line;
    * after an optimizer's step (its hooks): identity and version, with the step's line;
    * just before ``.grad`` is cleared (``x.grad = None``, ``zero_``, ``zero_grad()``): that
      leaf's values, so an edit is not lost with the gradient;
    * at each backward call (identity and version) and when the block ends (values): the last
      look; the final ``grad`` of the document is torch's at the end, always.

    An edit is written as ``{"at": len(grad_history), "line", "value", "in_backward"}``: the
    value after the edit, applied on top of the ``at``-th accumulation. A change to all zeros
    is a reset, not an edit (NOTE [grad resets] in resets.py). Within one backward call, the
    core gives each AccumulateGrad event the ``.grad`` it captured with that tensor's version
    and address: a leaf whose ``.grad`` is another tensor, or at another version, when the
    call returns was edited in that backward (``in_backward``, the line of the backward
    call), and one whose ``.grad`` is None by then was cleared there (a reset). The recorder's
    own post-accumulate hook goes first on every leaf that has the snippet's (``guard``), so an
    optimizer stepping (and clearing ``.grad``) inside such hooks still leaves the gradient
    that was accumulated in the event and the history.

NOTE [module backward hooks]
    A module's full backward hook (``register_full_backward_hook``) runs as a post hook of the
    ``BackwardHookFunctionBackward`` node torch puts on the module's inputs, a node that passes
    its gradients on unchanged: the very tensors it got. The core's own post hook on that node
    runs after the module's (it is registered later, when the node is discovered), so where a
    gradient it passes on is not the tensor it got, the module's hook replaced it: the event
    gets that pair in ``hook_changes`` and ``changed_by_hook``, as a tensor hook's replacement
    does (both kernel sets). A ``register_full_backward_pre_hook`` that replaces the incoming
    gradients runs before the node, so what it replaced is not seen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from gradtrace.capture.odd_tensors import runs_python_ops
from gradtrace.capture.unseen import unseen

_CLONE_LIMIT = 1 << 16
"""Gradients of at most this many elements are copied to compare; larger ones fingerprinted."""


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The bytes of ``t``'s values in order: compared exactly, NaN included."""
    return t.reshape(-1).contiguous().view(torch.uint8)


def _fingerprint(g: torch.Tensor) -> torch.Tensor:
    """A few reductions of a large gradient: a scale, a clip or an unscale moves them all."""
    f = g.detach().reshape(-1)
    if f.is_complex():
        f = torch.view_as_real(f).reshape(-1)
    f = f.to(torch.float64)
    return torch.stack((f.sum(), f.abs().sum(), f.amax(), f.amin(), f[::7].sum()))


def _reference(g: torch.Tensor) -> torch.Tensor | None:
    """What ``g``'s values are compared against later; None when they cannot be (sparse, meta,
    not floating point): then identity and version alone tell."""
    try:
        if g.layout != torch.strided or g.device.type == "meta" or g.is_quantized or runs_python_ops(g):
            return None  # a subclass's ops are its Python code: NOTE [tensor subclasses] in odd_tensors.py
        if not (g.is_floating_point() or g.is_complex()) or g.numel() == 0:
            return None
        if g.numel() <= _CLONE_LIMIT:
            return (g.detach() if g.requires_grad else g).clone()
        return _fingerprint(g)
    except Exception:  # a tensor that cannot say: identity and version only
        return None


def _same_values(ref: torch.Tensor | None, g: torch.Tensor) -> bool:
    if ref is None:
        return True
    try:
        if g.numel() <= _CLONE_LIMIT:
            if ref.shape != g.shape or ref.dtype != g.dtype:
                return False
            # one dispatch when equal; the bytes decide where NaN makes ``equal`` say no
            return torch.equal(ref, g) or torch.equal(_bits(ref), _bits(g))
        return torch.equal(_bits(ref), _bits(_fingerprint(g)))
    except Exception:  # cannot compare: no edit claimed
        return True


def _all_zero(g: torch.Tensor) -> bool:
    try:
        return (g.layout == torch.strided and g.device.type != "meta" and not runs_python_ops(g)
                and not bool(g.any()))
    except Exception:
        return False


class _Seen:
    """A leaf's ``.grad`` as last seen by the recorder."""

    __slots__ = ("doc", "grad", "handle", "leaf", "ref", "version")

    def __init__(self, leaf: torch.Tensor, doc: dict[str, Any], grad: torch.Tensor, handle: Any,
                 with_values: bool = True) -> None:
        self.leaf = leaf
        self.doc = doc
        self.grad = grad
        self.version = grad._version
        self.ref = _reference(grad) if with_values else None
        self.handle = handle
        """The captured value the document shows for it (the accumulation's or the edit's)."""


def _ended(*_: Any) -> Any:
    raise RuntimeError("gradtrace: a gradient edit looked at after its recorded block ended")


class GradEdits:
    """Every accumulated leaf's ``.grad`` as last seen, and the looks that find edits (NOTE
    [gradient edits])."""

    enabled = True
    """Off only for ``bench/bench_capture.py``'s before-vs-after rows: then only identity and
    version are kept (what the document's final ``grad`` needed before edits were looked for)."""

    def __init__(self, capture: Callable[[torch.Tensor], Any], wake: list[Callable[[], None]],
                 accumulated_hook: Callable[[torch.Tensor], None], cost: Callable[[], None]) -> None:
        self._on = self.enabled
        self._capture = capture
        self._cost = cost
        """Counts an edit's bytes into the document's size estimate (NOTE [limits] in recorder.py)."""
        self._wake = wake
        self._accumulated_hook = accumulated_hook
        self.seen: dict[int, _Seen] = {}
        """id(leaf) -> its ``.grad`` as last seen."""
        self._owner: dict[int, int] = {}
        """id(.grad tensor) -> id(leaf)."""
        self._touched: dict[int, int | None] = {}
        """id(leaf) -> the line that read its ``.grad`` or changed it in place, since the last look."""
        self.leaves: list[torch.Tensor] = []
        """Every recorded leaf, for ``guard``."""
        self._ours: set[int] = set()
        self._handles: list[Any] = []
        self.unseen: Callable[[torch.Tensor], None] | None = None
        """Told of a ``.grad`` whose values changed while its version did not (numpy, an
        unversioned kernel): the output tap's ``stale`` (NOTE [held gradients copied before a
        write] in ``cxx/tap.h``), so what it held there by alias is not written as recorded."""

    def let_go(self) -> None:
        """The recorder's callbacks dropped at the end of the block (NOTE [no cycle outlives
        the block] in recorder.py): no look comes after its last."""
        self._capture = self._cost = self._accumulated_hook = _ended
        self.unseen = None

    # ------------------------------------------------------------ after a backward call
    @unseen
    def accumulated(self, leaf: torch.Tensor, doc: dict[str, Any], handle: Any, version: int,
                    cdata: int, line: int | None) -> bool:
        """``leaf`` accumulated (last in this backward call) into the ``.grad`` the core
        captured as ``handle`` at ``version`` (address ``cdata``); whether it still has one."""
        now = leaf.grad
        at = len(doc.get("grad_history", ()))
        if not self._on:
            if now is not None:
                self.seen[id(leaf)] = _Seen(leaf, doc, now, handle, with_values=False)
            return now is not None
        if now is None:  # cleared inside the backward (an optimizer step in a hook)
            doc.setdefault("grad_resets", []).append({"at": at, "kind": "none", "line": line})
            self._forget(id(leaf))
            return False
        if now._cdata != cdata or now._version != version:
            handle = self._capture(now)
            doc.setdefault("grad_edits", []).append(
                {"at": at, "line": line, "value": handle, "in_backward": True})
            self._cost()
        elif leaf._post_accumulate_grad_hooks:
            # the snippet's post-accumulate hooks ran after the capture: one may have written
            # without moving the version, so the final grad is read as it is then (``final``)
            handle = None
        self._remember(leaf, doc, now, handle)
        return True

    def _remember(self, leaf: torch.Tensor, doc: dict[str, Any], grad: torch.Tensor, handle: Any) -> None:
        old = self.seen.get(id(leaf))
        if old is not None:
            self._owner.pop(id(old.grad), None)
        self.seen[id(leaf)] = _Seen(leaf, doc, grad, handle)
        self._owner[id(grad)] = id(leaf)

    def _forget(self, lid: int) -> None:
        old = self.seen.pop(lid, None)
        if old is not None:
            self._owner.pop(id(old.grad), None)
        self._touched.pop(lid, None)

    # ------------------------------------------------------------ what the mode sees
    @unseen
    def touch(self, target: Any, line: Callable[[], int | None]) -> None:
        """A remembered ``.grad`` was read, or handed to an in-place call (``target``: a tensor
        or a list of them): look at it at the snippet's next line."""
        if not self._on:
            return
        tensors = target if isinstance(target, list | tuple) else (target,)
        where: int | None = None
        found = False
        for t in tensors:
            lid = self._owner.get(id(t))
            if lid is None:
                continue
            hit = self.seen.get(lid)
            if hit is None or hit.grad is not t:
                continue
            if not found:
                where, found = line(), True
            self._touched[lid] = where
        if found and self.look not in self._wake:
            self._wake.append(self.look)

    def remembers(self, target: Any) -> bool:
        """Whether ``target`` (as for ``before_clear``) holds a remembered leaf or ``.grad``:
        when not, ``before_clear`` has nothing to do."""
        tensors = target if isinstance(target, list | tuple) else (target,)
        return any(id(t) in self.seen or id(t) in self._owner for t in tensors)

    @unseen
    def before_clear(self, target: Any, line: int | None) -> None:
        """``.grad`` is about to be cleared (``target``: the leaf for ``x.grad = ...``, or the
        gradient(s) for ``zero_``): an edit made since the last look is written first."""
        tensors = target if isinstance(target, list | tuple) else (target,)
        ids = []
        for t in tensors:
            if id(t) in self.seen:
                ids.append(id(t))
            elif id(t) in self._owner:
                ids.append(self._owner[id(t)])
        if ids:
            self.check(ids, deep=True, line=line, keep_touched=True)

    @unseen
    def look(self) -> None:
        """The snippet's next line: the leaves touched since the last look, by value."""
        if self.look in self._wake:
            self._wake.remove(self.look)
        if self._touched:
            self.check(list(self._touched), deep=True, line=None)

    # ------------------------------------------------------------ looking
    @unseen
    def check(self, ids: list[int] | None, *, deep: bool, line: int | None,
              keep_touched: bool = False) -> None:
        """Write an edit for each remembered leaf (``ids``: those only) whose ``.grad`` changed:
        by identity and version, and by value when ``deep``. The line: the one that touched it
        since the last look, else ``line``; ``keep_touched``: a look just before a clear, which
        leaves the next line's look its lines."""
        if not self.seen or not self._on:
            self._touched.clear()
            return
        with torch._C.DisableTorchFunction():
            for lid in list(self.seen) if ids is None else ids:
                hit = self.seen.get(lid)
                if hit is None:
                    self._touched.pop(lid, None)
                    continue
                now = hit.leaf.grad
                if now is None:
                    self._forget(lid)  # cleared: NOTE [grad resets]
                    continue
                moved = now is not hit.grad or now._version != hit.version
                if not moved and not deep:
                    continue  # a look by value may still come (``look``)
                if not moved and _same_values(hit.ref, now):
                    if ids is not None and not keep_touched:
                        self._touched.pop(lid, None)
                    continue
                where = self._touched.pop(lid, line)
                if moved and now.shape == hit.grad.shape and _same_values(hit.ref, now):
                    self._owner.pop(id(hit.grad), None)
                    self._owner[id(now)] = lid
                    hit.grad, hit.version = now, now._version  # written, but nothing changed
                    continue
                if not moved and self.unseen is not None:
                    self.unseen(now)
                # written without moving the version (GradScaler's unscale): a capture of ``now``
                # itself would be taken for the one made at this version before the write (the
                # value store knows a tensor by identity and version), so its copy is captured
                handle = self._capture(now if moved else now.detach().clone())
                if not _all_zero(now):  # all zeros: a reset (NOTE [grad resets])
                    hit.doc.setdefault("grad_edits", []).append(
                        {"at": len(hit.doc.get("grad_history", ())), "line": where,
                         "value": handle, "in_backward": False})
                    self._cost()
                self._remember(hit.leaf, hit.doc, now, handle)

    def final(self, leaf: torch.Tensor) -> Any:
        """The captured value of ``leaf.grad`` when it is still what was last seen, else None
        (then encoded as it is now)."""
        hit = self.seen.get(id(leaf))
        if hit is None or hit.leaf is not leaf:
            return None
        with torch._C.DisableTorchFunction():
            now = leaf.grad
            if now is not hit.grad or now is None or now._version != hit.version:
                return None
            return hit.handle if _same_values(hit.ref, now) else None

    # ------------------------------------------------------------ post-accumulate hooks
    @unseen
    def guard(self) -> None:
        """Put the recorder's post-accumulate hook first on each leaf with the snippet's own
        (NOTE [gradient edits]); before every backward call."""
        if not self._on:
            return
        for leaf in self.leaves:
            hooks = leaf._post_accumulate_grad_hooks
            if not hooks or next(iter(hooks)) in self._ours:
                continue
            handle = leaf.register_post_accumulate_grad_hook(self._accumulated_hook)  # type: ignore[no-untyped-call]
            # torch runs them in the plain dict's order (``move_to_end`` reorders only the
            # OrderedDict's own links): put ours in first, the snippet's after in theirs
            items = [(k, v) for k, v in hooks.items() if k != handle.id]
            hooks.clear()
            hooks[handle.id] = self._accumulated_hook
            hooks.update(items)
            self._ours.add(handle.id)
            self._handles.append(handle)

    def remove_hooks(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
