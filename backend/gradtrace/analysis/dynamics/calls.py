"""Series by call: ‖grad‖ at the output of each call of a module that one backward pass walks
through many times (an RNN cell unrolled over a sequence, a block applied again and again).

NOTE [the gradient at each call]
    A backward pass that goes through one module N times (``h = cell(x[t], h)`` for 200 steps)
    has one iteration and N calls: the series by iteration says nothing about how the gradient
    fares from the last call back to the first, which is where an unrolled RNN loses it. A
    call is the function nodes made while that call of the module was on the stack
    (``Node.module_stack``); its outputs are those of its nodes that a node outside the call
    used (``AccumulateGrad`` aside: a parameter is not an output of the call that first used
    it), any of its nodes a backward pass started from, and the nodes in the same places of
    the other calls made of the same ops (the last call's cell state ``c`` is returned too,
    though no later op used it). The gradient at the call is the norm over all its outputs of
    their gradient in that pass, what a hook on each output tensor sees: the ``grad_outputs``
    of each output node's event (``e{i}.go{k}`` in the tensor file), summed in float64,
    so a gradient that fell to 1e-42 is still told from 0. For ``h = cell(x[t], h)`` it is
    ``h_t.grad`` (``tests/capture/test_dynamics_calls.py`` holds it to torch's). A module gets
    a series for each backward pass that walked ``MIN_CALLS`` or more of its calls, unless a
    module around it has one there too (an RNN's own cell: the outer calls are the steps).
    Only the tensor file is read, never the events' stats: a document's events may be parsed
    without their values (NOTE [events without their values] in analysis/docview.py), so the
    series is the same wherever it is computed; with no file there is none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from gradtrace.analysis.docview import DocView

MIN_CALLS = 3

Call = tuple[str, int]
"""(module path, call number from 0), as ``Node.module_stack`` names it."""


def _members(view: DocView) -> tuple[dict[Call, list[str]], dict[str, set[str]]]:
    """The function nodes of each call of each module called ``MIN_CALLS`` times or more, and
    each module path's enclosing paths."""
    counts: dict[str, int] = {}
    for m in view.doc.get("modules") or []:
        counts[str(m.get("path"))] = int(m.get("calls") or 0)
    members: dict[Call, list[str]] = {}
    around: dict[str, set[str]] = {}
    for n in view.nodes:
        stack = n.get("module_stack")
        if not stack or n.get("kind") != "function" or n.get("name") == "AccumulateGrad":
            continue
        for k, entry in enumerate(stack):
            path = str(entry["path"])
            if counts.get(path, MIN_CALLS) < MIN_CALLS:
                continue
            members.setdefault((path, int(entry["call"])), []).append(str(n["id"]))
            if k:
                around.setdefault(path, set()).update(str(e["path"]) for e in stack[:k])
    return members, around


def _outputs(view: DocView, nodes: list[str], roots: set[str]) -> list[str]:
    """The nodes of one call that a node outside it used, or that a pass started from."""
    inside = set(nodes)
    out = []
    for nid in nodes:
        users = view.consumers.get(nid, [])
        if nid in roots or any(u not in inside and (view.by_id.get(u) or {}).get("kind") == "function"
                               for u in users):
            out.append(nid)
    return out


def call_series(view: DocView, passes: list[Mapping[str, Any]],
                read: Callable[[str], np.ndarray | None]) -> list[dict[str, Any]]:
    """Each module's ‖grad‖ by call in each backward pass that walked it ``MIN_CALLS`` times or
    more (NOTE [the gradient at each call]), in the order of the passes, then of first calls."""
    members, around = _members(view)
    if not members:
        return []
    wanted = {int(p["index"]) for p in passes}
    event_of: dict[tuple[str, int], int] = {}
    for i, ev in view.backward_events():
        p = ev.get("pass")
        if p in wanted:
            event_of.setdefault((str(ev["node"]), int(p)), i)  # type: ignore[arg-type]
    roots = {str(r) for p in passes for r in p.get("roots") or []}
    whole = not ((view.doc.get("tensors") or {}).get("left_out_count"))  # a key absent: no gradient
    # (path, pass) -> [(call, its nodes, its outputs)]
    walked: dict[tuple[str, int], list[tuple[int, list[str], list[str]]]] = {}
    for (path, call), nodes in members.items():
        outs = _outputs(view, nodes, roots)
        for p in sorted({p for o in outs for p in wanted if (o, p) in event_of}):
            walked.setdefault((path, p), []).append((call, nodes, outs))
    kept = {key for key, calls in walked.items() if len(calls) >= MIN_CALLS}
    types = {str(m.get("path")): m.get("type") for m in view.doc.get("modules") or []}
    series = []
    for path, p in sorted(kept, key=lambda k: (k[1], min(c for c, *_ in walked[k]))):
        if any((outer, p) in kept for outer in around.get(path, ())):
            continue  # a module around it has the series of these steps
        calls = [(c, outs) for c, outs in _alike(view, sorted(walked[(path, p)])) if outs]
        series.append({"module": path, "type": types.get(path), "pass": p, "calls": [c for c, _ in calls],
                       "nodes": [outs[0] for _, outs in calls],
                       "grad_norm": [_norm(view, outs, p, event_of, read, whole) for _, outs in calls]})
    return series


def _alike(view: DocView, calls: list[tuple[int, list[str], list[str]]]) -> list[tuple[int, list[str]]]:
    """Each call with its outputs, the same places in calls made of the same ops: the last
    call's cell state ``c`` is an output though no later op used it, as every other call's
    is (NOTE [the gradient at each call])."""
    places: dict[tuple[str, ...], set[int]] = {}
    shapes = [tuple(view.name(n) for n in nodes) for _, nodes, _ in calls]
    for (_, nodes, found), shape in zip(calls, shapes, strict=True):
        where = {n: k for k, n in enumerate(nodes)}
        places.setdefault(shape, set()).update(where[o] for o in found)
    return [(c, [nodes[k] for k in sorted(places[shape])]) for (c, nodes, _), shape in zip(calls, shapes, strict=True)]


def _norm(view: DocView, outs: list[str], p: int, event_of: Mapping[tuple[str, int], int],
          read: Callable[[str], np.ndarray | None], whole: bool) -> Any:
    """‖the gradient pass ``p`` brought to the outputs ``outs``‖ (float64), or None when one of
    them is not in the tensor file though it may have been left out (``whole``: the file left
    nothing out, so a gradient it lacks was undefined: an output no later op used)."""
    total = 0.0
    for nid in outs:
        i = event_of.get((nid, p))
        if i is None:
            continue  # not walked in this pass: no gradient reached it
        for k in range(len(view.by_id[nid].get("outputs") or [None])):
            g = read(f"e{i}.go{k}")
            if g is None:
                if whole:
                    continue
                return None
            g = g.astype(np.float64, copy=False).reshape(-1)
            total += float(np.dot(g, g))
    if math.isnan(total):
        return "nan"
    if math.isinf(total):
        return "inf"
    return float(f"{math.sqrt(total):.7g}")
