"""The Python twin of the C++ core (``_native.Recorder``, ``_native.cpp``): the same kernels,
method for method, for machines where the core cannot be compiled.

NOTE [one recorder, two kernel sets]
    :class:`~gradtrace.capture.recorder.Recorder` is the only recorder. What must run once per
    autograd node (walking new nodes into entries, the backward hooks' event buffer, tensors
    to values and stats, the entries' and events' JSON) is a *core*: the C++ one when it is
    built (:mod:`gradtrace.capture.native`), else :class:`PyCore` here. Both answer the same
    calls with the same data; the tests run every capture test on both kernel sets
    (``GRADTRACE_KERNELS=python``) and compare them document to document
    (``tests/capture/test_native.py``). Each method below names its C++ twin. The twin writes
    JSON through the schema's canonical writer; the C++ core writes the same bytes itself.
"""

from __future__ import annotations

import threading
import weakref
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.autograd.graph import Node

from gradtrace.capture.graph import ACC_SEQ, describe_batch, leaf_of
from gradtrace.capture.odd_tensors import runs_python_ops
from gradtrace.capture.saved import KEPT, RUNNING_STATS, Private
from gradtrace.capture.unseen import unseen
from gradtrace.capture.values import encode
from gradtrace.schema import VALUES_LIMIT
from gradtrace.schema.canonical import TensorValueDict, canonical_json

OUTPUT_COST = 100
"""One of a node's several outputs' meta (``kOutputCost``, NOTE [what a node costs] in recorder.py)."""

KEPT_TRANSFORM = -1
"""``kept_dropped`` of a gradient held inside a ``torch.func`` transform (vmap, grad): its
wrapper has no memory of its own to keep, and the level is gone when the file is written; it
is left out with the reason ``transform`` (``kKeptTransform`` in cxx/values.h)."""
NARROW_VALUE_SAVING = 35
"""``kNarrowValueSaving``: NOTE [what a value costs] in recorder.py."""

NULL_LINE = -(2**31)
"""The core's ``None`` for a line number (an int32), as the C++ core passes it."""


@dataclass(slots=True)
class _Event:
    node: int
    pass_: int  # -1: a forward event
    line: int | None
    go: list[int] = field(default_factory=list)
    gi: list[int] = field(default_factory=list)
    grad: int = -1
    changes: list[int] = field(default_factory=list)  # before, after, before, after...


@dataclass(slots=True)
class _Pass:
    line: int | None
    task: int = -1
    outer: int = -1
    engine: bool = False
    executed: list[int] = field(default_factory=list)


@dataclass(slots=True)
class _Entry:
    node: Node
    doc: dict[str, Any]
    private: list[Private]
    acc: bool


def _saved_held(held: Any) -> tuple[torch.Tensor | None, int, int]:
    """What is held of a saved tensor no node made (``PyCore._hold_saved``): (the alias or
    None, its version when held, bytes not held), from the tap's slot or the tuple itself."""
    if isinstance(held, dict):  # ``OutputTap.hold_saved``'s slot: a Kept, or the bytes let go
        kept = held[0]
        if isinstance(kept, int):
            return None, -1, kept
        # a copy made before a write is the value as saved, at the copy's own version
        return kept.tensor, int(kept.tensor._version) if kept.copied else kept.version, 0
    return held  # type: ignore[no-any-return]


