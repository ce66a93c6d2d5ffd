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
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from itertools import compress, groupby
from operator import itemgetter, methodcaller
from typing import Any

import numpy as np

from gradtrace.analysis.docview import DocView

MIN_CALLS = 3

Call = tuple[str, int]
"""(module path, call number from 0), as ``Node.module_stack`` names it."""

Gather = Callable[[list[str]], Any]
"""The tensors of many keys of one shape and dtype as one array, or None (``gather`` in
analysis/dynamics/read.py)."""


_STACK = methodcaller("get", "module_stack")
_NODE = itemgetter("node")


def _members(view: DocView, counts: Mapping[str, int], default: int
             ) -> tuple[dict[Call, list[str]], dict[Call, list[str]], dict[str, set[str]], dict[str, tuple[Call, ...]]]:
    """The function nodes of each call of each module counted ``MIN_CALLS`` times or more in
    ``counts`` (a path it lacks counts ``default``), their names, each such module path's
    enclosing paths, and each of those nodes' calls.

    NOTE [a call's nodes in runs]
        The nodes are in creation order, and a call's nodes are made one after another: the
        nodes are taken in runs of one stack (``groupby``, which compares the stacks in C),
        and each run's calls are worked out once, not once per node; a call interrupted by a
        call inside it is two runs, appended in order."""
    members: dict[Call, list[str]] = {}
    names: dict[Call, list[str]] = {}
    around: dict[str, set[str]] = {}
    calls_of: dict[str, tuple[Call, ...]] = {}
    nested: set[tuple[str, ...]] = set()
    for stack, run in groupby(view.nodes, _STACK):
        if not stack:
            continue
        if len(stack) == 1:  # the usual case, with nothing around it
            e = stack[0]
            path = str(e["path"])
            if counts.get(path, default) < MIN_CALLS:
                continue  # before its nodes are read: a module called a few times costs no more
            ids, called = _functions(run)
            if not ids:
                continue
            mine: tuple[Call, ...] = ((path, int(e["call"])),)
        else:
            ids, called = _functions(run)
            if not ids:
                continue
            paths = tuple([str(e["path"]) for e in stack])
            if paths not in nested:
                nested.add(paths)
                for k in range(1, len(paths)):
                    if counts.get(paths[k], default) >= MIN_CALLS:
                        around.setdefault(paths[k], set()).update(paths[:k])
            mine = tuple([(path, int(e["call"])) for path, e in zip(paths, stack, strict=True)
                          if counts.get(path, default) >= MIN_CALLS])
            if not mine:
                continue
        calls_of.update(dict.fromkeys(ids, mine))
        for call in mine:
            found = members.get(call)
            if found is None:
                members[call] = ids if len(mine) == 1 else list(ids)
                names[call] = called if len(mine) == 1 else list(called)
            else:
                found += ids
                names[call] += called
    return members, names, around, calls_of


