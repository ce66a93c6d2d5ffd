"""Hints about reshaping: a ``view`` or ``reshape`` written where a transpose was meant.

NOTE [a view that was meant as a transpose]
    ``x.view(B, C, T)`` of an ``x`` shaped ``[B, T, C]`` runs and gives the shape a transpose
    would, but not its contents: a view keeps the elements in memory order, so row ``i`` of the
    result holds the next ``T`` numbers of that order (token 0's first channels, then ...),
    not channel ``i`` across the tokens. Nothing fails, and the model trains on scrambled
    data. The document shows it: a view node (``ViewBackward0``, ``UnsafeViewBackward0``,
    ``ReshapeAliasBackward0``) whose output shape is its input's dims in another order (three
    dims or more, the first kept, two sizes or more moved), made on a line that calls
    ``.view(`` or ``.reshape(`` itself (a library layer's own views, ``nn.Linear`` flattening
    its input, are made on the line that calls the layer). Splitting or merging dims (heads of
    attention, patches, flattening) changes the multiset of sizes and stays silent.
    ``tests/capture/test_reshape_hints.py`` holds the claim to torch's own values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gradtrace.analysis.docview import DocView
from gradtrace.analysis.hints.write import hint, shape

_VIEWS = ("ViewBackward0", "UnsafeViewBackward0", "ReshapeAliasBackward0")
_WRITES_VIEW = re.compile(r"\.\s*(?:view|reshape)\s*\(|\btorch\.reshape\s*\(")


def _shape(n: Mapping[str, Any] | None) -> list[int] | None:
    s = (n or {}).get("shape")
    return [int(d) for d in s] if isinstance(s, list) and all(type(d) is int for d in s) else None


def view_not_permute(view: DocView) -> list[dict[str, Any]]:
    """Views whose output is their input's dims reordered (NOTE [a view that was meant as a
    transpose])."""
    out = []
    for n in view.named(*_VIEWS):
        nid = str(n["id"])
        sources = view.sources.get(nid) or []
        after, before = _shape(n), _shape(view.by_id.get(sources[0])) if len(sources) == 1 else None
        if (after is None or before is None or len(after) < 3 or len(after) != len(before) or after == before
                or after[0] != before[0] or sorted(after) != sorted(before)):
            continue
        moved = {d for d, (a, b) in enumerate(zip(before, after, strict=True)) if a != b}
        if len({before[d] for d in moved}) < 2:
            continue
        line = n.get("line")
        text = view.line_text(int(line)) if line is not None else ""
        if not _WRITES_VIEW.search(text.split("#")[0]):
            continue
        order = [_place(before, after, d) for d in range(len(after))]
        dims = ", ".join(str(d) for d in order)
        out.append(hint(
            "view-not-permute", "warning", f"a view from {shape(before)} to {shape(after)}: the dims are "
            "reordered, the data is not",
            f"Line {line} views a tensor of shape {shape(before)} as {shape(after)}: the same sizes in another "
            "order, which is what a transpose or permute gives. A view does not move the data: it reads the "
            f"elements in memory order into the new shape, so each row of the result holds the next {after[-1]} "
            f"elements of that order, not the input's values along its dim {order[-1]}. Nothing fails, and "
            "every layer after it gets the numbers mixed up. To swap dims, permute them.",
            line=int(line) if line is not None else None, nodes=[nid],
            evidence=[("line", f"{line}: {text.strip()}"), ("input", shape(before)), ("output", shape(after))],
            fix=f"y = x.permute({dims})   # moves the data; .contiguous() before a later .view()"))
    return out


def _place(before: list[int], after: list[int], d: int) -> int:
    """The input dim that output dim ``d`` most likely came from: the first of its size not
    taken by an earlier output dim (ties keep their order)."""
    taken: list[int] = []
    for k in range(d + 1):
        j = next(j for j in range(len(before)) if before[j] == after[k] and j not in taken)
        taken.append(j)
    return taken[-1]
