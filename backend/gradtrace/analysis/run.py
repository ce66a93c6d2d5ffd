"""One entry point: a run document in, its :class:`~gradtrace.schema.analysis.Analysis` out."""

from __future__ import annotations

from typing import Any

import orjson

from gradtrace.analysis.docview import Doc, DocView, backward_skeletons, graph_without_values, may_hold_nonfinite
from gradtrace.analysis.dynamics import Tensors
from gradtrace.analysis.dynamics import dynamics as series_of
from gradtrace.analysis.gradoff import grad_off_blocks
from gradtrace.analysis.hints import find_hints
from gradtrace.analysis.nonfinite import badge, first_nonfinite
from gradtrace.analysis.starved import starved


def analyze(doc: Doc, tensors: Tensors | None = None, *, dynamics: bool = True,
            graph_finite: bool = False) -> dict[str, Any] | None:
    """The ``analysis`` field of ``doc`` as JSON (what the schema writes), or None when there
    is nothing to say (the field is then left out, and documents without findings do not
    change). ``tensors``: the run's tensor file by key, when at hand (the dynamics' mean |grad|
    and activation shares read it: NOTE [dynamics from the recorded numbers] in
    analysis/dynamics/series.py). Without ``dynamics`` (``gradtrace.record(dynamics=False)``)
    the series and the hints they give are left out. ``graph_finite``: the graph's JSON was
    found to hold no NaN or infinity (``DocView.graph_finite``)."""
    view = DocView(doc)
    view.graph_finite = graph_finite
    # the hints read it (analysis/hints/dynamics.py)
    view.dynamics = moves = series_of(view, tensors) if dynamics else None
    found: dict[str, Any] = {"badge": badge(view), "nonfinite": first_nonfinite(view),
                             "hints": find_hints(view)}
    blocks = grad_off_blocks(doc.get("code"))  # NOTE [blocks with gradients off] in gradoff.py
    if blocks:
        found["grad_off"] = blocks
    hungry = starved(view)
    if hungry:
        found["starved"] = hungry
    if moves is not None:
        found["dynamics"] = moves
    if (not blocks and not hungry and moves is None and found["badge"] is None and not found["nonfinite"]
            and not found["hints"]):
        return None
    return found


def analyze_parts(doc: Doc, graph: Any = None, events: Any = None,
                  tensors: Tensors | None = None, *, dynamics: bool = True) -> dict[str, Any] | None:
    """:func:`analyze` of a document whose ``graph`` and ``events`` are their canonical JSON
    (NOTE [one document path] in capture/document.py). ``graph`` and ``events``: those bytes
    already parsed, when a reader has (NOTE [views of the document's JSON] in schema/views.py);
    else each is parsed with its tensor values only when it may hold a NaN or an infinity
    (NOTE [a finite graph without its values] and NOTE [events without their values] in
    analysis/docview.py)."""
    # searched where they lie (a CanonicalText is bytes); orjson reads a bytes subclass through a view
    graph_text = doc["graph"] if isinstance(doc["graph"], bytes) else bytes(doc["graph"])
    finite = not may_hold_nonfinite(graph_text)
    if graph is None and finite:  # NOTE [a finite graph without its values] in analysis/docview.py
        graph = graph_without_values(graph_text)
    if graph is None:
        graph = orjson.loads(memoryview(graph_text))
    if events is None:
        text = doc["events"] if isinstance(doc["events"], bytes) else bytes(doc["events"])
        if finite and not may_hold_nonfinite(text):
            events = backward_skeletons(text)
        if events is None:
            events = orjson.loads(memoryview(text))
    return analyze({**doc, "graph": graph, "events": events}, tensors, dynamics=dynamics, graph_finite=finite)
