"""A run as a few lines of HTML: the notebook's summary view of a document.

What a document shows as ``_repr_html_`` (:class:`~gradtrace.notebook.run.NotebookRunDocument`,
:class:`~gradtrace.client.ClientRunDocument`) and what ``show()`` answers without anywidget.
It reads the document only: no server, no capture.
"""

from __future__ import annotations

import html
from typing import Any

from gradtrace.schema import RunDocument

SUMMARY_ROWS = 12
"""Leaves listed with their grads before the table says how many more there are."""


def render_html(doc: RunDocument, *, run_url: str | None = None) -> str:
    """A compact HTML view of a run: link, status, counts, a picture of the graph (inline SVG),
    and the leaves with their grads. The notebook's fallback when the widget is unavailable."""
    from gradtrace.notebook.picture import graph_svg

    nodes = doc.graph.nodes
    functions = [n for n in nodes if n.kind == "function"]
    leaves = [n for n in nodes if n.kind == "tensor" and (n.role in (None, "leaf") or n.grad is not None)]
    e = html.escape
    link = f'<a href="{e(run_url)}" target="_blank">open in gradtrace</a>' if run_url else f"run {e(doc.id)}"
    head = (f"<div><b>gradtrace</b> · status <code>{e(doc.status)}</code> · "
            f"{_count(len(functions), 'function node')} · {_count(len(leaves), 'leaf', 'leaves')} · "
            f"{_count(len(doc.passes), 'backward pass', 'backward passes')} · {_count(len(doc.events), 'event')} · "
            f"{link}</div>")
    if doc.error is not None:
        where = f" (line {doc.error.line})" if doc.error.line else ""
        head += f"<div><code>{e(doc.error.type)}: {e(doc.error.message)}</code>{e(where)}</div>"
    rows = []
    for n in leaves[:SUMMARY_ROWS]:
        grad = "—" if n.grad is None else _value_text(n.grad.values, n.grad.stats)
        name = n.name or ("the output" if n.role == "root" else "a tensor")
        rows.append(f"<tr><td>{e(name)}</td><td>{e(str(n.shape))}</td><td>{e(n.dtype or '')}</td>"
                    f"<td>{e(grad)}</td></tr>")
    if len(leaves) > SUMMARY_ROWS:
        rows.append(f"<tr><td colspan=4>… {len(leaves) - SUMMARY_ROWS} more</td></tr>")
    table = ("<table><tr><th>leaf</th><th>shape</th><th>dtype</th><th>grad</th></tr>" + "".join(rows)
             + "</table>") if rows else ""
    picture = graph_svg(doc.model_dump(mode="json", by_alias=True, include={"graph"}))
    return f'<div class="gradtrace-run">{head}{picture}{table}</div>'


def _value_text(values: object, stats: Any) -> str:
    if values is not None:
        text = str(values)
        return text if len(text) <= 80 else text[:77] + "…"
    if stats is not None:
        return f"min {stats.min} · max {stats.max} · mean {stats.mean} · norm {stats.norm}"
    return "(no values)"


def _count(n: int, one: str, many: str | None = None) -> str:
    """``1 leaf``, ``2 leaves``: a count with its noun in the right number."""
    return f"{n} {one if n == 1 else (many or one + 's')}"
