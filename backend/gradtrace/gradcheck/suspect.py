"""Where a wrong gradient comes from, and which node makes a kink.

NOTE [finding the suspect node]
    A failing check knows the gradient reaching the target (a leaf) is wrong; the loss's own
    gradient (1) is right. Along the path between them, each tensor a node produced can be
    checked the same way as the target: nudge it in the re-run along a seeded random direction
    ``v`` (a :class:`~gradtrace.gradcheck.probe.Nudge` of kind ``site``) and compare
    ``(f(t + h v) - f(t - h v)) / 2h`` with ``<dL/dt, v>`` from the baseline's graph: a
    vector-Jacobian check costing two executions. The node to blame is the one whose output
    gradient is right while the gradient it passes to its input is wrong. Custom Functions are
    checked first (where a wrong backward usually is: torch's own are tested); then a binary
    search over the remaining nodes of the path, ordered from the loss towards the target,
    finds the first wrong tensor in ``log2(path)`` checks. The search is bounded
    (``MAX_SITE_CHECKS``); when it runs out, the check says so rather than guessing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from gradtrace.analysis.gradcheck.verdict import blame, kink_reason, search_gave_up
from gradtrace.gradcheck.probe import Nudge, Probe, Site
from gradtrace.schema.gradcheck import GradcheckResult

MAX_SITE_CHECKS = 12
KINK_OPS = {
    "ReluBackward0", "AbsBackward0", "LeakyReluBackward0", "ThresholdBackward0", "HardtanhBackward0",
    "MaximumBackward0", "MinimumBackward0", "MaxBackward0", "MaxBackward1", "MinBackward0", "MinBackward1",
    "AmaxBackward0", "AminBackward0", "ClampBackward1", "ClampMinBackward0", "ClampMaxBackward0",
    "SortBackward0", "TopkBackward0", "MaxPool2DWithIndicesBackward0", "MedianBackward1",
}
"""Nodes whose function has points without a derivative (zeros, ties, bounds)."""

Execute = Callable[..., tuple[Probe, list[torch.Tensor]]]


def _node_of(t: torch.Tensor) -> Any:
    if t.grad_fn is not None:
        return t.grad_fn
    if not t.requires_grad:
        return None
    return t.view_as(t).grad_fn.next_functions[0][0]  # type: ignore[union-attr]


def _path(outputs: list[torch.Tensor], target: Any) -> set[Any]:
    """Nodes on some path from the outputs' nodes down to ``target``."""
    memo: dict[Any, bool] = {}
    stack = [o.grad_fn for o in outputs if o.grad_fn is not None]
    order: list[Any] = []
    seen: set[Any] = set()
    while stack:  # iterative post-order: graphs can be deep
        node = stack.pop()
        if node in seen:
            order.append(node)
            continue
        seen.add(node)
        stack.append(node)
        stack.extend(n for n, _ in node.next_functions if n is not None and n not in seen)
    for node in order:
        if node not in memo:
            memo[node] = node is target or any(memo.get(n, False) for n, _ in node.next_functions if n is not None)
    return {n for n, ok in memo.items() if ok}


def occurrence(node: Any, nodes: set[Any]) -> int:
    same = sorted((n for n in nodes if n.name() == node.name()), key=lambda n: n._sequence_nr())
    return same.index(node) if node in same else 0


def all_nodes(outputs: list[torch.Tensor]) -> set[Any]:
    seen: set[Any] = set()
    stack = [o.grad_fn for o in outputs if o.grad_fn is not None]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        stack.extend(m for m, _ in n.next_functions if m is not None)
    return seen


