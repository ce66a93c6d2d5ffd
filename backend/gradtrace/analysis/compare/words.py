"""A comparison of two runs in words: the summary strip and the first divergence's sentence."""

from __future__ import annotations

from typing import Any

from gradtrace.analysis.numbers import sig
from gradtrace.schema.compare import Comparison, NodePair, OnlyNode, TensorDelta

_WHAT = {
    "value": "the value of",
    "grad_outputs": "the gradient received by",
    "grad_inputs": "the gradient produced by",
    "grad": "the accumulated .grad of",
}
_KEY_WORDS = {"line": "by line", "module": "by module call", "op": "by op and order",
              "place": "renamed, by their place among the parameters"}


def number(x: float | None) -> str:
    """Three significant digits, and a plain ``0`` (never ``-0``)."""
    return "0" if x == 0 else sig(x, 3)


def delta_words(delta: TensorDelta | None) -> str:
    if delta is None:
        return ""
    if delta.max_abs is None:
        return " (their non-finite values differ)"
    bound = "at least " if not delta.exact else ""
    return f" by {bound}{number(delta.max_abs)} at most (relative L2 {bound}{number(delta.rel_l2)})"


_ROLE_WORDS = {"root": "the output", "retained": "a retained tensor", "leaf": "a leaf", "cut": "a cut tensor"}


def node_words(name: str | None, line_a: int | None, line_b: int | None, role: str | None = None) -> str:
    where = ""
    if line_a is not None and line_b is not None and line_a != line_b:
        where = f" (line {line_a} in A, {line_b} in B)"
    elif line_a is not None:
        where = f" (line {line_a})"
    return f"{name or _ROLE_WORDS.get(role or '', 'an unnamed tensor')}{where}"


def divergence_sentence(phase: Any, pair: NodePair, what: Any, delta: TensorDelta | None,
                        role: str | None = None, iteration: int | None = None) -> str:
    """``iteration``: which iteration of a loop it is in (1, 2, …), for a run with several
    backward passes; None says nothing of it."""
    node = node_words(pair.name, pair.line_a, pair.line_b, role)
    of = f" of iteration {iteration}" if iteration is not None else ""
    if what == "shape":
        return f"In the forward pass{of}, {node} has shape {pair.shape_a} in A and {pair.shape_b} in B."
    where = "In the forward pass" if phase == "forward" else "In the backward pass"
    return f"{where}{of}, {_WHAT[what]} {node} differs{delta_words(delta)}."


def _only_words(nodes: list[OnlyNode], side: str) -> str:
    names = ", ".join(node_words(n.name, n.line, None) for n in nodes[:5])
    more = f" and {len(nodes) - 5} more" if len(nodes) > 5 else ""
    return f"{len(nodes)} node{'s' if len(nodes) != 1 else ''} only in {side}: {names}{more}."


def summary(c: Comparison) -> str:
    """The comparison in a few sentences, most important first."""
    out: list[str] = []
    keys = ", ".join(f"{n} {_KEY_WORDS[k]}" for k, n in c.keys_used.items() if n)
    paired = f"{len(c.pairs)} node{'s' if len(c.pairs) != 1 else ''} paired" + (f" ({keys})" if keys else "")
    if c.same_structure:
        out.append(f"Same graph: all {paired}.")
    else:
        out.append(f"{paired[0].upper()}{paired[1:]}.")
        if c.only_a:
            out.append(_only_words(c.only_a, "A"))
        if c.only_b:
            out.append(_only_words(c.only_b, "B"))
        renamed = [p for p in c.pairs if p.key == "place"]
        if renamed:
            shown = ", ".join(f"{p.name} → {p.name_b}" for p in renamed[:4]) + (
                f" and {len(renamed) - 4} more" if len(renamed) > 4 else "")
            out.append(f"{len(renamed)} parameter{'s' if len(renamed) != 1 else ''} renamed: {shown}.")
        changed = [p for p in c.pairs if p.shape_changed]
        if changed:
            out.append(f"{len(changed)} paired node{'s' if len(changed) != 1 else ''} changed shape.")
    order = c.backward_order
    if not order.same:
        out.append(f"The backward order differs from step {(order.first_difference or 0) + 1} "
                   f"({order.a_steps} steps in A, {order.b_steps} in B).")
    elif order.a_steps:
        out.append(f"The backward pass takes the same {order.a_steps} steps in both.")
    out.extend(_memory_words(c))
    grads = [p for p in c.pairs if p.grad is not None]
    moved = [p for p in grads if p.grad is not None and p.grad.beyond_tolerance]
    if c.first_divergence is None:
        out.append("No value or gradient differs beyond float32 tolerance.")
    else:
        out.append(f"First divergence: {c.first_divergence.sentence}")
        if grads:
            out.append(f"{len(moved)} of {len(grads)} paired nodes with gradients differ beyond tolerance.")
        # A leaf's AccumulateGrad (and often the op before it) carries the leaf's own change:
        # name the leaf, a tensor, when the figures tie.
        named = [p for p in moved if p.name != "AccumulateGrad"] or moved
        worst = max(named, key=lambda p: ((p.grad.rel_l2 or 0.0) if p.grad else 0.0, p.kind == "tensor"), default=None)
        if worst is not None and worst.grad is not None and worst.grad.rel_l2:
            out.append(f"The largest gradient change is at {node_words(worst.name, worst.line_a, worst.line_b)}: "
                       f"relative L2 {number(worst.grad.rel_l2)}.")
    return " ".join(out)


def size_words(n: int) -> str:
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def _memory_words(c: Comparison) -> list[str]:
    ma, mb = c.memory_a, c.memory_b
    out: list[str] = []
    if ma.peak != mb.peak:
        less, more = ("B", "A") if mb.peak < ma.peak else ("A", "B")
        out.append(f"Saved tensors peak at {size_words(ma.peak)} in A and {size_words(mb.peak)} in B: "
                   f"{less} keeps {size_words(abs(ma.peak - mb.peak))} less alive than {more}.")
    for side, m in (("A", ma), ("B", mb)):
        if m.recomputed:
            out.append(f"{side} recomputes {m.recomputed} checkpointed op{'s' if m.recomputed != 1 else ''} "
                       "in its backward.")
    return out