class _Value:
    """A captured tensor (``Value`` in ``cxx/values.h``): large ones reduced to stats at once,
    small ones copied, both encoded to TensorValues only when the document asks."""

    __slots__ = ("has", "held", "kept", "kept_copy", "kept_dropped", "kept_version", "numel", "with_",
                 "without")

    @unseen
    def __init__(self, t: torch.Tensor) -> None:
        self.kept: torch.Tensor | None = None
        """NOTE [kept tensors] in tensorfile.py: the tensor itself (``PyCore._keep``)."""
        self.kept_version = -1
        self.kept_copy = False
        self.kept_dropped = 0
        """Bytes not held: the keep budget was spent (NOTE [held within the budget] in tensorfile.py)."""
        self.held: torch.Tensor | None = None
        self.numel = 0
        self.has = False  # values to write (an empty tensor's are [], and cost nothing)
        if runs_python_ops(t):  # no op of a subclass runs (NOTE [tensor subclasses] in odd_tensors.py)
            self.without = self.with_ = encode(t, with_values=False)
            return
        if t.numel() <= VALUES_LIMIT:
            try:
                self.held = t.detach().clone()
                return
            except Exception:  # NOTE [every kind of tensor] in values.py: encode never raises
                pass
        self.without = self.with_ = encode(t, with_values=False)

    def encoded(self) -> None:
        if self.held is not None:
            self.with_ = encode(self.held)
            self.without = TensorValueDict(self.with_, values=None)  # the same stats
            self.has = self.with_["values"] is not None
            self.numel = self.held.numel() if self.has else 0
            self.held = None


def _version(t: torch.Tensor) -> int:
    try:
        return int(t._version)
    except RuntimeError:  # an inference tensor
        return -1


