"""The document's side of the tensor file: which TensorValue holds which kept tensor (its
``key``), function nodes' ``output``, leaves' ``value_end``, and the ``tensors`` field
(docs/CONTRACT.md, "The tensor file"; NOTE [kept tensors] in tensorfile.py).

The keys are added to the graph and events after the kernels wrote them, the same way for both
kernel sets, so both give the same document and the same file.
"""

from __future__ import annotations

from typing import Any

import orjson
import torch
from torch.autograd.function import BackwardCFunction

from gradtrace.capture.outputs import Kept
from gradtrace.capture.recorder import Recorder
from gradtrace.capture.tensorfile import (
    FORWARD,
    GRADIENT,
    LEAF,
    NONFINITE,
    Candidate,
    TensorFile,
    build,
    candidate,
    storable,
)
from gradtrace.capture.values import dtype_name, encode
from gradtrace.schema.canonical import CanonicalText, TensorValueDict, canonical_json


def _version(t: torch.Tensor) -> int:
    try:
        return int(t._version)
    except RuntimeError:  # an inference tensor
        return -1


class _Collect:
    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.cands: list[Candidate] = []
        self.slots: dict[str, dict[str, Any]] = {}

    def add(self, key: str, tv: dict[str, Any] | None, t: torch.Tensor | None, rank: int,
            reason: str | None = None) -> None:
        if tv is None:
            return
        self.cands.append(candidate(key, t, rank, reason=reason))
        self.slots[key] = tv

    def handle(self, key: str, tv: dict[str, Any] | None, handle: Any, rank: int) -> None:
        """A value the core captured (a value id), with its kept tensor."""
        if tv is None or not isinstance(handle, int) or handle < 0:
            return
        t, version, copied, dropped = self.rec.core.kept(handle)
        if t is None and dropped:  # NOTE [held within the budget] in tensorfile.py
            self.cands.append(Candidate(key, None, dropped, rank, "budget"))
            self.slots[key] = tv
            return
        reason = None
        if t is not None and not copied and _version(t) != version:
            reason = "changed"
        self.add(key, tv, t, rank, reason)


