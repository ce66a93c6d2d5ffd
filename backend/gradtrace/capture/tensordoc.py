"""The document's side of the tensor file: which TensorValue holds which kept tensor (its
``key``), function nodes' ``output``, leaves' ``value_end``, and the ``tensors`` field
(docs/CONTRACT.md, "The tensor file"; NOTE [kept tensors] in tensorfile.py).

The keys are spliced into the graph and events after the kernels wrote them, without parsing
them (NOTE [keys spliced into the core's JSON] in keysplice.py), the same way for both kernel
sets, so both give the same document and the same file. On the core's kernels the candidates,
the choice, the file, its index and the splices are the core's ``KeptFile`` (NOTE [the kept
file in one place] in ``cxx/keptfile.h``); the Python twin makes ``Candidate`` rows for
``tensorfile.build``.
"""

from __future__ import annotations

from typing import Any

import orjson
import torch

from gradtrace.analysis.kept import saved_key
from gradtrace.capture import native as _native
from gradtrace.capture.candidates import FORWARD, LEAF, NONFINITE, Candidate, candidate, storable
from gradtrace.capture.keysplice import GraphText, keyed, nonfinite, spliced
from gradtrace.capture.outputs import Kept, NativeTap
from gradtrace.capture.pycore import KEPT_TRANSFORM
from gradtrace.capture.recorder import Recorder
from gradtrace.capture.tensorfile import LEFT_OUT_LISTED, FileTensors, TensorFile, build, file_info
from gradtrace.capture.values import encode
from gradtrace.schema.canonical import CanonicalText, TensorValueDict, canonical_json


def _version(t: torch.Tensor) -> int:
    try:
        return int(t._version)
    except RuntimeError:  # an inference tensor
        return -1


Slot = dict[str, Any] | tuple[list[bytes | None], int] | None
"""Where a key goes: a TensorValue dict of Python's, an output's TensorValue text on the
Python twin (its list and place), or nowhere
(a saved tensor: NOTE [saved tensors from no node] in saved.py). The events' keys go at the
offsets of their rows (``_events``)."""


class _Collect:
    """The candidates for the file, and where each one's ``key`` goes (``Slot``; the events'
    keys at offsets in the core's events text: NOTE [keys spliced into the core's JSON])."""

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.cands: list[Candidate] = []
        self.file: Any = None
        """On the core's kernels, the core's ``KeptFile`` that takes every candidate instead of
        ``cands`` (NOTE [the kept file in one place] in ``cxx/keptfile.h``)."""
        if _native.core is not None and _native.is_native(rec.core):
            self.file = _native.core.KeptFile()
        self.slots: dict[str, Slot] = {}
        self._seen: dict[int, tuple[torch.Tensor | None, int, str | None]] = {}

    def add(self, key: str, tv: Slot | None, t: torch.Tensor | None, rank: int,
            reason: str | None = None, *, placed: bool = True) -> None:
        """``placed``: whether the document has a TensorValue for it (``tv``)."""
        if tv is None and placed:
            return
        self.put(candidate(key, t, rank, reason=reason))
        self.slots[key] = tv

    def put(self, c: Candidate) -> None:
        if self.file is not None:
            self.file.add(c.key, c.tensor, c.nbytes, c.rank, c.reason)
        else:
            self.cands.append(c)

    def handle(self, key: str, tv: Slot | None, handle: Any, rank: int) -> None:
        """A value the core captured (a value id), with its kept tensor. A gradient is met
        twice as a rule (one node's grad_input, the next one's grad_output): what its value
        id holds is looked at once."""
        if tv is None or not isinstance(handle, int) or handle < 0:
            return
        seen = self._seen.get(handle)
        if seen is None:
            t, version, copied, dropped = self.rec.core.kept(handle)
            if t is None and dropped > 0:  # NOTE [held within the budget] in tensorfile.py
                seen = (None, dropped, "budget")
            elif t is None and dropped == KEPT_TRANSFORM:
                seen = (None, 0, "transform")
            else:
                changed = t is not None and not copied and _version(t) != version
                c = candidate(key, t, rank, reason="changed" if changed else None)
                seen = (c.tensor, c.nbytes, c.reason)
            self._seen[handle] = seen
        self.put(Candidate(key, seen[0], seen[1], rank, seen[2]))
        self.slots[key] = tv


def _own(holder: dict[str, Any] | list[Any], at: Any) -> dict[str, Any] | None:
    """``holder[at]``, a TensorValue of Python's, as a dict of its own (a resolved value may be
    shared: only this place gets the key)."""
    tv = holder[at]  # type: ignore[index]
    if tv is None:
        return None
    own = TensorValueDict(tv)
    native = getattr(tv, "native", None)
    if native is not None:
        own.native = native
    holder[at] = own  # type: ignore[index]
    return own


