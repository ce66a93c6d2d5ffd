"""Reading a torch call the probe intercepts: the tensors among its arguments, and the one scalar
a backward call differentiates (NOTE [how a re-run finds the same tensor] in ``probe.py``)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import torch


def backward_scalar(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor:
    """What a backward call differentiates, as one scalar: ``sum(root * grad_tensor)``."""
    if func is torch.Tensor.backward:
        roots, grads = [args[0]], [kwargs.get("gradient", args[1] if len(args) > 1 else None)]
    else:
        first = "tensors" if func is torch.autograd.backward else "outputs"
        second = "grad_tensors" if func is torch.autograd.backward else "grad_outputs"
        r = kwargs.get(first, args[0] if args else None)
        g = kwargs.get(second, args[2] if func is torch.autograd.grad and len(args) > 2
                       else args[1] if func is torch.autograd.backward and len(args) > 1 else None)
        roots = [r] if isinstance(r, torch.Tensor) else list(r or [])
        grads = [g] if isinstance(g, torch.Tensor) or g is None else list(g)
        grads = grads + [None] * (len(roots) - len(grads))
    total: torch.Tensor | None = None
    for r, g in zip(roots, grads, strict=False):
        term = r.sum() if g is None else (r * g.to(r.dtype)).sum()
        total = term if total is None else total + term
    if total is None:
        raise RuntimeError("backward was called with no tensors")
    return total


def tensors_in(args: Any, kwargs: dict[str, Any]) -> Iterator[torch.Tensor]:
    for a in itertools.chain(args if isinstance(args, (tuple, list)) else (args,), kwargs.values()):
        if isinstance(a, torch.Tensor):
            yield a
        elif isinstance(a, (tuple, list)):
            for b in a:
                if isinstance(b, torch.Tensor):
                    yield b