def _functions(run: Iterable[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """The ids and names (its id where it has none) of ``run``'s function nodes but
    accumulators, in one loop: two lists, no pairs to unzip."""
    ids: list[str] = []
    called: list[str] = []
    for n in run:
        if n.get("kind") == "function":
            name = n.get("name")
            if name != "AccumulateGrad":
                nid = n["id"]
                ids.append(nid)
                called.append(name or nid)
    return ids, called


def _outputs(view: DocView, calls_of: Mapping[str, tuple[Call, ...]]) -> dict[Call, set[str]]:
    """The nodes of each call that a function node outside that call used (NOTE [the gradient
    at each call]): each member's consumers by the forward edges that are not cut
    (``DocView.consumers``, built once for the whole analysis), so the edges themselves are
    not read again; a consumer in the same calls is passed over at once."""
    out: dict[Call, set[str]] = {}
    by_id = view.by_id
    get = calls_of.get
    consumers = view.consumers
    for nid, mine in calls_of.items():
        used = consumers.get(nid)
        if used is None:
            continue
        for u in used:
            theirs = get(u)
            if theirs == mine:
                continue
            if theirs is None:  # outside every call: an output where a function node used it
                if (by_id.get(u) or {}).get("kind") != "function":
                    continue
                theirs = ()
            for call in mine:
                if call not in theirs:
                    found = out.get(call)
                    if found is None:
                        out[call] = {nid}
                    else:
                        found.add(nid)
    return out


def call_series(view: DocView, passes: list[Mapping[str, Any]], read: Callable[[str], np.ndarray | None],
                gather: Gather | None = None) -> list[dict[str, Any]]:
    """Each module's ‖grad‖ by call in each backward pass that walked it ``MIN_CALLS`` times or
    more (NOTE [the gradient at each call]), in the order of the passes, then of first calls.

    NOTE [one walk each over nodes, edges and events]
        The calls' members come from one walk over the nodes, their outputs from one over the
        members' forward consumers (``DocView.consumers``), and the passes that reached each
        output from one over the backward events (only an output's are kept): the cost grows
        with the graph, never with the number of calls times the number of passes (a 500-step
        loop calls each layer 500 times, in 500 passes).

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
        members, names, around, calls_of = _members(view, counts, 0)
    else:
        members, names, around, calls_of = _members(view, counts, MIN_CALLS)
    if not members:
        return []
    roots = {str(r) for p in passes for r in p.get("roots") or []}
    used_outside = _outputs(view, calls_of)
    outs_of: dict[Call, list[str]] = {}
    wanted_nodes: set[str] = set()
    roots_in: dict[Call, set[str]] = {}
    for r in roots:
        for one in calls_of.get(r, ()):
            roots_in.setdefault(one, set()).add(r)
    for one, nodes in members.items():
        mine = used_outside.get(one, _NONE)
        if one in roots_in:
            mine = mine | roots_in[one]
        if len(mine) < 2:  # one output (an RNN cell's ``h``) or none: nothing to order
            outs = list(mine)
        else:  # a few outputs among many nodes (the usual case) are placed, not looked for
            outs = sorted(mine, key=nodes.index) if len(mine) * 8 < len(nodes) else [n for n in nodes if n in mine]
        outs_of[one] = outs
        wanted_nodes.update(outs)
    events = _Events(view)
    event_of = events.first(wanted_nodes, wanted)
    passes_of: dict[str, set[int]] = {}
    for nid, p in event_of:
        passes_of.setdefault(nid, set()).add(p)
    whole = not ((view.doc.get("tensors") or {}).get("left_out_count"))  # a key absent: no gradient
    # (path, pass) -> [(call, its nodes, their names, its outputs)]
    walked: dict[tuple[str, int], list[tuple[int, list[str], list[str], list[str]]]] = {}
    for (path, call), nodes in members.items():
        outs = outs_of[(path, call)]
        if len(outs) == 1:  # the usual case: that output's passes, as they are
            reached = passes_of.get(outs[0], _NONE)
        else:
            reached = set()
            for o in outs:
                reached |= passes_of.get(o, _NONE)
        for p in sorted(reached):
            walked.setdefault((path, p), []).append((call, nodes, names[(path, call)], outs))
    kept = {key for key, calls in walked.items() if len(calls) >= MIN_CALLS}
    types = {str(m.get("path")): m.get("type") for m in view.doc.get("modules") or []}
    shown: list[tuple[str, int, list[tuple[int, list[str]]]]] = []
    more: set[str] = set()
    for path, p in sorted(kept, key=lambda k: (k[1], min(c for c, *_ in walked[k]))):
        if any((outer, p) in kept for outer in around.get(path, ())):
            continue  # a module around it has the series of these steps
        calls = [(c, outs) for c, outs in _alike(sorted(walked[(path, p)], key=_FIRST)) if outs]
        shown.append((path, p, calls))
        more.update(o for _, outs in calls for o in outs if o not in wanted_nodes)
    if more:  # nodes in the same places as outputs of other calls (the last call's ``c``)
        event_of.update(events.first(more, wanted))
    series = []
    for path, p, calls in shown:
        series.append({"module": path, "type": types.get(path), "pass": p, "calls": [c for c, _ in calls],
                       "nodes": [outs[0] for _, outs in calls],
                       "grad_norm": _norms(view, [outs for _, outs in calls], p, event_of, read, whole, gather)})
    return series


def _busy(view: DocView, passes: set[int]) -> set[str]:
    """The module paths some one of ``passes`` walked nodes of ``MIN_CALLS`` calls of or more
    (NOTE [a module that no pass walks many times])."""
    walked: set[tuple[str, Any, Any]] = set()  # (path, pass, call): one add per module of a stack
    add = walked.add
    by_id = view.by_id
    for _, ev in view.backward_events():
        p = ev.get("pass")
        if p not in passes:
            continue
        n = by_id.get(ev["node"])
        stack = n.get("module_stack") if n is not None else None
        if stack:
            for e in stack:
                add((e["path"], p, e["call"]))
    counts = Counter((path, p) for path, p, _ in walked)
    return {str(path) for (path, _), k in counts.items() if k >= MIN_CALLS}


_FIRST = itemgetter(0)
_NONE: frozenset[Any] = frozenset()
"""An empty set, shared (never changed)."""


class _Events:
    """The backward events' nodes, read once, to find the first event of a few nodes in each
    pass: the events of other nodes are passed over in C (``compress`` of a ``map`` of
    membership), only the nodes' own are looked at."""

    def __init__(self, view: DocView) -> None:
        self.backward = list(view.backward_events())
        self.nodes = list(map(_NODE, map(itemgetter(1), self.backward)))

    def first(self, nodes: set[str], passes: set[int]) -> dict[tuple[str, int], int]:
        """``(node, pass) -> `` the index of the first backward event of each of ``nodes`` in
        each of ``passes``."""
        event_of: dict[tuple[str, int], int] = {}
        backward = self.backward
        for j in compress(range(len(backward)), map(nodes.__contains__, self.nodes)):
            i, ev = backward[j]
            p = ev.get("pass")
            if p in passes:
                key = (str(ev["node"]), int(p))  # type: ignore[arg-type]
                if key not in event_of:
                    event_of[key] = i
        return event_of


def _alike(calls: list[tuple[int, list[str], list[str], list[str]]]) -> list[tuple[int, list[str]]]:
    """Each call with its outputs, the same places in calls made of the same ops: the last
    call's cell state ``c`` is an output though no later op used it, as every other call's
    is (NOTE [the gradient at each call])."""
    places: dict[tuple[str, ...], set[int]] = {}
    shapes = [tuple(names) for _, _, names, _ in calls]
    for (_, nodes, _, found), shape in zip(calls, shapes, strict=True):
        known = places.get(shape)
        if known is None:
            known = places[shape] = set()
        for o in found:  # a call's nodes are each once in it, its outputs few
            known.add(nodes.index(o))
    order = {shape: sorted(known) for shape, known in places.items()}  # each shape's places, once
    return [(c, [nodes[k] for k in order[shape]]) for (c, nodes, _, _), shape in zip(calls, shapes, strict=True)]


def _norms(view: DocView, calls: list[list[str]], p: int, event_of: Mapping[tuple[str, int], int],
           read: Callable[[str], np.ndarray | None], whole: bool, gather: Gather | None) -> list[Any]:
    """‖the gradient pass ``p`` brought to the outputs of each call‖ (float64), or None for a
    call one of whose outputs is not in the tensor file though it may have been left out
    (``whole``: the file left nothing out, so a gradient it lacks was undefined: an output no
    later op used). One loop over every call (a series of an unrolled RNN has hundreds).

    NOTE [a series' gradients in one gather]
        An unrolled RNN's series reads one gradient per call, hundreds of small tensors of
        one shape and dtype: where the reader can (``gather``, analysis/dynamics/read.py),
        they are read as one array, one row per gradient, made float64 in one conversion,
        and each row goes to ``dot`` as it is, a contiguous float64 vector, as the gradient
        read alone and converted would: each square is the same number."""
    by_id = view.by_id
    keys_of: list[list[str]] = []
    for outs in calls:
        keys: list[str] = []
        for nid in outs:
            i = event_of.get((nid, p))
            if i is None:
                continue  # not walked in this pass: no gradient reached it
            many = by_id[nid].get("outputs")
            if many:
                keys += [f"e{i}.go{k}" for k in range(len(many))]
            else:
                keys.append(f"e{i}.go0")
        keys_of.append(keys)
    squares = _squares([k for keys in keys_of for k in keys], read, gather)
    found: list[Any] = []
    for keys in keys_of:
        total = 0.0
        missing = False
        for k in keys:
            sq = squares.get(k)
            if sq is None:
                if whole:
                    continue
                missing = True
                break
            total += sq
        if missing:
            found.append(None)
        elif total - total == 0:  # finite (the usual case)
            found.append(float(f"{math.sqrt(total):.7g}"))
        else:
            found.append("nan" if math.isnan(total) else "inf")
    return found


def _squares(keys: list[str], read: Callable[[str], np.ndarray | None], gather: Gather | None
             ) -> dict[str, float]:
    """Each gradient's squared norm, summed in float64 (``dot`` of it with itself), by key; a
    key with no tensor is left out (NOTE [a series' gradients in one gather])."""
    dot = np.dot
    rows = gather(keys) if gather is not None and len(keys) > 1 else None
    if isinstance(rows, np.ndarray):
        flat = rows.reshape(len(keys), -1 if rows.size else 0).astype(np.float64, copy=False)
        return dict(zip(keys, map(float, map(dot, flat, flat)), strict=True))
    out: dict[str, float] = {}
    for k in keys:
        g = read(k)
        if g is not None:
            g = g.astype(np.float64, copy=False).reshape(-1)
            out[k] = float(dot(g, g))
    return out
