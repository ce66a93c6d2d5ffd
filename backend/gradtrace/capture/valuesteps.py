"""A leaf's value around each change of its data (``Node.value_steps``): what an optimizer's
step did to a parameter, as two norms.

NOTE [a leaf's value around each step]
    The update:data ratio ‖Δw‖/‖w‖ of every optimizer step (``analysis/dynamics/``) needs the
    parameter before and after each step; the tensor file keeps its value at the start and
    the end of the run only. So, like gradient edits (NOTE [gradient edits] in gradedits.py),
    a step is found by what changed, never from a list of ops: after each backward call every
    leaf that got a gradient is looked at, and compared with its value at the look before
    (and once more when the document is built); where the values differ, ``{"at", "norm",
    "delta"}`` is written: ``at`` is ``len(grad_history)`` before the change was seen, ``norm``
    ‖w‖ before it and ``delta`` ‖w_after − w_before‖, both in the leaf's own dtype as torch
    computes them. Values are compared, not versions: ``p.data -= lr * p.grad`` writes
    without moving ``p``'s version counter. Only floating-point strided leaves are followed.
    It runs with or without a tensor file (two norms per step are what the series need), in
    Python for both kernel sets, so both write the same documents.

NOTE [comparing later, in one go]
    A look after a backward call only copies the leaves (one ``clone`` each, past autograd
    and the output tap's dispatch mode, outputs.py, which would otherwise see the recorder's
    own arithmetic); the comparisons wait until the document is built, or until the copies
    not yet compared pass ``PENDING_BYTES``, and then run for every waiting pair of every leaf
    at once: one subtraction, one norm and one read of all the norms. A 20-step loop then
    pays four tensor ops for its steps, not four per backward call (``bench/bench_dynamics.py``);
    a model whose leaves alone pass the bound is compared at every look, against its live
    values, as before. The numbers are the same either way: the same ``_foreach_norm`` of the
    same values. Memory: one copy of the followed leaves, plus at most ``PENDING_BYTES`` of
    copies waiting (and their differences while they are compared).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from gradtrace.capture.odd_tensors import runs_python_ops

PENDING_BYTES = 8 << 20
"""Copies of the leaves that may wait to be compared (NOTE [comparing later, in one go])."""


def _f32(x: float) -> Any:
    """A norm as the document writes it: float32 precision, NaN and ±inf as strings."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(str(np.float32(x)))


def _followed(t: torch.Tensor) -> bool:
    try:
        return (t.layout == torch.strided and not t.is_nested and t.is_floating_point() and t.device.type != "meta"
                and t.numel() > 0 and not runs_python_ops(t))
    except Exception:
        return False


class _Leaf:
    """One followed leaf: its value at the last look compared (``values[0]``), then the copies
    taken at later looks, not yet compared, each with its ``at``."""

    __slots__ = ("ats", "doc", "leaf", "nbytes", "values")

    def __init__(self, leaf: torch.Tensor, doc: dict[str, Any]) -> None:
        self.leaf, self.doc = leaf, doc
        self.values = [leaf.clone()]
        self.ats: list[int] = []
        self.nbytes = leaf.numel() * leaf.element_size()


class ValueSteps:
    """The followed leaves and their copies (NOTE [a leaf's value around each step], NOTE
    [comparing later, in one go])."""

    def __init__(self) -> None:
        self.seen: dict[int, _Leaf] = {}
        self.pending = 0
        """Bytes of copies waiting to be compared."""

    def accumulated(self, leaves: list[tuple[torch.Tensor, dict[str, Any]]]) -> int:
        """``leaves`` got a gradient in the backward call that just returned: each is looked
        at. Answers how many steps this look may write, at most (one per leaf looked at and
        seen before; the recorder charges them to the document's size as they are seen, an
        upper bound, before they are counted)."""
        return self._look([(leaf, doc, max(len(doc.get("grad_history") or []) - 1, 0)) for leaf, doc in leaves],
                          now=False)

    def final(self) -> None:
        """The last look, when the document is built: the step after the last backward, and
        every comparison still waiting."""
        self._look([(s.leaf, s.doc, len(s.doc.get("grad_history") or [])) for s in self.seen.values()], now=True)

    def _look(self, looks: list[tuple[torch.Tensor, dict[str, Any], int]], *, now: bool) -> int:
        """NOTE [comparing later, in one go]. One function, with no generator: it runs after
        every backward call, inside the snippet's line tracer (capture/timeline.py), which is
        called once more for each Python frame entered."""
        grad_was = torch.is_grad_enabled()  # no_grad's own context costs more than this look
        torch._C._set_grad_enabled(False)
        try:
            with torch._C._DisableTorchDispatch():
                known: list[tuple[_Leaf, int]] = []
                grow = 0
                for leaf, doc, at in looks:
                    s = self.seen.get(id(leaf))
                    if s is not None and s.leaf is leaf:
                        last = s.values[-1]
                        if last.shape == leaf.shape and last.dtype == leaf.dtype and last.device == leaf.device:
                            known.append((s, at))
                            grow += s.nbytes
                            continue
                        self._compare(list(self.seen.values()), [])  # its data was replaced by another
                        del self.seen[id(leaf)]                      # shape or dtype: a new start
                    if _followed(leaf):
                        self.seen[id(leaf)] = _Leaf(leaf, doc)
                if now or self.pending + grow > PENDING_BYTES:
                    self._compare(list(self.seen.values()), known)
                else:
                    for s, at in known:
                        s.values.append(s.leaf.clone())
                        s.ats.append(at)
                    self.pending += grow
                return len(known)
        finally:
            torch._C._set_grad_enabled(grad_was)

    def _compare(self, waiting: list[_Leaf], live: list[tuple[_Leaf, int]]) -> None:
        """Every waiting pair of ``waiting``'s copies, then each of ``live`` against its value
        now, all at once (NOTE [comparing later, in one go]); each leaf keeps its last value."""
        befores: list[torch.Tensor] = []
        afters: list[torch.Tensor] = []
        owners: list[tuple[_Leaf, int]] = []
        for s in waiting:
            for k, at in enumerate(s.ats):
                befores.append(s.values[k])
                afters.append(s.values[k + 1])
                owners.append((s, at))
        for s, at in live:
            befores.append(s.values[-1])
            afters.append(s.leaf)
            owners.append((s, at))
        if owners:
            found = torch._foreach_norm([*torch._foreach_sub(afters, befores), *befores])
            if len({(x.dtype, x.device) for x in found}) == 1:  # one stack and one read (the usual case)
                norms = torch.stack(found).tolist()
            else:
                norms = torch.stack([x.to("cpu", torch.float64) for x in found]).tolist()
            for k, (s, at) in enumerate(owners):
                delta, norm = norms[k], norms[len(owners) + k]
                if delta != 0:  # a change too small for its norm to tell is no step
                    s.doc.setdefault("value_steps", []).append({"at": at, "delta": _f32(delta), "norm": _f32(norm)})
        for s in waiting:
            s.values, s.ats = s.values[-1:], []
        if live:  # each one's last copy takes its live value
            torch._foreach_copy_([s.values[0] for s, _ in live], [s.leaf for s, _ in live])
        self.pending = 0
