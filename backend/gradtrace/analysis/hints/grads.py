"""Hints about a ``.grad`` read or changed outside autograd: ``.grad`` read on a tensor that is
not a leaf (it is None), and a leaf's ``.grad`` edited in place after backward (clipping,
scaling), which the page must show as torch holds it at the end."""

from __future__ import annotations

import ast
import math
import re
from itertools import pairwise
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


# NOTE [clipping before backward]
#     ``clip_grad_norm_`` clips the ``.grad`` it finds when it runs. Called after
#     ``zero_grad()`` and before ``loss.backward()`` in the same block, it finds nothing (None,
#     or zeros), and the gradients ``step()`` then uses are the backward's, unclipped. The source
#     says where (a clip statement in the statement list of a backward and before it, with no
#     backward before it in that list: a clip inside an ``if`` that steps accumulated
#     gradients is another list), and the document says what it cost: no recorded edit of any
#     ``.grad`` at the clip's line (``Node.grad_edits``), while the gradients a backward on that
#     line left exceed the clip's own limit (a literal ``max_norm`` with the default 2-norm, or
#     ``clip_value``): put after the backward, the clip would have changed them.
_CLIPS = {"clip_grad_norm_": ("max_norm", 1), "clip_grad_value_": ("clip_value", 1)}


def _literal(node: ast.expr | None) -> float | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _literal(node.operand)
        return -v if v is not None else None
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    return None


def _calls(stmt: ast.stmt, name: str) -> list[ast.Call]:
    """The calls of an attribute or function named ``name`` in ``stmt`` (not in nested bodies:
    ``stmt`` is a simple statement)."""
    found = []
    for n in ast.walk(stmt):
        if isinstance(n, ast.Call):
            f = n.func
            if (f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None) == name:
                found.append(n)
    return found


