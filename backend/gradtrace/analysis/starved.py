"""Parameters and leaves that end the run with no gradient, each with what starved it.

"Which parameters never get a gradient" is a long-standing question of PyTorch users (DDP's
``find_unused_parameters`` exists because of it). The document knows the answer for every leaf
it recorded and for every frozen parameter of a called module:

* ``cut``: a backward ran through a tensor computed from the leaf through a cut (``detach``,
  ``.data``, a ``no_grad`` block), so nothing flows back to it;
* ``unused``: no backward pass reached it (a layer called but not on the way to any loss, a
  leaf used only under ``no_grad``);
* ``frozen``: the parameter does not require grad (``requires_grad_(False)``), so autograd
  records nothing for it (NOTE [frozen parameters] in capture/definitions.py).

A leaf whose gradient a ``torch.autograd.grad`` call returned (rather than accumulated), or
that a ``backward(inputs=...)`` left out on request, is not starved; a run with no backward
pass, or one whose backward raised (the error says why), starves nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gradtrace.analysis.docview import DocView

_ITEM = re.compile(r"\.item\(\)|\.tolist\(\)|float\(")


def item_rebuild(view: DocView) -> int | None:
    """The line that rebuilt a backward's root from a Python number
    (``loss = torch.tensor(loss.item(), requires_grad=True)``): a root with no history whose
    line reads a number out of a tensor; None when there is none."""
    code = str(view.doc.get("code") or "").splitlines()
    for p in view.doc.get("passes") or []:
        for root in p.get("roots") or []:
            n = view.by_id.get(root)
            if n is None or n.get("kind") != "tensor" or view.sources.get(root) or not n.get("name"):
                continue
            bound = re.compile(rf"^\s*{re.escape(str(n['name']))}\s*=(.*)")
            end = int(p.get("line") or len(code))
            for i in range(min(end, len(code)), 0, -1):  # the last assignment before the backward
                m = bound.match(code[i - 1].split("#", 1)[0])
                if m:
                    if _ITEM.search(m[1]) and "requires_grad" in m[1]:
                        return i
                    break
    return None


_REBUILD = re.compile(r"\btorch\.(?:tensor|as_tensor|Tensor|FloatTensor|DoubleTensor)\s*\(")
_NAME = re.compile(r"[A-Za-z_]\w*")


def tensor_rebuild(view: DocView) -> tuple[int, list[str], set[str]] | None:
    """The line that rebuilt tensors with history into a new leaf (``torch.tensor([l1, l2],
    requires_grad=True)``: torch reads each as a number, so the new leaf has none of their
    history) where a backward then reached that leaf: (its line, the names with history it read,
    the leaves those were computed from); None when there is none. ``torch.stack`` keeps the
    history and is no such line."""
    walked = view.walked()
    with_history: dict[str, str] | None = None  # read only where a leaf's line calls torch.tensor()
    for n in view.leaf_nodes:
        if n.get("role") != "leaf" or n.get("def_line") is None:
            continue
        line = int(n["def_line"])
        text = view.line_text(line).split("#", 1)[0]
        m = _REBUILD.search(text)
        if m is None:
            continue
        acc = view.accumulator(str(n["id"]))
        if acc is None or acc not in walked:
            continue
        if with_history is None:
            with_history = {str(f["var"]): str(f["id"]) for f in view.nodes
                            if f.get("kind") == "function" and f.get("var")}
        names = [w for w in dict.fromkeys(_NAME.findall(text[m.end():])) if w in with_history]
        if not names:
            continue
        leaves = {str(u) for name in names for u in view.upstream(with_history[name])
                  if view.by_id.get(u, {}).get("kind") == "tensor"}
        return line, names, leaves
    return None


_SAMPLE = re.compile(r"\.sample(?:_n)?\s*\(")


def sample_cut(view: DocView, leaf: str) -> int | None:
    """The line where a distribution's ``.sample()`` drew from values computed from ``leaf``
    (``Normal(mu, sigma).sample()`` in a VAE where ``rsample()`` was meant): ``sample`` draws
    under ``no_grad``, inside torch, so no cut of the snippet's own is recorded; the values
    computed from the leaf then end, unused by any backward, on that line or on a line that
    names them. None when none does.

    NOTE [a sample is a cut]
        A leaf is starved by ``sample()`` when every path from it ends before any backward: the
        function nodes computed from it that no pass walked are followed forward, and the first
        of their lines (or of the lines naming their variables) that calls ``.sample(`` is the
        cut. A policy gradient's ``dist.sample()`` starves nothing (``log_prob`` carries the
        gradient), so its leaves never reach this."""
    code = str(view.doc.get("code") or "").splitlines()
    walked = view.walked()
    acc = view.accumulator(leaf)
    start = [leaf] if acc is None else [leaf, acc]
    seen = set(start)
    stack = list(start)
    lines: set[int] = set()
    names: set[str] = set()
    while stack:
        for c in view.consumers.get(stack.pop(), []):
            if c in seen or c in walked:
                continue
            seen.add(c)
            stack.append(c)
            n = view.by_id.get(c) or {}
            if n.get("line") is not None:
                lines.add(int(n["line"]))
            if n.get("var"):
                names.add(str(n["var"]))
    if names:
        named = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b")
        lines |= {i for i, text in enumerate(code, 1) if named.search(text.split("#", 1)[0])}
    for line in sorted(lines):
        if 0 < line <= len(code) and _SAMPLE.search(code[line - 1].split("#", 1)[0]):
            return line
    return None


_FACTORY = re.compile(r"\btorch\.(tensor|as_tensor|from_numpy|zeros|ones|empty|full|rand|randn|randint|arange|"
                      r"linspace|eye)(_like)?\s*\(|\bParameter\(")


def hand_set_root(view: DocView) -> tuple[int, str] | None:
    """The line that set ``requires_grad`` by hand on a backward's root that has no history
    (``loss = (pred - y).pow(2).mean().requires_grad_()`` after an ``argmax``, or
    ``y.requires_grad = True`` on a comparison's result), for a pass that walked nothing; None
    when there is none. A tensor made with ``requires_grad`` (``torch.tensor(2.0,
    requires_grad=True)``, ``torch.randn(3).requires_grad_()``) and then backpropagated from is
    a leaf's own derivative, the first thing a lesson shows: not this. Answers (the line, the root)."""
    code = str(view.doc.get("code") or "").splitlines()
    walked = view.walked()
    for p in view.doc.get("passes") or []:
        if walked & {str(ev["node"]) for _, ev in view.backward_events() if ev.get("pass") == p["index"]}:
            continue
        for root in p.get("roots") or []:
            n = view.by_id.get(root)
            if n is None or n.get("kind") != "tensor" or view.sources.get(root) or not n.get("name"):
                continue
            name = re.escape(str(n["name"]))
            by_hand = re.compile(rf"\b{name}\s*\.\s*requires_grad(\s*=\s*True\b|_\()")
            bound = re.compile(rf"^\s*{name}\s*=(.*)")
            end = int(p.get("line") or len(code))
            for i in range(min(end, len(code)), 0, -1):  # back to its last assignment
                text = code[i - 1].split("#", 1)[0]
                m = bound.match(text)
                if m:
                    if "requires_grad_(" in m[1] and not _FACTORY.search(m[1]):
                        return i, str(root)
                    break
                if by_hand.search(text):
                    return i, str(root)
    return None


def _cut_of(view: DocView, acc: str, walked: set[str]) -> Mapping[str, Any] | None:
    for c in view.cut_nodes:
        cut = c["cut"]
        if not cut.get("source"):
            continue
        used = [t for t in view.consumers.get(str(c["id"]), []) + view.cut_consumers.get(str(c["id"]), [])
                if t in walked]
        if used and acc in view.upstream(str(cut["source"])):
            return c
    return None


def reached(view: DocView, leaf: str, acc: str | None, walked: set[str]) -> bool:
    """A backward walked a node that takes the leaf (or its AccumulateGrad) as input: its
    gradient was computed and returned (``torch.autograd.grad``) or left out on request
    (``backward(inputs=...)``), not starved."""
    targets = {leaf} | ({acc} if acc else set())
    return any(t in walked for s in targets for t in view.consumers.get(s, []))


def starved(view: DocView) -> list[dict[str, Any]]:
    """Every leaf and parameter that ends with no gradient, in graph order, frozen ones last."""
    passes = view.doc.get("passes") or []
    if not passes or not all(p.get("completed", True) for p in passes):
        return []
    walked = view.walked()
    out: list[dict[str, Any]] = []
    for n in view.tensor_nodes:
        is_leaf = n.get("role") == "leaf" or "leaf" in (n.get("roles") or [])
        if n.get("kind") != "tensor" or not is_leaf or n.get("grad") is not None:
            continue
        node = str(n["id"])
        acc = view.accumulator(node)
        if (acc is not None and acc in walked) or reached(view, node, acc, walked):
            continue
        name = view.tensor_label(n)
        cut = _cut_of(view, acc, walked) if acc is not None else None
        if cut is not None:
            kind = cut["cut"].get("kind")
            line = cut["cut"].get("line")
            out.append({"name": name, "node": node, "reason": "cut", "line": line,
                        "detail": f"cut off by {kind} at line {line}: {view.tensor_label(cut)} carries no history"})
        else:
            line = n.get("def_line") if n.get("def_line") is not None else n.get("line")
            out.append({"name": name, "node": node, "reason": "unused", "line": line,
                        "detail": "no backward pass reached it"})
    rebuilt = item_rebuild(view)
    if rebuilt is not None:
        for s in out:
            if s["reason"] == "unused":
                s.update(reason="cut", line=rebuilt,
                         detail=f"cut by .item() at line {rebuilt}: the loss was rebuilt from a Python number, "
                                "which carries no history")
    for s in out:  # NOTE [a sample is a cut]
        if s["reason"] == "unused" and s["node"] is not None:
            line = sample_cut(view, s["node"])
            if line is not None:
                s.update(reason="cut", line=line,
                         detail=f"cut by .sample() at line {line}: it draws without gradient (rsample() keeps "
                                "the path to the distribution's parameters)")
    made = tensor_rebuild(view)
    if made is not None:
        line, names, leaves = made
        for s in out:
            if s["reason"] == "unused" and s["node"] in leaves:
                s.update(reason="cut", line=line,
                         detail=f"cut by torch.tensor() at line {line}: it read {', '.join(names)} as numbers into "
                                "a new tensor, which carries none of their history")
    code = str(view.doc.get("code") or "").splitlines()
    for m in view.doc.get("modules") or []:
        for p in m.get("unreached") or []:
            attr = p.rpartition(".")[2]
            line = next((i for i, text in enumerate(code, 1)
                         if re.search(rf"\.{re.escape(attr)}\.(data|detach\(\))", text.split("#", 1)[0])), None)
            if line is not None:
                out.append({"name": f"{m['path']}.{p}", "node": None, "reason": "cut", "line": line,
                            "detail": f"read through .data (or detach) at line {line}: it never reaches the graph"})
            else:
                out.append({"name": f"{m['path']}.{p}", "node": None, "reason": "unused", "line": None,
                            "detail": "the module's forward never used it (or only under no_grad)"})
    for m in view.doc.get("modules") or []:
        for p in m.get("frozen") or []:
            out.append({"name": f"{m['path']}.{p}", "node": None, "reason": "frozen", "line": None,
                        "detail": "requires_grad is False: autograd records nothing for it"})
    return out
