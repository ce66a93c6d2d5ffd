"""What a training loop means to do, read from its code: whether a backward's gradients are
meant to add up.

NOTE [accumulation by design]
    Several backward passes before one optimizer step sum their gradients on purpose: that is
    how a large batch is trained in micro-batches (``zero_grad()``, four times
    ``(loss / 4).backward()``, ``clip_grad_norm_``, one ``step()``). Summing is a mistake only
    when the parameters are *updated* between the passes and nothing clears ``.grad``: each
    step then also carries every earlier step's gradient. So the loops around the backward's
    line are read from the innermost out; the first one that updates (an optimizer's or a
    ``GradScaler``'s ``step()``, or an in-place change of a tensor under ``no_grad``) decides:
    a mistake when it does not clear ``.grad`` (``zero_grad()``, ``.grad = None``,
    ``.grad.zero_()``), by design when it does. When no loop around it updates, an update after
    the loop means accumulation by design, and no update anywhere (a loop that only watches
    ``.grad`` grow) is still the pitfall lesson 9 teaches.
"""

from __future__ import annotations

import ast
from typing import Literal

Intent = Literal["summed-by-mistake", "by-design", "unknown"]
_LOOPS = (ast.For, ast.While, ast.AsyncFor)


def _is_no_grad(w: ast.With) -> bool:
    return any("no_grad" in ast.unparse(item.context_expr) or "inference_mode" in ast.unparse(item.context_expr)
               for item in w.items)


def _is_step(node: ast.AST) -> bool:
    """An optimizer's (or a ``GradScaler``'s) ``step()`` call, not a scheduler's."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step"
            and "sched" not in ast.unparse(node.func.value).lower())


def _updates(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if _is_step(node):
            return True
        if isinstance(node, ast.With) and _is_no_grad(node):
            for inner in ast.walk(node):
                if isinstance(inner, ast.AugAssign):
                    return True
                if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) \
                        and inner.func.attr in ("sub_", "add_", "copy_", "mul_") \
                        and ".grad" not in ast.unparse(inner.func.value):
                    return True
    return False


def _zeroes(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "zero_grad":
                return True
            if node.func.attr in ("zero_", "fill_") and ast.unparse(node.func.value).endswith(".grad"):
                return True
        if isinstance(node, ast.Assign) and any(ast.unparse(t).endswith(".grad") for t in node.targets):
            return True
    return False


def backward_intent(code: str | None, line: int | None) -> Intent:
    """Whether gradients summed by the backward on ``line`` are a mistake
    (NOTE [accumulation by design]); ``unknown`` when the code cannot be read."""
    found = _loops_around(code, line)
    if found is None:
        return "unknown"
    tree, loops = found
    for loop in loops:
        if _updates(loop):
            return "by-design" if _zeroes(loop) else "summed-by-mistake"
    after = [s for s in getattr(tree, "body", []) if s.lineno > (loops[-1].end_lineno or line if loops else line)]
    if any(_updates(s) for s in after):
        return "by-design"
    return "summed-by-mistake"


Loop = ast.For | ast.While | ast.AsyncFor


def _loops_around(code: str | None, line: int | None) -> tuple[ast.Module, list[Loop]] | None:
    """The parsed code and the loops around ``line``, innermost first; None when it cannot be read."""
    if not code or line is None:
        return None
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    loops = [n for n in ast.walk(tree) if isinstance(n, _LOOPS) and n.lineno <= line <= (n.end_lineno or n.lineno)]
    loops.sort(key=lambda n: n.lineno, reverse=True)  # innermost first
    return tree, loops


def step_line(code: str | None, line: int | None) -> int | None:
    """The line of the first optimizer ``step()`` call in the innermost loop around ``line`` that
    has one; None when no loop around it steps or the code cannot be read."""
    found = _loops_around(code, line)
    for loop in found[1] if found is not None else []:
        steps: list[int] = [n.lineno for n in ast.walk(loop) if isinstance(n, ast.Call) and _is_step(n)]
        if steps:
            return min(steps)
    return None