def _tensor_nodes(c: _Collect, graph: GraphText) -> None:
    for t, src in c.rec.tensors.values():
        node = graph.node(src["id"])
        if node is None:
            continue
        nid = node["id"]
        leaf = src.get("role") == "leaf"
        c.handle(f"{nid}.value", _own(node, "value"), src.get("value"), LEAF if leaf else FORWARD)
        for h, handle in enumerate(src.get("grad_history", [])):
            c.handle(f"{nid}.gh{h}", _own(node["grad_history"], h), handle, LEAF)
        for j, edit in enumerate(src.get("grad_edits", [])):
            node["grad_edits"][j] = dict(node["grad_edits"][j])
            c.handle(f"{nid}.ge{j}", _own(node["grad_edits"][j], "value"), edit["value"], LEAF)
        if leaf:
            why = storable(t)
            with torch._C.DisableTorchFunction(), torch.no_grad():
                end = t.detach() if why is None else t  # the run is over: an alias, copied into the file
                tv = TensorValueDict(encode(end, with_values=False))
            node["value_end"] = tv
            c.add(f"{nid}.end", tv, end, LEAF, why)


def _events(c: _Collect, text: bytes, acc: set[str]) -> tuple[list[tuple[Any, ...]], int]:
    """Every backward value's candidate, from the core in one call (NOTE [the tensor file's
    side in bulk] in ``cxx/stats.h``); the rows and the first event whose gradient in or out
    is not finite (-1: none). Into the core's ``KeptFile`` where there is one (no rows back)."""
    if c.file is not None:
        return [], c.rec.core.kept_events(c.file, [int(nid[1:]) for nid in acc])
    rows, first = c.rec.core.event_candidates(text, [int(nid[1:]) for nid in acc])
    c.cands.extend([Candidate(key, t, nbytes, rank, why) for key, _, t, nbytes, rank, why in rows])
    return rows, first


class _Output:
    """A function node's ``output`` on the Python twin: each TensorValue's canonical JSON (None
    for none), keyed where the file holds it."""

    __slots__ = ("nid", "texts")

    def __init__(self, nid: str, n: int) -> None:
        self.nid = nid
        self.texts: list[bytes | None] = [None] * n

    def json(self) -> bytes:
        return b"[" + b",".join(b"null" if t is None else t for t in self.texts) + b"]"

    def finite(self) -> bool:
        return not any(nonfinite(t) for t in self.texts if t is not None)


def _file_outputs(c: _Collect) -> None:
    """The C++ tap's outputs into the core's ``KeptFile`` (NOTE [the kept file in one place] in
    ``cxx/keptfile.h``): their stats, rows, texts and keys made and kept there in one call (the
    tap keeps holding them: a document may be built again), only function nodes' (their kinds
    found there: NOTE [the graph's nodes found once])."""
    _, odd = c.rec.core.kept_outputs(c.file)
    for at, k, t in odd:  # a TensorValue only Python's encoder writes
        c.file.set_text(at, k, canonical_json(TensorValueDict(encode(t, with_values=False))))
    other = c.file.not_functions()
    if other:  # as a rule none: every node the tap holds outputs of is a function node
        c.file.drop_nodes(other)


def _outputs(c: _Collect, graph: GraphText) -> list[_Output]:
    tap = c.rec.outputs
    if tap is None:
        return []
    if isinstance(tap, NativeTap):  # the core's tap goes with the core's file
        raise RuntimeError("tensor keys: the C++ tap's outputs without the core's file")
    tap.settle()
    core = c.rec.core
    found: list[tuple[int, str, dict[int, Any]]] = []
    for g, slots in tap.by_node.items():
        index = core.index_of(g)
        nid = f"n{index}"
        if index >= 0 and graph.kind.get(nid) == "function":
            found.append((index, nid, slots))
    found.sort(key=lambda f: f[0])
    out: list[_Output] = []
    held: list[tuple[_Output, int, Kept]] = []
    for _, nid, slots in found:
        n_out = graph.n_outputs(nid)
        output = _Output(nid, n_out)
        for k in range(n_out):
            kept = slots.get(k)
            if kept is None or isinstance(kept, int):
                if isinstance(kept, int):
                    c.put(Candidate(f"{nid}.out{k}", None, kept, FORWARD, "budget"))
                continue
            held.append((output, k, kept))
            c.add(f"{nid}.out{k}", (output.texts, k), kept.tensor, FORWARD, None if kept.intact() else "changed")
        if held and held[-1][0] is output:
            out.append(output)
    # NOTE [the tensor file's side in bulk] in cxx/stats.h: the stats in one call
    texts = core.stats_json([kept.tensor for _, _, kept in held])
    for (output, k, kept), text in zip(held, texts, strict=True):  # odd tensors: Python's encoder
        output.texts[k] = bytes(text) if text else canonical_json(TensorValueDict(encode(kept.tensor,
                                                                                         with_values=False)))
    return out


