"""One timeline for two runs: the steps the compare page's single transport walks.

A step of the comparison is a pair ``(event of A, event of B)``: an event of a paired node in
one run and the same node's event in the other (its forward event; its k-th backward call),
or an event only one run has (``None`` on the other side). A's events keep their order; each
event only B has comes right after the B event before it that is paired, so an inserted node
is stepped through where it happened. The page shows run A at step ``a + 1`` and run B at
step ``b + 1`` (a viewer's step k means its first k events happened), and a side with
``None`` stays where it was.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

Step = tuple[int | None, int | None]


def paired_events(events_a: list[dict[str, Any]], events_b: list[dict[str, Any]],
                  b_of: dict[str, str]) -> dict[int, int]:
    """A's event index → B's, for the events of paired nodes (k-th event of a phase with k-th)."""
    def by_node(events: list[dict[str, Any]]) -> dict[tuple[str, str], list[int]]:
        out: dict[tuple[str, str], list[int]] = defaultdict(list)
        for k, e in enumerate(events):
            out[(e["node"], e.get("phase", ""))].append(k)
        return out

    in_a, in_b = by_node(events_a), by_node(events_b)
    out: dict[int, int] = {}
    for (node, phase), ks in in_a.items():
        partner = b_of.get(node)
        if partner is None:
            continue
        for ka, kb in zip(ks, in_b.get((partner, phase), ()), strict=False):
            out[ka] = kb
    return out


def merged_steps(n_a: int, n_b: int, pairs: dict[int, int]) -> list[Step]:
    """The comparison's steps (see the module docstring) for runs of ``n_a`` and ``n_b`` events."""
    paired_b = set(pairs.values())
    # each unpaired event of B goes after the last paired event of B before it (or first)
    after: dict[int, list[int]] = defaultdict(list)
    last = -1
    for kb in range(n_b):
        if kb in paired_b:
            last = kb
        else:
            after[last].append(kb)
    where_b = {kb: ka for ka, kb in pairs.items()}
    hang: dict[int | None, list[int]] = defaultdict(list)
    for anchor, kbs in after.items():
        hang[where_b.get(anchor) if anchor >= 0 else None].extend(kbs)
    steps: list[Step] = [(None, kb) for kb in hang.get(None, ())]
    for ka in range(n_a):
        steps.append((ka, pairs.get(ka)))
        steps.extend((None, kb) for kb in hang.get(ka, ()))
    return steps
