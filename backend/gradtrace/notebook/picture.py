"""A static picture of a run's graph as inline SVG, for notebooks without the widget
(``_repr_html_``) and for documents too large for it to be worth laying out in Python.

NOTE [the static picture]
    A plain layered drawing: each node sits one row below the deepest node it feeds from
    (gradients flow up, as on the page's top → bottom layout), in creation order within a
    row. It is a thumbnail that tells what the graph is, not the page's layout (that runs in
    the browser: ``frontend/src/layout``); past ``MAX_NODES`` it draws the first ones and says so.
"""

from __future__ import annotations

import html
from typing import Any

MAX_NODES = 300
NODE_W, NODE_H, GAP_X, GAP_Y = 120, 34, 14, 26
MAX_PER_ROW = 12
_FILL = {"function": ("#e7eefc", "#4a6fd1"), "leaf": ("#fff1cc", "#c98a00"), "acc": ("#e2f4df", "#3c8d3a"),
         "tensor": ("#f1e3ff", "#8a4fc7"), "cut": ("#efefef", "#7d7d7d")}


def _kind(n: dict[str, Any]) -> str:
    if n.get("cut"):
        return "cut"
    if n.get("kind") == "function":
        return "acc" if n.get("name") == "AccumulateGrad" else "function"
    return "leaf" if n.get("role") in (None, "leaf") else "tensor"


def graph_svg(doc: dict[str, Any]) -> str:
    """The graph of ``doc`` (a document dict) as an ``<svg>`` element's text."""
    graph = doc.get("graph") or {}
    all_nodes: list[dict[str, Any]] = list(graph.get("nodes") or [])
    nodes = all_nodes[:MAX_NODES]
    if not nodes:
        return ""
    index = {n["id"]: i for i, n in enumerate(nodes)}
    # Edges point from a node to what it feeds (source → target): rows by longest path.
    parents: list[list[int]] = [[] for _ in nodes]
    edges = [(index[e["source"]], index[e["target"]]) for e in graph.get("edges") or []
             if e.get("source") in index and e.get("target") in index]
    for s, t in edges:
        parents[t].append(s)
    depth = [0] * len(nodes)
    for _ in range(2):  # creation order is nearly topological; a second sweep settles the rest
        for i in range(len(nodes)):
            for p in parents[i]:
                if p != i:
                    depth[i] = max(depth[i], min(depth[p] + 1, len(nodes)))
    rows: dict[int, list[int]] = {}
    for i in range(len(nodes)):
        rows.setdefault(depth[i], []).append(i)
    pos: dict[int, tuple[float, float]] = {}
    y = 0
    width = 0
    for d in sorted(rows):
        row = rows[d]
        for start in range(0, len(row), MAX_PER_ROW):
            chunk = row[start:start + MAX_PER_ROW]
            for j, i in enumerate(chunk):
                pos[i] = (j * (NODE_W + GAP_X), y)
            width = max(width, len(chunk) * (NODE_W + GAP_X))
            y += NODE_H + GAP_Y
    height = y
    e = html.escape
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="gradtrace-picture" width="{width}" height="{height}" '
           f'viewBox="-4 -4 {width + 8} {height + 8}" font-family="monospace" font-size="11" '
           f'style="max-width:100%;height:auto;background:#fff">']
    for s, t in edges:
        (x1, y1), (x2, y2) = pos[s], pos[t]
        out.append(f'<line x1="{x1 + NODE_W / 2}" y1="{y1 + NODE_H}" x2="{x2 + NODE_W / 2}" y2="{y2}" '
                   'stroke="#9aa3b5" stroke-width="1"/>')
    for i, n in enumerate(nodes):
        x, yy = pos[i]
        fill, stroke = _FILL[_kind(n)]
        label = _name(n)[:18]
        sub = "×".join(str(d) for d in n.get("shape") or []) or ("scalar" if n.get("shape") == [] else "")
        if n.get("line") is not None:
            sub = f"{sub} · L{n['line']}" if sub else f"line {n['line']}"
        out.append(f'<g><title>{e(_name(n))}</title>'
                   f'<rect x="{x}" y="{yy}" width="{NODE_W}" height="{NODE_H}" rx="5" fill="{fill}" stroke="{stroke}"/>'
                   f'<text x="{x + NODE_W / 2}" y="{yy + 14}" text-anchor="middle" fill="#1b1e28">{e(label)}</text>'
                   f'<text x="{x + NODE_W / 2}" y="{yy + 27}" text-anchor="middle" fill="#4d5366" font-size="9.5">'
                   f'{e(sub[:22])}</text></g>')
    out.append("</svg>")
    more = len(all_nodes) - len(nodes)
    note = f"<div><small>… and {more} more nodes (the widget or the run's page shows them all)</small></div>"
    return "".join(out) + (note if more else "")


def _name(n: dict[str, Any]) -> str:
    """How a node reads in the picture: its name, else what it is (an unnamed root is "output",
    as the page calls it), never its document id ("n3" means nothing to a reader)."""
    if n.get("name"):
        return str(n["name"])
    if n.get("kind") == "tensor":
        return "output" if n.get("role") == "root" else "tensor"
    return "function"