WORKSPACE = "result3"
"""NOTE [a kernel's workspace]
    The fused RNN kernels save scratch bytes for their backward: ``mkldnn_rnn_layer``'s
    ``workspace`` and ``_cudnn_rnn``'s / ``miopen_rnn``'s ``reserve``, each the op's fourth
    result (``result3``, uint8). They are no number of the program, and the kernel leaves part
    of them unwritten, so keeping them would make two runs of the same LSTM write different
    files (and document ids) for nothing a person can read. CTC's ``log_alpha`` (``_ctc_loss``'s
    second result, ``result1`` of ``CtcLossBackward0/1``) is the same kind of buffer: the CPU
    kernel fills each sample's first ``input_length`` steps and ``2 · target_length + 1``
    states and leaves the rest of it as ``empty`` made it, so neither its value nor the tensor
    is kept (``PARTLY_WRITTEN`` in saved.py, read where the saved tensors are). Both stay in the
    document's saved entries (name, bytes), and neither is written to the tensor file
    (tests/analysis/test_standard_practice.py records every program of the corpus twice)."""


def _saved(c: _Collect) -> None:
    """NOTE [saved tensors from no node] in saved.py: ``n{id}.s{name}``, with no place in the
    document. A kernel's scratch is not written (NOTE [a kernel's workspace])."""
    for index, name, t, version, dropped in c.rec.core.saved_kept():
        if name == WORKSPACE and t is not None and t.dtype == torch.uint8:
            continue
        key = saved_key(f"n{index}", name)
        if t is None:  # past its cap while recording
            c.put(Candidate(key, None, dropped, FORWARD, "budget"))
            c.slots[key] = None
            continue
        c.add(key, None, t, FORWARD, "changed" if _version(t) != version else None, placed=False)


def _first_output(outputs: list[_Output]) -> tuple[str, int] | None:
    """The first function node (creation order) with an output that is not finite, and how
    many outputs it has."""
    texts = [t for o in outputs for t in o.texts if t is not None]
    # one find over all of them first: as a rule every output is finite
    first = next((o for o in outputs if not o.finite()), None) if nonfinite(b"\0".join(texts)) else None
    return None if first is None else (first.nid, len(first.texts))


def _first_nonfinite(graph: GraphText, first: tuple[str, int] | None,
                     first_event: int) -> tuple[set[str], tuple[str, ...]]:
    """NOTE [what the budget keeps first]: the keys on the path to the first non-finite value:
    the first function node (in creation order) whose output is not finite, with its inputs'
    values; and the openings of the keys of the first backward event's gradients in and out
    when one is not finite."""
    keys: set[str] = set()
    if first is not None:
        nid, n = first
        keys.update(f"{nid}.out{k}" for k in range(n))
        for source in graph.sources_of(nid):
            keys.update((f"{source}.value", f"{source}.out0"))
    flows = (f"e{first_event}.go", f"e{first_event}.gi") if first_event >= 0 else ()
    return keys, flows