def explain(out: GradcheckResult, outputs: list[torch.Tensor], probe: Probe, targets: list[Any],
            rows: torch.Tensor, direction: torch.Tensor | None, execute: Execute, upcast: bool) -> None:
    """Add the kink's node to the kink reason, and the suspect to a failing result."""
    worst = out.worst_element()
    if worst is None:
        return
    target = targets[worst.tensor]
    path = _path(outputs, _node_of(target.tensor))
    every = all_nodes(outputs)
    if out.kinks:
        node = _kink_node(probe.sites, path)
        out.reasons.append(kink_reason(out, node.name() if node is not None else None,
                                       occurrence(node, every) if node is not None else None))
    if out.verdict != "fail" or out.suspect is not None:
        return
    row = rows[worst.output or 0]
    sites = [s for s in probe.sites if s.tensor.grad_fn in path]
    if not sites or not row.requires_grad:
        return
    grads = torch.autograd.grad(row, [s.tensor for s in sites], retain_graph=True, allow_unused=True)
    analytic = {id(s): g for s, g in zip(sites, grads, strict=True)}
    verdicts: dict[int, bool] = {}
    budget = [MAX_SITE_CHECKS]

    def right(s: Site) -> bool | None:
        """Is the gradient reaching ``s``'s tensor right? None once the budget is spent."""
        if id(s) in verdicts:
            return verdicts[id(s)]
        if budget[0] <= 0:
            return None
        budget[0] -= 1
        g = torch.Generator().manual_seed(out.seed + s.call)
        v = torch.randn(s.tensor.shape, generator=g, dtype=torch.float64)
        h = out.eps
        fp = _value(execute(Nudge("site", (s.call, s.pos), h * v), up=upcast)[1], direction, worst.output)
        fm = _value(execute(Nudge("site", (s.call, s.pos), -h * v), up=upcast)[1], direction, worst.output)
        numeric = (fp - fm) / (2 * h)
        g_s = analytic[id(s)]
        a = 0.0 if g_s is None else float((g_s.to(torch.float64) * v).sum())
        verdicts[id(s)] = abs(a - numeric) <= out.atol + out.rtol * abs(numeric)
        return verdicts[id(s)]

    by_node = {s.tensor.grad_fn: s for s in sites}
    suspect = None
    for s in (s for s in sites if s.custom):  # custom Functions first
        if right(s):
            ins = [by_node.get(_node_of(t)) for _, t in s.inputs]
            bad = any(t is target.tensor for _, t in s.inputs) or any(i is not None and right(i) is False for i in ins)
            if bad:
                suspect = s.tensor.grad_fn
                break
    if suspect is None:
        chain = sorted((s for s in sites if not s.custom or id(s) not in verdicts),
                       key=lambda s: -s.tensor.grad_fn._sequence_nr())  # type: ignore[union-attr]
        lo, hi, first_wrong = 0, len(chain) - 1, len(chain)
        while lo <= hi:  # first index (from the loss) whose gradient is wrong
            mid = (lo + hi) // 2
            ok = right(chain[mid])
            if ok is None:
                return _give_up(out)
            if ok:
                lo = mid + 1
            else:
                first_wrong, hi = mid, mid - 1
        wrong_node = chain[first_wrong].tensor.grad_fn if first_wrong < len(chain) else _node_of(target.tensor)
        consumers = [n for n in path if any(m is wrong_node for m, _ in n.next_functions)]
        suspect = max(consumers, key=lambda n: n._sequence_nr()) if consumers else None
    if suspect is not None:
        site = by_node.get(suspect)
        custom = site.user if site is not None else False  # "your code": a Function the user defined
        out.suspect = blame(suspect.name(), occurrence(suspect, every), custom)


def _give_up(out: GradcheckResult) -> None:
    out.reasons.append(search_gave_up(MAX_SITE_CHECKS))


def _value(outputs: list[torch.Tensor], direction: torch.Tensor | None, row: int | None) -> float:
    flat = torch.cat([o.reshape(-1).to(torch.float64) for o in outputs]).detach()
    if direction is not None:
        return float((flat * direction).sum())
    return float(flat[row or 0])


def _kink_node(sites: list[Site], path: set[Any]) -> Any:
    """The kink's likely node: a kink-prone node on the path whose input holds an exact zero
    (relu, abs at 0), else the first kink-prone node on the path."""
    candidates = [s for s in sites if s.tensor.grad_fn in path and s.name in KINK_OPS]
    for s in candidates:
        if any(bool((t.detach() == 0).any()) for _, t in s.inputs):
            return s.tensor.grad_fn
    return candidates[0].tensor.grad_fn if candidates else None
