"""The tensor file's oracle: what each op returned and what flowed in each backward event, taken
in a separate bare run (same code, same seed) by means independent of the recorder.

* Forward outputs: a ``TorchDispatchMode`` of the test's own clones every output of each op that
  made a node, at once (no reference held, no copy-on-write), by the node's autograd sequence
  number counted from the block's start.
* Saved tensors no node made: the same mode reads each new node's ``_saved_*`` attributes
  (autograd's own unpacking) when it files its outputs, and clones those without gradient.
* Gradients: before each backward call, a post hook (``Node.register_hook``) on every node
  reachable from its roots clones its grad_inputs and grad_outputs, in the engine's order.

The recorded run's kept tensors (``doc.tensor(key)``) must be bit-equal (same dtype, same
bits, NaN where NaN) to these.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import gradtrace
from gradtrace.analysis.kept import saved_key

_seq = torch._C._autograd._get_sequence_nr


_WRAPPED = {float: torch.float64, int: torch.int64, complex: torch.complex128, bool: torch.bool}


def _scalars_as_tensors(func: Any, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """``args`` with Python numbers where ``func`` takes a Tensor made 0-dim tensors of the
    wrapped number's dtype again, or None: a dispatch mode is handed autograd's wrapped numbers
    (the 3 of ``3 * x``) as Python numbers, and an op that takes one as its tensor ``self``
    (``detach``, when the recorder reads that saved value) fails to bind it."""
    schema = func._schema.arguments
    out = list(args)
    changed = False
    for i, a in enumerate(args):
        if i < len(schema) and isinstance(a, bool | int | float | complex) and str(schema[i].type) == "Tensor":
            out[i] = torch.tensor(a, dtype=_WRAPPED.get(type(a)))
            changed = True
    return tuple(out) if changed else None


def _clone(t: Any) -> torch.Tensor | None:
    return t.detach().clone() if isinstance(t, torch.Tensor) else None


class _Outputs(TorchDispatchMode):
    """Clones every op's outputs at once; at the next op (autograd has set their history by
    then) files each clone under its tensor's node (``grad_fn``, ``output_nr``), or, for a view
    (a new tensor above this mode), under the node made just before its op."""

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return True  # else torch.compile keeps eager semantics for it (as for the recorder's tap)

    def __init__(self, base: int) -> None:
        super().__init__()
        self.base = base
        self.last = _seq()
        self.pending: list[tuple[Any, torch.Tensor, int, int, bool]] = []
        self.by_seq: dict[int, dict[int, torch.Tensor]] = {}
        self.saved: dict[tuple[int, str], torch.Tensor] = {}
        self._read: set[int] = set()
        self.later: list[tuple[Any, str, int, int]] = []
        """Saved outputs not yet set when their node was first read: (node, attribute, its
        sequence number, reads left)."""
        self.backward = 0
        """How many backward calls are running now."""

    def _saved(self, node: Any, rel: int) -> None:
        """``node``'s saved tensors that no node made (data, parameters), by (sequence number, name)."""
        if rel in self._read:
            return
        self._read.add(rel)
        for attr in [*dir(node), "saved_tensors"]:  # a custom Function's (a compiled one's) too
            if not attr.startswith(("_saved_", "saved_tensors")) or "_sym_" in attr:
                continue
            try:
                value = getattr(node, attr)
            except Exception:
                continue
            name = attr.removeprefix("_saved_")
            if value is None and attr.startswith("_saved_result"):
                # an output the node saves after the op returned, while its autograd kernel
                # still runs (``_ctc_loss``'s ``log_alpha``): read again at the next ops
                self.later.append((node, attr, rel, 3))
                continue
            self._keep(rel, name, value)

    def _keep(self, rel: int, name: str, value: Any) -> None:
        items = [(name, value)] if isinstance(value, torch.Tensor) else (
            [(f"{name}[{i}]", v) for i, v in enumerate(value)] if isinstance(value, tuple | list) else [])
        for label, v in items:
            # a parameter too (NOTE [a saved parameter copied] in capture/saved.py), cloned
            # here before the next op, an optimizer's write among them, can change it
            if type(v) in (torch.Tensor, torch.nn.Parameter) and (not v.requires_grad or v.is_leaf):
                self.saved[(rel, label)] = v.detach().clone()

    def _read_later(self) -> None:
        waiting, self.later = self.later, []
        for node, attr, rel, tries in waiting:
            try:
                value = getattr(node, attr)
            except Exception:
                continue
            if value is not None:
                self._keep(rel, attr.removeprefix("_saved_"), value)
            elif tries > 1:
                self.later.append((node, attr, rel, tries - 1))

    def file(self) -> None:
        if self.later:
            self._read_later()
        for t, clone, seq, k, hooked in self.pending:
            if not t._is_view() and t.grad_fn is not None:
                rel = int(t.grad_fn._sequence_nr()) - self.base
                self.by_seq.setdefault(rel, {}).setdefault(t.output_nr, clone)
                if not hooked:
                    self._saved(t.grad_fn, rel)
            elif seq >= 0:
                self.by_seq.setdefault(seq - self.base, {}).setdefault(k, clone)
        self.pending.clear()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if torch.compiler.is_compiling():  # dynamo's tracing: fake tensors
            return func(*args, **(kwargs or {}))
        self.file()
        out = func(*args, **(kwargs or {}))
        now = _seq()
        made = now - 1 if now != self.last else -1
        self.last = now
        outs = out if isinstance(out, tuple | list) else (out,)
        # unpacking would run a checkpoint's (or the user's) unpack hook; a backward pass's
        # recomputation is no node the document compares
        hooked = self.backward > 0 or torch._C._autograd._top_saved_tensors_default_hooks(False) is not None
        for k, t in enumerate(outs):
            if type(t) is torch.Tensor:
                self.pending.append((t, t.detach().clone(), made, k, hooked))
        return out


