"""A run document as a notebook shows it: the schema's :class:`RunDocument` with its views, and
its graph and events built from their JSON on first use.

NOTE [views of a document]
    The schema is the bottom layer: the web process, storage and capture load it, and it
    imports nothing of theirs. How a document looks in a notebook (an HTML summary, a
    self-contained HTML file) belongs to this layer, so the documents handed to notebook users
    (``rec.document()``, ``Client.run()``) are this subclass, which adds the views; any other
    ``RunDocument`` is shown with :func:`gradtrace.notebook.show` or saved with
    :func:`gradtrace.notebook.save_html`.

NOTE [a document built on first use]
    A GRU unrolled 200 steps gives a document of ~70,000 pydantic objects, almost all in its
    graph and events; building them cost four times the bare run, in ``rec.document()``,
    whether or not the notebook ever looked at them. :meth:`NotebookRunDocument.from_parts`
    validates the small top level at once and keeps the graph's and the events' canonical JSON
    (which the C++ core wrote). Reading ``doc.graph`` or ``doc.events`` parses those bytes
    once into read-only views (NOTE [views of the document's JSON] in schema/views.py);
    anything that needs the models (a dump, a comparison, a copy, a pickle, an assignment,
    ``doc.validated()``) validates them by pydantic from the same bytes, and from then on the
    fields hold the models. Either way the values read are the ones an eager validation gives.

NOTE [an id and an analysis on first use]
    The document's ``analysis`` (:mod:`gradtrace.analysis`) reads the whole graph, and its id
    hashes the whole canonical JSON, the analysis included: on a GRU unrolled 200 steps, 1.4
    times the bare run between them, spent in ``rec.document()`` even when the notebook reads
    neither. :meth:`NotebookRunDocument.from_capture` keeps capture's document and computes
    both the first time anything reads either (or dumps, compares or writes the document),
    from the graph and events its views already parsed when those were read first. The id is
    the one ``canonical_with_id`` gives the document with its analysis, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
from pydantic import PrivateAttr, TypeAdapter

from gradtrace.collector import gc_paused
from gradtrace.schema import Event, Graph, RunDocument
from gradtrace.schema.analysis import Analysis
from gradtrace.schema.canonical import CanonicalDocument, CanonicalText, canonical_json, canonical_with_id
from gradtrace.schema.views import events_view, graph_view

_LAZY = ("events", "graph")
_PENDING = ("id", "analysis")
Analyzer = Callable[[dict[str, Any], Any, Any], dict[str, Any] | None]
"""``analyze(doc, graph, events)``: the ``analysis`` of capture's document whose graph and
events are canonical JSON, given them parsed when they are (``gradtrace.analysis.run
.analyze_parts``, handed in by capture: this layer does not import the analysis)."""
_EVENTS: TypeAdapter[list[Event]] = TypeAdapter(list[Event])


class NotebookRunDocument(RunDocument):
    """A :class:`RunDocument` that shows itself in a notebook and saves itself as a page."""

    _lazy: dict[str, bytes] | None = PrivateAttr(default=None)
    _views: dict[str, Any] | None = PrivateAttr(default=None)
    """Read-only views of the parts in ``_lazy``, once read (NOTE [a document built on first use])."""
    _written: tuple[dict[str, Any], bytes] | None = PrivateAttr(default=None)
    """The top level as dumped when built, and the canonical JSON ``body`` it was hashed into."""
    _pending: tuple[dict[str, Any], Analyzer] | None = PrivateAttr(default=None)
    """Capture's document without its id and analysis, until either is read (NOTE [an id and
    an analysis on first use])."""

    _tensor_store: Any = PrivateAttr(default=None)
    """The run's tensors in process (capture's ``TensorFile``: ``.tensors`` by key, read from
    ``.data``, the safetensors bytes), or the bytes alone (NOTE [tensors by key] below)."""

    # NOTE [tensors by key]
    #     ``rec.document()`` holds the run's tensor file: ``doc.tensor(key)`` hands back a torch
    #     tensor read from its bytes (NOTE [each tensor let go once written] in
    #     capture/tensorfile.py). A document read from elsewhere carries the file's bytes
    #     (``with_tensor_bytes``): then numpy arrays from ``safetensors.numpy`` (this layer never
    #     imports torch).
    def with_tensor_bytes(self, data: bytes) -> NotebookRunDocument:
        """Attach a tensor file's bytes (the service's ``/tensors.safetensors``)."""
        self._tensor_store = data
        return self

    def tensor_bytes(self) -> bytes | None:
        """The run's tensor file (safetensors bytes), or None when it has none."""
        store = self._tensor_store
        if store is None or isinstance(store, bytes):
            return store
        data: bytes = store.data
        return data

    def tensor(self, key: str) -> Any:
        """The kept tensor ``key`` (``n12.out0``, ``e3.gi1``, ``n4.gh0``: docs/CONTRACT.md,
        "The tensor file"): a torch tensor in the process that recorded it, else a numpy
        array. A key the file does not hold raises KeyError saying why."""
        store = self._tensor_store
        if store is not None and not isinstance(store, bytes):
            hit = store.tensors.get(key)
            if hit is not None:
                return hit
        elif isinstance(store, bytes):
            from safetensors.numpy import load

            arrays = load(store)
            if key in arrays:
                return arrays[key]
        raise KeyError(self._why_not(key))

    def _why_not(self, key: str) -> str:
        info = self.tensors
        if info is None:
            return f"{key}: this document has no tensor file"
        for left in info.left_out:
            if left.key == key:
                return f"{key}: left out of the tensor file ({left.reason})"
        return f"{key}: no such tensor in this run's tensor file"

    def node_output(self, node: str, k: int = 0) -> Any:
        """Function node ``node``'s ``k``-th forward output, as the op returned it."""
        return self.tensor(f"{node}.out{k}")

    def event_tensor(self, event: int, part: str = "gi", k: int = 0) -> Any:
        """Backward event ``event``'s gradient: ``part`` ``go``/``gi`` (``k``-th grad_output /
        grad_input), ``grad`` (an AccumulateGrad's), ``hb``/``ha`` (hook change before/after)."""
        if part not in ("go", "gi", "grad", "hb", "ha"):
            raise ValueError(f"part must be one of go, gi, grad, hb, ha, not {part!r}")
        return self.tensor(f"e{event}.grad" if part == "grad" else f"e{event}.{part}{k}")

    def leaf_tensor(self, node: str, which: str = "end", h: int = 0) -> Any:
        """A leaf's ``value`` (at the start), ``end`` (at the end), ``grad_history[h]`` (``gh``)
        or ``grad_edits[h].value`` (``ge``)."""
        if which in ("value", "end"):
            return self.tensor(f"{node}.{which}")
        if which not in ("gh", "ge"):
            raise ValueError(f"which must be one of value, end, gh, ge, not {which!r}")
        return self.tensor(f"{node}.{which}{h}")

    @classmethod
    def from_capture(cls, doc: dict[str, Any], analyze: Analyzer) -> NotebookRunDocument:
        """The document of capture's ``doc`` without its ``id`` and ``analysis``
        (``build_document(analysis=False)``), its graph and events their canonical JSON: those
        two are read on first use (NOTE [a document built on first use]), and the analysis and
        the id are computed when first read (NOTE [an id and an analysis on first use])."""
        out = cls.from_parts({**doc, "id": ""})
        for key in _PENDING:
            out.__dict__.pop(key, None)
        out._pending = (doc, analyze)
        return out

    def _settle(self) -> None:
        """Compute the analysis and the id of a document made by :meth:`from_capture`, from the
        graph and events already parsed for their views when they were read."""
        private = object.__getattribute__(self, "__pydantic_private__")
        pending = private.get("_pending") if private else None
        if pending is None:
            return
        private["_pending"] = None
        doc, analyze = pending
        views = private.get("_views") or {}
        graph, events = views.get("graph"), views.get("events")
        with gc_paused(settle=True):  # NOTE [gc while building documents] in gradtrace/collector.py
            found = analyze(doc, None if graph is None else graph.__dict__,
                      None if events is None else [e.__dict__ for e in events])
            if found is not None:
                doc = {**doc, "analysis": found}
            self.__dict__["id"], body = canonical_with_id(doc)
        self.__dict__["analysis"] = None if found is None else Analysis.model_validate(found)
        self._in_field_order()
        lazy = private.get("_lazy") or {}
        if len(lazy) == len(_LAZY):
            private["_written"] = (RunDocument.model_dump(self, mode="json", by_alias=True, exclude=set(lazy)), body)

    def _in_field_order(self) -> None:
        """pydantic writes fields in the order of ``__dict__``: put them in the order they were
        declared in."""
        built = self.__dict__
        order = {name: built[name] for name in type(self).model_fields if name in built}
        order.update((k, v) for k, v in built.items() if k not in order)
        built.clear()
        built.update(order)

    @classmethod
    def from_parts(cls, doc: dict[str, Any], body: bytes | None = None) -> NotebookRunDocument:
        """The document of capture's ``doc`` (with its ``id``), whose graph and events may be
        their canonical JSON: those are validated on first use (NOTE [a document built on
        first use]); everything else now. ``body``: the canonical JSON the id was hashed
        from, which :meth:`as_json_dict` then carries instead of hashing it all again."""
        lazy = {k: bytes(doc[k]) for k in _LAZY if isinstance(doc.get(k), CanonicalText)}
        out = cls.model_validate({k: v for k, v in doc.items() if k not in lazy})
        if lazy:
            for key in lazy:
                del out.__dict__[key]
            out.__pydantic_fields_set__.update(lazy)
            out._lazy = lazy
            if body is not None:
                out._written = (RunDocument.model_dump(out, mode="json", by_alias=True, exclude=set(lazy)), body)
        return out

    def _build(self, keys: tuple[str, ...] = _LAZY) -> None:
        """Validate the parts in ``keys`` still kept as JSON, and put them in their field order."""
        self._settle()
        private = object.__getattribute__(self, "__pydantic_private__")
        lazy = private.get("_lazy") if private else None
        if not lazy or not any(k in lazy for k in keys):
            return
        built = self.__dict__
        # NOTE [gc while building documents] in gradtrace/collector.py: the new models are
        # acyclic, and go to the oldest generation unwalked
        with gc_paused(settle=True):
            if "graph" in keys and "graph" in lazy:
                built["graph"] = Graph.model_validate_json(lazy.pop("graph"))
            if "events" in keys and "events" in lazy:
                built["events"] = _EVENTS.validate_json(lazy.pop("events"))
        views = private.get("_views")
        for key in keys:
            if views:
                views.pop(key, None)
        if not lazy:
            private["_lazy"] = None
        self._in_field_order()

    def __getattr__(self, name: str) -> Any:
        if name in _LAZY:
            private = object.__getattribute__(self, "__pydantic_private__")
            if private and private.get("_lazy") and name in private["_lazy"]:
                return self._view(private, name)
        elif name in _PENDING:
            private = object.__getattribute__(self, "__pydantic_private__")
            if private and private.get("_pending") is not None:
                self._settle()
                return self.__dict__[name]
        return super().__getattr__(name)  # type: ignore[misc]  # pydantic's (private attributes, extras)

    def _view(self, private: dict[str, Any], name: str) -> Any:
        """The read-only view of the part ``name`` still kept as JSON (NOTE [views of the
        document's JSON] in schema/views.py), parsed once."""
        views = private.get("_views")
        if views is None:
            views = private["_views"] = {}
        if name not in views:
            # NOTE [gc while building documents] in gradtrace/collector.py: acyclic dicts
            with gc_paused(settle=True):
                parsed = orjson.loads(private["_lazy"][name])
                views[name] = graph_view(parsed) if name == "graph" else events_view(parsed)
        return views[name]

    def validated(self) -> NotebookRunDocument:
        """This document with its graph and events validated as pydantic models (until then,
        reading them gives read-only views of their JSON: NOTE [views of the document's JSON]
        in schema/views.py); answers the document itself."""
        self._build()
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LAZY:
            self._build((name,))
        elif name in _PENDING:
            self._settle()
        super().__setattr__(name, value)

    def canonical_json(self) -> bytes:
        """The document's canonical JSON, with the graph's and the events' bytes as capture
        wrote them while they are still kept (NOTE [a document built on first use]); the
        bytes ``rec.document()`` hashed while the rest is unchanged (not hashed again)."""
        self._settle()
        private = object.__getattribute__(self, "__pydantic_private__")
        lazy = dict(private.get("_lazy") or {}) if private else {}
        if not lazy:
            return canonical_json(RunDocument.model_dump(self, mode="json", by_alias=True))
        top = RunDocument.model_dump(self, mode="json", by_alias=True, exclude=set(lazy))
        written = private.get("_written")
        if written is not None and len(lazy) == len(_LAZY) and written[0] == top:
            return bytes(written[1])
        # NOTE [one serialisation] in schema/canonical.py: the parts' bytes as they are
        return canonical_with_id({**top, **{k: CanonicalText(v) for k, v in lazy.items()}})[1]

    def as_json_dict(self) -> dict[str, Any]:
        """``model_dump(mode="json", by_alias=True)``, with the graph and events still kept as
        JSON parsed from it rather than built as models first (NOTE [a document built on first
        use]): showing a GRU-200 in a widget cost 80 ms more the other way. Capture writes
        them complete (NOTE [documents without pydantic on the hot path] in
        capture/document.py), so both give the same dict."""
        self._settle()
        private = object.__getattribute__(self, "__pydantic_private__")
        lazy = dict(private.get("_lazy") or {}) if private else {}
        if not lazy:
            return RunDocument.model_dump(self, mode="json", by_alias=True)
        top = RunDocument.model_dump(self, mode="json", by_alias=True, exclude=set(lazy))
        body = self.canonical_json()
        return CanonicalDocument({**top, **{k: orjson.loads(v) for k, v in lazy.items()}}, body)

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        self._build()
        return super().model_dump(**kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:
        self._build()
        return super().model_dump_json(**kwargs)

    def model_copy(self, **kwargs: Any) -> Any:
        self._build()
        return super().model_copy(**kwargs)

    def __eq__(self, other: object) -> bool:
        self._build()
        if isinstance(other, NotebookRunDocument):
            other._build()
            # the tensors held in process are no part of the document (its ``tensors`` field,
            # with the file's SHA-256, is): two equal documents may hold them or not
            mine, theirs = self._tensor_store, other._tensor_store
            self._tensor_store = other._tensor_store = None
            try:
                return super().__eq__(other)
            finally:
                self._tensor_store, other._tensor_store = mine, theirs
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # as every pydantic model

    def __iter__(self) -> Any:
        self._build()
        return super().__iter__()

    def __repr_args__(self) -> Any:
        self._build()
        return super().__repr_args__()

    def __copy__(self) -> Any:
        self._build()
        return super().__copy__()

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Any:
        self._build()
        return super().__deepcopy__(memo)

    def __getstate__(self) -> dict[Any, Any]:
        self._build()
        return super().__getstate__()

    @property
    def dynamics(self) -> Any:
        """The series by iteration (``analysis.dynamics``) as rows, one per iteration and series
        (:func:`gradtrace.notebook.dynamics.rows`); a pandas DataFrame when pandas is
        installed; empty with fewer than two backward passes."""
        from gradtrace.notebook.dynamics import table

        found = self.analysis
        return table(None if found is None else found.dynamics)

    def _repr_html_(self) -> str:
        """In a notebook, a document shows a link to its page and a summary of its graph."""
        from gradtrace.notebook.summary import render_html

        return render_html(self)

    def explain(self, node: str, index: list[int] | None = None, pass_index: int | None = None) -> dict[str, Any]:
        """"Explain this node" from Python: the backward node ``node`` (its id, or the first
        function node of that name: ``"PowBackward0"``), its rule per input worked out with the
        recorded numbers at element ``index`` (``gradtrace.analysis.explain.explain_node``)."""
        from gradtrace.analysis.explain import explain_node

        doc = self.as_json_dict()
        nodes = doc["graph"]["nodes"]
        found = next((n for n in nodes if n["id"] == node), None) or next(
            (n for n in nodes if n.get("name") == node and n["kind"] == "function"), None)
        return explain_node(doc, found["id"] if found else node, pass_index, index)

    def save_html(self, path: str, *, title: str | None = None, tensor_budget: int | None = None) -> str:
        """Write this run as one self-contained HTML file that opens offline and plays it
        (:mod:`gradtrace.notebook.html`); answers the path. It carries at most
        ``tensor_budget`` bytes of the run's tensors (default ``TENSOR_BUDGET``, 8 MiB: NOTE
        [tensors carried offline] in ``notebook/carried_tensors.py``)."""
        from gradtrace.notebook.carried_tensors import TENSOR_BUDGET
        from gradtrace.notebook.html import save_html

        budget = TENSOR_BUDGET if tensor_budget is None else tensor_budget
        return str(save_html(self, path, title=title, tensor_budget=budget))


__all__ = ["NotebookRunDocument"]
