"""The first non-finite value of the forward pass, blamed on the op that made it.

NOTE [forward producer from the kept outputs]
    A document with a tensor file gives every function node's forward ``output`` its stats
    (docs/CONTRACT.md, "The tensor file"), so the forward pass is judged as the backward one
    is (NOTE [producer, not carrier] in ``analysis/nonfinite/first.py``): the producer of a NaN is a
    node whose output holds one while none of its inputs (the producers' outputs, the leaves'
    values) does; of an infinity, one whose inputs are all finite. ``exp`` overflowing to inf,
    then ``a - a`` making NaN, blames the subtraction for the NaN, where ``detect_anomaly``
    names the backward node that meets it (``ExpBackward0``: 0 × inf).

    Only a value that *surfaces* is blamed: one carried, through outputs of the same kind,
    to the end of the graph (a node nothing consumes, the loss). A ``-inf`` fill in attention
    that softmax turns into zeros, or an inf that ``torch.where`` drops, stops there: standard
    practice, no alarm. Inputs that are no node's output (data without gradient) are not in
    the graph and count as finite: the sentence says the inputs *recorded* were.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gradtrace.analysis.docview import DocView, nonfinite_kind
from gradtrace.analysis.nonfinite.forward_traps import forward_trap
from gradtrace.analysis.numbers import flat

MAX_ELEMENTS = 8


def _kinds(view: DocView) -> dict[str, str]:
    """Each node whose forward value holds a NaN (``"nan"``) or only infinities (``"inf"``),
    one pass over the nodes (a leaf counts behind its AccumulateGrad)."""
    found: dict[str, str] = {}
    for n in view.nodes:
        nid = str(n["id"])
        if n.get("kind") == "tensor":
            tvs: Any = (n.get("value"),)
        elif n.get("name") == "AccumulateGrad":
            leaf = view.leaf_of(nid)
            tvs = (leaf.get("value"),) if leaf is not None else ()
        else:
            tvs = n.get("output") or ()
        kind = None
        for tv in tvs:
            stats = tv.get("stats") if tv is not None else None
            if stats and stats.get("min").__class__ is not str and stats.get("max").__class__ is not str:
                continue  # ``nonfinite_kind``'s common case, without the call: thousands of outputs
            k = nonfinite_kind(tv)
            if k == "nan":
                kind = k
                break
            kind = kind or k
        if kind is not None:
            found[nid] = kind
    return found


def _elements(n: Mapping[str, Any], kind: str) -> tuple[list[int], int | None]:
    for tv in n.get("output") or []:
        values = flat(tv) if tv else None
        if values is None:
            continue
        bad = [i for i, x in enumerate(values) if math.isnan(x) or (kind == "inf" and math.isinf(x))]
        if bad:
            return bad[:MAX_ELEMENTS], len(bad)
    return [], None


def forward_producer(view: DocView) -> dict[str, Any] | None:
    """The forward entry of ``first_nonfinite`` from the nodes' kept outputs, or None when no
    non-finite value surfaces (or the document kept no outputs)."""
    if view.graph_finite:  # the graph's text holds no NaN or infinity: nothing to look for
        return None
    if not any(n.get("output") for n in view.nodes):
        return None
    kinds = _kinds(view)
    if not kinds:
        return None
    order = {str(n["id"]): i for i, n in enumerate(view.nodes)}
    for kind in ("nan", "inf"):  # "inf" counts a NaN too (docview.has)
        bad = {nid for nid, k in kinds.items() if kind == "inf" or k == "nan"}
        if not bad:
            continue
        sinks = [nid for nid in bad if not view.consumers.get(nid)]
        reached = set(sinks)
        stack = list(sinks)
        while stack:
            for s in view.sources.get(stack.pop(), []):
                if s in bad and s not in reached:
                    reached.add(s)
                    stack.append(s)
        heads = [nid for nid in reached if view.name(nid) != "AccumulateGrad"
                 and not any(s in bad for s in view.sources.get(nid, []))]
        if heads:
            return _entry(view, min(heads, key=order.__getitem__), kind, kinds, order)
    return None


def _infinity_source(view: DocView, node: str, kinds: Mapping[str, str], order: Mapping[str, int]) -> str | None:
    """Of a NaN made from an infinity (``inf − inf``, ``0 × inf``), the node that first made that
    infinity from finite inputs: walked up from the NaN producer's infinite inputs, the earliest
    (creation order) whose own inputs are all finite; None when none of its inputs is infinite.

    NOTE [a forward NaN made of an infinity]
        The NaN's producer is the op that made it from inputs with no NaN (NOTE [producer, not
        carrier]), the subtraction of ``exp(w) * c - exp(w) * c``; but the fix is at the
        overflow before it, which it received: the cause names that op too, and its pattern
        (``exp`` above 88.72) is the trap, as the backward entry names the node that made the
        infinity a NaN's producer received (NOTE [a NaN made of an infinity received] in
        ``first.py``)."""
    start = [s for s in view.sources.get(node, []) if kinds.get(s) == "inf"]
    seen = set(start)
    stack = list(start)
    heads: list[str] = []
    while stack:
        nid = stack.pop()
        up = [u for u in view.sources.get(nid, []) if u in kinds]
        if not up:
            heads.append(nid)
        for u in up:
            if u not in seen:
                seen.add(u)
                stack.append(u)
    heads = [h for h in heads if h in order]
    return min(heads, key=order.__getitem__) if heads else None


_INF_ARITHMETIC = frozenset({"SubBackward0", "RsubBackward0", "AddBackward0", "MulBackward0", "DivBackward0"})
"""The ops whose NaN, made of an infinity, names where that infinity began (NOTE [a forward NaN
made of an infinity])."""


def _entry(view: DocView, node: str, kind: str, kinds: Mapping[str, str] | None = None,
           order: Mapping[str, int] | None = None) -> dict[str, Any]:
    n = view.by_id[node]
    word = "NaN" if kind == "nan" else "inf"
    if n.get("kind") == "tensor":  # the program's own data held it: no op made it
        return {"phase": "forward", "kind": kind, "node": node, "name": n.get("name"), "line": n.get("line"),
                "pass": None, "event": None, "output": None, "elements": [], "count": None, "cause": None,
                "passed_on": [], "trap": None,
                "sentence": f"first {word} in forward: {view.tensor_label(n)} held it when first recorded"}
    elements, count = _elements(n, kind)
    inputs = "no NaN" if kind == "nan" else "only finite values"
    where = f", line {n['line']}" if n.get("line") is not None else ""
    what = f", element{'s' if len(elements) > 1 else ''} {', '.join(map(str, elements))}" if elements else ""
    text = view.line_text(n.get("line"))
    found = forward_trap(view, node, kind)  # NOTE [a forward cause only where it is certain]
    cause = found[0] if found else f"{n.get('name')} made it from inputs recorded with {inputs}"
    arithmetic = n.get("name") in _INF_ARITHMETIC  # inf − inf, 0 × inf, inf / inf: not a softmax of −inf fills
    source = _infinity_source(view, node, kinds, order) if kind == "nan" and arithmetic and kinds and order else None
    if source is not None:  # NOTE [a forward NaN made of an infinity]
        src = view.by_id[source]
        theirs = forward_trap(view, source, "inf") if src.get("kind") != "tensor" else None
        if src.get("kind") == "tensor":
            cause = f"{cause}; the infinity was there from the start: {view.tensor_label(src)} held it"
            found = (cause, "an infinity already in the program's data meets another (inf − inf, 0 × inf or "
                     "inf / inf is NaN).", None)
        else:
            at = f", line {src['line']}" if src.get("line") is not None else ""
            how = f": {theirs[0]}" if theirs is not None else ", from finite inputs"
            cause = f"{cause}; the infinity was first made by {src.get('name') or source}{at}{how}"
        if theirs is not None:
            found = theirs
    entry = {
        "phase": "forward", "kind": kind, "node": node, "name": n.get("name"), "line": n.get("line"),
        "pass": None, "event": None, "output": None, "elements": elements, "count": count,
        "cause": cause,
        "passed_on": [],
        "sentence": f"first {word} in forward: {n.get('name') or node}{where}{what}"
                    + (f" ({text})" if text else "") + f", from inputs with {inputs}",
        "trap": found[1] if found else None,
    }
    if found and found[2]:
        entry["fix"] = found[2]
    return entry
