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


def _members(view: DocView, counts: Mapping[str, int],
             default: int) -> tuple[dict[Call, list[str]], dict[str, set[str]], dict[str, tuple[Call, ...]]]:
    """The function nodes of each call of each module counted ``MIN_CALLS`` times or more in
    ``counts`` (a path it lacks counts ``default``), each such module path's enclosing paths,
    and each of those nodes' calls."""
    members: dict[Call, list[str]] = {}
    around: dict[str, set[str]] = {}
    calls_of: dict[str, tuple[Call, ...]] = {}
    nested: set[tuple[str, ...]] = set()
    many: dict[Any, bool] = {}
    """Each path as the stacks spell it: whether it is counted ``MIN_CALLS`` times or more."""
    for n in view.nodes:
        stack = n.get("module_stack")
        if not stack or n.get("kind") != "function" or n.get("name") == "AccumulateGrad":
            continue
        if len(stack) == 1:  # the usual case, with nothing around it
            e = stack[0]
            raw = e["path"]
            hit = many.get(raw)
            if hit is None:
                hit = many[raw] = counts.get(str(raw), default) >= MIN_CALLS
            if hit:
                call = (str(raw), int(e["call"]))
                nid = str(n["id"])
                calls_of[nid] = (call,)
                nodes = members.get(call)
                if nodes is None:
                    members[call] = [nid]
                else:
                    nodes.append(nid)
            continue
        nid = str(n["id"])
        paths = tuple([str(e["path"]) for e in stack])
        if paths not in nested:
            nested.add(paths)
            for k in range(1, len(paths)):
                if counts.get(paths[k], default) >= MIN_CALLS:
                    around.setdefault(paths[k], set()).update(paths[:k])
        mine = tuple([(path, int(e["call"])) for path, e in zip(paths, stack, strict=True)
                      if counts.get(path, default) >= MIN_CALLS])
        if mine:
            calls_of[nid] = mine
            for call in mine:
                members.setdefault(call, []).append(nid)
    return members, around, calls_of


def _outputs(view: DocView, calls_of: Mapping[str, tuple[Call, ...]]) -> dict[Call, set[str]]:
    """The nodes of each call that a function node outside that call used (NOTE [the gradient
    at each call]): one walk over the forward edges."""
    out: dict[Call, set[str]] = {}
    by_id = view.by_id
    for nid, users in view.consumers.items():
        mine = calls_of.get(nid)
        if mine is None:
            continue
        for u in users:
            theirs = calls_of.get(u, ())
            if theirs == mine or (by_id.get(u) or {}).get("kind") != "function":
                continue
            for call in mine:
                if call not in theirs:
                    found = out.get(call)
                    if found is None:
                        out[call] = {nid}
                    else:
                        found.add(nid)
    return out


