"""The first non-finite value of a run, forward and backward, and the node that produced it.

NOTE [producer, not carrier]
    A NaN made once is carried by every node after it, so "which nodes hold a NaN" answers
    nothing. The producer is the first node, in the engine's own order, whose output holds a
    NaN while its inputs held none: in backward, the first event whose ``grad_inputs`` (what
    the node returns) hold one while its ``grad_outputs`` (what it received) do not. That is
    the node ``torch.autograd.detect_anomaly`` names ("Function 'X' returned nan values in its
    Nth output"), which checks each node's returned gradients as the engine runs them
    (``tests/capture/test_nonfinite.py`` holds the two equal). The nodes after it that
    received the NaN and passed it on are listed, not marked.

    Forward, a document with a tensor file has every op's output (NOTE [forward producer from
    the kept outputs] in ``analysis/nonfinite/forward.py``); one without holds only the values of
    leaves, roots and retained tensors, so the forward entry then names the first such value
    that is non-finite, and says that it was the first *seen*.

The pattern behind it (where's unselected branch, divide-then-mask, a norm at zero, ...) comes
from ``analysis/nonfinite/traps.py``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gradtrace.analysis.docview import TV, DocView, has, nonfinite_kind
from gradtrace.analysis.local_derivatives import LOCAL_DERIVATIVES, local_derivative
from gradtrace.analysis.nonfinite.forward import forward_producer
from gradtrace.analysis.nonfinite.scaler import handled_by_scaler
from gradtrace.analysis.nonfinite.traps import trap_for
from gradtrace.analysis.numbers import flat, fmt

MAX_ELEMENTS = 8
MAX_PASSED_ON = 50


def _bad_elements(tv: TV | None, kind: str) -> tuple[list[int], int | None]:
    values = flat(tv)
    if values is None:
        return [], None
    bad = [i for i, x in enumerate(values) if math.isnan(x) or (kind == "inf" and math.isinf(x))]
    return bad[:MAX_ELEMENTS], len(bad)


def _span(elements: list[int]) -> str:
    """``[0, 1, 2, 5]`` as ``0–2, 5``."""
    parts: list[str] = []
    i = 0
    while i < len(elements):
        j = i
        while j + 1 < len(elements) and elements[j + 1] == elements[j] + 1:
            j += 1
        parts.append(str(elements[i]) if i == j else f"{elements[i]}–{elements[j]}")
        i = j + 1
    return ", ".join(parts)


def _cause(view: DocView, ev: Mapping[str, Any], out: int, elements: list[int]) -> str | None:
    """``grad_out × local derivative`` at the bad elements, for one-input elementwise nodes.

    The received gradient is recorded; the local derivative is computed when the input's value
    was recorded (a leaf or retained tensor holding one), and otherwise it is known only to be
    non-finite (a finite number times a finite one is finite)."""
    name = view.name(str(ev["node"]))
    gout = flat((ev.get("grad_outputs") or [None])[0])
    if gout is None or not elements or name not in LOCAL_DERIVATIVES:
        return None
    xs = flat(view.input_value(str(ev["node"]), out))
    causes: list[str] = []
    for i in elements:
        g = gout[i] if i < len(gout) else (gout[0] if len(gout) == 1 else None)
        if g is None:
            return None
        d = local_derivative(name, xs[i]) if xs is not None and i < len(xs) else None
        text = f"{fmt(g)} × {fmt(d) if d is not None else 'inf/nan'}"
        if text not in causes:
            causes.append(text)
    return ", ".join(causes)


def _trap(view: DocView, producer: str) -> tuple[str | None, str | None, str | None]:
    """``(cause, trap, fix)`` for the pattern behind it (``analysis/nonfinite/traps.py``)."""
    direct = list(view.consumers.get(producer, []))
    near = [c for d in direct for c in view.consumers.get(d, [])]
    near += [c for d in near for c in view.consumers.get(d, [])]
    found = trap_for(view.name(producer), [view.name(c) for c in direct], [view.name(c) for c in near])
    return (None, None, None) if found is None else (found.cause, found.trap, found.fix)


def _backward(view: DocView, forward: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    if not any(nonfinite_kind(g) for _, ev in view.backward_events() for g in ev.get("grad_inputs") or ()):
        return None  # the common case: one cheap look at each returned gradient
    for kind in ("nan", "inf"):  # NOTE [producer, not carrier]: a NaN outranks an infinity
        for i, ev in view.backward_events():
            returned = ev.get("grad_inputs") or []
            hit = next((k for k, g in enumerate(returned) if has(g, kind)), None)
            if hit is None or any(has(g, kind) for g in ev.get("grad_outputs") or []):
                continue
            if kind == "inf" and nonfinite_kind(returned[hit]) != "inf":
                continue
            return _entry(view, i, ev, hit, kind, forward)
    return None


def _entry(view: DocView, i: int, ev: Mapping[str, Any], out: int, kind: str,
           forward: Mapping[str, Any] | None = None) -> dict[str, Any]:
    node = str(ev["node"])
    n = view.by_id.get(node, {})
    elements, count = _bad_elements(ev["grad_inputs"][out], kind)
    cause = _cause(view, ev, out, elements)
    passed: list[str] = []
    for j, later in view.backward_events():
        if j <= i or later.get("pass") != ev.get("pass"):
            continue
        if len(passed) >= MAX_PASSED_ON:
            break
        if any(has(g, kind) for g in later.get("grad_outputs") or []):
            passed.append(str(later["node"]))
    where = f", line {n['line']}" if n.get("line") is not None else ""
    what = f", element{'s' if len(elements) > 1 else ''} {_span(elements)}" if elements else ""
    why = f": {cause}" if cause else ""
    source = _infinity_source(view, i, ev) if kind == "nan" else None
    if source is None:
        pattern, trap, fix = _trap(view, node)
    else:  # NOTE [a NaN made of an infinity received]
        src = view.by_id.get(source, {})
        at = f", line {src['line']}" if src.get("line") is not None else ""
        pattern = (f"the gradient it received is already infinite (first made by {src.get('name') or source}"
                   f"{at}), and inf × 0, inf − inf or inf / inf is NaN")
        _, trap, fix = _trap(view, source)
    made = _from_forward(view, node, forward) if cause is None or "inf/nan" in cause else None
    if made is not None:  # the forward finding is the root: its trap and fix are the ones to read
        cause, trap, fix = made, None, None
    else:
        cause = cause or pattern
    out_doc: dict[str, Any] = {
        "phase": "backward", "kind": kind, "node": node, "name": n.get("name"),
        "line": n.get("line"), "pass": ev.get("pass"), "event": i, "output": out,
        "elements": elements, "count": count, "cause": cause, "passed_on": passed,
        "sentence": f"first {'NaN' if kind == 'nan' else 'inf'} in backward: "
                    f"{n.get('name') or node}{where}{what}{why}",
        "trap": trap,
    }
    if fix is not None:
        out_doc["fix"] = fix
    return out_doc


def _from_forward(view: DocView, node: str, forward: Mapping[str, Any] | None) -> str | None:
    """NOTE [a backward NaN the forward made]
        A backward producer with no pattern of its own, whose forward values were already
        non-finite (the forward finding is this node, or a node its output was computed from),
        returns a non-finite gradient because of them: ``0.5 · x^(−0.5)`` of the negative ``x``
        that made ``x ** 0.5`` NaN, a loss's gradient of a NaN prediction. The cause says so and
        names the forward producer, where the fix belongs."""
    if forward is None or forward.get("node") is None:
        return None
    f = str(forward["node"])
    if f != node and f not in view.upstream(node):
        return None
    what = "NaN" if forward.get("kind") == "nan" else "an infinity"
    at = f", line {forward['line']}" if forward.get("line") is not None else ""
    src = view.by_id.get(f) or {}
    name = view.tensor_label(src) if src.get("kind") == "tensor" else view.name(f)
    where = f"here{at}" if f == node else f"before it: {name}{at}"
    return (f"the forward pass had already made {what} {where}; a gradient through a non-finite forward "
            "value is not finite")


def _infinity_source(view: DocView, i: int, ev: Mapping[str, Any]) -> str | None:
    """The node that first made the infinity the NaN's producer (event ``i``) received, when it
    received one: the first backward event of the same pass before it that returned an
    infinity from received gradients that were all finite, and was computed from the producer's
    output; None when it received none.

    NOTE [a NaN made of an infinity received]
        A NaN's producer is the node that returned it from a gradient with no NaN (NOTE
        [producer, not carrier]), as ``detect_anomaly`` names it; but where that gradient held
        an infinity, the NaN is only ``inf × 0`` or ``inf / inf`` of it, and the patterns known
        by the producer's name (a zero divisor, a norm at zero) would accuse the wrong thing:
        ``y / y.sum()`` with a sum of 1e21 makes NaN in division's backward because log's
        backward before it overflowed float32, not because anything was zero. The cause then
        names the node that made the infinity, and the trap and fix are that node's."""
    if not any(has(g, "inf") for g in ev.get("grad_outputs") or []):
        return None
    p, node = ev.get("pass"), str(ev["node"])
    for j, earlier in view.backward_events():
        if j >= i:
            break
        if earlier.get("pass") != p:
            continue
        if any(nonfinite_kind(g) for g in earlier.get("grad_outputs") or []):
            continue
        found = str(earlier["node"])
        # one whose gradient reaches the producer: it was computed from the producer's output
        if any(has(g, "inf") for g in earlier.get("grad_inputs") or []) and node in view.upstream(found):
            return found
    return None


