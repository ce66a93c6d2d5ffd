"""Explain a backward node: its local rule, and that rule worked out with the recorded numbers.

For a node's backward event, :func:`explain_node` writes, for each input it passes a gradient to,
the rule (``grad_self = grad_out · other``) and one instance of it at a chosen element
(``0.3 · 2 = 0.6``), read from the event's ``grad_outputs`` and the node's saved tensors' values;
the rules live in :mod:`gradtrace.analysis.explain.ops`, :mod:`~gradtrace.analysis.explain.index`
and :mod:`~gradtrace.analysis.explain.nn` (those two read the node's ``saved_args``).

NOTE [explain on request]: an instance is per element, and GRU-200 has thousands of backward
events; writing every element's instance into every document would cost far more than the few %
of a run that analysis may take (bench/bench_analysis.py). So the explanation is computed on
request, for one node and one element, from the stored document; the page only reads the answer.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from gradtrace.analysis.explain import (
    attention,
    conv,
    ctc,
    double,
    elementwise,
    index,
    linalg,
    lookup,
    losses,
    nn,
    norm,
    ops,
    reduce,
    rnn,
)
from gradtrace.analysis.explain.operands import Numbers
from gradtrace.analysis.explain.ops import Ctx, NotKept, Rule, Unsupported, round_to
from gradtrace.analysis.explain.tensors import Flat, fmt, numel, ravel, unravel
from gradtrace.analysis.kept import KeptTensors
from gradtrace.errors import NotFound

JSON = dict[str, Any]
_ARITHMETIC = (ZeroDivisionError, OverflowError, ValueError)
"""What Python's float arithmetic raises where IEEE gives inf or nan (the rules spell out the
common cases IEEE's way: ``local_derivatives._div``)."""
_MISFIT = (IndexError, KeyError, TypeError)
"""What a rule raises on a document whose shapes or saved arguments contradict each other (a
job's result is untrusted: NOTE [fast path] in schema/fast.py), answered as a note, not a 500."""
_HALF = ("bfloat16", "float16")
"""Gradients a rule's float64 value is rounded to (a kernel in these dtypes rounds its result)."""
_NOT_KEPT = "neither in the document nor in the run's tensor file"
BACKWARD_RULES: dict[str, Rule] = {**ops.BACKWARD_RULES, **index.BACKWARD_RULES, **nn.BACKWARD_RULES,
                                   **lookup.BACKWARD_RULES, **conv.BACKWARD_RULES, **norm.BACKWARD_RULES,
                                   **losses.BACKWARD_RULES, **elementwise.BACKWARD_RULES,
                                   **reduce.BACKWARD_RULES, **attention.BACKWARD_RULES,
                                   **rnn.BACKWARD_RULES, **double.BACKWARD_RULES,
                                   **ctc.BACKWARD_RULES, **linalg.BACKWARD_RULES}
"""Every backward op with a rule, by autograd's class name."""


def _encode(x: float) -> float | str:
    """NaN and the infinities as the document spells them (schema/document.py)."""
    return x if math.isfinite(x) else str(x)


def _flat(value: JSON | None, numbers: Numbers | None = None) -> Flat | None:
    """Every element of TensorValue ``value``: inline, else from the tensor file through ``numbers``."""
    return (numbers or Numbers({}, None)).flat(value)


def _event(doc: JSON, node_id: str, pass_index: int | None) -> JSON | None:
    found = None
    for event in doc.get("events") or []:
        if event.get("phase") != "backward" or event.get("node") != node_id:
            continue
        if pass_index is None or event.get("pass") == pass_index:
            found = event
    return found


def _node(doc: JSON, node_id: str) -> JSON:
    for node in (doc.get("graph") or {}).get("nodes") or []:
        if node.get("id") == node_id:
            return dict(node)
    raise NotFound(f"no node {node_id!r} in this run")


