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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.autograd.graph import Node

from gradtrace.capture.saved import Private, read_saved, saved_attrs, uses_up_saved
from gradtrace.capture.values import _DEVICE_NAMES, _DTYPE_NAMES, device_name, dtype_name

ACC_SEQ = 2**64 - 1


@dataclass(slots=True)
class FnInfo:
    """A recorded function node and what the recorder learnt about it."""

    id: str
    node: Node
    doc: dict[str, Any]
    acc: bool = False
    """Whether it is an AccumulateGrad (asked in every backward hook)."""
    private: list[Private] = field(default_factory=list)
    """Per entry of ``doc["saved"]``: what is kept of it but never written (NOTE in saved.py)."""


Meta = tuple[list[int] | None, str | None, str | None]
"""(shape, dtype, device) of one forward output of a node."""

Found = tuple[Node, dict[str, Any], list[Private], list[dict[str, Any]], int, bool]
"""A newly found node: (node, its complete document entry with its id, the private part of
its saved tensors, its edges from its next functions, its sequence number, whether it is an
AccumulateGrad). What :func:`describe_batch` gives; the C++ core keeps the same as structs
(NOTE [node entries in C++] in ``cxx/entries.h``)."""


def output_metas(node: Node) -> list[Meta]:
    """Shape, dtype and device of each forward output, from ``_input_metadata``."""
    try:
        metas = node._input_metadata  # type: ignore[attr-defined]
    except Exception:
        return []
    dtypes, devices = _DTYPE_NAMES, _DEVICE_NAMES
    items: list[Meta] = []
    for m in metas:
        try:
            dt, dv = m.dtype, m.device
            if m.is_nested_tensor:  # no plain shape (NOTE [nested tensors] in odd_tensors.py), as in cxx/walk.h
                raise ValueError("nested")
            items.append((list(m.shape), dtypes.get(dt) or dtype_name(dt), devices.get(dv) or device_name(dv)))
        except Exception:  # nested tensors have no plain shape
            items.append((None, None, None))
    return items


def _complete(fid: str, name: str, metas: list[Meta]) -> dict[str, Any]:
    """A function node's entry with every field the document writes
    (NOTE [documents without pydantic on the hot path] in document.py)."""
    doc: dict[str, Any] = {"kind": "function", "id": fid, "name": name, "line": None, "module": None,
                           "shape": None, "dtype": None, "device": None, "grad": None, "seq": None,
                           "role": None, "created_in_pass": None, "value": None, "grad_history": [],
                           "cut": None}
    if metas:
        doc["shape"], doc["dtype"], doc["device"] = metas[0]
    if len(metas) > 1:
        doc["outputs"] = [{"shape": m[0], "dtype": m[1], "device": m[2]} for m in metas]
    return doc


def node_name(node: Node) -> str:
    """``torch::autograd::AccumulateGrad`` → ``AccumulateGrad``."""
    return node.name().rsplit("::", 1)[-1]


# NOTE [nodes from before the block]
#     ``gradtrace.record()`` holds only what its block made. In a notebook, cells run at module
#     level and earlier cells' graphs are still alive (``y = x*x + 3*x + 1`` two cells up): a
#     block that uses such a tensor, or the end-of-block sweep over the snippet's globals,
#     would walk into them. Autograd numbers nodes in creation order (per thread), so a node
#     numbered below the counter at the block's start was made before it: it is recorded
#     where reached, as the named producer of the tensor the block took in, but not walked
#     into (no inputs, no edges), and the sweep leaves such graphs alone. A leaf from before
#     the block (its AccumulateGrad has no number) appears as a leaf, as any leaf does.
#     The counter is per thread: a node another thread made inside the block may be numbered
#     below it and is then recorded without its inputs. ``run_snippet`` runs the snippet in a
#     fresh namespace, where no older graph can be reached, and sets no boundary.
def before_block(n: Node, boundary: int) -> bool:
    seq = n._sequence_nr()
    return seq < boundary and seq != ACC_SEQ


def walk_new(roots: list[Node], known: dict[Node, int],
             boundary: int = 0) -> tuple[list[Node], dict[Node, Any]]:
    """Nodes reachable from ``roots`` that are not ``known``, in creation order, with the
    ``next_functions`` of each (read once: every read builds new tuples); nodes from before
    ``boundary`` are not walked into (NOTE [nodes from before the block])."""
    nexts: dict[Node, Any] = {}
    stack = [r for r in roots if r is not None and r not in known]
    while stack:
        n = stack.pop()
        if n in nexts:
            continue
        nf = () if boundary and before_block(n, boundary) else n.next_functions
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


def describe_batch(roots: list[Node], known: dict[Node, int], *, read_saved_tensors: bool,
                   first_index: int, boundary: int = 0,
                   capture: Callable[[torch.Tensor, str], tuple[int, Any]] | None = None) -> list[Found]:
    """The new nodes reachable from ``roots``, in creation order, described, the k-th with id
    ``n<first_index + k>``; ``known``: recorded nodes by index; ``capture``: the core's, for
    saved values (``read_saved``'s; the Python twin of the C++ core's ``walk``: NOTE [discovery in C++] in
    ``cxx/walk.h``)."""
    new, nexts = walk_new(roots, known, boundary)
    pos = {n: first_index + k for k, n in enumerate(new)}
    out: list[Found] = []
    for n in new:
        name = node_name(n)
        fid = f"n{pos[n]}"
        doc = _complete(fid, name, output_metas(n))
        once = read_saved_tensors and uses_up_saved(n)  # NOTE [reading saved tensors]
        attrs = saved_attrs(n) if read_saved_tensors and not once else ()
        saved, private, total, args = read_saved(n, attrs, capture) if attrs else ([], [], 0, {})
        if once:
            doc["saved_once"] = True
        if once or not read_saved_tensors:
            doc["saved_unread"] = True
        doc["saved"] = saved
        if args:
            doc["saved_args"] = args
        doc["saved_bytes"] = total
        edges = [{"input_nr": i, "source": f"n{pos[g]}" if g in pos else f"n{known[g]}", "target": fid}
                 for i, (g, _) in enumerate(nexts[n]) if g is not None]
        out.append((n, doc, private, edges, n._sequence_nr(), name == "AccumulateGrad"))
    return out


def leaf_of(node: Node) -> torch.Tensor | None:
    """The leaf tensor of an AccumulateGrad node."""
    var = getattr(node, "variable", None)
    return var if isinstance(var, torch.Tensor) else None