def _forward(view: DocView) -> dict[str, Any] | None:
    """The producer of the first non-finite forward value that surfaces, where the nodes'
    outputs were kept; else the first recorded tensor value that is non-finite (NOTE
    [producer, not carrier])."""
    if view.graph_finite:  # the graph's text holds no NaN or infinity: no value to find
        return None
    if any(n.get("output") for n in view.nodes):
        return forward_producer(view)
    for kind in ("nan", "inf"):
        for n in view.tensor_nodes:
            if not has(n.get("value"), kind):
                continue
            elements, count = _bad_elements(n.get("value"), kind)
            label = view.tensor_label(n)
            where = f", line {n['line']}" if n.get("line") is not None else ""
            what = f", elements {_span(elements)}" if elements and n.get("value", {}).get("shape") else ""
            return {
                "phase": "forward", "kind": kind, "node": n["id"], "name": n.get("name"),
                "line": n.get("line"), "pass": None, "event": None, "output": None,
                "elements": elements, "count": count, "cause": None, "passed_on": [],
                "sentence": f"first {'NaN' if kind == 'nan' else 'inf'} seen in forward: "
                            f"{label}{where if label == n.get('name') else ''}{what} (only leaves, roots and "
                            "retained tensors keep their values)",
                "trap": None,
            }
    return None


