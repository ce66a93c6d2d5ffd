"""PyTorch as the oracle: run a snippet bare (no gradtrace) and read what torch itself says."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


def run_bare(code: str, seed: int = 0) -> tuple[dict[str, Any], BaseException | None]:
    """Execute ``code`` as run_snippet would, but without any recorder."""
    random.seed(seed)
    torch.manual_seed(seed)
    ns: dict[str, Any] = {"__name__": "__main__", "torch": torch, "nn": nn, "F": F}
    error: BaseException | None = None
    try:
        exec(compile(code, "<bare>", "exec"), ns)
    except BaseException as e:
        error = e
    return ns, error


def resolve(ns: dict[str, Any], name: str) -> Any:
    """``model.0.weight`` → ``ns['model']`` then attribute ``0`` then ``weight``."""
    head, *rest = name.split(".")
    obj = ns[head]
    for part in rest:
        obj = getattr(obj, part)
    return obj


def graph_names(roots: list[torch.Tensor]) -> Counter[str]:
    """Independent walk of grad_fn / next_functions from ``roots``: node class names."""
    seen: set[int] = set()
    keep: list[Any] = []
    names: Counter[str] = Counter()
    stack = [t.grad_fn for t in roots if t.grad_fn is not None]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        keep.append(n)
        names[n.name().rsplit("::", 1)[-1]] += 1
        stack.extend(g for g, _ in n.next_functions if g is not None)
    return names


def backward_order(root: torch.Tensor) -> list[str]:
    """Node names in the order the engine executes them, seen by hooks registered here."""
    order: list[str] = []
    handles = []
    seen: set[int] = set()
    keep: list[Any] = []
    stack = [root.grad_fn]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        keep.append(n)
        name = n.name().rsplit("::", 1)[-1]
        handles.append(n.register_hook(lambda gi, go, name=name: order.append(name)))
        stack.extend(g for g, _ in n.next_functions)
    try:
        root.backward()
    finally:
        for h in handles:
            h.remove()
    return order
