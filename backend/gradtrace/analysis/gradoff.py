"""Which lines of the snippet run with gradients off: no graph is recorded there.

NOTE [blocks with gradients off]
    Autograd records nothing inside ``with torch.no_grad():`` (nor ``inference_mode()``, nor
    ``set_grad_enabled(False)``, nor in a function decorated with one of them), so the graph
    has no node for those lines, and the page would only say "created no autograd node". The
    blocks are read from the document's own code (``ast``: no re-run, no torch), by the form
    torch documents: the call written as ``torch.no_grad()``, ``torch.autograd.no_grad()`` or a
    bare ``no_grad()`` (``from torch import no_grad``); ``set_grad_enabled`` counts only with
    a literal ``False`` (a variable's value is not known here). An ``enable_grad()`` (or
    ``set_grad_enabled(True)``) block inside one is cut out of it. A block whose code fails to
    parse gives no blocks: the run's error says why.
"""

from __future__ import annotations

import ast
from typing import Any

_KINDS = {"no_grad": "no_grad", "inference_mode": "inference_mode",
          "set_grad_enabled": "set_grad_enabled"}
_TITLES = {"no_grad": "torch.no_grad()", "inference_mode": "torch.inference_mode()",
           "set_grad_enabled": "torch.set_grad_enabled(False)"}


def _kind(expr: ast.expr) -> str | None:
    """The kind of gradients-off context ``expr`` opens, ``"on"`` for one that turns them back
    on (``enable_grad()``, ``set_grad_enabled(True)``), or None."""
    call = expr if isinstance(expr, ast.Call) else None
    target = call.func if call is not None else expr
    if isinstance(target, ast.Attribute):
        name = target.attr
        base = target.value
        while isinstance(base, ast.Attribute):
            base = base.value
        if not (isinstance(base, ast.Name) and base.id == "torch"):
            return None
    elif isinstance(target, ast.Name):
        name = target.id
    else:
        return None
    if name == "enable_grad":
        return "on"
    kind = _KINDS.get(name)
    if kind == "set_grad_enabled":
        args = call.args if call is not None else []
        if args and isinstance(args[0], ast.Constant) and args[0].value is True:
            return "on"
        if not (args and isinstance(args[0], ast.Constant) and args[0].value is False):
            return None
    elif kind == "inference_mode" and call is not None and call.args:
        mode = call.args[0]
        if not (isinstance(mode, ast.Constant) and mode.value is True):
            return None  # inference_mode(False) turns it off
    return kind


def _span(body: list[ast.stmt]) -> tuple[int, int]:
    return body[0].lineno, max(getattr(s, "end_lineno", None) or s.lineno for s in body)


def grad_off_blocks(code: object) -> list[dict[str, Any]]:
    """The snippet's blocks with gradients off, in source order (NOTE [blocks with gradients
    off]): ``{"kind", "line", "start", "end"}``."""
    if not isinstance(code, str) or not any(k in code for k in _KINDS):
        return []
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    out: list[dict[str, Any]] = []
    on: list[tuple[int, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                kind = _kind(item.context_expr)
                if kind is not None and node.body:
                    start, end = _span(node.body)
                    if kind == "on":
                        on.append((start, end))
                    else:
                        out.append({"kind": kind, "line": node.lineno, "start": start, "end": end})
                    break
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for deco in node.decorator_list:
                kind = _kind(deco)
                if kind is not None and node.body:
                    start, end = _span(node.body)
                    if kind == "on":
                        on.append((start, end))
                    else:
                        out.append({"kind": kind, "line": deco.lineno, "start": start, "end": end})
                    break
    out = [piece for b in out for piece in _without(b, on)]
    out.sort(key=lambda b: (b["start"], -b["end"]))
    return out


def _without(block: dict[str, Any], on: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """``block`` less the spans inside it where gradients are turned back on (an
    ``enable_grad()`` block nested in it): the pieces left, each naming the block's line."""
    pieces = [block]
    for a, b in sorted(on):
        nxt = []
        for p in pieces:
            if b < p["start"] or a > p["end"] or (a <= block["line"] and b >= block["end"]):
                nxt.append(p)  # apart (or around the whole block: its own kind decides)
                continue
            if a > p["start"]:
                nxt.append({**p, "end": a - 1})
            if b < p["end"]:
                nxt.append({**p, "start": b + 1})
        pieces = nxt
    return pieces


def block_at(blocks: list[dict[str, Any]], line: int | None) -> dict[str, Any] | None:
    """The innermost block holding ``line``, or None."""
    if line is None:
        return None
    inside = [b for b in blocks if b["start"] <= line <= b["end"]]
    return min(inside, key=lambda b: b["end"] - b["start"]) if inside else None


def describe(block: dict[str, Any]) -> str:
    """``with torch.no_grad(): lines 21–23`` (the hint's evidence)."""
    lines = (f"line {block['start']}" if block["start"] == block["end"]
             else f"lines {block['start']}–{block['end']}")
    return f"{_TITLES[block['kind']]} at line {block['line']}, {lines}"
