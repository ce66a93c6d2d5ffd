"""Where explain finds its numbers: inline values, else the run's tensor file.

NOTE [operands from the tensor file]
    A rule reads the node's received gradient, the tensors the node saved (``self``,
    ``other``, ``result``) and compares with the gradients it passed on. The document carries
    values inline only for small tensors; the tensor file keeps every forward output and every
    gradient (docs/CONTRACT.md, "The tensor file"), and the saved tensors that no node made
    (``n{id}.s{name}``: NOTE [saved tensors from no node] in capture/saved.py), read first. Any
    other saved tensor is found as what it is:

    * ``result`` (``result0``, ``result1``…): the node's own forward output ``n{id}.out{k}``;
    * an input, named as the rule names its gradient (``grad_self`` reads ``self``, input 0;
      ``grad_mat2`` reads ``mat2``, the input after): the output of the producer on the edge
      with that ``input_nr``, the one output whose shape is the saved tensor's (several
      outputs of that shape, a ``split``'s, are ambiguous: not read); for a leaf (behind its
      ``AccumulateGrad``), its value when first met ``n{id}.value``, which is what the node
      saved only when the node was made before the run's first backward pass or the leaf
      ends the run with those same values (an optimizer's step changes it in between).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from gradtrace.analysis.explain.ops import Rule
from gradtrace.analysis.explain.tensors import Flat, numel
from gradtrace.analysis.explain.worked import worked_out
from gradtrace.analysis.kept import KeptTensors, saved_key
from gradtrace.analysis.numbers import flatten

JSON = Mapping[str, Any]
_GRAD_NAME = re.compile(r"grad_(\w+)")
_RESULT = re.compile(r"result(\d*)")


def input_names(rule: Rule) -> list[str]:
    """The inputs' names in the node's input order, read from its rule texts (``grad_mat1 = …``)."""
    out = []
    for text in rule.texts:
        m = _GRAD_NAME.match(text)
        out.append(m.group(1) if m else "")
    return out


def _shape(tv: JSON) -> tuple[int, ...]:
    return tuple(int(s) for s in tv.get("shape") or [])


class Numbers:
    """A document's tensors by TensorValue, inline or from its tensor file (``kept``, may be None)."""

    def __init__(self, doc: JSON, kept: KeptTensors | None) -> None:
        self.doc = doc
        self.kept = kept
        self._nodes: dict[str, JSON] | None = None
        self._first_backward: int | None = None
        self._made_at: dict[str, int] | None = None
        self._inputs: dict[str, dict[int, str]] | None = None
        self._behind: dict[str, str] = {}
        self._events: dict[str, JSON] | None = None

    def flat(self, tv: JSON | None) -> Flat | None:
        """``tv``'s every element: its inline values when complete, else its key's in the file."""
        if not tv:
            return None
        shape = _shape(tv)
        if tv.get("values") is not None:
            try:
                values = flatten(tv["values"])
            except ValueError:
                values = []
            if len(values) == numel(shape):
                return Flat(values, shape)
        if self.kept is not None and isinstance(tv.get("key"), str):
            arr = self.kept.array(tv["key"])
            if arr is not None and arr.size == numel(shape):
                return Flat(arr, shape)
        return None

    def node(self, node_id: str) -> JSON | None:
        if self._nodes is None:
            self._nodes = {str(n.get("id")): n for n in (self.doc.get("graph") or {}).get("nodes") or []}
        return self._nodes.get(node_id)

    def saved(self, node: JSON, entry: JSON, rule: Rule) -> Flat | None:
        """Saved tensor ``entry`` of ``node`` (NOTE [operands from the tensor file])."""
        inline = self.flat(entry.get("value"))
        if inline is not None or self.kept is None:
            return inline
        name = str(entry.get("name"))
        shape = tuple(int(s) for s in entry["shape"]) if entry.get("shape") is not None else None
        if shape is not None:  # one no node made, kept as itself
            own = self._fits({"shape": list(shape), "key": saved_key(str(node.get("id")), name)}, shape)
            if own is not None:
                return own
        m = _RESULT.fullmatch(name)
        found = None
        if m:
            outs = node.get("output") or []
            k = int(m.group(1) or 0)
            found = self._fits(outs[k] if k < len(outs) else None, shape)
        elif name in input_names(rule):
            found = self.operand(node, rule, name, shape)
        return found if found is not None else worked_out(self, node, rule, name, shape)

    def operand(self, node: JSON, rule: Rule, name: str, shape: tuple[int, ...] | None) -> Flat | None:
        """The forward value of ``node``'s input ``name`` (its rule's name for it), of ``shape``."""
        names = input_names(rule)
        if name not in names:
            return None
        nr = names.index(name)
        source = self._source(str(node.get("id")), nr)
        return None if source is None else self._producer_value(source, str(node.get("id")), nr, shape)

    def embedding_weight(self, node: JSON) -> Flat | None:
        """The weight an embedding node read: its input 0, whatever its shape."""
        source = self._source(str(node.get("id")), 0)
        return None if source is None else self._producer_value(source, str(node.get("id")), 0, None)

    def _fits(self, tv: JSON | None, shape: tuple[int, ...] | None) -> Flat | None:
        f = self.flat(tv)
        return f if f is not None and (shape is None or f.shape == shape) else None

    def _source(self, node_id: str, input_nr: int) -> str | None:
        if self._inputs is None:
            self._inputs = {}
            for e in (self.doc.get("graph") or {}).get("edges") or []:
                if e.get("cut"):
                    continue
                if e.get("input_nr") is None:  # a leaf into its AccumulateGrad
                    self._behind[str(e.get("target"))] = str(e.get("source"))
                else:
                    self._inputs.setdefault(str(e.get("target")), {})[int(e["input_nr"])] = str(e.get("source"))
        return self._inputs.get(node_id, {}).get(input_nr)

    def _producer_value(self, source: str, consumer: str, nr: int, shape: tuple[int, ...] | None) -> Flat | None:
        producer = self.node(source)
        if producer is None:
            return None
        if producer.get("name") == "AccumulateGrad":
            leaf = self.node(self._behind.get(source, ""))
            return None if leaf is None else self._leaf_value(leaf, consumer, shape)
        outs = producer.get("output") or []
        fits = [k for k, o in enumerate(outs) if o and (shape is None or _shape(o) == shape)]
        if len(fits) > 1:
            fits = self._by_gradient(source, consumer, nr, fits)
        return self._fits(outs[fits[0]], shape) if len(fits) == 1 else None

    def _by_gradient(self, producer: str, consumer: str, nr: int, candidates: list[int]) -> list[int]:
        """Which of ``producer``'s outputs feeds ``consumer``'s input ``nr``: the one whose received
        gradient is, bit for bit, the gradient the consumer passed to that input (the edges name
        no output; a gradient several consumers summed matches none, and is left unread)."""
        passed = self._last_event(consumer)
        got = self._last_event(producer)
        if passed is None or got is None:
            return []
        gi = passed.get("grad_inputs") or []
        mine = self.flat(gi[nr]) if nr < len(gi) else None
        if mine is None:
            return []
        go = got.get("grad_outputs") or []
        out = []
        for k in candidates:
            theirs = self.flat(go[k]) if k < len(go) else None
            if theirs is not None and np.array_equal(np.asarray(theirs.values), np.asarray(mine.values)):
                out.append(k)
        return out

    def _last_event(self, node_id: str) -> JSON | None:
        if self._events is None:
            self._events = {}
            for ev in self.doc.get("events") or []:
                if ev.get("phase") == "backward":
                    self._events[str(ev.get("node"))] = ev
        return self._events.get(node_id)

    def _leaf_value(self, leaf: JSON, consumer: str, shape: tuple[int, ...] | None) -> Flat | None:
        start = self._fits(leaf.get("value"), shape)
        if start is None:
            return None
        if self._made_before_backward(consumer):
            return start
        end = self.flat(leaf.get("value_end"))
        if end is not None and end.shape == start.shape and np.array_equal(
                np.asarray(end.values), np.asarray(start.values), equal_nan=True):
            return start
        return None

    def _made_before_backward(self, node_id: str) -> bool:
        if self._made_at is None:
            self._made_at = {}
            self._first_backward = None
            for i, ev in enumerate(self.doc.get("events") or []):
                if ev.get("phase") == "backward":
                    if self._first_backward is None:
                        self._first_backward = i
                else:
                    self._made_at.setdefault(str(ev.get("node")), i)
        made = self._made_at.get(node_id)
        return made is not None and (self._first_backward is None or made < self._first_backward)