def _clips_before_backward(code: str) -> list[tuple[int, str, float, int]]:
    """(clip line, clip function, its literal limit, the backward's line) for each clip found
    before the backward of its statement list (NOTE [clipping before backward])."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    out = []
    for block in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(block, field, None)
            if not isinstance(stmts, list) or not stmts or not isinstance(stmts[0], ast.stmt):
                continue
            simple = [s for s in stmts if isinstance(s, ast.Expr | ast.Assign | ast.AugAssign | ast.AnnAssign)]
            backward_at = [i for i, s in enumerate(simple) if _calls(s, "backward")]
            if not backward_at:
                continue
            first = backward_at[0]
            for s in simple[:first]:
                for fn, (arg, pos) in _CLIPS.items():
                    for call in _calls(s, fn):
                        kw = {k.arg: k.value for k in call.keywords if k.arg}
                        limit = _literal(kw.get(arg, call.args[pos] if len(call.args) > pos else None))
                        norm_type = kw.get("norm_type", call.args[2] if len(call.args) > 2 else None)
                        if limit is None or limit <= 0 or (norm_type is not None and _literal(norm_type) != 2.0):
                            continue
                        out.append((s.lineno, fn, limit, simple[first].lineno))
    return out


def clip_before_backward(view: DocView) -> list[dict[str, Any]]:
    """A clip that ran before the backward whose gradients it was meant to clip (NOTE
    [clipping before backward])."""
    code = view.doc.get("code")
    if not isinstance(code, str) or "clip_grad_" not in code:
        return []
    found = _clips_before_backward(code)
    if not found:
        return []
    edited_at = {int(e["line"]) for n in view.leaf_nodes for e in n.get("grad_edits") or []
                 if e.get("line") is not None}
    out = []
    for clip_line, fn, limit, backward_line in found:
        if clip_line in edited_at:
            continue  # it changed a gradient: it had something to clip
        worst, leaves = _worst_after(view, backward_line, fn == "clip_grad_norm_")
        if worst is None or worst <= limit:
            continue
        measure = "‖grad‖ (all parameters)" if fn == "clip_grad_norm_" else "max |grad|"
        out.append(hint(
            "clip-before-backward", "warning", f"{fn} at line {clip_line} runs before backward: nothing is clipped",
            f"{fn} clips the .grad it finds when it runs. At line {clip_line} it runs before the backward at line "
            f"{backward_line}, when the gradients are still None (or zero) after zero_grad(), so it changes "
            f"nothing; step() then uses the backward's gradients unclipped, whose {measure} reached {fmt(worst)}, "
            f"above the limit {fmt(limit)}.",
            line=clip_line, nodes=leaves,
            evidence=[("clip", view.line_text(clip_line) or "?"), ("backward", view.line_text(backward_line) or "?"),
                      (f"{measure} after backward", fmt(worst)), ("limit", fmt(limit)),
                      ("gradients the clip changed", "none")],
            fix=f"loss.backward()\n{(view.line_text(clip_line) or fn + '(...)').strip()}  # after backward, "
                "before step()"))
    return out


def _worst_after(view: DocView, line: int, total: bool) -> tuple[float | None, list[str]]:
    """The largest, over the backward passes called on ``line``, of the leaves' ``.grad`` right
    after the pass: their 2-norm over all leaves (``total``), else their largest magnitude;
    with the leaves of that pass."""
    passes = {int(p["index"]) for p in view.doc.get("passes") or [] if p.get("line") == line}
    if not passes:
        return None, []
    seen: dict[str, int] = {}
    per_pass: dict[int, float] = {}
    leaves_of: dict[int, list[str]] = {}
    for _, ev in view.backward_events():
        if view.name(str(ev["node"])) != "AccumulateGrad":
            continue
        leaf = view.leaf_of(str(ev["node"]))
        if leaf is None:
            continue
        k = seen[str(leaf["id"])] = seen.get(str(leaf["id"]), -1) + 1
        p = ev.get("pass")
        history = leaf.get("grad_history") or []
        if p not in passes or k >= len(history):
            continue
        stats = (history[k] or {}).get("stats") or {}
        leaves_of.setdefault(int(p), []).append(str(leaf["id"]))
        if total:
            norm = number(stats.get("norm"))
            if norm is None:
                return None, []
            per_pass[int(p)] = per_pass.get(int(p), 0.0) + norm * norm
        else:
            top = max(abs(number(stats.get("max")) or 0.0), abs(number(stats.get("min")) or 0.0))
            per_pass[int(p)] = max(per_pass.get(int(p), 0.0), top)
    if not per_pass:
        return None, []
    p = max(per_pass, key=per_pass.__getitem__)
    return (math.sqrt(per_pass[p]) if total else per_pass[p]), leaves_of[p]


# NOTE [clipping the scaled gradients]
#     With a GradScaler, backward leaves the gradients multiplied by the scale (65536 at first),
#     and ``scaler.unscale_(opt)`` (or ``scaler.step``) divides them back. A clip called between
#     the two clips the scaled gradients: their norm is cut to ``max_norm`` and then divided by
#     the scale, so every step is ``max_norm / scale`` long, the model barely trains, and the
#     update ratios say only "too small". The recorded edits show the order: on one
#     accumulation, an edit on a clipping line, then one on a scaler's line that divides the
#     norm by a power of two of at least 2⁸ (the unscale multiplies by the inverse scale,
#     exactly).
_UNSCALE_TEXT = re.compile(r"\bscaler\b|\bunscale_\b|\bGradScaler\b")


def clip_before_unscale(view: DocView) -> list[dict[str, Any]]:
    """A clip of the scaled gradients (NOTE [clipping the scaled gradients])."""
    code = view.doc.get("code")
    if not isinstance(code, str) or "clip_grad_" not in code:
        return []
    found: dict[tuple[int, int], tuple[list[str], float, float]] = {}
    for n in view.leaf_nodes:
        history = n.get("grad_history") or []
        edits = [e for e in n.get("grad_edits") or [] if e.get("line") is not None and e.get("value") is not None]
        for a, b in pairwise(edits):
            if a.get("at") != b.get("at") or not 0 < int(a["at"]) <= len(history):
                continue
            clip_text, unscale_text = view.line_text(int(a["line"])), view.line_text(int(b["line"]))
            if "clip_grad_" not in clip_text or not _UNSCALE_TEXT.search(unscale_text):
                continue
            before = number(((history[int(a["at"]) - 1] or {}).get("stats") or {}).get("norm"))
            clipped = number(((a.get("value") or {}).get("stats") or {}).get("norm"))
            unscaled = number(((b.get("value") or {}).get("stats") or {}).get("norm"))
            if not before or not clipped or not unscaled or clipped >= before:
                continue  # the clip did not act: nothing was lost to it
            scale = clipped / unscaled
            k = round(math.log2(scale)) if scale > 0 else 0
            if k < 8 or abs(scale / 2.0 ** k - 1) > 1e-3:
                continue
            key = (int(a["line"]), int(b["line"]))
            names, _, _ = found.setdefault(key, ([], 2.0 ** k, before / 2.0 ** k))
            names.append(str(n["id"]))
    out = []
    for (clip_line, unscale_line), (nodes, scale, true_norm) in sorted(found.items()):
        out.append(hint(
            "clip-before-unscale", "warning", f"line {clip_line} clips the scaled gradients: unscale first",
            f"The GradScaler's backward left the gradients multiplied by {fmt(scale)}, and line {clip_line} clips "
            f"them before line {unscale_line} divides them back: their norm is cut to the clip's limit while "
            f"still {fmt(scale)}× too large, then divided, so each step is {fmt(scale)}× shorter than the clip "
            "means and the model barely trains.",
            line=clip_line, nodes=nodes,
            evidence=[("clip", view.line_text(clip_line) or "?"), ("unscale", view.line_text(unscale_line) or "?"),
                      ("scale", fmt(scale)), ("a leaf's true ‖grad‖ before the clip", fmt(true_norm))],
            fix=f"scaler.unscale_(opt)\n{(view.line_text(clip_line) or 'clip_grad_norm_(...)').strip()}  "
                "# on the true gradients\nscaler.step(opt)"))
    return out
