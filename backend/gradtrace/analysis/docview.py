"""Reading a run document as plain JSON dicts: what every analysis needs, written once.

The analysis reads the document as the schema writes it (``model_dump(mode="json",
by_alias=True)``): TensorValues are dicts whose numbers may be the strings ``"nan"``,
``"inf"`` and ``"-inf"`` (NOTE [encoding of awkward values] in gradtrace/schema/document.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from functools import cached_property
from types import GenericAlias
from typing import Any, TypedDict

import msgspec
from pydantic import BaseModel

from gradtrace.analysis.numbers import flat
from gradtrace.schema.document import Graph, Node, SavedTensor

Doc = Mapping[str, Any]
TV = Mapping[str, Any]


# NOTE [events without their values]: every analysis but the non-finite one reads the backward
# events alone, and of each only its node, pass and phase (and its place among all events). When
# the events' canonical JSON holds no NaN or infinity they are decoded (msgspec) into those three
# fields alone: the megabytes of gradients in between are skipped without building a dict or a
# float (on a GRU unrolled 200 steps, about 3.5 ms, against 12 to parse them whole and 4.5 to
# find each backward event's tail by a byte search).
_Skeleton = TypedDict("_Skeleton", {"node": Any, "pass": Any, "phase": Any}, total=False)
_SKELETONS = msgspec.json.Decoder(list[_Skeleton])


class BackwardEvents(list[tuple[int, Mapping[str, Any]]]):
    """The backward events of a run as ``(index among all events, {"node", "pass", "phase"})``:
    what :func:`backward_skeletons` finds, and what a :class:`DocView` reads in place of the
    full events (``doc["events"]``)."""

    __slots__ = ()


def may_hold_nonfinite(*texts: bytes) -> bool:
    """Whether canonical JSON ``texts`` may hold a NaN or an infinity (the strings ``"nan"``,
    ``"inf"``, ``"-inf"``); False proves they hold none. Searched where they lie (a bytes
    subclass is not copied)."""
    return any(t.find(b'"nan"') >= 0 or t.find(b'inf"') >= 0 for t in texts)


def backward_skeletons(text: bytes) -> BackwardEvents | None:
    """The backward events of canonical events JSON ``text``, each as ``{"node", "pass",
    "phase"}`` with its index among all the events (NOTE [events without their values]), or
    None when ``text`` is not a list of events (the caller then parses it whole)."""
    try:
        events = _SKELETONS.decode(text)
    except msgspec.DecodeError:  # ValidationError is one
        return None
    out = BackwardEvents()
    out.extend((i, ev) for i, ev in enumerate(events) if ev.get("phase") == "backward")
    return out


# NOTE [a finite graph without its values]
#     Of a graph whose canonical JSON holds no NaN or infinity (``may_hold_nonfinite``:
#     ``DocView.graph_finite``), the analysis reads no function node's ``output`` but each
#     output's ``key`` (the activation layers' shares read the tensor file by it:
#     analysis/dynamics/layers.py), and no saved tensor's ``value``. The outputs' stats are
#     read only by the forward search for a non-finite value (analysis/nonfinite/forward.py,
#     analysis/nonfinite/first.py), which returns before it reads a finite graph. So such a
#     graph is decoded into the dicts ``orjson.loads`` gives, less those values
#     (:func:`graph_without_values`): msgspec skips them without building them. On a GRU
#     unrolled 200 steps whose 3,200 outputs carry the tensor file's stats and keys, a third
#     less than parsing the whole graph (about 11 ms instead of 17), and the smaller dicts are
#     walked and freed faster.
#     The dicts hold every field the schema's models name (derived from them, so a field added
#     to a model is read at once); a check that starts reading an output's stats or a saved
#     tensor's value on a finite graph must widen ``_LEAN_NODE`` below.
#     ``tests/analysis/test_backward_skeletons.py`` holds the analysis to the one of the whole
#     parsed document, with and without the tensor file's stats and keys.
_TypedDict: Any = TypedDict  # called with fields derived from the models (mypy wants literals)


def _fields_of(model: type[BaseModel], name: str, dropped: tuple[str, ...] = (), **narrowed: Any) -> Any:
    """A TypedDict of the JSON keys of ``model`` (any JSON each), less ``dropped``, with the
    types of ``narrowed`` (keys named as in the JSON)."""
    fields: dict[str, Any] = {f.alias or key: Any for key, f in model.model_fields.items()}
    for key in dropped:
        del fields[key]
    return _TypedDict(name, {**fields, **narrowed}, total=False)


def _list_or_none(item: Any) -> Any:
    """``list[item] | None`` of a type made at run time."""
    return GenericAlias(list, (item,)) | None


class _OutputKey(TypedDict, total=False):
    key: Any


_LEAN_SAVED = _fields_of(SavedTensor, "_LeanSaved", dropped=("value",))
_LEAN_NODE = _fields_of(Node, "_LeanNode", output=list[_OutputKey | None] | None, saved=_list_or_none(_LEAN_SAVED))
_LEAN_GRAPH = msgspec.json.Decoder(_fields_of(Graph, "_LeanGraph", nodes=_list_or_none(_LEAN_NODE)))


def graph_without_values(text: bytes) -> dict[str, Any] | None:
    """The canonical graph JSON ``text`` of a finite graph parsed without its outputs' values
    and its saved tensors' (NOTE [a finite graph without its values]), or None when it is not
    of the schema's shape (the caller then parses it whole)."""
    try:
        found = _LEAN_GRAPH.decode(text)
    except msgspec.DecodeError:  # ValidationError is one
        return None
    return found if isinstance(found, dict) else None


