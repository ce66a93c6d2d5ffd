"""Hints about a ``.grad`` read or changed outside autograd: ``.grad`` read on a tensor that is
not a leaf (it is None), and a leaf's ``.grad`` edited in place after backward (clipping,
scaling), which the page must show as torch holds it at the end."""

from __future__ import annotations

import re
from typing import Any

from gradtrace.analysis.docview import DocView
from gradtrace.analysis.hints.write import hint
from gradtrace.analysis.numbers import fmt, number, rounded


def _norm(tv: Any) -> str:
    stats = (tv or {}).get("stats") or {}
    return fmt(number(stats.get("norm")))


_NONLEAF_WARNING = "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed"
_GRAD_READ = re.compile(r"\b([A-Za-z_]\w*)\.grad\b(?!_fn|\s*=[^=])")


def nonleaf_grad(view: DocView) -> list[dict[str, Any]]:
    """``.grad`` read on a tensor that is not a leaf: torch's warning in the output says it
    happened, the code says where (the first line reading ``name.grad`` of a name that is
    not a leaf's or a retained tensor's)."""
    if _NONLEAF_WARNING not in str(view.doc.get("stdout") or ""):
        return []
    kept = {str(n.get("name")) for n in view.tensor_nodes
            if (n.get("role") in ("leaf", "retained") or {"leaf", "retained"} & set(n.get("roles") or []))}
    code = str(view.doc.get("code") or "")
    for lineno, text in enumerate(code.splitlines(), 1):
        for m in _GRAD_READ.finditer(text.split("#", 1)[0]):
            name = m[1]
            if name in kept:
                continue
            return [hint(
                "nonleaf-grad", "warning", f"{name}.grad is read, but {name} is not a leaf",
                f"{name} was computed by autograd, so backward does not keep its gradient and "
                f"{name}.grad is None (torch warned so in the output). Ask for it before backward "
                "with retain_grad(), or read the leaf's .grad instead.",
                line=lineno, nodes=[],
                evidence=[("line", text.strip()), ("torch warned", _NONLEAF_WARNING)],
                fix=f"{name}.retain_grad()  # before backward: then {name}.grad is kept",
                lesson="05_leaf_and_retain_grad")]
    return []


_GRAD_EDIT = re.compile(r"clip_grad_(?:norm|value)_"  # torch.nn.utils' clipping
                        r"|\.grad\s*(?:\[[^\]]*\]\s*)?(?:[-+*/]=|\.\w+_\()"  # .grad *= s, .grad.mul_(s)
                        r"|\.grad\s*\[[^\]]*\]\s*=[^=]")  # .grad[i] = v


def grad_edited(view: DocView) -> list[dict[str, Any]]:
    """A leaf whose ``.grad`` at the end is not its last accumulation: something changed it in
    place outside autograd (``clip_grad_norm_``, ``.grad.mul_()``). The document's final
    ``grad`` is torch's own; the page shows it at the last step for these leaves, and the line
    that did it is the first one after the last backward that edits a ``.grad``."""
    passes = view.doc.get("passes") or []
    if passes and not passes[-1].get("completed", True):
        return []  # a backward cut short (a limit, an error): its accumulations are partly unseen
    last_backward = max((int(p["line"]) for p in passes if p.get("line") is not None), default=0)
    edited = [n for n in view.tensor_nodes if n.get("grad") is not None
              and n.get("grad_history") and _differs(n["grad"], n["grad_history"][-1])]
    if not edited:
        return []
    # the recorder says where (Node.grad_edits: NOTE [gradient edits] in capture/gradedits.py);
    # documents from before it are read for the first editing line after the last backward
    recorded = [e for e in edited[0].get("grad_edits") or [] if e.get("line") is not None]
    code = str(view.doc.get("code") or "").splitlines()
    line = recorded[-1]["line"] if recorded else next(
        (i for i, text in enumerate(code, 1) if i > last_backward and _GRAD_EDIT.search(text.split("#", 1)[0])),
        None)
    names = [view.tensor_label(n) for n in edited]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    first = edited[0]
    steps = _edit_steps(first)
    lines = sorted({ln for ln, _ in steps}) if len(steps) > 1 else [line] if line else []
    where = f" (line{'s' if len(lines) > 1 else ''} {' and '.join(map(str, lines))})" if lines else ""
    return [hint(
        "grad-edited", "info", f"{shown}: .grad changed after backward",
        f"The final .grad of {shown} is not what backward left: it was changed in place outside "
        f"autograd{where}. The last step shows the value torch holds at the end.",
        line=line, nodes=[str(n["id"]) for n in edited],
        evidence=[(f"‖{names[0]}.grad‖ after backward", _norm(first["grad_history"][-1])),
                  (f"‖{names[0]}.grad‖ at the end", _norm(first["grad"])),
                  ("effect", _effect(first["grad_history"][-1], first["grad"])),
                  ("line", view.line_text(line) or "?"),
                  # NOTE [each edit its own effect]: GradScaler's unscale (× 1/scale) then clipping
                  # (× a little under 1) are two edits; the overall effect alone pins both on the last
                  *([(f"line {ln}: {view.line_text(ln) or '?'}", effect) for ln, effect in steps]
                    if len(steps) > 1 else [])],
        fix="# nothing to fix when it is meant (gradient clipping); the optimizer's step uses the "
            "changed .grad")]


def _edit_steps(leaf: Any) -> list[tuple[int, str]]:
    """The recorded edits of ``leaf``'s final ``.grad`` (those after its last accumulation, in
    order), each as (line, what it did to the value before it)."""
    history = leaf.get("grad_history") or []
    at = len(history)
    before = history[-1] if history else None
    steps: list[tuple[int, str]] = []
    for e in leaf.get("grad_edits") or []:
        if e.get("at") != at or e.get("line") is None or e.get("value") is None:
            continue
        steps.append((int(e["line"]), _effect(before, e["value"])))
        before = e["value"]
    return steps


def _effect(before: Any, after: Any) -> str:
    """What an edit did to a ``.grad``, from its norms: zeroed, or scaled by a factor."""
    b = number(((before or {}).get("stats") or {}).get("norm"))
    a = number(((after or {}).get("stats") or {}).get("norm"))
    if a is None or b is None:
        return "changed"
    if a == 0:
        return "zeroed"
    return f"norm scaled × {fmt(rounded(a / b, 4))}" if b else "changed"


def _differs(a: Any, b: Any) -> bool:
    """Two TensorValues of one tensor differ (values when both were kept, else their stats)."""
    if a.get("values") is not None and b.get("values") is not None:
        return bool(a["values"] != b["values"])
    return bool(a.get("stats") != b.get("stats"))