@dataclass
class Bare:
    outputs: dict[int, dict[int, torch.Tensor]] = field(default_factory=dict)
    saved: dict[tuple[int, str], torch.Tensor] = field(default_factory=dict)
    events: list[tuple[str, list[torch.Tensor | None], list[torch.Tensor | None]]] = field(default_factory=list)


def _reachable(roots: list[Any]) -> list[Any]:
    seen: dict[Any, None] = {}
    stack = [r for r in roots if r is not None]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen[n] = None
        stack += [f for f, _ in n.next_functions if f is not None]
    return list(seen)


def bare_run(code: str, seed: int = 0) -> Bare:
    """Run ``code`` without gradtrace, keeping the oracle's tensors."""
    found = Bare()
    hooked: set[Any] = set()
    orig = torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad

    def hook_all(tensors: Any) -> None:
        ts = tensors if isinstance(tensors, tuple | list) else [tensors]
        for n in _reachable([t.grad_fn for t in ts if isinstance(t, torch.Tensor)]):
            if n in hooked:
                continue
            hooked.add(n)
            name = n.name().removeprefix("torch::autograd::")

            def post(gi: Any, go: Any, name: str = name) -> None:
                found.events.append((name, [_clone(g) for g in gi], [_clone(g) for g in go]))
            n.register_hook(post)

    def inside(call: Any, *a: Any, **k: Any) -> Any:
        tap.backward += 1
        try:
            return call(*a, **k)
        finally:
            tap.backward -= 1

    def backward(self: torch.Tensor, *a: Any, **k: Any) -> Any:
        hook_all(self)
        return inside(orig[0], self, *a, **k)

    def autograd_backward(tensors: Any, *a: Any, **k: Any) -> Any:
        hook_all(tensors)
        return inside(orig[1], tensors, *a, **k)

    def autograd_grad(outputs: Any, *a: Any, **k: Any) -> Any:
        hook_all(outputs)
        return inside(orig[2], outputs, *a, **k)

    torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad = (  # type: ignore[method-assign,assignment]
        backward, autograd_backward, autograd_grad)
    tap = _Outputs(_seq())
    try:
        torch.manual_seed(seed)
        ns: dict[str, Any] = {"__name__": "__main__"}
        with tap, contextlib.suppress(Exception):  # a lesson that ends in autograd's error
            exec(compile(code, "<snippet>", "exec"), ns)
        tap.file()
        found.outputs = tap.by_seq
        found.saved = tap.saved
    finally:
        torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad = orig  # type: ignore[method-assign]
    return found


class _PassThrough(TorchDispatchMode):
    """A dispatch mode that changes nothing but being there.

    NOTE [the oracle's own mode]: any Python dispatch mode changes which ops some programs
    run (``reshape`` becomes ``view`` instead of ``_reshape_alias`` while one is active, so the
    graph has ``ViewBackward0`` where the plain program has ``ReshapeAliasBackward0``). The
    oracle's bare run has one (``_Outputs``); the recorded run gets this one, so both run the
    same ops. The C++ core's tap is no Python mode (NOTE [the tap in C++] in
    capture/cxx/tap.h): without this, the recorded run would be the plain program and the
    oracle's would not."""

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return True

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        try:
            return func(*args, **(kwargs or {}))
        except (RuntimeError, TypeError):
            # a dispatch mode is handed autograd's wrapped numbers (the 3 of ``3 * x``) as
            # Python numbers; an op that takes one as its tensor (``detach``, when the
            # recorder reads that saved value) is given it as the 0-dim tensor it was
            fixed = _scalars_as_tensors(func, args)
            if fixed is None:
                raise
            return func(*fixed, **(kwargs or {}))