def attach(rec: Recorder, doc: dict[str, Any], budget: int,
           nodes: list[dict[str, Any] | None]) -> TensorFile:
    """Key the document's TensorValues, add ``output`` / ``value_end`` and ``tensors``, and
    build the file. ``nodes``: the graph's nodes as the document wrote them (None for the
    core's); the keys are spliced into the core's JSON (NOTE [keys spliced into the core's
    JSON] in keysplice.py)."""
    made = _made_before(rec, doc)  # NOTE [each tensor let go once written] in tensorfile.py
    if made is not None:
        return made
    mark = _mark(doc)
    events = _text(doc["events"])
    c = _Collect(rec)
    graph_text = _text(doc["graph"])
    # NOTE [the graph's nodes found once] in cxx/keptfile.h
    graph = GraphText(graph_text, nodes, None if c.file is None else c.file.index_graph(graph_text))
    with torch._C.DisableTorchFunction():
        _tensor_nodes(c, graph)
        rows, first_event = _events(c, events, graph.acc)
        in_file = c.file is not None
        outputs = [] if in_file else _outputs(c, graph)
        if in_file:
            _file_outputs(c)
        _saved(c)
        if in_file:
            found = c.file.first_nonfinite_output()
            first = None if found is None else (f"n{found[0]}", found[1])
        else:
            first = _first_output(outputs)
        path, flows = _first_nonfinite(graph, first, first_event)
        if c.file is not None:  # NOTE [the kept file in one place] in cxx/keptfile.h
            if path or flows:
                c.file.promote(sorted(path), list(flows), NONFINITE)
            data, left, count, n_out, out_bytes = c.file.build(budget, lambda: _release(c), LEFT_OUT_LISTED)
            tf = TensorFile(FileTensors(data, c.file), file_info(data, budget, count, left, n_out, out_bytes), data)
        else:
            if path or flows:
                for cand in c.cands:
                    if (cand.key in path or cand.key.startswith(flows)) and cand.rank > NONFINITE:
                        cand.rank = NONFINITE
            tf = build(c.cands, budget, release=lambda: _release(c))
    kept = getattr(tf.tensors, "index", tf.tensors)  # the index's lookups (NOTE [the index the writer knows])
    if c.file is not None:  # the C++ core's: one pass there
        doc_events = c.file.splice_events(events)
    else:
        doc_events = spliced(events, [(at, at, b'"key":"' + key.encode() + b'",') for key, at, *_ in rows
                                      if key in kept])
    for key, slot in c.slots.items():  # the events' are in ``rows``
        if slot is None or key not in kept:
            continue
        if isinstance(slot, dict):
            native = getattr(slot, "native", None)
            if native is not None:  # the core's JSON for it (NOTE [canonical JSON with orjson])
                slot.native = keyed(native, key)  # type: ignore[attr-defined]
            else:
                slot["key"] = key
        else:
            texts, k = slot
            text = texts[k]
            assert text is not None
            texts[k] = keyed(text, key)
    inserts: list[tuple[int, bytes]] = []
    for o in outputs:
        at = graph.pos[o.nid]
        own = graph.own[at]
        if own is None:
            inserts.append((graph.output_at(o.nid), b',"output":' + o.json()))
        else:
            own["output"] = [None if t is None else TensorValueDict(orjson.loads(t)) for t in o.texts]
            graph.touched.add(at)
    if in_file:  # NOTE [the kept file in one place]: the outputs' texts are the file's
        doc["graph"] = CanonicalText(_file_graph(c, graph))
    else:
        doc["graph"] = CanonicalText(graph.rewritten(inserts, canonical_json))
    doc["events"] = CanonicalText(doc_events)
    doc["tensors"] = tf.info
    tf.made = (mark, doc["graph"], doc["events"])
    return tf


def _file_graph(c: _Collect, graph: GraphText) -> bytes:
    """The graph with each function node's ``output`` from the core's ``KeptFile``: spliced
    into the core's nodes there (each found where ``index_graph`` found it), set in Python's own
    nodes' dicts (written again)."""
    own = graph.own
    for at, k in c.file.own_outputs(graph.own_at):  # as a rule none: Python's own nodes are leaves and roots
        node = own[k]
        assert node is not None
        node["output"] = [None if t is None else TensorValueDict(orjson.loads(t)) for t in c.file.output_texts(at)]
        graph.touched.add(k)
    return bytes(c.file.splice_graph(graph.text, graph.own_edits(canonical_json), graph.own_at))


def _release(c: _Collect) -> None:
    """Every holder of the kept tensors but the file's candidates lets go (NOTE [each tensor let
    go once written] in tensorfile.py)."""
    c._seen.clear()
    c.rec.core.release_kept()
    if c.rec.outputs is not None:
        c.rec.outputs.release()


def _text(text: Any) -> bytes:
    """The core's JSON as bytes: itself where it is already (``CanonicalText``: ``bytes()`` of
    it would copy megabytes)."""
    return text if isinstance(text, bytes) else bytes(text)


def _mark(doc: dict[str, Any]) -> tuple[int, int, int, int]:
    g, e = _text(doc["graph"]), _text(doc["events"])
    return len(g), hash(g), len(e), hash(e)


def _made_before(rec: Recorder, doc: dict[str, Any]) -> TensorFile | None:
    """The file already made for this document (a second ``rec.document()``): the tensors were
    let go once written, so the keyed parts made then are reused; None when there is none."""
    tf = rec.tensor_file
    if tf is None or tf.made is None or tf.made[0] != _mark(doc):
        return None
    _, doc["graph"], doc["events"] = tf.made
    doc["tensors"] = tf.info
    return tf
