"""Compare two runs: pair their nodes, measure every value and gradient, and find where they
first diverge. Pure: reads two run documents (parsed JSON of the current schema), never torch.

:func:`compare_documents` is the one engine behind ``gradtrace.compare``, ``POST
/api/compare`` and the compare page (which reads its JSON). Nodes are paired as NOTE [pairing
nodes] in ``analysis/compare/align.py`` says; a paired function node's backward calls are paired in
order (its k-th call in A with its k-th call in B).

NOTE [first divergence]
    The first divergence is found by walking A's timeline, the order the page steps through:
    its events in order (forward events, then each backward pass), with every recorded tensor
    value placed right after the forward event of the function node made just before it. The
    first step where a paired node's shape or value differs (forward), or where the gradient a
    paired node received or produced differs (backward), beyond tolerance, is it. Within a
    backward call the gradient received is checked before the gradient produced, so a node
    that only passes on a difference made upstream is never named in its place; the node
    named is the one whose own backward made the difference. Nodes only one run has are
    reported as such, not as divergences. At a function node's forward event its outputs
    (``output``, kept with a tensor file) are compared too, so the first op whose result
    differs is named, not the loss that carried the difference; with both runs' tensor files,
    outputs and gradients are compared element by element (NOTE [exact deltas from the
    tensor files] in ``analysis/compare/exact.py``).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from gradtrace.analysis.compare import deltas as dl
from gradtrace.analysis.compare.align import line_map, pair_nodes
from gradtrace.analysis.compare.exact import Measure
from gradtrace.analysis.compare.memory import memory_timeline
from gradtrace.analysis.compare.steps import merged_steps, paired_events
from gradtrace.analysis.compare.words import divergence_sentence, summary
from gradtrace.analysis.kept import KeptTensors
from gradtrace.collector import gc_paused
from gradtrace.errors import InvalidRequest, PayloadTooLarge
from gradtrace.schema import SCHEMA_VERSION
from gradtrace.schema.compare import (
    BackwardOrder,
    Comparison,
    Divergence,
    NodePair,
    OnlyNode,
    RunRef,
    TensorDelta,
)

MAX_NODES = 50_000
"""Largest run (nodes) compared; as large as a run may be (``GRADTRACE_MAX_NODES``' default)."""
MAX_EVENTS = 200_000
"""Largest run (events) compared (``GRADTRACE_MAX_EVENTS``' default)."""

_Doc = dict[str, Any]
_EventDeltas = tuple[dl.RawDelta | None, dl.RawDelta | None]
"""Of one paired backward call: (the gradients it produced, a leaf's accumulated grad). The
gradients a call received are the ones its consumers produced; they are measured only on the
way to the first divergence (NOTE [first divergence])."""


def compare_documents(a: _Doc, b: _Doc, *, max_nodes: int = MAX_NODES, max_events: int = MAX_EVENTS,
                      tensors_a: KeptTensors | None = None, tensors_b: KeptTensors | None = None) -> Comparison:
    """What changed from run A to run B (:class:`Comparison`); ``tensors_a``/``tensors_b``: their
    tensor files, read for exact deltas on the way to the first divergence."""
    for side, doc in (("a", a), ("b", b)):
        check_document(side, doc, max_nodes=max_nodes, max_events=max_events)
    # Nothing built here is cyclic: collections would only walk the two documents again and again.
    with gc_paused():
        return _compare(a, b, Measure(tensors_a, tensors_b))


def _compare(a: _Doc, b: _Doc, measure: Measure) -> Comparison:
    nodes_a, nodes_b = a["graph"]["nodes"], b["graph"]["nodes"]
    events_a, events_b = a.get("events") or [], b.get("events") or []
    made, left_a, left_b = pair_nodes(nodes_a, nodes_b, line_map(a.get("code"), b.get("code")))
    b_of = {nodes_a[i]["id"]: nodes_b[j]["id"] for i, j, _ in made}
    calls_a, calls_b = _backward_calls(events_a), _backward_calls(events_b)
    event_deltas: dict[int, tuple[int, _EventDeltas]] = {}
    for node_a, node_b in b_of.items():
        for ea, eb in zip(calls_a.get(node_a, ()), calls_b.get(node_b, ()), strict=False):
            event_deltas[ea] = (eb, _event_delta(events_a[ea], events_b[eb]))
    floor = dl.floor_of(_largest_gradient(a, b, event_deltas))

    # Rows as dicts, validated once with the whole result by pydantic-core: GRU-200 makes 3,210.
    rows: list[dict[str, Any]] = []
    keys_used: dict[str, int] = defaultdict(int)
    for i, j, key in made:
        na, nb = nodes_a[i], nodes_b[j]
        keys_used[key] += 1
        value = dl.tensor_delta(na.get("value"), nb.get("value")) if na.get("value") or nb.get("value") else None
        grad = _node_grad_delta(na, nb, calls_a, calls_b, event_deltas)
        rows.append({"a": na["id"], "b": nb["id"], "key": key, "kind": na["kind"], "name": na.get("name"),
                     "name_b": nb.get("name") if nb.get("name") != na.get("name") else None,
                     "line_a": na.get("line"), "line_b": nb.get("line"), "shape_a": na.get("shape"),
                     "shape_b": nb.get("shape"), "shape_changed": na.get("shape") != nb.get("shape"),
                     "value": _judged(value, floor), "grad": _judged(grad, floor)})
    order = _backward_order(events_a, events_b, {v: k for k, v in b_of.items()})
    result = Comparison.model_validate({
        "a": _ref(a), "b": _ref(b), "pairs": rows, "only_a": [_only(nodes_a[i]) for i in left_a],
        "only_b": [_only(nodes_b[j]) for j in left_b], "keys_used": dict(keys_used), "backward_order": order,
        "memory_a": memory_timeline(a), "memory_b": memory_timeline(b),
        "steps": merged_steps(len(events_a), len(events_b), paired_events(events_a, events_b, b_of)),
        "same_structure": not left_a and not left_b and order.same and not any(r["shape_changed"] for r in rows),
        "summary": ""})
    divergence = _first_divergence(a, b, b_of, event_deltas, floor, {p.a: p for p in result.pairs}, measure)
    result = result.model_copy(update={"first_divergence": divergence})
    return result.model_copy(update={"summary": summary(result)})


def check_document(side: str, doc: Any, *, max_nodes: int = MAX_NODES, max_events: int = MAX_EVENTS) -> None:
    """Refuse what cannot be compared: not a run document (422), another schema version (422),
    more nodes or events than ``max_nodes``/``max_events`` (413)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("graph"), dict):
        raise InvalidRequest(f"run {side.upper()} is not a run document", detail={"side": side})
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION:
        raise InvalidRequest(f"run {side.upper()} follows schema version {version!r}; this service compares "
                             f"version {SCHEMA_VERSION} (store or re-run it here to upgrade it)",
                             detail={"side": side, "schema_version": version, "supported": SCHEMA_VERSION})
    nodes = doc["graph"].get("nodes")
    events = doc.get("events")
    if not isinstance(nodes, list) or not isinstance(events, list | None):
        raise InvalidRequest(f"run {side.upper()} has no node list", detail={"side": side})
    for what, count, limit in (("nodes", len(nodes), max_nodes), ("events", len(events or ()), max_events)):
        if count > limit:
            raise PayloadTooLarge(f"run {side.upper()} has {count} {what}, more than the {limit} a comparison "
                                  f"takes", detail={"side": side, "field": what, "count": count, "limit": limit})


def _ref(doc: _Doc) -> RunRef:
    return RunRef(id=str(doc.get("id", "")), status=str(doc.get("status", "")), nodes=len(doc["graph"]["nodes"]),
                  events=len(doc.get("events") or ()), seed=doc.get("seed"), device=doc.get("device"))


def _only(node: _Doc) -> OnlyNode:
    return OnlyNode(id=node["id"], kind=node["kind"], name=node.get("name"), line=node.get("line"),
                    module=node.get("module"))


def _backward_calls(events: list[_Doc]) -> dict[str, list[int]]:
    """Node id → the indexes of its backward events, in order."""
    out: dict[str, list[int]] = defaultdict(list)
    for k, event in enumerate(events):
        if event.get("phase") == "backward":
            out[event["node"]].append(k)
    return out


def _tensor_list_delta(xs: list[Any] | None, ys: list[Any] | None) -> dl.RawDelta | None:
    xs, ys = xs or [], ys or []
    if len(xs) != len(ys):
        return dl.MISMATCH
    return dl.combine([d for x, y in zip(xs, ys, strict=True) if (d := dl.tensor_delta(x, y)) is not None])


def _event_delta(ea: _Doc, eb: _Doc) -> _EventDeltas:
    return (_tensor_list_delta(ea.get("grad_inputs"), eb.get("grad_inputs")),
            dl.tensor_delta(ea.get("grad"), eb.get("grad")))


def _node_grad_delta(na: _Doc, nb: _Doc, calls_a: dict[str, list[int]], calls_b: dict[str, list[int]],
                     event_deltas: dict[int, tuple[int, _EventDeltas]]) -> dl.RawDelta | None:
    if na["kind"] == "tensor":
        return dl.tensor_delta(na.get("grad"), nb.get("grad"))
    ours, theirs = calls_a.get(na["id"], []), calls_b.get(nb["id"], [])
    parts = [d for k in ours if k in event_deltas for d in event_deltas[k][1] if d is not None]
    if len(ours) != len(theirs):  # one run called this node's backward more often
        parts.append(dl.MISMATCH)
    return dl.combine(parts)


def _judged(raw: dl.RawDelta | None, floor: float) -> dict[str, Any] | None:
    """A :class:`TensorDelta`'s fields."""
    if raw is None:
        return None
    return {"max_abs": raw.max_abs, "rel_l2": dl.rel_l2(raw), "exact": raw.exact,
            "beyond_tolerance": dl.beyond(raw, floor)}


def _largest_gradient(a: _Doc, b: _Doc, event_deltas: dict[int, tuple[int, _EventDeltas]]) -> float:
    """The largest gradient magnitude of either run (the tolerance floor's measure): their
    nodes' ``.grad`` and every backward event's gradients. Paired events' are known from their
    deltas; a gradient received is one produced by another event, but for the gradient each
    pass starts from."""
    best = max((d.scale for _, parts in event_deltas.values() for d in parts if d is not None), default=0.0)
    paired_b = {k for k, _ in event_deltas.values()}
    for doc, paired in ((a, event_deltas.keys()), (b, paired_b)):
        best = max(best, max((dl.magnitude(n.get("grad")) for n in doc["graph"]["nodes"]), default=0.0))
        passes: set[Any] = set()
        for k, event in enumerate(doc.get("events") or ()):
            if event.get("phase") != "backward":
                continue
            values = [] if k in paired else [*(event.get("grad_inputs") or ()), event.get("grad")]
            if event.get("pass") not in passes:
                passes.add(event.get("pass"))
                values.extend(event.get("grad_outputs") or ())
            for value in values:
                best = max(best, dl.magnitude(value))
    return best


def _backward_order(events_a: list[_Doc], events_b: list[_Doc], a_of: dict[str, str]) -> BackwardOrder:
    steps_a = [(k, e.get("pass"), e["node"]) for k, e in enumerate(events_a) if e.get("phase") == "backward"]
    steps_b = [(k, e.get("pass"), a_of.get(e["node"], "only-b:" + e["node"]))
               for k, e in enumerate(events_b) if e.get("phase") == "backward"]
    for step, (sa, sb) in enumerate(zip(steps_a, steps_b, strict=False)):
        if sa[1:] != sb[1:]:
            return BackwardOrder(same=False, first_difference=step, a_event=sa[0], b_event=sb[0],
                                 a_steps=len(steps_a), b_steps=len(steps_b))
    if len(steps_a) != len(steps_b):
        step = min(len(steps_a), len(steps_b))
        return BackwardOrder(same=False, first_difference=step,
                             a_event=steps_a[step][0] if step < len(steps_a) else None,
                             b_event=steps_b[step][0] if step < len(steps_b) else None,
                             a_steps=len(steps_a), b_steps=len(steps_b))
    return BackwardOrder(same=True, a_steps=len(steps_a), b_steps=len(steps_b))


def _first_divergence(a: _Doc, b: _Doc, b_of: dict[str, str], event_deltas: dict[int, tuple[int, _EventDeltas]],
                      floor: float, pairs: dict[str, NodePair], measure: Measure) -> Divergence | None:
    """NOTE [first divergence]."""
    found = _first_divergence_in(a, b, b_of, event_deltas, floor, pairs, measure)
    if found is None or found.a_event is None:
        return found
    iteration = _iteration(a, found.a_event)
    if iteration is None:
        return found
    pair = pairs[found.a]
    role = next((n.get("role") for n in a["graph"]["nodes"] if n["id"] == found.a), None)
    return found.model_copy(update={"sentence": divergence_sentence(found.phase, pair, found.what, found.delta,
                                                                    role, iteration)})


def _iteration(doc: _Doc, event: int) -> int | None:
    """Which iteration of a loop event ``event`` is in: 1 + the backward passes (not nested in
    another) that started before it, or that it is in; None for a run with fewer than two."""
    top = {int(p["index"]) for p in doc.get("passes") or [] if p.get("within") is None}
    if len(top) < 2:
        return None
    events = doc.get("events") or []
    if not 0 <= event < len(events):
        return None
    started = {e.get("pass") for e in events[:event] if e.get("phase") == "backward"} & top
    if events[event].get("phase") == "backward":  # in its own pass
        return len(started | ({events[event].get("pass")} & top)) or 1
    return len(started) + 1  # a forward event: before the next pass


def _first_divergence_in(a: _Doc, b: _Doc, b_of: dict[str, str], event_deltas: dict[int, tuple[int, _EventDeltas]],
                         floor: float, pairs: dict[str, NodePair], measure: Measure) -> Divergence | None:
    nodes_a = a["graph"]["nodes"]
    by_id_a = {n["id"]: n for n in nodes_a}
    by_id_b = {n["id"]: n for n in b["graph"]["nodes"]}
    events_a = a.get("events") or []
    events_b = b.get("events") or []
    forward_b = {e["node"]: k for k, e in enumerate(events_b) if e.get("phase") == "forward"}
    # Tensor values hang after the forward event of the function node made just before them.
    after: dict[str, list[_Doc]] = defaultdict(list)
    before_all: list[_Doc] = []
    last_function: str | None = None
    for node in nodes_a:
        if node["kind"] == "function":
            last_function = node["id"]
        elif node.get("value") is not None or node.get("shape") is not None:
            (after[last_function] if last_function else before_all).append(node)

    def forward_check(tensors: list[_Doc], a_event: int | None) -> Divergence | None:
        for node in tensors:
            pair = pairs.get(node["id"])
            if pair is None:
                continue
            what = "shape" if pair.shape_changed else "value" if pair.value and pair.value.beyond_tolerance else None
            if what:
                return _divergence("forward", pair, what, a_event, forward_b.get(_made_by(b, pair.b) or ""),
                                   pair.value, node.get("role"))
        return None

    if (found := forward_check(before_all, None)) is not None:
        return found
    for k, event in enumerate(events_a):
        node_id = event["node"]
        if event.get("phase") == "forward":
            pair = pairs.get(node_id)
            if pair is not None and pair.shape_changed:
                return _divergence("forward", pair, "shape", k, forward_b.get(pair.b), None)
            if pair is not None and by_id_a[node_id].get("output") and by_id_b[pair.b].get("output"):
                out = measure.many(by_id_a[node_id]["output"], by_id_b[pair.b]["output"])
                if out is not None and dl.beyond(out, floor):
                    return _divergence("forward", pair, "value", k, forward_b.get(pair.b),
                                       TensorDelta.model_validate(_judged(out, floor)))
            if (found := forward_check(after.get(node_id, []), k)) is not None:
                return found
            continue
        if k not in event_deltas or node_id not in pairs:
            continue
        b_event, (produced, accumulated) = event_deltas[k]
        received = measure.many(event.get("grad_outputs"), events_b[b_event].get("grad_outputs"))
        if produced is not None and not produced.exact:
            produced = measure.many(event.get("grad_inputs"), events_b[b_event].get("grad_inputs"))
        for what, delta in (("grad_outputs", received), ("grad_inputs", produced), ("grad", accumulated)):
            if delta is not None and dl.beyond(delta, floor):
                return _divergence("backward", pairs[node_id], what, k, b_event,
                                   TensorDelta.model_validate(_judged(delta, floor)))
    return None


def _made_by(doc: _Doc, tensor_id: str) -> str | None:
    """The function node made just before a tensor node (where the page shows its value)."""
    last = None
    for node in doc["graph"]["nodes"]:
        if node["id"] == tensor_id:
            return last
        if node["kind"] == "function":
            last = node["id"]
    return None


def _divergence(phase: Any, pair: NodePair, what: Any, a_event: int | None, b_event: int | None,
                delta: TensorDelta | None, role: str | None = None) -> Divergence:
    return Divergence(phase=phase, a=pair.a, b=pair.b, name=pair.name, line_a=pair.line_a, line_b=pair.line_b,
                      what=what, a_event=a_event, b_event=b_event, delta=delta,
                      sentence=divergence_sentence(phase, pair, what, delta, role))