def call_series(view: DocView, passes: list[Mapping[str, Any]],
                read: Callable[[str], np.ndarray | None]) -> list[dict[str, Any]]:
    """Each module's ‖grad‖ by call in each backward pass that walked it ``MIN_CALLS`` times or
    more (NOTE [the gradient at each call]), in the order of the passes, then of first calls.

    NOTE [one walk each over nodes, edges and events]
        The calls' members come from one walk over the nodes, their outputs from one over the
        forward edges, and the passes that reached each output from one over the backward
        events (only an output's are kept): the cost grows with the graph, never with the
        number of calls times the number of passes (a 500-step loop calls each layer 500
        times, in 500 passes).

    NOTE [a module that no pass walks many times]
        A training loop calls each layer once per iteration: its modules are called many
        times in all, but each pass walks one call of each. With more than one pass, one look
        at the backward events first counts, for each pass, the calls of each module it
        walked any node of (an upper bound of the calls whose outputs it walked); only the
        modules some pass walked ``MIN_CALLS`` times are looked at further, and a loop whose
        passes walk none pays that one look."""
    counts = {str(m.get("path")): int(m.get("calls") or 0) for m in view.doc.get("modules") or []}
    wanted = {int(p["index"]) for p in passes}
    if len(wanted) > 1:  # NOTE [a module that no pass walks many times]
        busy = _busy(view, wanted)
        if not busy:  # no module's nodes would be looked at: no member, no series
            return []
        counts = {path: MIN_CALLS for path in busy if counts.get(path, MIN_CALLS) >= MIN_CALLS}
        members, around, calls_of = _members(view, counts, 0)
    else:
        members, around, calls_of = _members(view, counts, MIN_CALLS)
    if not members:
        return []
    roots = {str(r) for p in passes for r in p.get("roots") or []}
    used_outside = _outputs(view, calls_of)
    outs_of: dict[Call, list[str]] = {}
    wanted_nodes: set[str] = set()
    for one, nodes in members.items():
        found = used_outside.get(one)
        outs = [nid for nid in nodes if nid in roots or (found is not None and nid in found)]
        outs_of[one] = outs
        wanted_nodes.update(outs)
    event_of: dict[tuple[str, int], int] = {}
    passes_of: dict[str, set[int]] = {}
    _first_events(view, wanted_nodes, wanted, event_of)
    for nid, p in event_of:
        passes_of.setdefault(nid, set()).add(p)
    whole = not ((view.doc.get("tensors") or {}).get("left_out_count"))  # a key absent: no gradient
    # (path, pass) -> [(call, its nodes, its outputs)]
    walked: dict[tuple[str, int], list[tuple[int, list[str], list[str]]]] = {}
    for (path, call), nodes in members.items():
        outs = outs_of[(path, call)]
        reached: set[int] = set()
        for o in outs:
            reached |= passes_of.get(o, set())
        for p in sorted(reached):
            walked.setdefault((path, p), []).append((call, nodes, outs))
    kept = {key for key, calls in walked.items() if len(calls) >= MIN_CALLS}
    types = {str(m.get("path")): m.get("type") for m in view.doc.get("modules") or []}
    shown: list[tuple[str, int, list[tuple[int, list[str]]]]] = []
    more: set[str] = set()
    for path, p in sorted(kept, key=lambda k: (k[1], min(c for c, *_ in walked[k]))):
        if any((outer, p) in kept for outer in around.get(path, ())):
            continue  # a module around it has the series of these steps
        calls = [(c, outs) for c, outs in _alike(view, sorted(walked[(path, p)])) if outs]
        shown.append((path, p, calls))
        more.update(o for _, outs in calls for o in outs if o not in wanted_nodes)
    if more:  # nodes in the same places as outputs of other calls (the last call's ``c``)
        _first_events(view, more, wanted, event_of)
    series = []
    for path, p, calls in shown:
        series.append({"module": path, "type": types.get(path), "pass": p, "calls": [c for c, _ in calls],
                       "nodes": [outs[0] for _, outs in calls],
                       "grad_norm": [_norm(view, outs, p, event_of, read, whole) for _, outs in calls]})
    return series


def _busy(view: DocView, passes: set[int]) -> set[str]:
    """The module paths some one of ``passes`` walked nodes of ``MIN_CALLS`` calls of or more
    (NOTE [a module that no pass walks many times])."""
    seen: dict[tuple[str, int], set[int]] = {}
    by_id = view.by_id
    for _, ev in view.backward_events():
        p = ev.get("pass")
        if p not in passes:
            continue
        n = by_id.get(ev["node"])
        stack = n.get("module_stack") if n is not None else None
        if not stack:
            continue
        for e in stack:
            key = (str(e["path"]), int(p))  # type: ignore[arg-type]
            calls = seen.get(key)
            if calls is None:
                seen[key] = {e["call"]}
            else:
                calls.add(e["call"])
    return {path for (path, _), calls in seen.items() if len(calls) >= MIN_CALLS}


def _first_events(view: DocView, nodes: set[str], passes: set[int], event_of: dict[tuple[str, int], int]) -> None:
    """``event_of[(node, pass)]``: the index of the first backward event of each of ``nodes``
    in each of ``passes``."""
    for i, ev in view.backward_events():
        nid = str(ev["node"])
        if nid not in nodes:
            continue
        p = ev.get("pass")
        if p in passes:
            key = (nid, int(p))  # type: ignore[arg-type]
            if key not in event_of:
                event_of[key] = i


def _alike(view: DocView, calls: list[tuple[int, list[str], list[str]]]) -> list[tuple[int, list[str]]]:
    """Each call with its outputs, the same places in calls made of the same ops: the last
    call's cell state ``c`` is an output though no later op used it, as every other call's
    is (NOTE [the gradient at each call])."""
    places: dict[tuple[str, ...], set[int]] = {}
    by_id = view.by_id
    shapes = [tuple([str(by_id[n].get("name") or n) for n in nodes]) for _, nodes, _ in calls]
    for (_, nodes, found), shape in zip(calls, shapes, strict=True):
        known = places.get(shape)
        if known is None:
            known = places[shape] = set()
        for o in found:  # a call's nodes are each once in it, its outputs few
            known.add(nodes.index(o))
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