def recorded_run(code: str, *, native: bool, seed: int = 0, **kw: Any) -> tuple[Any, Any, int]:
    """(document, recorder, sequence number at the start) of ``code`` recorded in process,
    under NOTE [the oracle's own mode]."""
    torch.manual_seed(seed)
    ns: dict[str, Any] = {"__name__": "__main__"}
    base = _seq()
    with contextlib.suppress(Exception), gradtrace.record(native=native, _filename="<snippet>", _namespace=ns,
                                                         _fresh=True, **kw) as rec, _PassThrough():
        exec(compile(code, "<snippet>", "exec"), ns)
    return rec.document(), rec.recorder, base


def same(a: Any, b: Any) -> bool:
    """Bit-equal: same dtype and shape, equal elements, NaN where NaN."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return False
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(torch.equal(torch.isnan(a), torch.isnan(b))
                    and torch.equal(torch.nan_to_num(a, nan=0.0), torch.nan_to_num(b, nan=0.0)))
    return bool(torch.equal(a, b))


def check(code: str, *, native: bool) -> dict[str, int]:
    """Compare every kept tensor of a recorded run of ``code`` with the bare oracle; returns
    counts (``outputs``/``grads``/``saved`` compared, ``functions`` recorded, ``with_output``)."""
    bare = bare_run(code)
    doc, rec, base = recorded_run(code, native=native)
    counts = {"outputs": 0, "grads": 0, "saved": 0, "functions": 0, "with_output": 0}
    held = rec.tensor_file.tensors if rec.tensor_file is not None else {}
    infos = rec.fn_by_id
    for node in doc.graph.nodes:
        if node.kind != "function" or node.name == "AccumulateGrad":
            continue
        # a node a create_graph pass made (a gradient penalty's): its output is what the op
        # returned in that pass, which the oracle's mode sees as it sees the forward's
        made_in_backward = node.created_in_pass is not None
        counts["functions"] += 1
        counts["made_in_backward"] = counts.get("made_in_backward", 0) + made_in_backward
        rel = int(infos[node.id].node._sequence_nr()) - base
        for k, tv in enumerate(node.output or []):
            if tv is None or tv.key is None:
                continue
            want = bare.outputs.get(rel)
            assert want is not None and k in want, f"{node.id} {node.name}: no oracle output #{k}"
            got = doc.tensor(tv.key)
            assert same(got, want[k]), f"{tv.key} ({node.name}) differs from what the op returned"
            counts["outputs"] += 1
        if node.output and node.output[0] is not None and node.output[0].key:
            counts["with_output"] += 1
        # NOTE [saved tensors from no node] in capture/saved.py; a backward pass's nodes' saved
        # tensors are not unpacked by the oracle's mode there
        for entry in node.saved if not made_in_backward else ():
            key = saved_key(node.id, entry.name)
            if key not in held:
                continue
            want = bare.saved.get((rel, entry.name))
            assert want is not None, f"{key} ({node.name}): the bare run's node saved no such tensor that no node made"
            assert same(doc.tensor(key), want), f"{key} ({node.name}) differs from what autograd saved"
            counts["saved"] += 1
    if doc.folded:
        # torch's own checks (gradcheck's many passes) are folded into one entry of the
        # document (NOTE [torch's own checks are folded] in capture/folded.py): its events
        # are not the engine's whole list, so they cannot be lined up with the bare run's
        return counts
    backward = [e for e in doc.events if e.phase == "backward"]
    names = {n.id: n.name for n in doc.graph.nodes}
    flowed = bare.events
    if "CompiledFunctionBackward" in names.values():
        # the bare run's hooks also fire on the nodes a compiled function's eager backward
        # (``aot_eager``) makes and runs inside it; the recorded events are the engine's, in
        # the same order: matched as a subsequence
        it = iter(flowed)
        flowed = [next(b for b in it if b[0] == names[e.node]) for e in backward]
    assert [names[e.node] for e in backward] == [n for n, _, _ in flowed]
    index = [i for i, e in enumerate(doc.events) if e.phase == "backward"]
    for i, e, (_, gi, go) in zip(index, backward, flowed, strict=True):
        for part, tvs, want in (("gi", e.grad_inputs or [], gi), ("go", e.grad_outputs or [], go)):
            for k, tv in enumerate(tvs):
                if tv is None or tv.key is None:
                    continue
                assert tv.key == f"e{i}.{part}{k}"
                assert same(doc.tensor(tv.key), want[k]), f"{tv.key} ({names[e.node]}) differs from what flowed"
                counts["grads"] += 1
    return counts
