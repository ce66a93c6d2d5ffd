"""Pair the nodes of two run documents, so that an edit pairs everything it did not touch.

NOTE [pairing nodes]
    Node ids are positions (``n0``, ``n1``, …), so they say nothing once a run makes one more
    node. A node is known instead by what made it: its kind and op (``MulBackward0``, or a
    tensor's name), the source line, the module call it was made in (the innermost entry of
    ``module_stack``: ``encoder.layers.2`` call 0) and its occurrence, the count of earlier
    nodes with the same key in creation order. Pairing tries three keys, each on the nodes
    the previous one left unpaired, and records which one paired each node:

    1. ``line``: line, op, module call and occurrence;
    2. ``module``: op, module call and occurrence;
    3. ``op``: op and occurrence.

    Lines are compared *through the code*: both documents carry their snippet, and the lines
    of A that survive unchanged in B (``difflib``'s matching blocks) map to their new numbers.
    A line inserted in the middle of B therefore moves the numbers of every line after it
    without unpairing their nodes: they are compared as the same line of A. Only nodes of
    lines that were added, removed or edited fall back to keys 2 and 3, and the occurrence
    there is counted among the nodes still unpaired, so an added node of an op the run
    already uses stays on its own (only in B) instead of shifting every later pair.

NOTE [parameters by their place]
    A parameter's name is its module path, and paths are positions too: inserting a layer into
    an ``nn.Sequential`` renames every later one (``model.2.weight`` becomes
    ``model.3.weight``, and the new layer takes ``model.2``). Before the three keys, the
    parameters of both runs (leaves named by a module path) are aligned as two sequences in
    creation order by what they are, their shape and their own name (``weight``, ``bias``),
    with ``difflib``: the inserted layer's parameters fall out as only in B, and the layers
    around it pair with their counterparts whatever they are called now, under the key
    ``place`` (a renamed parameter) or ``line`` when the name is the same.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

from gradtrace.schema.compare import PairKey

Pairing = tuple[list[tuple[int, int, PairKey]], list[int], list[int]]
"""``(pairs as (index in A, index in B, key), A's unpaired indexes, B's unpaired indexes)``."""


def line_map(code_a: str | None, code_b: str | None) -> dict[int, int]:
    """B's 1-based line numbers → A's, for the lines B kept unchanged from A."""
    if code_a is None or code_b is None:
        return {}
    a_lines, b_lines = code_a.splitlines(), code_b.splitlines()
    if a_lines == b_lines:
        return {i: i for i in range(1, len(a_lines) + 1)}
    out: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, a_lines, b_lines, autojunk=False)
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            out[block.b + k + 1] = block.a + k + 1
    return out


def module_call(node: dict[str, Any]) -> tuple[str, int] | str | None:
    """The module call a node was made in: ``(path, call)``, or the path alone when the
    document has no call stack, or ``None`` outside any module."""
    stack = node.get("module_stack")
    if stack:
        last = stack[-1]
        return (str(last.get("path")), int(last.get("call") or 0))
    module = node.get("module")
    return module if isinstance(module, str) else None


def pair_nodes(nodes_a: Sequence[dict[str, Any]], nodes_b: Sequence[dict[str, Any]],
               lines_b_to_a: dict[int, int]) -> Pairing:
    """Pair the nodes of A and B (NOTE [pairing nodes]); indexes are positions in the lists."""
    ops_a = [(n.get("kind"), n.get("name")) for n in nodes_a]
    ops_b = [(n.get("kind"), n.get("name")) for n in nodes_b]
    calls_a = [module_call(n) for n in nodes_a]
    calls_b = [module_call(n) for n in nodes_b]
    lines_a: list[Hashable] = [n.get("line") for n in nodes_a]
    lines_b: list[Hashable] = []
    for i, n in enumerate(nodes_b):
        line = n.get("line")
        # A line of B that A does not have can pair with no line of A.
        lines_b.append(lines_b_to_a.get(line, ("new", i)) if isinstance(line, int) else None)
    tiers: tuple[tuple[PairKey, list[Hashable], list[Hashable]], ...] = (
        ("line", [(*ops_a[i], calls_a[i], lines_a[i]) for i in range(len(nodes_a))],
         [(*ops_b[i], calls_b[i], lines_b[i]) for i in range(len(nodes_b))]),
        ("module", [(*ops_a[i], calls_a[i]) for i in range(len(nodes_a))],
         [(*ops_b[i], calls_b[i]) for i in range(len(nodes_b))]),
        ("op", list(ops_a), list(ops_b)),
    )
    pairs = _pair_parameters(nodes_a, nodes_b)
    done_a, done_b = {i for i, _, _ in pairs}, {j for _, j, _ in pairs}
    left_a = [i for i in range(len(nodes_a)) if i not in done_a]
    left_b = [j for j in range(len(nodes_b)) if j not in done_b]
    for key, keys_a, keys_b in tiers:
        if not left_a or not left_b:
            break
        made = _pair_by_occurrence(left_a, left_b, keys_a, keys_b)
        if not made:
            continue
        pairs.extend((i, j, key) for i, j in made)
        done_a = {i for i, _ in made}
        done_b = {j for _, j in made}
        left_a = [i for i in left_a if i not in done_a]
        left_b = [j for j in left_b if j not in done_b]
    pairs.sort()
    return pairs, left_a, left_b


def _layers(nodes: Sequence[dict[str, Any]]) -> list[list[int]]:
    """The parameters (leaves named by a module path), grouped by their module, in creation order."""
    groups: dict[str, list[int]] = {}
    for i, n in enumerate(nodes):
        name = str(n.get("name") or "")
        if n.get("kind") == "tensor" and n.get("role") == "leaf" and "." in name:
            groups.setdefault(name.rpartition(".")[0], []).append(i)
    return list(groups.values())


def _what(nodes: Sequence[dict[str, Any]], layer: list[int]) -> Hashable:
    """A layer as its parameters' own names, shapes and dtypes (``(("weight", (4, 3)), ...)``)."""
    return tuple((str(nodes[i].get("name")).rpartition(".")[2], tuple(nodes[i].get("shape") or ()),
                  nodes[i].get("dtype")) for i in layer)


