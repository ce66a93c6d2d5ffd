"""A leaf's value around each change of its data (``Node.value_steps``): what an optimizer's
step did to a parameter, as two norms.

NOTE [a leaf's value around each step]
    The update:data ratio ‖Δw‖/‖w‖ of every optimizer step (``analysis/dynamics/``) needs the
    parameter before and after each step; the tensor file keeps its value at the start and
    the end of the run only. So, like gradient edits (NOTE [gradient edits] in gradedits.py),
    a step is found by what changed, never from a list of ops: after each backward call every
    leaf that got a gradient is looked at, and compared with its value at the look before
    (and once more when the document is built); where the values differ, ``{"at", "norm",
    "delta"}`` is written: ``at`` is ``len(grad_history)`` before the change was seen, ``norm``
    ‖w‖ before it and ``delta`` ‖w_after − w_before‖, both in the leaf's own dtype as torch
    computes them. Values are compared, not versions: ``p.data -= lr * p.grad`` writes
    without moving ``p``'s version counter. Only floating-point strided leaves are followed.
    It runs with or without a tensor file (two norms per step are what the series need), in
    Python for both kernel sets, so both write the same documents.

NOTE [comparing later, in one go]
    A look after a backward call only copies the leaves (one ``clone`` each, past autograd
    and the output tap's dispatch mode, outputs.py, which would otherwise see the recorder's
    own arithmetic); the comparisons wait until the document is built, or until the copies
    not yet compared pass ``PENDING_BYTES``, and then run for every waiting pair of every leaf
    at once: one subtraction, one norm and one read of all the norms. A 20-step loop then
    pays four tensor ops for its steps, not four per backward call (``bench/bench_dynamics.py``);
    a model whose leaves alone pass the bound is compared at every look, against its live
    values, as before. The numbers are the same either way: the same ``_foreach_norm`` of the
    same values. Memory: one copy of the followed leaves, plus at most ``PENDING_BYTES`` of
    copies waiting (and their differences while they are compared).

NOTE [one copy per look]
    A look takes one copy of all its leaves, not one per leaf: each contiguous leaf is seen
    through a flat view of its data (taken again only when its ``data_ptr()`` moves: ``p.data
    = ...``), and the views of leaves of one dtype and device are joined by one ``torch.cat``;
    when compared, the joined copy is split back into its leaves' parts (one
    ``split_with_sizes``), and a part a leaf keeps as its last value is cloned on its own, so
    it holds no more than itself. A look whose leaves differ in dtype or device, or that holds
    a non-contiguous leaf, copies each leaf (``clone``). Every copy is flat: the differences and
    norms are those of the same values in the same order (a contiguous leaf's norm reads its
    elements in their flat order either way). The norms become the document's float32 numbers
    in one conversion (``f32`` in valueleaves.py, in the core where the recorder runs on it:
    ``float32_values``, cxx/valuesteps.h), the same as ``str(np.float32(x))`` of each.

NOTE [the looks of a loop as one grid]
    A loop's looks copy the same leaves each time, so its waiting copies form a grid: one row
    per look (a joined copy), one column of elements per leaf. Compared, the grid is stacked
    once, its rows' differences taken in one subtraction, and each leaf's column reduced in
    one ``vector_norm`` over its rows: two reductions per leaf, not two per leaf and step.
    Each row of a column holds the same values in the same order as the flat copies compared
    one pair at a time, and a column at most ``GRID_MAX`` wide is reduced as those are (one
    thread, the same order), so the numbers are the same (``tests/capture/test_value_steps.py``
    compares both ways). Anything else waiting (leaves that joined other looks, a leaf seen
    alone, a look copied leaf by leaf) is compared one pair at a time.

NOTE [a loop's look in one check]
    A loop's looks see the same leaves, in the same order, each time. A look that took one
    copy of its leaves keeps them as a group (their flat views, ``data_ptr()``s and shapes);
    the next look of the same leaves, each with its data where it was, laid out as it was (the
    checks of the look leaf by leaf, each made for all of them in one ``map``), takes its copy
    through the group's views at once, and its parts wait in ``joined`` with their ``at``s,
    handed to the leaves only when compared as anything but a grid. Any other look (a leaf
    new, moved or gone, one more or one less) goes leaf by leaf and forgets the group. It runs
    after every backward call, where the loop's own code has just left the caches cold: each
    line it skips is one fewer miss (``bench/bench_dynamics.py``); where the recorder runs on
    the core, the check, the copy and the ``at``s of CPU leaves are one call (``LeafGroup``,
    cxx/valuesteps.h; the Python path is its twin).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import torch

from gradtrace.capture.valueleaves import (
    FIRST,
    FLAT,
    HISTORY,
    PTR,
    SECOND,
    SHAPE,
    Group,
    Leaf,
    as_tensor,
    copy_flat,
    f32,
    followed,
)

PENDING_BYTES = 8 << 20
"""Copies of the leaves that may wait to be compared (NOTE [comparing later, in one go])."""

GRID_MAX = 32768
"""The most elements of one leaf compared as a column of a grid (NOTE [the looks of a loop as
one grid]): torch reduces a row that long on one thread, in the order it reduces the same
values alone, so the norms are the same either way."""


class ValueSteps:
    """The followed leaves and their copies (NOTE [a leaf's value around each step], NOTE
    [comparing later, in one go], NOTE [one copy per look])."""

    def __init__(self) -> None:
        self.seen: dict[int, Leaf] = {}
        self.pending = 0
        """Bytes of copies waiting to be compared."""
        self.joined: list[tuple[torch.Tensor | np.ndarray, list[Leaf], list[int], list[int]]] = []
        """Each look's one copy of its leaves, not yet handed to them: the copy, its leaves, the
        parts' sizes and each leaf's ``at`` (NOTE [a loop's look in one check])."""
        self.group: Group | None = None
        """The leaves of the last look that took one copy (NOTE [a loop's look in one check])."""
        self.on = True
        """False: no leaf is followed (``gradtrace.record(dynamics=False)``)."""

    def accumulated(self, leaves: list[tuple[torch.Tensor, dict[str, Any]]]) -> int:
        """``leaves`` got a gradient in the backward call that just returned: each is looked
        at. Answers how many steps this look may write, at most (one per leaf looked at and
        seen before; the recorder charges them to the document's size as they are seen, an
        upper bound, before they are counted)."""
        if not self.on:
            return 0
        g = self.group
        if g is not None and self.pending + g.nbytes <= PENDING_BYTES and g.native is not None:
            hit = g.native.look(leaves)  # the check and the copy below, in the core
            if hit is not None:
                self.joined.append((hit[0], g.slots, g.sizes, hit[1]))
                self.pending += g.nbytes
                return len(hit[1])
        elif g is not None and self.pending + g.nbytes <= PENDING_BYTES:
            mine = list(map(FIRST, leaves))
            # NOTE [a loop's look in one check]: the group's leaves, each as the group saw it,
            # checked here and not in a method of the group (no frame for the line tracer)
            if (len(mine) == len(g.leaves) and all(map(operator.is_, mine, g.leaves))
                    and list(map(PTR, mine)) == g.ptrs and list(map(SHAPE, mine)) == g.shapes
                    and all(map(FLAT, mine))):
                # each leaf's history has its new gradient: ``at`` is its length less one
                ats = [n - 1 for n in map(len, map(HISTORY, map(SECOND, leaves)))]
                self.joined.append((np.concatenate(g.arrays) if g.arrays is not None else g.copy(), g.slots,
                                    g.sizes, ats))
                self.pending += g.nbytes
                return len(mine)
        return self._look([(leaf, doc, max(len(doc.get("grad_history") or []) - 1, 0)) for leaf, doc in leaves],
                          now=False)

    def final(self) -> None:
        """The last look, when the document is built: the step after the last backward, and
        every comparison still waiting."""
        if self.on:
            self._look([(s.leaf, s.doc, len(s.doc.get("grad_history") or [])) for s in self.seen.values()],
                       now=True)

    def _look(self, looks: list[tuple[torch.Tensor, dict[str, Any], int]], *, now: bool) -> int:
        """NOTE [comparing later, in one go]. One function, with no generator: it runs after
        every backward call, inside the snippet's line tracer (capture/timeline.py), which is
        called once more for each Python frame entered."""
        grad_was = torch.is_grad_enabled()  # no_grad's own context costs more than this look
        torch._C._set_grad_enabled(False)
        try:
            with torch._C._DisableTorchDispatch():
                self.group = None
                known: list[tuple[Leaf, int]] = []
                grow = 0
                for leaf, doc, at in looks:
                    s = self.seen.get(id(leaf))
                    if s is not None and s.leaf is leaf:
                        ptr = leaf.data_ptr()
                        if ptr == s.ptr and leaf.shape == s.shape and (s.flat is None or leaf.is_contiguous()):
                            # its data where it was, laid out as it was
                            known.append((s, at))
                            grow += s.nbytes
                            continue
                        if leaf.shape == s.shape and (leaf.dtype, leaf.device) == s.kind:
                            s.ptr = ptr
                            s.flat = leaf.view(-1) if leaf.is_contiguous() else None
                            known.append((s, at))
                            grow += s.nbytes
                            continue
                        self._compare(list(self.seen.values()), [])  # its data was replaced by another
                        del self.seen[id(leaf)]                      # shape or dtype: a new start
                    if followed(leaf):
                        self.seen[id(leaf)] = Leaf(leaf, doc)
                if now or self.pending + grow > PENDING_BYTES:
                    self._compare(list(self.seen.values()), known)
                elif known:
                    self._keep(known)
                    self.pending += grow
                return len(known)
        finally:
            torch._C._set_grad_enabled(grad_was)

    def _keep(self, known: list[tuple[Leaf, int]]) -> None:
        """A copy of each of ``known`` (NOTE [one copy per look])."""
        kind = known[0][0].kind
        flats: list[torch.Tensor] = []
        for s, _ in known:
            if s.flat is None or s.kind != kind:
                break
            flats.append(s.flat)
        if len(flats) < len(known) or len(known) == 1:
            self._settle()  # the copies waiting in a look's one copy come first
            for s, at in known:
                s.values.append(copy_flat(s.leaf))
                s.ats.append(at)
            return
        slots = [s for s, _ in known]
        group = Group(slots, flats)
        self.joined.append((torch.cat(flats), slots, group.sizes, [at for _, at in known]))
        self.group = group

    def _settle(self) -> None:
        """Each look's one copy waiting in ``joined`` handed to its leaves, part by part, in the
        order of the looks."""
        for whole, slots, sizes, ats in self.joined:
            for s, part, at in zip(slots, as_tensor(whole).split_with_sizes(sizes), ats, strict=True):
                s.values.append(part)
                s.ats.append(at)
        self.joined = []

    def _compare(self, waiting: list[Leaf], live: list[tuple[Leaf, int]]) -> None:
        """Every waiting pair of ``waiting``'s copies, then each of ``live`` against its value
        now, all at once (NOTE [comparing later, in one go]); each leaf keeps its last value."""
        if self._grid(waiting, live):
            return
        self._settle()
        befores: list[torch.Tensor] = []
        afters: list[torch.Tensor] = []
        owned: list[tuple[Leaf, int]] = []
        for s in waiting:
            for k, at in enumerate(s.ats):
                befores.append(s.values[k])
                afters.append(s.values[k + 1])
                owned.append((s, at))
        for s, at in live:
            befores.append(s.values[-1])
            afters.append(s.leaf.reshape(-1))
            owned.append((s, at))
        if owned:
            found = torch._foreach_norm([*torch._foreach_sub(afters, befores), *befores])
            if len({(x.dtype, x.device) for x in found}) == 1:  # one stack and one read (the usual case)
                raw = torch.stack(found).tolist()
            else:
                raw = torch.stack([x.to("cpu", torch.float64) for x in found]).tolist()
            norms = f32(raw)
            n = len(owned)
            for k, (s, at) in enumerate(owned):
                if raw[k] != 0:  # a change too small for its norm to tell is no step
                    s.doc.setdefault("value_steps", []).append({"at": at, "delta": norms[k], "norm": norms[n + k]})
        for s in waiting:
            s.values, s.ats = s.values[-1:], []
            last = s.values[0]
            if last is not None and last._base is not None:  # a part of a look's copy: it keeps no
                s.values[0] = last.clone()                     # more than itself
        if live:  # each one's last copy takes its live value
            torch._foreach_copy_([s.values[0] for s, _ in live], [s.leaf.reshape(-1) for s, _ in live])  # type: ignore[misc]
        self.pending = 0

    def _grid(self, waiting: list[Leaf], live: list[tuple[Leaf, int]]) -> bool:
        """NOTE [the looks of a loop as one grid]: True when every waiting copy is a part of a
        look's one copy of the same leaves (and ``live`` is those leaves, or none), and they
        were compared so."""
        if not self.joined:
            return False
        _, group, sizes, _ = self.joined[0]
        if max(sizes) > GRID_MAX:
            return False
        for _, theirs, their_sizes, _ in self.joined[1:]:
            if their_sizes != sizes or (theirs is not group and not all(map(operator.is_, theirs, group))):
                return False
        for s in waiting:
            if s.ats:  # a copy of its own waits: compared one pair at a time
                return False
        if live:
            if len(live) != len(group):
                return False
            for (a, _), b in zip(live, group, strict=True):
                if a is not b:
                    return False
        rows = [torch.cat([s.values[0] for s in group]), *(as_tensor(whole) for whole, _, _, _ in self.joined)]
        if live:
            rows.append(torch.cat([s.leaf.reshape(-1) for s in group]))
        values = torch.stack(rows)
        deltas, befores = values[1:] - values[:-1], values[:-1]
        columns: list[torch.Tensor] = []
        start = 0
        for n in sizes:
            columns.append(torch.linalg.vector_norm(deltas[:, start:start + n], dim=1))
            start += n
        start = 0
        for n in sizes:
            columns.append(torch.linalg.vector_norm(befores[:, start:start + n], dim=1))
            start += n
        found = torch.stack(columns)
        raw: list[float] = found.reshape(-1).tolist()
        norms = f32(raw)
        width, half = len(rows) - 1, len(group) * (len(rows) - 1)
        for j, s in enumerate(group):
            ats = [row[j] for _, _, _, row in self.joined]
            if live:
                ats.append(live[j][1])
            for k, at in enumerate(ats):
                i = j * width + k
                if raw[i] != 0:  # a change too small for its norm to tell is no step
                    s.doc.setdefault("value_steps", []).append({"at": at, "delta": norms[i], "norm": norms[half + i]})
        for s, part in zip(group, rows[-1].split_with_sizes(sizes), strict=True):
            s.values, s.ats = [part], []
        self.joined = []
        self.pending = 0
        return True