def _events(c: _Collect, events: list[dict[str, Any]], names: dict[str, str | None]) -> None:
    for i, go, gi, grad, hc in c.rec.core.event_refs():
        ev = events[i]
        acc = names.get(ev["node"]) == "AccumulateGrad"
        rank = LEAF if acc else GRADIENT
        for k, vid in enumerate(go):
            c.handle(f"e{i}.go{k}", ev["grad_outputs"][k], vid, rank)
        for k, vid in enumerate(gi):
            c.handle(f"e{i}.gi{k}", ev["grad_inputs"][k], vid, GRADIENT)
        c.handle(f"e{i}.grad", ev["grad"], grad, LEAF)
        for k in range(len(hc) // 2):
            change = ev["hook_changes"][k]
            c.handle(f"e{i}.hb{k}", change["before"], hc[2 * k], GRADIENT)
            c.handle(f"e{i}.ha{k}", change["after"], hc[2 * k + 1], GRADIENT)


def _tensor_nodes(c: _Collect, by_id: dict[str, dict[str, Any]]) -> None:
    for t, src in c.rec.tensors.values():
        node = by_id.get(src["id"])
        if node is None:
            continue
        nid = node["id"]
        leaf = src.get("role") == "leaf"
        c.handle(f"{nid}.value", node.get("value"), src.get("value"), LEAF if leaf else FORWARD)
        for h, handle in enumerate(src.get("grad_history", [])):
            c.handle(f"{nid}.gh{h}", node["grad_history"][h], handle, LEAF)
        for j, edit in enumerate(src.get("grad_edits", [])):
            c.handle(f"{nid}.ge{j}", node["grad_edits"][j]["value"], edit["value"], LEAF)
        if leaf:
            why = storable(t)
            with torch._C.DisableTorchFunction(), torch.no_grad():
                end = t.detach().clone() if why is None else t
                tv = TensorValueDict(encode(end, with_values=False))
            node["value_end"] = tv
            c.add(f"{nid}.end", tv, end, LEAF, why)


def _by_seq(c: _Collect, by_id: dict[str, dict[str, Any]], matched: set[str],
            found: list[tuple[int, dict[str, Any], dict[int, Any]]]) -> None:
    """Nodes whose outputs the tap knows by sequence number only (views): matched where the
    node is no custom Function's (its own forward's first op follows it) and the output's
    shape and dtype are the node's."""
    by_seq = c.rec.outputs.by_seq if c.rec.outputs is not None else {}
    if not by_seq:
        return
    for fid, info in c.rec.fn_by_id.items():
        node = by_id.get(fid)
        if node is None or fid in matched or isinstance(info.node, BackwardCFunction):
            continue
        slots = by_seq.get(int(info.node._sequence_nr()))
        first = slots.get(0) if slots else None
        if slots is None or first is None:
            continue
        if isinstance(first, Kept) and (list(first.tensor.shape) != node.get("shape")
                                        or dtype_name(first.tensor.dtype) != node.get("dtype")):
            continue
        found.append((int(fid[1:]), node, slots))


def _outputs(c: _Collect, by_id: dict[str, dict[str, Any]]) -> None:
    tap = c.rec.outputs
    if tap is None:
        return
    tap.settle()
    core = c.rec.core
    found: list[tuple[int, dict[str, Any], dict[int, Any]]] = []
    for g, slots in tap.by_node.items():
        index = core.index_of(g)
        node = by_id.get(f"n{index}") if index >= 0 else None
        if node is not None and node["kind"] == "function":
            found.append((index, node, slots))
    _by_seq(c, by_id, {node["id"] for _, node, _ in found}, found)
    found.sort(key=lambda f: f[0])
    for _, node, slots in found:
        n_out = len(node["outputs"]) if node.get("outputs") else 1
        output: list[dict[str, Any] | None] = []
        for k in range(n_out):
            kept = slots.get(k)
            if kept is None or isinstance(kept, int):
                output.append(None)
                if isinstance(kept, int):
                    c.cands.append(Candidate(f"{node['id']}.out{k}", None, kept, FORWARD, "budget"))
                continue
            t = kept.tensor
            text = core.value(core.capture(t), False)[0]  # odd tensors: Python's encoder
            tv = TensorValueDict(orjson.loads(text)) if text else TensorValueDict(encode(t, with_values=False))
            output.append(tv)
            c.add(f"{node['id']}.out{k}", tv, t, FORWARD, None if kept.intact() else "changed")
        if any(o is not None for o in output):
            node["output"] = output


def _finite(tv: dict[str, Any] | None) -> bool:
    stats = tv.get("stats") if tv else None
    norm = stats.get("norm") if isinstance(stats, dict) else None
    return not isinstance(norm, str) and (norm is None or norm - norm == 0)


def _first_nonfinite(graph: dict[str, Any], events: list[dict[str, Any]]) -> set[str]:
    """NOTE [what the budget keeps first]: the keys on the path to the first non-finite value:
    the first function node (in creation order) whose output is not finite, with its inputs'
    values, and the first backward event with a gradient that is not finite."""
    keys: set[str] = set()
    nodes = sorted((n for n in graph["nodes"] if n.get("output")), key=lambda n: int(n["id"][1:]))
    first = next((n for n in nodes if not all(_finite(o) for o in n["output"])), None)
    if first is not None:
        keys.update(f"{first['id']}.out{k}" for k in range(len(first["output"])))
        for e in graph.get("edges", []):
            if e.get("target") == first["id"]:
                keys.update((f"{e['source']}.value", f"{e['source']}.out0"))
    for i, ev in enumerate(events):
        go, gi = ev.get("grad_outputs") or [], ev.get("grad_inputs") or []
        if not all(_finite(v) for v in (*go, *gi)):
            keys.update(f"e{i}.go{k}" for k in range(len(go)))
            keys.update(f"e{i}.gi{k}" for k in range(len(gi)))
            break
    return keys


_TV_KEYS = frozenset(("shape", "dtype", "values", "stats", "stale", "layout", "nonzero", "key"))


def _marked(o: Any) -> Any:
    """``o`` (parsed canonical JSON) with its TensorValues as ``TensorValueDict``.

    NOTE [re-writing the graph without re-spelling it]: the canonical writer re-spells the
    floats of plain dicts by searching the whole text, strings skipped (slow on megabytes of
    graph); those of a ``TensorValueDict`` in one pass over the TensorValues alone (NOTE
    [canonical JSON with orjson] in schema/canonical.py). A dict is marked only when it has
    a TensorValue's keys and no free text (``note``); the bytes are the same either way."""
    if isinstance(o, dict):
        if "dtype" in o and "shape" in o and o.keys() <= _TV_KEYS:
            return TensorValueDict(o)
        for k, v in o.items():
            if isinstance(v, dict | list):
                o[k] = _marked(v)
    elif isinstance(o, list):
        for i, v in enumerate(o):
            if isinstance(v, dict | list):
                o[i] = _marked(v)
    return o


def attach(rec: Recorder, doc: dict[str, Any], budget: int) -> TensorFile:
    """Key the document's TensorValues, add ``output`` / ``value_end`` and ``tensors``, and
    build the file (``doc``'s graph and events are rewritten as canonical JSON)."""
    graph = _marked(orjson.loads(memoryview(doc["graph"])))
    events = _marked(orjson.loads(memoryview(doc["events"])))
    by_id = {n["id"]: n for n in graph["nodes"]}
    names = {n["id"]: n.get("name") for n in graph["nodes"]}
    c = _Collect(rec)
    with torch._C.DisableTorchFunction():
        _tensor_nodes(c, by_id)
        _events(c, events, names)
        _outputs(c, by_id)
        path = _first_nonfinite(graph, events)
        for cand in c.cands:
            if cand.key in path and cand.rank > NONFINITE:
                cand.rank = NONFINITE
        tf = build(c.cands, budget)
    for key in tf.tensors:
        c.slots[key]["key"] = key
    doc["graph"] = CanonicalText(canonical_json(graph))
    doc["events"] = CanonicalText(canonical_json(events))
    doc["tensors"] = tf.info
    return tf
