"""The recorded graph: function and tensor nodes, edges, and how new nodes are discovered.

NOTE [discovery]
    Autograd builds nodes in C++; Python hears about them only through the tensors that user
    code gets back. After every intercepted torch call (see :mod:`gradtrace.capture.mode`) the
    ``grad_fn`` of each output (and of the first argument, for in-place ops and
    ``__setitem__``) is walked back through ``next_functions``, iteratively, stopping at nodes
    already known. Everything new is ordered by autograd's own sequence number (its creation
    order); an ``AccumulateGrad`` (whose sequence number is 2**64-1) is placed just before its
    first consumer, which is when autograd creates it. A node whose sequence number is older
    than the current call was created somewhere the recorder could not see (C++ or code run
    with the mode off): it gets no line rather than a wrong one.

NOTE [keeping nodes alive]
    The recorder keeps a reference to every node it has seen. That pins Python's wrapper object,
    so ``node in known`` is an identity test that stays valid for the whole run (ids of freed
    objects could be reused otherwise). Saved tensors are not pinned: backward still frees them.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.autograd.graph import Node

from gradtrace.capture.saved import has_saved, read_saved
from gradtrace.capture.values import _DEVICE_NAMES, _DTYPE_NAMES, device_name, dtype_name

ACC_SEQ = 2**64 - 1


@dataclass(slots=True)
class FnInfo:
    """A recorded function node and what the recorder learnt about it."""

    id: str
    node: Node
    doc: dict[str, Any]
    executed_in: list[int] = field(default_factory=list)
    acc: bool = False
    """Whether it is an AccumulateGrad (asked in every backward hook)."""


def _output_meta(doc: dict[str, Any], node: Node) -> None:
    """Shape, dtype and device of the node's (first) forward output, from ``_input_metadata``,
    written into ``doc``."""
    try:
        metas = node._input_metadata  # type: ignore[attr-defined]
    except Exception:
        return
    dtypes, devices = _DTYPE_NAMES, _DEVICE_NAMES
    items: list[dict[str, Any]] = []
    for m in metas:
        try:
            dt, dv = m.dtype, m.device
            items.append({"shape": list(m.shape), "dtype": dtypes.get(dt) or dtype_name(dt),
                          "device": devices.get(dv) or device_name(dv)})
        except Exception:  # nested tensors have no plain shape
            items.append({"shape": None, "dtype": None, "device": None})
    if items:
        doc.update(items[0])
    if len(items) > 1:
        doc["outputs"] = items


def node_name(node: Node) -> str:
    """``torch::autograd::AccumulateGrad`` → ``AccumulateGrad``."""
    return node.name().rsplit("::", 1)[-1]


def walk_new(roots: list[Node], known: dict[Node, FnInfo]) -> tuple[list[Node], dict[Node, Any]]:
    """Nodes reachable from ``roots`` that are not ``known``, in creation order, with the
    ``next_functions`` of each (read once: every read builds new tuples)."""
    nexts: dict[Node, Any] = {}
    stack = [r for r in roots if r is not None and r not in known]
    while stack:
        n = stack.pop()
        if n in nexts:
            continue
        nf = n.next_functions
        nexts[n] = nf
        for g, _ in nf:
            if g is not None and g not in known and g not in nexts:
                stack.append(g)
    if not nexts:
        return [], nexts
    return _creation_order(nexts), nexts


def _creation_order(nexts: dict[Node, Any]) -> list[Node]:
    """Producers before consumers, otherwise by sequence number; an AccumulateGrad sorts just
    before its earliest consumer. Sequence numbers alone are almost a topological order, but
    not quite: a view's ``grad_fn`` regenerated after an in-place change (``AsStridedBackward0``)
    is numbered when it is rebuilt. Kahn's algorithm with a heap keeps both promises."""
    seqs = {n: n._sequence_nr() for n in nexts}
    key: dict[Node, tuple[int, int, int]] = {}
    consumers: dict[Node, list[Node]] = {n: [] for n in nexts}
    pending = dict.fromkeys(nexts, 0)
    for i, (n, nf) in enumerate(nexts.items()):
        if seqs[n] != ACC_SEQ:
            key[n] = (seqs[n], 1, i)
        for g, _ in nf:
            if g is not None and g in nexts:
                consumers[g].append(n)
                pending[n] += 1
    for i, n in enumerate(nexts):
        if seqs[n] == ACC_SEQ:
            first = min((seqs[c] for c in consumers[n] if seqs[c] != ACC_SEQ), default=ACC_SEQ)
            key[n] = (first, 0, i)
    heap = [(key[n], i, n) for i, n in enumerate(nexts) if pending[n] == 0]
    heapq.heapify(heap)
    ordered: list[Node] = []
    while heap:
        _, _, n = heapq.heappop(heap)
        ordered.append(n)
        for c in consumers[n]:
            pending[c] -= 1
            if pending[c] == 0:
                heapq.heappush(heap, (key[c], len(ordered) + len(nexts), c))
    return ordered


def describe(node: Node, *, read_saved_tensors: bool) -> dict[str, Any]:
    """The static part of a function node's document entry (no id, line or module yet)."""
    doc: dict[str, Any] = {"kind": "function", "name": node_name(node)}
    _output_meta(doc, node)
    saved, total = read_saved(node) if read_saved_tensors and has_saved(node) else ([], 0)
    doc["saved"] = saved
    doc["saved_bytes"] = total
    if not read_saved_tensors:
        doc["saved_unread"] = True
    return doc


def leaf_of(node: Node) -> torch.Tensor | None:
    """The leaf tensor of an AccumulateGrad node."""
    var = getattr(node, "variable", None)
    return var if isinstance(var, torch.Tensor) else None
