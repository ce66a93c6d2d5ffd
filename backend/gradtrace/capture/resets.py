"""Where a leaf's ``.grad`` was cleared between two accumulations (``Node.grad_resets``).

NOTE [grad resets]
    A training loop's parameters accumulate once per step, and ``opt.zero_grad()`` clears their
    ``.grad`` in between: without saying so, the page would show "after 20 accumulations" where
    each step started afresh. A reset is found by comparing each accumulated leaf's ``.grad``
    with what the recorder saw after its last accumulation, at the start of every backward call
    (both recorders go through ``Recorder.begin_pass``):

    * ``.grad`` is None now: ``kind="none"`` (``zero_grad()``'s default, ``x.grad = None``);
    * it changed since (another object, or the same one at another version) and is all zeros:
      ``kind="zero"`` (``zero_grad(set_to_none=False)``, ``x.grad.zero_()``).

    A change that leaves values other than zero (``clip_grad_norm_`` scaling) is no reset. The
    line comes from the torch-function mode, which sees ``Tensor.grad``'s setter and the
    ``zero_`` / ``_foreach_zero_`` calls on a recorded ``.grad`` (also those made inside
    ``zero_grad()``, which is library code but no module or optimizer step): the snippet line
    running then. A reset found without such a call (a ``.grad`` zeroed under another
    torch-function mode, say) has no line. The document keeps only resets between two
    accumulations (``at`` below the history's length): one after the last accumulation has
    nothing to tell apart.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


class GradResets:
    """The ``.grad`` of each accumulated leaf as last seen, and the clearing calls since."""

    def __init__(self) -> None:
        self.last: dict[int, tuple[torch.Tensor, torch.Tensor, int, dict[str, Any]]] = {}
        """id(leaf) -> (leaf, its .grad after the last accumulation, that grad's version, the
        leaf's node entry); dropped once a reset is written, until the next accumulation."""
        self._owner: dict[int, int] = {}
        """id(.grad tensor) -> id(leaf), for the ``zero_`` calls."""
        self._lines: dict[int, int | None] = {}
        """id(leaf) -> the line of the latest clearing call since the last accumulation."""

    def accumulated(self, leaf: torch.Tensor, grad: torch.Tensor, doc: dict[str, Any]) -> None:
        """``grad`` is ``leaf.grad`` right after an accumulation recorded in ``doc``."""
        self.last[id(leaf)] = (leaf, grad, grad._version, doc)
        self._owner[id(grad)] = id(leaf)
        self._lines.pop(id(leaf), None)

    def forget(self, leaf: torch.Tensor) -> None:
        """``leaf.grad`` was cleared where the reset was written already (inside a backward:
        NOTE [gradient edits] in gradedits.py)."""
        hit = self.last.pop(id(leaf), None)
        if hit is not None:
            self._owner.pop(id(hit[1]), None)
        self._lines.pop(id(leaf), None)

    def note_set(self, args: tuple[Any, ...], line: Callable[[], int | None]) -> None:
        """``Tensor.grad.__set__(leaf, value)`` ran (``x.grad = None``, ``zero_grad()``)."""
        if len(args) == 2 and isinstance(args[0], torch.Tensor) and id(args[0]) in self.last:
            self._lines[id(args[0])] = line()

    def note_zero(self, target: Any, line: Callable[[], int | None]) -> None:
        """``zero_`` / ``_foreach_zero_`` ran on ``target`` (a tensor or a list of them)."""
        tensors = target if isinstance(target, list | tuple) else [target]
        where: int | None = None
        found = False
        for t in tensors:
            lid = self._owner.get(id(t))
            hit = self.last.get(lid) if lid is not None else None
            if hit is not None and hit[1] is t:
                if not found:
                    where, found = line(), True
                self._lines[id(hit[0])] = where

    def check(self) -> None:
        """Write a reset into the entry of each leaf whose ``.grad`` was cleared since its last
        accumulation (NOTE [grad resets])."""
        if not self.last:
            return
        done = []
        with torch._C.DisableTorchFunction():
            for lid, (leaf, grad, version, doc) in self.last.items():
                now = leaf.grad
                if now is grad and now._version == version:
                    continue
                if now is None:
                    kind = "none"
                else:
                    try:
                        if now.is_sparse or now.device.type == "meta" or bool(now.any()):
                            continue
                    except Exception:  # a tensor that cannot say: no reset claimed
                        continue
                    kind = "zero"
                doc.setdefault("grad_resets", []).append(
                    {"at": len(doc.get("grad_history", ())), "kind": kind, "line": self._lines.pop(lid, None)})
                done.append(lid)
        for lid in done:
            leaf, grad, _, _ = self.last.pop(lid)
            self._owner.pop(id(grad), None)