def _context(node: JSON, event: JSON, numbers: Numbers | None = None) -> Ctx | None:
    numbers = numbers or Numbers({}, None)
    outs = event.get("grad_outputs") or []
    gs = tuple(numbers.flat(o) for o in outs)
    g = next((x for x in gs if x is not None), None) if len(gs) > 1 else (gs[0] if gs else None)
    if g is None or (len(gs) > 1 and any(o is not None and x is None for o, x in zip(outs, gs, strict=True))):
        return None
    rule = BACKWARD_RULES.get(str(node.get("name")))
    saved = {}
    names = set()
    for s in node.get("saved") or []:
        names.add(str(s.get("name")))
        flat = numbers.saved(node, s, rule) if rule is not None else numbers.flat(s.get("value"))
        if flat is not None:
            saved[str(s.get("name"))] = flat
    if rule is not None and node.get("saved_unread"):
        # checkpointed: nothing was read when the node was made; its backward reads the same
        # values recomputed, which are the forward values the tensor file keeps
        for name in {n for needs in rule.needs for n in needs} - names:
            flat = numbers.saved(node, {"name": name}, rule)
            if flat is not None:
                saved[name] = flat
                names.add(name)
    shapes: list[tuple[int, ...] | None] = []
    for gi in event.get("grad_inputs") or []:
        shapes.append(tuple(int(x) for x in gi["shape"]) if gi and gi.get("shape") is not None else None)
    if not shapes and node.get("name") == "AccumulateGrad":
        shapes = [g.shape]  # what it adds to the leaf's .grad: the received gradient, element by element
    dtypes = {str(s.get("name")): str(s.get("dtype")) for s in node.get("saved") or []}
    in_dtypes = tuple(gi.get("dtype") if gi else None for gi in event.get("grad_inputs") or [])
    return Ctx(g, saved, shapes, dict(node.get("saved_args") or {}), frozenset(names), gs, dtypes, in_dtypes)


def _missing(rule: Rule, ctx: Ctx, i: int) -> str | None:
    """Why input ``i``'s rule cannot be worked out from this document, or None."""
    values = [n for n in rule.needs_of(i) if n not in ctx.saved]
    if values:
        return f"values of {', '.join(values)} were not kept ({_NOT_KEPT})"
    args = [a for a in rule.args if a not in ctx.args]
    if args:
        return f"the argument{'s' if len(args) > 1 else ''} {', '.join(args)} not recorded"
    return None


def explain_node(doc: JSON, node_id: str, pass_index: int | None = None,
                 index: list[int] | None = None, tensors: KeptTensors | None = None) -> JSON:
    """The rule of ``node_id``'s backward for each input, worked out at element ``index`` (of
    that input's gradient; the first element when absent or out of range) in pass ``pass_index``
    (the last pass that ran the node when absent). ``tensors``: the run's tensor file, where
    the numbers the document does not carry inline are read (NOTE [operands from the tensor
    file] in ``analysis/explain/operands.py``)."""
    node = _node(doc, node_id)
    if node.get("kind") != "function":
        raise NotFound(f"node {node_id!r} is a tensor, not a backward node")
    return explain_event(node, _event(doc, node_id, pass_index), index, numbers=Numbers(doc, tensors))


def explain_event(node: JSON, event: JSON | None, index: list[int] | None = None,
                  elements: int = 0, numbers: Numbers | None = None) -> JSON:
    """:func:`explain_node` for a function node and its backward event (None: it never ran).
    ``elements``: also work each input's rule out at its first ``elements`` elements, as
    ``elements: [{index, instance, value, recorded}]`` (what a saved file carries:
    :mod:`gradtrace.analysis.explain.offline`)."""
    name = str(node.get("name"))
    rule = BACKWARD_RULES.get(name)
    answer: JSON = {"node": node.get("id"), "op": name, "known": rule is not None,
                    "pass": event.get("pass") if event else None, "inputs": []}
    if rule is not None and node.get("saved_args"):
        answer["args"] = dict(node["saved_args"])  # what the rule reads (slice's start and end too)
    if rule is None:
        answer["note"] = f"no rule for {name} in the catalogue"
        return answer
    ctx = _context(node, event, numbers) if event else None
    if event is None:
        answer["note"] = "this node did not run backward"
    elif ctx is None:
        answer["note"] = f"the received gradient's values were not kept ({_NOT_KEPT})"
    for i, text in enumerate(rule.texts_for(len((event or {}).get("grad_inputs") or []))):
        entry: JSON = {"input_nr": i, "rule": text}
        answer["inputs"].append(entry)
        shape = ctx.in_shapes[i] if ctx and i < len(ctx.in_shapes) else None
        if ctx is None or event is None or shape is None:
            if ctx is not None:
                entry["note"] = "no gradient passed to this input"
            continue
        why = _missing(rule, ctx, i)
        if why:
            entry["note"] = why
            continue
        coords = tuple(index or ())
        if len(coords) != len(shape) or any(not 0 <= c < s for c, s in zip(coords, shape, strict=True)):
            coords = unravel(0, shape)
        given = event.get("grad_inputs") or []
        recorded = _flat(given[i], numbers) if i < len(given) else None
        try:
            entry.update(_at(rule, ctx, i, shape, coords, recorded))
            if elements:
                entry["elements"] = [_at(rule, ctx, i, shape, unravel(k, shape), recorded)
                                     for k in range(min(elements, numel(shape)))]
        except NotKept as e:
            entry.pop("elements", None)
            entry["note"] = f"values of {e} were not kept ({_NOT_KEPT})"
        except Unsupported as e:
            entry.pop("elements", None)
            entry["note"] = str(e)
        except _ARITHMETIC:
            entry.pop("elements", None)
            entry["note"] = "the rule's arithmetic overflows or divides by zero here (see the recorded value)"
        except _MISFIT:
            entry.pop("elements", None)
            entry["note"] = "the recorded shapes or arguments do not fit this rule"
    return answer


