"""Where the tensor file's keys go in the core's JSON, found without parsing it.

NOTE [keys spliced into the core's JSON]
    The events and the function nodes are the core's canonical JSON (both kernel sets write the
    same bytes). Parsing megabytes of it to add a few keys and writing it all again cost more
    than keeping the tensors, so the keys are spliced in at byte offsets instead:
    * in the events every ``{"dtype":"…",`` opens a TensorValue (``dtype`` is its first key, and
      no event holds free text), in the order ``cxx/events.h`` writes them: ``grad``,
      ``grad_inputs``, ``grad_outputs``, then each hook change's ``after`` and ``before``; a value
      id of -1 is ``null``. So the n-th opening is the n-th value of ``event_refs`` that is not
      -1, and a ``key`` (the next key in sorted order) goes right after it. The C++ core notes
      each of those offsets as it writes the events (``events_json``), and keeps them with
      every value's candidate row (NOTE [the kept file in one place] in ``cxx/keptfile.h``);
      its Python twin finds them here (``EventsText``);
    * in the graph each node opens with ``{"created_in_pass":`` and names itself by
      ``,"id":"n…","kind":"`` (no nested object has those keys); a function node's ``output``
      goes right before its ``,"outputs":`` or, without one, its ``,"role":``. Python's own
      nodes (leaves, roots) are few: they are written again from their dicts. On the core's
      kernels the outputs are written in by one C++ pass (NOTE [outputs spliced in one pass]
      in ``cxx/keptfile.h``); the twin's by ``GraphText.rewritten``: the same bytes.
    A count that differs from what the core recorded is an error (the run then has no tensor
    file and a recorder error), never a guess.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

import orjson

_TV = re.compile(rb'\{"dtype":"[^"]*",')
_NONFINITE = re.compile(rb'"norm":"')
"""A TensorValue whose norm is not finite (written as a string: ``"nan"``, ``"inf"``)."""
_EVENT_NODE = re.compile(rb',"node":"(n[0-9]+)","pass":')
_NODE = re.compile(rb'\{"created_in_pass":')
_ID = re.compile(rb',"id":"(n[0-9]+)","kind":"([a-z]+)"')
_ACC = re.compile(rb',"name":"AccumulateGrad",')

Refs = list[tuple[int, list[int], list[int], int, list[int]]]


def keyed(tv: bytes, key: str) -> bytes:
    """A TensorValue's canonical JSON with its ``key``."""
    at = tv.find(b'",', 10) + 2 if tv.startswith(b'{"dtype":"') else 1  # ``_TV``'s end, found plainly
    if at < 12 or b'"' in tv[10:at - 2]:
        raise RuntimeError("tensor keys: a TensorValue that does not open with its dtype")
    return b"".join((tv[:at], b'"key":"', key.encode(), b'",', tv[at:]))


def nonfinite(tv: bytes) -> bool:
    return b'"norm":"' in tv  # ``_NONFINITE``: a plain find costs less than the regex


