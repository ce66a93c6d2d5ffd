"""Anomaly mode's forward tracebacks, as the bare run stores them.

NOTE [anomaly mode's tracebacks without the recorder]
    Under ``torch.autograd.detect_anomaly()`` every node keeps the Python stack of its forward
    call (``grad_fn.metadata["traceback_"]``, from ``traceback.format_stack()``), and a backward
    that fails or meets a NaN prints the failing node's as "Traceback of forward call that
    caused the error". Recording puts frames of its own on that stack (the torch-function
    mode's handler, and the Python kernels' tap): the user's stderr would show gradtrace's
    files. Before a backward runs with anomaly mode on, each node of its graph has those frames
    taken out of its stored stack, which is then the bare run's, frame for frame. Nodes made
    with anomaly mode off store no stack, and the walk is skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import torch

_OURS = 'File "' + os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
"""The start of a ``format_stack`` entry of a frame in gradtrace's package."""


def scrub_stacks(roots: Iterable[torch.Tensor]) -> None:
    """Take gradtrace's frames out of the forward stacks stored by the nodes of the graph of
    ``roots`` (NOTE [anomaly mode's tracebacks without the recorder])."""
    if not torch.is_anomaly_enabled():
        return
    stack: list[Any] = [t.grad_fn for t in roots if t.grad_fn is not None]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        meta = node.metadata
        frames = meta.get("traceback_")
        if isinstance(frames, list) and any(isinstance(f, str) and _OURS in f for f in frames):
            meta["traceback_"] = [f for f in frames if not (isinstance(f, str) and _OURS in f)]
        stack.extend(n for n, _ in node.next_functions)
