"""A backward that ignores the gradient it receives.

A backward must be linear in ``grad_output``. One that returns its local derivative whatever it
receives (forgetting ``grad_output *``) still agrees with finite differences when the check's
rows are seeded with 1, so finite differences alone cannot see it; ``torch.autograd.gradcheck``
catches it by running backward with a zero ``grad_output`` ("backward not multiplied by
grad_output"), and so does this: one more backward of the baseline's graph, with node hooks
naming the first node that returned something non-zero from nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from gradtrace.analysis.gradcheck.verdict import ignores_grad_output
from gradtrace.gradcheck.suspect import all_nodes
from gradtrace.schema.gradcheck import GradcheckResult


def _nonzero(grads: tuple[Any, ...]) -> bool:
    return any(isinstance(g, torch.Tensor) and bool((g.nan_to_num(0.0) != 0).any()) for g in grads)


def ignoring_node(outputs: list[torch.Tensor], tensors: list[torch.Tensor]) -> tuple[bool, Any]:
    """``(found, node)``: whether a zero ``grad_output`` gives a non-zero gradient, and the first
    node (in the engine's order) that made something of nothing, when one can be told."""
    roots = [o for o in outputs if o.requires_grad and o.is_floating_point()]
    if not roots:
        return False, None
    seen = all_nodes(roots)
    order: list[Any] = []
    handles = []
    for n in seen:
        def hook(grad_inputs: Any, grad_outputs: Any, n: Any = n) -> None:
            if _nonzero(tuple(grad_inputs)) and not _nonzero(tuple(grad_outputs)):
                order.append(n)
        handles.append(n.register_hook(hook))
    try:
        grads = torch.autograd.grad(roots, tensors, grad_outputs=[torch.zeros_like(o) for o in roots],
                                    retain_graph=True, allow_unused=True)
    except RuntimeError:
        return False, None
    finally:
        for h in handles:
            h.remove()
    if not _nonzero(tuple(g for g in grads if g is not None)):
        return False, None
    return True, order[0] if order else None


def judge(out: GradcheckResult, outputs: list[torch.Tensor], tensors: list[torch.Tensor], sites: list[Any],
          occurrence: Callable[[Any], int]) -> None:
    """Fail ``out`` with the reason and the suspect when a backward ignores ``grad_output``."""
    ignores, node = ignoring_node(outputs, tensors)
    if not ignores:
        return
    site = next((s for s in sites if s.tensor.grad_fn is node), None) if node is not None else None
    ignores_grad_output(out, node.name() if node is not None else None,
                        occurrence(node) if node is not None else None,
                        site.user if site is not None else False)
