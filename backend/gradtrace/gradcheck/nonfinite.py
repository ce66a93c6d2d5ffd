"""A gradient that is NaN or infinite is said as such, with the node that made it and the
pattern behind it, never taken for a wrong backward (NOTE [what a verdict means] in
``schema/gradcheck.py``).

The node that made it is found as the run's NaN panel finds it (NOTE [producer, not carrier]
in ``analysis/nonfinite/first.py``): the first node, in the engine's order, whose returned gradient
holds a NaN (else an infinity) while the gradient it received did not; node hooks watch one
more backward of the baseline's graph. The pattern comes from the same table as the panel's
(``analysis/nonfinite/traps.py``); the reason's words are ``analysis/gradcheck/verdict.py``'s.
"""

from __future__ import annotations

from typing import Any

import torch

from gradtrace.analysis.gradcheck.verdict import nonfinite_reason
from gradtrace.gradcheck.suspect import all_nodes
from gradtrace.schema.gradcheck import ElementCheck, Reason


def _holds(grads: tuple[Any, ...], test: Any) -> bool:
    return any(isinstance(g, torch.Tensor) and bool(test(g).any()) for g in grads)


def producer(row: torch.Tensor, tensors: list[torch.Tensor]) -> Any:
    """The node whose backward made the first NaN (else inf) of ``d row / d tensors``."""
    if row.grad_fn is None:
        return None
    seen = all_nodes([row])
    order: list[tuple[Any, tuple[Any, ...], tuple[Any, ...]]] = []
    handles = []
    for n in seen:
        def hook(grad_inputs: Any, grad_outputs: Any, n: Any = n) -> None:
            order.append((n, tuple(grad_inputs), tuple(grad_outputs)))
        handles.append(n.register_hook(hook))
    try:
        torch.autograd.grad(row, tensors, retain_graph=True, allow_unused=True)
    except RuntimeError:
        return None
    finally:
        for h in handles:
            h.remove()
    for test in (torch.isnan, torch.isinf):
        for n, returned, received in order:
            if _holds(returned, test) and not _holds(received, test):
                return n
    return None


def consumers(node: Any, row: torch.Tensor) -> list[Any]:
    """The nodes that took ``node``'s output in forward."""
    found, seen, stack = [], set(), [row.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        if any(m is node for m, _ in n.next_functions):
            found.append(n)
        stack.extend(m for m, _ in n.next_functions)
    return found


def say(elements: list[ElementCheck], targets: list[Any], rows: torch.Tensor, reasons: list[Reason],
        occurrence: Any) -> None:
    """Add the ``nonfinite_gradient`` reason when a checked element's analytic gradient is not finite."""
    bad = [e for e in elements if e.nonfinite]
    if not bad:
        return
    row = rows[bad[0].output or 0]
    node = producer(row, [t.tensor for t in targets])
    direct = consumers(node, row) if node is not None else []
    near = [c for d in direct for c in consumers(d, row)]
    near += [c for d in near for c in consumers(d, row)]
    reasons.append(nonfinite_reason([f"{targets[e.tensor].name}{e.index}" for e in bad],
                                    node.name() if node is not None else None,
                                    occurrence(node) if node is not None else None,
                                    [c.name() for c in direct], [c.name() for c in near],
                                    nan=any(e.analytic == "nan" for e in bad)))