def spliced(text: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    """``text`` with each ``(start, end, data)`` of ``edits`` (not overlapping) in place."""
    if not edits:
        return text
    edits.sort(key=lambda e: e[0])
    view = memoryview(text)
    parts: list[Any] = []
    at = 0
    for a, b, data in edits:
        parts += (view[at:a], data)
        at = b
    parts.append(view[at:])
    return b"".join(parts)


class EventsText:
    """The events' JSON and the offset where each backward value's ``key`` goes."""

    def __init__(self, text: bytes, refs: Refs) -> None:
        self.text = text
        self.starts = [m.end() for m in _TV.finditer(text)]
        self.node = [m.group(1).decode() for m in _EVENT_NODE.finditer(text)]
        """Each event's node id, by event index."""
        self.owner: list[tuple[int, bool]] = []  # per TensorValue: (event index, a gradient in or out?)
        self.at: dict[tuple[int, str], int] = {}
        for i, go, gi, grad, hc in refs:
            order = [("grad", grad, False)]
            order += [(f"gi{k}", v, True) for k, v in enumerate(gi)]
            order += [(f"go{k}", v, True) for k, v in enumerate(go)]
            for k in range(len(hc) // 2):
                order += [(f"ha{k}", hc[2 * k + 1], False), (f"hb{k}", hc[2 * k], False)]
            for name, vid, flows in order:
                if vid >= 0:
                    n = len(self.owner)
                    self.at[(i, name)] = self.starts[n] if n < len(self.starts) else -1
                    self.owner.append((i, flows))
        if len(self.owner) != len(self.starts):
            raise RuntimeError(f"tensor keys: the events hold {len(self.starts)} TensorValues where "
                               f"the core recorded {len(self.owner)}")

    def slot(self, i: int, name: str) -> int | None:
        return self.at.get((i, name))

    def first_nonfinite(self) -> int | None:
        """The index of the first backward event with a gradient in or out that is not finite."""
        for m in _NONFINITE.finditer(self.text):
            n = bisect.bisect_right(self.starts, m.start()) - 1
            if n >= 0 and self.owner[n][1]:
                return self.owner[n][0]
        return None


GraphIndex = tuple[int, list[int], list[str], list[str], list[int]]
"""Where a graph's nodes are: where they open (past ``],"nodes":[``), each node's start, id and
kind, and where each ``,"name":"AccumulateGrad",`` is (``_scan``; on the core's kernels
``KeptFile.index_graph``: NOTE [the graph's nodes found once] in ``cxx/keptfile.h``)."""


def _scan(text: bytes) -> GraphIndex:
    nodes_at = text.index(b'],"nodes":[') + 11
    found = _ID.findall(text, nodes_at)
    return (nodes_at, [m.start() for m in _NODE.finditer(text, nodes_at)], [nid.decode() for nid, _ in found],
            [kind.decode() for _, kind in found], [m.start() for m in _ACC.finditer(text, nodes_at)])


class GraphText:
    """The graph's JSON: each node's span, Python's nodes by their dicts, the core's read on demand."""

    def __init__(self, text: bytes, nodes: list[dict[str, Any] | None], index: GraphIndex | None = None) -> None:
        """``index``: ``text``'s, found by the core (else here, ``_scan``)."""
        self.text = text
        self.nodes_at, self.starts, ids, kinds, acc = _scan(text) if index is None else index
        self.kind = dict(zip(ids, kinds, strict=True))
        if len(self.starts) != len(nodes) or len(ids) != len(nodes):
            raise RuntimeError(f"tensor keys: the graph holds {len(self.starts)} nodes where "
                               f"{len(nodes)} were written")
        self.ends = [s - 1 for s in self.starts[1:]] + [len(text) - 2]
        self.pos = dict(zip(ids, range(len(ids)), strict=True))
        self.own = nodes
        self.own_at = [k for k, node in enumerate(nodes) if node is not None]
        """The places of Python's own nodes."""
        self._read: dict[int, dict[str, Any]] = {}
        self.touched: set[int] = set()
        self.acc = {ids[bisect.bisect_right(self.starts, at) - 1] for at in acc}

    def node(self, nid: str) -> dict[str, Any] | None:
        """Node ``nid`` as a dict: Python's own (written again, changed or not), or the core's
        parsed (read only)."""
        k = self.pos.get(nid)
        if k is None:
            return None
        own = self.own[k]
        if own is not None:
            self.touched.add(k)
            return own
        if k not in self._read:
            self._read[k] = orjson.loads(self.text[self.starts[k]:self.ends[k]])
        return self._read[k]

    def n_outputs(self, nid: str) -> int:
        """How many outputs node ``nid`` has (``outputs`` is written only for more than one)."""
        k = self.pos[nid]
        own = self.own[k]
        if own is None and self.text.find(b',"outputs":', self.starts[k], self.ends[k]) < 0:
            return 1
        node = self.node(nid)
        return len(node["outputs"]) if node is not None and node.get("outputs") else 1

    def output_at(self, nid: str) -> int:
        """Where a core node's ``,"output":`` goes."""
        k = self.pos[nid]
        a, b = self.starts[k], self.ends[k]
        at = self.text.find(b',"outputs":', a, b)
        at = at if at >= 0 else self.text.find(b',"role":', a, b)
        if at < 0:
            raise RuntimeError(f"tensor keys: node {nid} has no place for its output")
        return at

    def sources_of(self, nid: str) -> list[str]:
        """The sources of the edges into ``nid`` (only for the path to a non-finite value)."""
        pattern = re.compile(rb'\{[^{}]*"target":"' + nid.encode() + rb'"[^{}]*\}')
        return [orjson.loads(m.group(0))["source"] for m in pattern.finditer(self.text, 0, self.nodes_at)]

    def own_edits(self, write: Any) -> list[tuple[int, int, bytes]]:
        """Python's own nodes written again by ``write``, each as the span it replaces."""
        return [(self.starts[k], self.ends[k], write(self.own[k])) for k in self.touched]

    def rewritten(self, inserts: list[tuple[int, bytes]], write: Any) -> bytes:
        """The graph with ``inserts`` spliced in and Python's own nodes written again by ``write``."""
        edits = [(at, at, data) for at, data in inserts]
        edits += self.own_edits(write)
        return spliced(self.text, edits)
