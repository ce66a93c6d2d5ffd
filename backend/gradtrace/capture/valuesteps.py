"""A leaf's value around each change of its data (``Node.value_steps``): what an optimizer's
step did to a parameter, as two norms.

NOTE [a leaf's value around each step]
    The update:data ratio ‖Δw‖/‖w‖ of every optimizer step (``analysis/dynamics/``) needs the
    parameter before and after each step; the tensor file keeps its value at the start and
    the end of the run only. So, like gradient edits (NOTE [gradient edits] in gradedits.py),
    a step is found by what changed, never from a list of ops: after each backward call every
    leaf that got a gradient is compared with a copy taken after the previous one (and once
    more when the document is built); where the values differ, ``{"at", "norm", "delta"}`` is
    written: ``at`` is ``len(grad_history)`` before the change was seen, ``norm`` ‖w‖ before
    it and ``delta`` ‖w_after − w_before‖, both in the leaf's own dtype as torch computes
    them. Values are compared, not versions: ``p.data -= lr * p.grad`` writes without moving
    ``p``'s version counter. Only floating-point strided leaves are followed; the copies cost
    the leaves' own size once. It runs with or without a tensor file (two norms per step are
    what the series need), in Python for both kernel sets, so both write the same documents.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch.utils._python_dispatch import _disable_current_modes

from gradtrace.capture.odd_tensors import runs_python_ops


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


class ValueSteps:
    """Copies of the leaves' values after their last backward (NOTE [a leaf's value around each
    step])."""

    def __init__(self) -> None:
        self.seen: dict[int, tuple[torch.Tensor, dict[str, Any], torch.Tensor]] = {}

    def accumulated(self, leaves: list[tuple[torch.Tensor, dict[str, Any]]]) -> int:
        """``leaves`` got a gradient in the backward call that just returned: a step since the
        last one is written for each, then their values are remembered. Answers how many
        steps were written (the recorder charges them to the document's size)."""
        return self._compare([(leaf, doc, max(len(doc.get("grad_history") or []) - 1, 0))
                       for leaf, doc in leaves if _followed(leaf)])

    def final(self) -> None:
        """The last look, when the document is built: the step after the last backward."""
        self._compare([(leaf, doc, len(doc.get("grad_history") or [])) for leaf, doc, _ in self.seen.values()])

    def _compare(self, looks: list[tuple[torch.Tensor, dict[str, Any], int]]) -> int:
        """All of one backward's leaves at once: one subtraction, one norm and one read for
        all of them (this runs after every backward), past the output tap's dispatch mode
        (outputs.py), which would otherwise see the recorder's own arithmetic."""
        with torch.no_grad(), _disable_current_modes():
            old: list[tuple[torch.Tensor, dict[str, Any], int, torch.Tensor, torch.Tensor]] = []
            for leaf, doc, at in looks:
                now = leaf.detach()
                hit = self.seen.get(id(leaf))
                if hit is not None and hit[0] is leaf and hit[2].shape == now.shape and hit[2].dtype == now.dtype:
                    old.append((leaf, doc, at, now, hit[2]))
                else:
                    self.seen[id(leaf)] = (leaf, doc, now.clone())
            if not old:
                return 0
            befores = [b for *_, b in old]
            nows = [n for _, _, _, n, _ in old]
            found = torch._foreach_norm([*torch._foreach_sub(nows, befores), *befores])
            if len({x.dtype for x in found}) == 1:  # one stack and one read (the usual case)
                norms = torch.stack(found).tolist()
            else:
                norms = torch.stack([x.to(torch.float64) for x in found]).tolist()
            written = 0
            for k, (_, doc, at, _, _) in enumerate(old):
                delta, norm = norms[k], norms[len(old) + k]
                if delta != 0:  # a change too small for its norm to tell is no step
                    doc.setdefault("value_steps", []).append({"at": at, "delta": _f32(delta), "norm": _f32(norm)})
                    written += 1
            torch._foreach_copy_(befores, nows)
            return written