class PyCore:
    """``gradtrace::Recorder`` (``cxx/recorder.h``) in Python."""

    def __init__(self) -> None:
        self._mu = threading.Lock()
        self._entries: list[_Entry] = []
        self._pos: dict[int, int] = {}
        self._known: dict[Node, int] = {}
        self._by_index: dict[int, Node] = {}
        self._events: list[_Event] = []
        self._passes: list[_Pass] = []
        self._reported = 0
        self._active = -1
        self._values: list[_Value] = []
        self._cache: dict[int, tuple[weakref.ref[torch.Tensor], int | None, int]] = {}
        self._hook_changes: dict[Node, list[int]] = {}
        self._acc_events: list[tuple[int, int, int]] = []
        """(event, .grad version, .grad ``_cdata``) of AccumulateGrad events not yet taken."""
        self._acc_early: dict[int, tuple[int, int, int]] = {}
        """Leaf ``_cdata`` -> its .grad as the recorder's first post-accumulate hook captured
        it (value id, version, ``_cdata``): ``Core::acc_early``."""
        self._handles: list[Any] = []
        self._changes = 0
        self._activations = 0
        self._params: dict[int, int] = {}
        self._boundary = 0
        self._stopped = False
        self._enabled = True
        self._n_events = 0
        self._bytes_left = 0
        self._bytes_used = 0
        self._on_limit: Callable[[str], None] | None = None
        self._on_created: Callable[[int, int, list[torch.Tensor]], None] | None = None

    # ---------------------------------------------------------------- set-up and limits
    def configure(self, max_events: int, cost_event: int, cost_value: int, events_message: str,
                  bytes_message: str, on_limit: Callable[[str], None], on_created: Any,
                  max_nodes: int, nodes_message: str, cost_node: int, cost_saved: int,
                  cost_edge: int, parameter: type, line_steps: tuple[list[int], list[Any]],
                  module_steps: tuple[list[int], list[Any]]) -> None:
        del parameter  # the C++ walk is given nn.Parameter; saved.parameter_of knows it
        self._line_steps, self._module_steps = line_steps, module_steps
        self._max_events, self._cost_event, self._cost_value = max_events, cost_event, cost_value
        self._events_message, self._bytes_message = events_message, bytes_message
        self._on_limit, self._on_created = on_limit, on_created
        self._max_nodes, self._nodes_message = max_nodes, nodes_message
        self._cost_node, self._cost_saved, self._cost_edge = cost_node, cost_saved, cost_edge

    def sync_bytes(self, budget: int) -> int:
        """The bytes the hooks added since the last call; ``budget`` less those is left."""
        with self._mu:
            used = self._bytes_used
            self._bytes_left, self._bytes_used = budget - used, 0
            return used

    def set_boundary(self, seq: int) -> None:
        self._boundary = seq

    def stop(self) -> None:
        self._stopped = True

    def set_active(self, index: int) -> None:
        self._active = index

    # ---------------------------------------------------------------- discovery (walk.h, recorder.h)
    def discover(self, roots: list[Node], read_saved: bool, first_index: int, bytes_left: int,
                 created_in_pass: int | None, tracer_active: bool, line: int | None,
                 stack_module: Any, seq_mark: int | None,
                 hooks: bool) -> tuple[int, list[Any], int, str | None]:
        """``Recorder::discover``: walk, place (line and module by sequence number, an
        AccumulateGrad taking its consumer's), limit and register the new nodes."""
        (line_seqs, line_values), (mod_seqs, mod_values) = self._line_steps, self._module_steps
        n_fns = len(self._entries)
        batch = describe_batch(roots, self._known, read_saved_tensors=read_saved,
                               first_index=first_index, boundary=self._boundary,
                               capture=self.capture_saved)
        if not batch:
            return 0, [], 0, None
        places: list[tuple[int | None, Any]] = [(None, None)] * len(batch)
        nxt: tuple[int | None, Any] = (line, None)
        for r in range(len(batch) - 1, -1, -1):
            seq = batch[r][4]
            if seq == ACC_SEQ:
                places[r] = nxt
                continue
            if created_in_pass is not None:
                nxt = (line, None)
            elif tracer_active:
                nxt = (line_values[bisect_right(line_seqs, seq) - 1],
                       mod_values[bisect_right(mod_seqs, seq) - 1])
            elif seq_mark is None or seq >= seq_mark:
                nxt = (line, stack_module)
            else:
                nxt = (None, None)
            places[r] = nxt
        leaves: list[Any] = []
        used, recorded, stopped = 0, 0, None
        for k, ((node, doc, private, edges, _, acc), (n_line, module)) in enumerate(
                zip(batch, places, strict=True)):
            index = first_index + k
            if index >= self._max_nodes:
                stopped = self._nodes_message
                break
            outputs = doc.get("outputs") or []  # NOTE [what a node costs] in recorder.py
            cost = (self._cost_node + len(doc["name"]) + 8 * len(doc["shape"] or [])
                    + (OUTPUT_COST * len(outputs) if len(outputs) > 1 else 0)
                    + self._cost_saved * len(doc["saved"])
                    + self._cost_edge * len(edges)
                    + (len(module.stack_json) + 16 if module is not None else 0)
                    + (len(canonical_json(doc["saved_args"])) + 14 if "saved_args" in doc else 0))
            if used + cost > bytes_left:
                stopped = self._bytes_message
                break
            used += cost
            doc["line"], doc["module"] = n_line, None
            if module is not None:
                doc["module"], doc["module_stack"] = str.__str__(module), module.stack
            doc["seq"] = n_fns + k
            doc["created_in_pass"] = created_in_pass
            doc["edges"] = edges
            self._register(node, index, n_line, hooks, acc, doc["name"] == "BackwardHookFunctionBackward")
            for s, (param, _) in zip(doc["saved"], private, strict=True):
                if param is not None:
                    self._params.setdefault(id(param), s["bytes"])
                else:
                    self._activations += s["bytes"]
            if acc:
                leaves.append((leaf_of(node), f"n{index}", n_line))
            self._pos[index] = len(self._entries)
            self._entries.append(_Entry(node, doc, private, acc))
            recorded += 1
        return recorded, leaves, used, stopped

    def _register(self, node: Node, index: int, line: int | None, hooks: bool, acc: bool,
                  relay: bool) -> None:
        with self._mu:
            self._known[node] = index
            self._by_index[index] = node
            self._events.append(_Event(index, -1, line))
            if hooks:
                def hook(grad_inputs: Any, grad_outputs: Any) -> None:
                    self._on_done(node, index, acc, relay, grad_inputs, grad_outputs)
                self._handles.append(node.register_hook(hook))

    def index_of(self, node: Node) -> int:
        return self._known.get(node, -1)

    def infos(self, start: int) -> list[tuple[Node, bytes, list[Private], bool]]:
        return [(e.node, self._entry_json(e), e.private, e.acc) for e in self._entries[start:]]

    def changes(self) -> int:
        return self._changes

    def set_var(self, index: int, name: str) -> None:
        """``set_var`` (``cxx/recorder.h``): the first variable given stays."""
        self._entry_at(index).doc.setdefault("var", name)

    @staticmethod
    def _entry_json(e: _Entry, saved: list[dict[str, Any]] | None = None) -> bytes:
        """The entry's JSON; ``saved``: its saved tensors with their values (``nodes_json``),
        else without them (``infos``, as ``write_entry`` in ``cxx/entries.h``)."""
        if saved is None:
            saved = [{k: v for k, v in s.items() if k != "value"} for s in e.doc["saved"]]
        saved = [{k: v for k, v in s.items() if k != KEPT} if KEPT in s else s for s in saved]
        return canonical_json({k: v for k, v in e.doc.items() if k != "edges"} | {"saved": saved})

    def _entry_at(self, index: int) -> _Entry:
        pos = self._pos.get(index)
        if pos is None:
            raise IndexError(f"not a function node recorded by the core: n{index}")
        return self._entries[pos]

    def nodes_json(self, a: int, b: int, budget: int) -> tuple[bytes, int]:
        """``nodes_json`` (``cxx/recorder.h``): saved values spend ``budget`` in node order
        (NOTE [saved values] in saved.py)."""
        parts = []
        for i in range(a, b):
            e = self._entry_at(i)
            saved = []
            for s in e.doc["saved"]:
                if "value" in s:
                    value, budget = self._spend(s["value"], budget)
                    s = s | {"value": value}
                saved.append(s)
            parts.append(self._entry_json(e, saved))
        return b",".join(parts), budget

    def edges_json(self, a: int, b: int) -> bytes:
        edges = [e for i in range(a, b) for e in self._entry_at(i).doc["edges"]]
        return canonical_json(edges)[1:-1]

    # ---------------------------------------------------------------- passes and hooks (core.h)
    def begin_pass(self, line: int | None) -> int:
        with self._mu:
            self._passes.append(_Pass(line))
            return len(self._passes) - 1

    def _pass_for(self, task: int) -> int:
        if self._active >= 0:
            p = self._passes[self._active]
            if p.task in (-1, task):
                p.task = task
                return self._active
        for i in range(len(self._passes) - 1, -1, -1):
            if self._passes[i].task == task:
                return i
        outer = self._active  # a backward the recorder did not start (reentrant checkpoint)
        line = self._passes[outer].line if outer >= 0 else None
        self._passes.append(_Pass(line, task=task, outer=outer, engine=True))
        return len(self._passes) - 1

    def new_engine_passes(self) -> list[tuple[int, int]]:
        with self._mu:
            out = [(i, p.outer) for i, p in enumerate(self._passes[self._reported:], self._reported)
                   if p.engine]
            self._reported = len(self._passes)
            return out

    def _on_done(self, node: Node, index: int, acc: bool, relay: bool, gi: Any, go: Any) -> None:
        """``Core::on_done``: one node executed in a backward pass."""
        if not self._enabled or self._stopped:
            return
        limit, created, p, line = None, [], -1, None
        with self._mu, torch._C.DisableTorchFunction():
            if not self._enabled or self._stopped:
                return
            p = self._pass_for(torch._C._current_graph_task_id())
            line = self._passes[p].line
            # NOTE [what a value costs] in recorder.py
            values_cost = sum(self._value_cost(g) for g in (*go, *gi))
            if acc:
                values_cost += 2 * (self._value_cost(go[0]) if go and go[0] is not None
                                    else self._cost_value)
            self._n_events += 1
            self._bytes_used += self._cost_event + values_cost
            if self._n_events > self._max_events:
                limit = self._events_message
            elif self._bytes_used > self._bytes_left:
                limit = self._bytes_message
            if limit is not None:
                self._stopped = True
            else:
                ev = _Event(index, p, line, [self._capture(g) for g in go],
                            [self._capture(g) for g in gi])
                if acc:
                    leaf = leaf_of(node)
                    early = self._acc_early.pop(leaf._cdata, None) if leaf is not None else None
                    seen = (len(self._events), -1, 0)
                    if early is not None:
                        ev.grad = early[0]
                        seen = (len(self._events), early[1], early[2])
                    elif leaf is not None and leaf.grad is not None:
                        g = leaf.grad
                        ev.grad = self._capture(g)
                        seen = (len(self._events), g._version, g._cdata)
                    self._acc_events.append(seen)
                    for vid in (*ev.go, ev.grad):
                        self._keep_copy(vid)
                ev.changes = self._hook_changes.pop(node, [])
                if relay:  # NOTE [module backward hooks] in gradedits.py
                    for before, after in zip(go, gi, strict=False):
                        if before is not None and after is not None and before is not after:
                            ev.changes += [self._capture(before), self._capture(after)]
                self._passes[p].executed.append(index)
                self._events.append(ev)
                if self._on_created is not None and torch.is_grad_enabled():
                    created = [g for g in gi if g is not None and g.grad_fn is not None]
        if limit is not None and self._on_limit is not None:
            self._on_limit(limit)
        if created and self._on_created is not None:
            self._on_created(p, NULL_LINE if line is None else line, created)

    def _value_cost(self, g: torch.Tensor | None) -> int:
        """``Core::value_cost``: what a value adds to the document (NOTE [what a value costs])."""
        if g is None:
            return 0
        narrow = g.element_size() <= 4 and not g.is_complex()
        return self._cost_value - NARROW_VALUE_SAVING if narrow else self._cost_value

    def end_backward(self) -> None:
        with self._mu:
            self._cache.clear()

    def take_accumulations(self) -> list[tuple[torch.Tensor | None, int, int, int]]:
        with self._mu:
            taken = [(self._by_index[self._events[e].node], self._events[e].grad, v, c)
                     for e, v, c in self._acc_events]
            self._acc_events.clear()
        return [(leaf_of(node), grad, v, c) for node, grad, v, c in taken]

    def accumulated(self, leaf: torch.Tensor) -> None:
        """``Recorder::accumulated``: ``leaf.grad`` as accumulated, before the snippet's own
        post-accumulate hooks run."""
        with self._mu, torch._C.DisableTorchFunction():
            g = leaf.grad
            if g is None or not self._enabled or self._stopped:
                return
            self._acc_early[leaf._cdata] = (self._capture(g), g._version, g._cdata)

    def hook_change(self, before: torch.Tensor, after: torch.Tensor) -> None:
        node = torch._C._current_autograd_node()
        if node is None:
            return
        with self._mu, torch._C.DisableTorchFunction():
            self._hook_changes.setdefault(node, []).extend((self._capture(before), self._capture(after)))

    def close(self) -> None:
        with self._mu:
            self._enabled = False
            handles, self._handles = self._handles, []
            self._cache.clear()
            self._hook_changes.clear()
            self._acc_early.clear()
        for h in handles:
            h.remove()
        self._on_limit = self._on_created = None

    # ---------------------------------------------------------------- values (values.h)
    @unseen
    def capture(self, t: torch.Tensor) -> int:
        with self._mu, torch._C.DisableTorchFunction():
            return self._capture(t)

    def capture_saved(self, t: torch.Tensor, name: str = "") -> tuple[int, Any]:
        """A saved tensor's value id when it is small (NOTE [saved values] in saved.py), -1
        otherwise, and what is held of it for the tensor file (NOTE [saved tensors from no
        node]), None for nothing (``read_saved_into`` in ``cxx/walk.h``)."""
        # made by no node; a parameter once a backward pass has run (NOTE [a saved parameter copied])
        held = (self._hold_saved(t, copy=t.requires_grad or name in RUNNING_STATS)
                if t.is_leaf and (not t.requires_grad or self._passes) and self._keep_budget > 0 else None)
        if t.numel() > VALUES_LIMIT:
            return -1, held
        with self._mu, torch._C.DisableTorchFunction():
            return self._capture(t, keep=False), held

    @unseen
    def _hold_saved(self, t: torch.Tensor, *, copy: bool = False) -> Any:
        """``Walker::hold_saved``: NOTE [saved tensors from no node] in saved.py. With the tap,
        what it holds of ``t`` (``OutputTap.hold_saved``: a slot a gradient may let go of);
        without, (the alias or None, its version, bytes not held); None for nothing."""
        if runs_python_ops(t) or torch._C._functorch.is_functorch_wrapped_tensor(t):
            return None
        if t.layout != torch.strided or t.is_nested:
            return None
        nbytes = t.numel() * t.element_size()
        try:
            version = int(t._version)
        except RuntimeError:  # an inference tensor has no version counter
            version = -1
        with self._mu, torch._C.DisableTorchFunction():
            try:
                if copy and self._kept_bytes + nbytes <= self._keep_budget:
                    # NOTE [a saved parameter copied], [running statistics copied] in saved.py:
                    # copied now, past the tap
                    with torch._C._DisableTorchDispatch(), torch.no_grad():
                        t = t.detach().clone()
                    version = int(t._version)
                if self.tap is not None:
                    return self.tap.hold_saved(t, nbytes, version)
                if self._kept_bytes + nbytes > self._keep_budget:
                    return None, -1, nbytes if nbytes > 0 else 1
                alias = t.detach()  # shares the version counter
            except RuntimeError:  # a tensor that cannot be aliased: not held
                return None
            self._charge(nbytes)
            return alias, version, 0

    def saved_kept(self) -> list[tuple[int, str, torch.Tensor | None, int, int]]:
        """``Recorder::saved_kept``: (node index, saved name, alias, version, bytes not held)."""
        with self._mu:
            out = [(int(e.doc["id"][1:]), s["name"], *_saved_held(s[KEPT])) for e in self._entries
                   for s in e.doc["saved"] if KEPT in s]
        return [x for x in out if x[2] is not None or x[4]]  # let go once written: none

    def held_peak(self) -> int:
        """``Recorder::held_peak``: the most bytes held at once while recording."""
        return self._kept_peak

    def release_kept(self) -> None:
        """``Recorder::release_kept``: NOTE [each tensor let go once written] in tensorfile.py."""
        with self._mu:
            for e in self._entries:
                for s in e.doc["saved"]:
                    if KEPT in s:
                        _, version, dropped = _saved_held(s[KEPT])
                        s[KEPT] = (None, version, dropped)
            for v in self._values:
                v.kept = None
            self._kept_bytes = 0

    def _charge(self, nbytes: int) -> None:
        """``Core::charge``."""
        self._kept_bytes += nbytes
        if self._kept_bytes > self._kept_peak:
            self._kept_peak = self._kept_bytes

    def _capture(self, t: torch.Tensor | None, keep: bool = True) -> int:
        """``Core::capture``: a value id, the same one for a tensor met again unchanged."""
        if t is None:
            return -1
        try:
            version: int | None = t._version
        except RuntimeError:  # an inference tensor has no version counter
            version = None
        hit = self._cache.get(id(t))
        if hit is not None and hit[0]() is t and hit[1] == version:
            seen = self._values[hit[2]]
            if keep and seen.kept is None and not seen.kept_copy and not seen.kept_dropped:
                self._keep(seen, t, version)
            return hit[2]
        vid = len(self._values)
        self._values.append(_Value(t))
        self._cache[id(t)] = (weakref.ref(t), version, vid)
        if keep:
            self._keep(self._values[vid], t, version)
        return vid

    def set_keep_budget(self, nbytes: int) -> None:
        """``Recorder::set_keep_budget``: NOTE [held within the budget] in tensorfile.py."""
        self._keep_budget = nbytes

    _keep_budget = 0
    _kept_bytes = 0
    _kept_peak = 0
    tap: Any = None
    """The output tap (``outputs.OutputTap``) charging the same budget: NOTE [held within the
    budget] in tensorfile.py."""

    @unseen
    def _keep(self, v: _Value, t: torch.Tensor, version: int | None) -> None:
        """``Core::keep_alias``: NOTE [kept tensors] in tensorfile.py; a subclass or a functorch
        transform's wrapper is not kept; past the keep budget nothing is held (NOTE [held
        within the budget])."""
        if torch._C._functorch.is_functorch_wrapped_tensor(t):
            v.kept_dropped = KEPT_TRANSFORM
            return
        if runs_python_ops(t) or self._keep_budget <= 0:
            return
        nbytes = t.numel() * t.element_size() if t.layout == torch.strided and not t.is_nested else 0
        over = self._kept_bytes + nbytes - self._keep_budget
        if over > 0 and self.tap is not None:  # forward values yield to gradients (``Tap::evict``)
            self._kept_bytes -= self.tap.evict(over)
            over = self._kept_bytes + nbytes - self._keep_budget
        if over > 0:
            v.kept_dropped = nbytes if nbytes > 0 else 1
            return
        try:
            v.kept = t.detach()  # shares the version counter
        except RuntimeError:  # a tensor that cannot be aliased (forward-AD's): not kept
            return
        v.kept_version = -1 if version is None else version
        self._charge(nbytes)
        if self.tap is not None:  # NOTE [held gradients copied before a write] in cxx/tap.h
            self.tap.hold_value(v, t)

    @unseen
    def _keep_copy(self, vid: int) -> None:
        """``Core::keep_copy``: an AccumulateGrad's gradients, copied as captured."""
        if vid < 0:
            return
        v = self._values[vid]
        if v.kept is None or v.kept_copy:
            return
        try:
            now = v.kept._version
        except RuntimeError:
            now = -1
        if now != v.kept_version:
            v.kept = None
            return
        try:
            v.kept = v.kept.clone()
        except RuntimeError:
            v.kept = None
            return
        v.kept_copy = True

    def keep_copy(self, vid: int) -> None:
        with self._mu, torch._C.DisableTorchFunction():
            self._keep_copy(vid)

    def kept(self, vid: int) -> tuple[torch.Tensor | None, int, bool, int]:
        if vid < 0:
            return None, -1, False, 0
        v = self._values[vid]
        return v.kept, v.kept_version, v.kept_copy, v.kept_dropped

    def event_refs(self) -> list[tuple[int, list[int], list[int], int, list[int]]]:
        """``Recorder::event_refs``: each backward event's value ids."""
        with self._mu:
            return [(i, list(ev.go), list(ev.gi), ev.grad, list(ev.changes))
                    for i, ev in enumerate(self._events) if ev.pass_ >= 0]

    def held(self) -> list[tuple[int, torch.Tensor]]:
        return []  # the twin encodes every kind of tensor itself

    def numel_of(self, vid: int) -> int:
        if vid < 0:
            return 0
        v = self._values[vid]
        v.encoded()
        return v.numel

    def _value(self, vid: int, with_values: bool) -> Any:
        v = self._values[vid]
        v.encoded()
        return v.with_ if with_values else v.without

    def value(self, vid: int, with_values: bool) -> tuple[bytes, int]:
        if vid < 0:
            return b"null", 0
        return canonical_json(self._value(vid, with_values)), self.numel_of(vid)

    def _spend(self, vid: int, budget: int) -> tuple[Any, int]:
        """The TensorValue of ``vid`` (None for none) with its numbers when ``budget`` allows,
        and what is left of it."""
        if vid < 0:
            return None, budget
        n = self.numel_of(vid)
        if not self._values[vid].has:
            return self._value(vid, False), budget
        if n > budget:
            return self._value(vid, False), 0
        return self._value(vid, True), budget - n

    def events_json(self, budget: int) -> tuple[bytes, int]:
        """``events_json`` (``cxx/events.h``): values spend ``budget`` in document order."""
        def val(vid: int) -> Any:
            nonlocal budget
            value, budget = self._spend(vid, budget)
            return value

        out: list[dict[str, Any]] = []
        with self._mu:
            for ev in self._events:
                if ev.pass_ < 0:
                    out.append({"phase": "forward", "node": f"n{ev.node}", "pass": None,
                                "line": ev.line, "grad_outputs": None, "grad_inputs": None,
                                "grad": None, "changed_by_hook": False})
                    continue
                d: dict[str, Any] = {"phase": "backward", "node": f"n{ev.node}", "pass": ev.pass_,
                                     "line": ev.line, "grad_outputs": [val(v) for v in ev.go],
                                     "grad_inputs": [val(v) for v in ev.gi], "grad": val(ev.grad),
                                     "changed_by_hook": bool(ev.changes)}
                if ev.changes:
                    pairs = [(val(b), val(a)) for b, a in zip(ev.changes[::2], ev.changes[1::2],
                                                              strict=True)]
                    d["hook_changes"] = [{"before": b, "after": a} for b, a in pairs]
                out.append(d)
        return canonical_json(out), budget

    # ------------------------------------------- the tensor file's side in bulk (stats.h)
    def stats_json(self, ts: list[torch.Tensor]) -> list[bytes]:
        """``stats_json`` (``cxx/stats.h``): each tensor's TensorValue without values, as a
        captured value writes it (NOTE [the tensor file's side in bulk])."""
        out: list[bytes] = []
        with torch._C.DisableTorchFunction():
            for t in ts:
                v = _Value(t)
                v.encoded()
                out.append(canonical_json(v.without))
        return out

    def event_candidates(self, text: bytes, acc: list[int]) -> tuple[list[tuple[Any, ...]], int]:
        """``event_candidates`` (``cxx/stats.h``): each backward value's row for the tensor
        file, ``(key, offset of its key in text, tensor or None, bytes, class, reason)``, and
        the first event whose gradient in or out is not finite (-1: none). The offsets are
        found in ``text`` (NOTE [keys spliced into the core's JSON] in keysplice.py)."""
        from gradtrace.capture.candidates import GRADIENT, LEAF, candidate
        from gradtrace.capture.keysplice import EventsText

        refs = self.event_refs()
        events = EventsText(text, refs)
        accs = {f"n{a}" for a in acc}
        seen: dict[int, tuple[torch.Tensor | None, int, str | None]] = {}
        rows: list[tuple[Any, ...]] = []

        def row(i: int, name: str, vid: int, rank: int) -> None:
            at = events.slot(i, name)
            if at is None or vid < 0:
                return
            hit = seen.get(vid)
            if hit is None:
                v = self._values[vid]
                t = v.kept
                if t is None and v.kept_dropped > 0:  # NOTE [held within the budget] in tensorfile.py
                    hit = (None, v.kept_dropped, "budget")
                elif t is None and v.kept_dropped == KEPT_TRANSFORM:
                    hit = (None, 0, "transform")
                else:
                    changed = t is not None and not v.kept_copy and _version(t) != v.kept_version
                    c = candidate("", t, rank, reason="changed" if changed else None)
                    hit = (c.tensor, c.nbytes, c.reason)
                seen[vid] = hit
            rows.append((f"e{i}.{name}", at, *hit[:2], rank, hit[2]))

        for i, go, gi, grad, hc in refs:
            rank = LEAF if events.node[i] in accs else GRADIENT
            for k, vid in enumerate(go):
                row(i, f"go{k}", vid, rank)
            for k, vid in enumerate(gi):
                row(i, f"gi{k}", vid, GRADIENT)
            row(i, "grad", grad, LEAF)
            for k in range(len(hc) // 2):
                row(i, f"hb{k}", hc[2 * k], GRADIENT)
                row(i, f"ha{k}", hc[2 * k + 1], GRADIENT)
        first = events.first_nonfinite()
        return rows, -1 if first is None else first

    # ---------------------------------------------------------------- memory (recorder.h)
    def mark_freed(self, index: int) -> int:
        freed = 0
        for node_index in self._passes[index].executed:
            pos = self._pos.get(node_index)
            if pos is None:
                continue
            for s in self._entries[pos].doc["saved"]:
                if s["freed_after_pass"] is None:
                    s["freed_after_pass"] = index
                    self._changes += 1
                    if not s["is_parameter"]:
                        freed += s["bytes"]
        return freed

    def saved_total(self) -> int:
        return self._activations + sum(self._params.values())