def _pair_parameters(nodes_a: Sequence[dict[str, Any]],
                     nodes_b: Sequence[dict[str, Any]]) -> list[tuple[int, int, PairKey]]:
    """Parameters aligned layer by layer by their place (NOTE [parameters by their place])."""
    la, lb = _layers(nodes_a), _layers(nodes_b)
    if not la or not lb:
        return []
    matcher = difflib.SequenceMatcher(None, [_what(nodes_a, g) for g in la], [_what(nodes_b, g) for g in lb],
                                      autojunk=False)
    out: list[tuple[int, int, PairKey]] = []
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            for i, j in zip(la[block.a + k], lb[block.b + k], strict=True):
                out.append((i, j, "line" if nodes_a[i].get("name") == nodes_b[j].get("name") else "place"))
    return out


def _pair_by_occurrence(left_a: list[int], left_b: list[int], keys_a: list[Hashable],
                        keys_b: list[Hashable]) -> list[tuple[int, int]]:
    """Pair the k-th unpaired node of A with a key with the k-th unpaired node of B with it."""
    by_key: dict[Hashable, list[int]] = defaultdict(list)
    for i in left_a:
        by_key[keys_a[i]].append(i)
    seen: dict[Hashable, int] = defaultdict(int)
    out: list[tuple[int, int]] = []
    for j in left_b:
        key = keys_b[j]
        candidates = by_key.get(key)
        if not candidates:
            continue
        k = seen[key]
        if k < len(candidates):
            out.append((candidates[k], j))
            seen[key] = k + 1
    return out