def first_nonfinite(view: DocView) -> list[dict[str, Any]]:
    """The forward entry, then the backward one, each when there is one; the backward one says
    what the program's GradScaler did about it (NOTE [a NaN GradScaler skips] in scaler.py)."""
    forward = _forward(view)
    found = [e for e in (forward, _backward(view, forward)) if e is not None]
    for e in found:
        handled = handled_by_scaler(view, e)
        if handled is not None:
            e["handled"] = handled
    return found


def badge(view: DocView) -> str | None:
    """"x.grad has NaN": the final gradients (and roots) that are not finite."""
    if view.graph_finite:  # the graph's text holds no NaN or infinity: every one is finite
        return None
    bad: dict[str, list[str]] = {"nan": [], "inf": []}
    for n in view.tensor_nodes:
        kind = nonfinite_kind(n.get("grad"))
        if kind is not None:
            bad[kind].append(f"{view.tensor_label(n)}.grad")
        elif n.get("role") == "root" or "root" in (n.get("roles") or []):
            kind = nonfinite_kind(n.get("value"))
            if kind is not None:
                bad[kind].append(view.tensor_label(n))
    parts = []
    for kind, word in (("nan", "NaN"), ("inf", "inf")):
        names = bad[kind]
        if names:
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            parts.append(f"{shown} {'has' if len(names) == 1 else 'have'} {word}")
    return "; ".join(parts) or None