def _at(rule: Rule, ctx: Ctx, i: int, shape: tuple[int, ...], coords: tuple[int, ...],
        recorded: Flat | None) -> JSON:
    """Input ``i``'s rule worked out at element ``coords``."""
    k = ravel(coords, shape)
    shown, value = rule.elem(ctx, i, k)
    instance = f"{shown} = {fmt(value)}"
    dtype = ctx.in_dtypes[i] if i < len(ctx.in_dtypes) else None
    if dtype in _HALF and round_to(value, dtype) != value and not math.isnan(value):
        value = round_to(value, dtype)  # what a half-precision kernel can pass on
        instance += f" → {fmt(value)} in {dtype}"
    out: JSON = {"shape": list(shape), "index": list(coords), "instance": instance, "value": _encode(value)}
    if recorded is not None:
        out["recorded"] = _encode(recorded.at(k))
        cancels = _cancels(rule, ctx, i, k, value, recorded.at(k))
        if cancels is not None:
            out["cancels"] = cancels
    return out


CANCEL = 1e-4
"""How far below its terms' sizes a rule's result may sit and still be float32 rounding noise."""


def _cancels(rule: Rule, ctx: Ctx, i: int, k: int, value: float, recorded: float) -> str | None:
    """Why the rule's float64 ``value`` and the kernel's float32 ``recorded`` differ, when they
    do because the rule's terms cancel.

    NOTE [terms that cancel]
        A convolution's bias before batch norm gets a gradient whose thousands of terms cancel to
        about 0 (batch norm takes out the mean): the rule's float64 sum gives 3.5e-9, the
        kernel's float32 sum 3.8e-8. Both are rounding noise around 0, and side by side they
        look like a disagreement. Their scale is the same rule worked out on the absolute
        values of its operands (``_absolute``: the sizes of the terms, which a sum of products
        adds up exactly); where the two numbers differ by more than a ten-thousandth of
        themselves (the four digits the page shows would differ) yet by no more than ``CANCEL``
        of that scale, the rounding of each float32 term decides the digits, and the answer
        says so: both are noise around 0 where they disagree in their first digit or what is
        left is within a few float32 ulps of the terms' sizes, else they agree to the rounding
        (a Gaussian process's kernel scaled by a 0-dim variance: a hundred terms of about 3
        leave -0.0114). Where they differ by more, there is no note: that is a disagreement to
        see (``tests/analysis/test_explain_cancel.py``)."""
    if not (math.isfinite(value) and math.isfinite(recorded)):
        return None
    diff = abs(value - recorded)
    if diff <= 1e-4 * max(abs(value), abs(recorded)):  # the four digits shown agree
        return None
    absolute = ctx.memo.get("absolute")
    if absolute is None:
        absolute = ctx.memo["absolute"] = _absolute(ctx)
    try:
        _, scale = rule.elem(absolute, i, k)
    except Exception:  # a rule whose operands' signs matter to its arithmetic: no scale, no note
        return None
    scale = abs(scale)
    if not math.isfinite(scale) or scale == 0 or diff > CANCEL * scale:
        return None
    left = max(abs(value), abs(recorded))
    head = (f"the terms cancel: their sizes add up to {fmt(scale)} and what is left is {fmt(left / scale)} of "
            "that, so float32's rounding of each term decides ")
    # noise: the two disagree in their first digit, or what is left is within a few float32 ulps of
    # the terms' sizes (a bias before batch norm: 1e-8 of them)
    if left <= 10 * diff or left <= 16 * 2.0 ** -23 * scale:
        return head + (f"these digits: {fmt(value)} (float64) and {fmt(recorded)} (the kernel's float32) are both "
                       "rounding noise around 0")
    return head + (f"the last digits: {fmt(value)} (float64) and {fmt(recorded)} (the kernel's float32) agree to "
                   f"{fmt(diff)}, within that rounding")


def _absolute(ctx: Ctx) -> Ctx:
    """``ctx`` with every operand replaced by its absolute values (NOTE [terms that cancel])."""
    def mag(f: Flat | None) -> Flat | None:
        return None if f is None else Flat(np.abs(np.asarray(f.values, dtype=np.float64)), f.shape)
    g = mag(ctx.g)
    assert g is not None
    return replace(ctx, g=g, saved={name: mag(f) for name, f in ctx.saved.items()},  # type: ignore[misc]
                   gs=tuple(mag(f) for f in ctx.gs), memo={})
