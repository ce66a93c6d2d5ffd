"""The explanations a saved HTML file (and anything else without the service) carries.

NOTE [explanations carried offline]
    The page asks ``GET /api/runs/{id}/explain`` for one node at one element (NOTE [explain on
    request] in explain/node.py). A saved file has no service, and the page must never hold a second
    copy of the rules, so the file carries answers worked out when it is written, bounded:
    first every backward node's explanation at its first element, in node order, then more
    elements of each input (up to ``ELEMENTS``), node by node, while the JSON stays under
    ``BUDGET`` bytes. What did not fit is counted (``skipped_nodes``; ``elements`` per input
    says how many elements it carries), and the page says so rather than guess. The rule texts
    are written once per op (``rules``), not once per node. GRU-200 (3,200 nodes) fits
    whole at its first elements (bench/bench_explain.py prints the sizes).
"""

from __future__ import annotations

import json
from typing import Any

from gradtrace.analysis.explain.node import BACKWARD_RULES, explain_event
from gradtrace.analysis.explain.operands import Numbers
from gradtrace.analysis.kept import KeptTensors

JSON = dict[str, Any]
BUDGET = 1_500_000
"""Bytes of (uncompressed) JSON a file's explanations may take: ~10 % of that once gzipped."""
ELEMENTS = 64
"""Elements worked out per input at most, beyond the first."""


def _size(obj: object) -> int:
    return len(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode())


def _slim(answer: JSON) -> JSON:
    """An explanation without what the bundle's ``rules`` already say."""
    out = {k: v for k, v in answer.items() if k not in ("node", "known")}
    out["inputs"] = [{k: v for k, v in inp.items() if k != "rule"} for inp in answer["inputs"]]
    return out


def carried_explanations(doc: JSON, *, budget: int = BUDGET, elements: int = ELEMENTS,
                         tensors: KeptTensors | None = None) -> JSON:
    """``{"rules": {op: [rule per input]}, "nodes": {id: explanation}, "skipped_nodes": n,
    "budget": budget}`` for the backward nodes of ``doc`` (NOTE [explanations carried offline]).
    An explanation is :func:`~gradtrace.analysis.explain.explain_node`'s answer at the first
    element, less its rule texts, its inputs carrying ``elements`` where more fitted; ``tensors``:
    the run's tensor file, for the numbers the document does not carry inline."""
    numbers = Numbers(doc, tensors)
    last: dict[str, JSON] = {}
    for event in doc.get("events") or []:
        if event.get("phase") == "backward":
            last[str(event.get("node"))] = event
    fns = [n for n in (doc.get("graph") or {}).get("nodes") or [] if n.get("kind") == "function"]
    out: dict[str, JSON] = {}
    rules: dict[str, list[str]] = {}
    used, skipped = 0, 0
    for node in fns:
        name = str(node.get("name"))
        slim = _slim(explain_event(node, last.get(str(node.get("id"))), numbers=numbers))
        size = _size(slim) + len(str(node.get("id"))) + 4
        if name in BACKWARD_RULES and name not in rules:
            size += _size(BACKWARD_RULES[name].texts) + len(name) + 4
        if used + size > budget:
            skipped = len(fns) - len(out)
            break
        used += size
        out[str(node.get("id"))] = slim
        if name in BACKWARD_RULES:  # a rule for each input (cat's: as many as this node has)
            texts = BACKWARD_RULES[name].texts_for(len(slim.get("inputs") or []))
            if len(texts) > len(rules.get(name, [])):
                rules[name] = list(texts)
    for node in fns:  # then more elements, while they fit
        nid = str(node.get("id"))
        if nid not in out or not out[nid]["inputs"] or used >= budget:
            continue
        more = explain_event(node, last.get(nid), None, elements, numbers)
        for inp, full in zip(out[nid]["inputs"], more["inputs"], strict=True):
            extra = full.get("elements")
            if not extra or len(extra) < 2:
                continue
            extra = [{k: v for k, v in e.items() if k != "shape"} for e in extra]
            size = _size(extra) + 12
            if used + size > budget:
                continue
            used += size
            inp["elements"] = extra
    return {"rules": rules, "nodes": out, "skipped_nodes": skipped, "budget": budget}