def nonfinite_kind(tv: TV | None) -> str | None:
    """``"nan"`` when ``tv`` holds a NaN, else ``"inf"`` when it holds an infinity, else None.

    The stats decide when present (a NaN anywhere makes ``min`` and ``max`` NaN, an infinity
    makes one of them infinite), which is what keeps this cheap on large runs."""
    if tv is None:
        return None
    stats = tv.get("stats")
    if stats:
        low, high = stats.get("min"), stats.get("max")
        if low.__class__ is not str and high.__class__ is not str:
            return None  # the common case, decided by two look-ups
        if low == "nan" or high == "nan":
            return "nan"
        return "inf" if low in ("inf", "-inf") or high in ("inf", "-inf") else None
    values = flat(tv)
    if values is None:
        return None
    if any(math.isnan(x) for x in values):
        return "nan"
    return "inf" if any(math.isinf(x) for x in values) else None


def has(tv: TV | None, kind: str) -> bool:
    """Whether ``tv`` holds a value of ``kind`` (``"nan"``; ``"inf"`` also counts NaN)."""
    found = nonfinite_kind(tv)
    return found is not None and (kind == "inf" or found == "nan")


class DocView:
    """Indexes over one document: nodes by id, each node's inputs and consumers."""

    def __init__(self, doc: Doc) -> None:
        self.doc = doc
        graph = doc.get("graph") or {}
        self.nodes: list[Mapping[str, Any]] = list(graph.get("nodes") or [])
        self.edges: list[Mapping[str, Any]] = list(graph.get("edges") or [])
        self.by_id = {n["id"]: n for n in self.nodes}
        self.by_name: dict[str, list[Mapping[str, Any]]] = {}
        by_name = self.by_name
        for n in self.nodes:
            name = str(n.get("name"))
            same = by_name.get(name)
            if same is None:
                by_name[name] = [n]
            else:
                same.append(n)
        self._position: dict[int, int] | None = None
        events = doc.get("events") or []
        self._backward: list[tuple[int, Mapping[str, Any]]] = (
            events if isinstance(events, BackwardEvents)
            else [(i, ev) for i, ev in enumerate(events) if ev.get("phase") == "backward"])
        self.graph_finite = False
        """True where the graph's canonical JSON was found to hold no NaN or infinity
        (``may_hold_nonfinite``): no node's value or output is then non-finite, and the
        forward search over the kept outputs has nothing to find (``nonfinite/forward.py``)."""
        self.dynamics: Mapping[str, Any] | None = None
        """The run's series by iteration, set before the hints run (``analysis/run.py``)."""
        self._walked: set[str] | None = None
        self.inputs: dict[str, dict[int, str]] = {}
        self.sources: dict[str, list[str]] = {}
        self.consumers: dict[str, list[str]] = {}
        self.cut_consumers: dict[str, list[str]] = {}
        """Consumers of cut tensors (the dashed edges), kept apart: no gradient flows there."""
        sources, consumers, inputs = self.sources, self.consumers, self.inputs
        for e in self.edges:
            source, target = e["source"], e["target"]
            if e.get("cut"):
                self.cut_consumers.setdefault(source, []).append(target)
                continue
            sources.setdefault(target, []).append(source)
            consumers.setdefault(source, []).append(target)
            k = e.get("input_nr")
            if k is not None:
                inputs.setdefault(target, {})[int(k)] = source

    @cached_property
    def tensor_nodes(self) -> list[Mapping[str, Any]]:
        """The tensor nodes (``kind`` ``tensor``), in document order: a few among thousands of
        function nodes, which the checks that read only tensors walk instead of every node."""
        return [n for n in self.nodes if n.get("kind") == "tensor"]

    @cached_property
    def leaf_nodes(self) -> list[Mapping[str, Any]]:
        """The nodes whose ``role`` is ``leaf``, in document order."""
        return [n for n in self.nodes if n.get("role") == "leaf"]

    @cached_property
    def cut_nodes(self) -> list[Mapping[str, Any]]:
        """The nodes with a ``cut`` (computed through ``detach``, ``.data``, ``no_grad``), in
        document order."""
        return [n for n in self.nodes if n.get("cut")]

    def named(self, *names: str) -> list[Mapping[str, Any]]:
        """The nodes named one of ``names``, in document order."""
        found = [same for name in dict.fromkeys(names) if (same := self.by_name.get(name))]
        if len(found) <= 1:
            return found[0] if found else []
        if self._position is None:
            self._position = {id(n): i for i, n in enumerate(self.nodes)}
        position = self._position
        return sorted((n for same in found for n in same), key=lambda n: position[id(n)])

    def name(self, node_id: str) -> str:
        n = self.by_id.get(node_id)
        return str(n.get("name") or node_id) if n else node_id

    def leaf_of(self, node_id: str) -> Mapping[str, Any] | None:
        """The tensor node behind an ``AccumulateGrad`` node (or the tensor node itself)."""
        n = self.by_id.get(node_id)
        if n is None:
            return None
        if n.get("kind") == "tensor":
            return n
        if n.get("name") == "AccumulateGrad":
            for s in self.sources.get(node_id, []):
                t = self.by_id.get(s)
                if t is not None and t.get("kind") == "tensor":
                    return t
        return None

    def input_value(self, fn: str, k: int) -> TV | None:
        """The recorded forward value of input ``k`` of function node ``fn``, when it is a
        recorded tensor (a leaf, a retained tensor)."""
        src = self.inputs.get(fn, {}).get(k)
        if src is None:
            return None
        t = self.leaf_of(src)
        return None if t is None else t.get("value")

    def backward_events(self) -> Iterator[tuple[int, Mapping[str, Any]]]:
        """``(index among all events, event)`` of every backward event, in order."""
        return iter(self._backward)

    def tensor_label(self, n: Mapping[str, Any]) -> str:
        """How a tensor node is called in a sentence: its variable name, else its role. Leaves
        that share a name (``W`` bound in a loop to each layer in turn) are told apart by their
        order and line: ``W#2 (line 5)``, so a sentence never reads "W … than W"."""
        if n.get("name"):
            name = str(n["name"])
            if n.get("role") == "leaf":
                same = [m for m in self.by_name.get(name, []) if m.get("kind") == "tensor" and m.get("role") == "leaf"]
                if len(same) > 1:
                    k = next(i for i, m in enumerate(same) if m is n or m.get("id") == n.get("id")) + 1
                    line = n.get("def_line") if n.get("def_line") is not None else n.get("line")
                    return f"{name}#{k}" + (f" (line {line})" if line is not None else "")
            return name
        return f"the result of line {n['line']}" if n.get("line") is not None else str(n["id"])

    def walked(self) -> set[str]:
        """Ids of the nodes some backward pass ran, and of those a backward cut short may have
        run (``cut_short``): no hint concludes that a node was never walked from a run that
        stopped before it could be."""
        if self._walked is None:
            self._walked = {str(ev["node"]) for _, ev in self.backward_events()} | self.cut_short()
        return self._walked

    @cached_property
    def walked_by_root_call(self) -> dict[str, dict[int, list[str]]]:
        """The walked nodes by their outermost module call (its path, then its call number), the
        first 20 of each in creation order: one pass over the nodes, however many ask."""
        walked = self.walked()
        out: dict[str, dict[int, list[str]]] = {}
        for n in self.nodes:
            stack = n.get("module_stack")
            if not stack or str(n["id"]) not in walked:
                continue
            ids = out.setdefault(str(stack[0].get("path")), {}).setdefault(int(stack[0].get("call", -1)), [])
            if len(ids) < 20:
                ids.append(str(n["id"]))
        return out

    def cut_short(self) -> set[str]:
        """Nodes whose backward the run never finished recording: when the last pass did not
        complete, or a limit stopped the run, every node made after the last one a completed
        pass ran (the iteration that was cut, forward or backward), and whatever a pass that
        did not complete started from."""
        passes = self.doc.get("passes") or []
        stopped = self.doc.get("status") in ("graph_limit", "timeout", "memory_limit", "output_limit")
        if not stopped and (not passes or passes[-1].get("completed", True)):
            return set()
        done = {p.get("index") for p in passes if p.get("completed", True)}
        position = {str(n["id"]): i for i, n in enumerate(self.nodes)}
        last = max((position.get(str(ev["node"]), -1) for _, ev in self.backward_events()
                    if ev.get("pass") in done), default=-1)
        out = {str(n["id"]) for n in self.nodes[last + 1:]}
        for p in passes:
            if not p.get("completed", True):
                for root in p.get("roots") or []:
                    out |= self.upstream(str(root))
        return out

    def accumulator(self, leaf: str) -> str | None:
        """The ``AccumulateGrad`` node of a leaf tensor node."""
        for c in self.consumers.get(leaf, []):
            if self.name(c) == "AccumulateGrad":
                return c
        return None

    def upstream(self, start: str) -> set[str]:
        """Every node ``start`` was computed from (forward sources, transitively), itself too."""
        seen = {start}
        stack = [start]
        while stack:
            for s in self.sources.get(stack.pop(), []):
                if s not in seen:
                    seen.add(s)
                    stack.append(s)
        return seen

    def line_text(self, line: int | None) -> str:
        """The snippet's source line ``line`` (1-based), or ``""``."""
        code = self.doc.get("code")
        if not isinstance(code, str) or line is None:
            return ""
        lines = code.splitlines()
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""
