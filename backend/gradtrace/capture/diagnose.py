"""Turn autograd's two classic errors into data: which node, which saved tensors, which line.

NOTE [probing after the fact]
    Autograd raises these errors while unpacking a saved tensor inside backward, and its message
    names the *producer* of the tensor, not the node that needed it. Rather than a pre-hook on
    every node (which would double the hook cost of every run), the recorder probes after the
    error: it walks up from the failing pass's roots in breadth-first order (the order the
    engine starts in) and reads the saved tensors of each recorded node; the first one that
    autograd refuses to unpack is the node concerned. Reading a saved tensor raises exactly the
    error backward raised, so the probe cannot disagree with autograd.
"""

from __future__ import annotations

import linecache
import re
from collections import deque
from typing import Any

from gradtrace.capture.graph import FnInfo
from gradtrace.capture.outputs import TAP_CODE
from gradtrace.capture.recorder import Recorder
from gradtrace.capture.saved import saved_attrs

_INPLACE = "modified by an inplace operation"
_FREED = "backward through the graph a second time"


def _refused(info: FnInfo, needle: str) -> list[tuple[str, str]]:
    """Saved values of ``info``'s node that autograd refuses to unpack with ``needle``."""
    if info.doc.get("saved_unread"):
        return []
    out = []
    for attr in saved_attrs(info.node):
        try:
            getattr(info.node, attr)
        except Exception as e:
            if needle in str(e):
                out.append((attr.removeprefix("_saved_"), str(e)))
    return out


def _upstream_order(rec: Recorder, roots: list[str]) -> list[FnInfo]:
    producers: dict[str, list[str]] = {}
    for e in rec.edge_list():
        producers.setdefault(e["target"], []).append(e["source"])
    order: list[FnInfo] = []
    seen = set(roots)
    queue = deque(roots)
    while queue:
        nid = queue.popleft()
        info = rec.fn_by_id.get(nid)
        if info is not None:
            order.append(info)
        for src in producers.get(nid, []):
            if src not in seen:
                seen.add(src)
                queue.append(src)
    return order


def _inplace_culprit(rec: Recorder, info: FnInfo,
                     names: set[str]) -> tuple[int | None, str, str | None] | None:
    """The last in-place op, after ``info``'s node was created, on the storage of one of its
    refused saved tensors: (line, op name, id of the node it made or None)."""
    ptrs = {ptr for s, (_, ptr) in zip(info.doc["saved"], info.private, strict=True)
            if s["name"] in names} - {None}
    created = int(info.id[1:])
    for ptr, line, op, n_nodes, node in reversed(rec.inplace_log):
        if ptr in ptrs and n_nodes > created:
            made = rec.fn_id(node) if node is not None and rec.is_known(node) else None
            return line, op, made
    return None


_VERSIONS = re.compile(r"is at version (\d+); expected version (\d+) instead")


def _versions(msg: str) -> dict[str, int]:
    """The saved tensor's versions from autograd's message ("is at version 1; expected
    version 0 instead")."""
    m = _VERSIONS.search(msg)
    return {} if m is None else {"current_version": int(m[1]), "saved_version": int(m[2])}


def _where(info: FnInfo) -> str:
    line = info.doc.get("line")
    at = f", line {line}" if line is not None else ""
    return f"{info.doc['name']} ({info.id}{at})"


# A library module's source line that calls the op (``return F.linear(input, ...)``).
_CALL = re.compile(r"\b(?:F|torch|_VF|torch\.nn\.functional|torch\._C\._nn)\.(\w+)\(")


def _op_from_source(exc: BaseException) -> str | None:
    """The torch function called on the line of ``exc``'s innermost Python frame (a library
    module's ``F.linear(...)``), when that line calls exactly one."""
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None and tb.tb_next.tb_frame.f_code is not TAP_CODE:
        tb = tb.tb_next  # NOTE [the tap in a traceback] in outputs.py: the caller's frame
    text = linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
    ops = set(_CALL.findall(text))
    return ops.pop() if len(ops) == 1 else None


def describe_raise(rec: Recorder, exc: BaseException) -> dict[str, Any]:
    """Where a snippet's exception was raised: the innermost module it was raised in (path,
    class, the shapes of its tensor arguments) and the torch call that raised, when known.
    The tap sees the calls the snippet makes itself; inside a library module (where it steps
    aside) the call is read from the raising line of the module's source."""
    out: dict[str, Any] = {}
    op = rec.op_error if rec.op_error is not None and rec.op_error[0] is exc else None
    mod = rec.module_error if rec.module_error is not None and rec.module_error[0] is exc else None
    if mod is not None:
        out.update(module=mod[1], module_type=mod[2], shapes=mod[3],
                   op=op[1] if op is not None else _op_from_source(exc))
    elif op is not None:
        out.update(op=op[1], shapes=op[2])
    if op is not None and _LEAF_IN_PLACE in str(exc):  # the leaf it names is the one the op changed
        out["node"] = op[3]
    return {k: v for k, v in out.items() if v is not None}


_LEAF_IN_PLACE = "leaf Variable that requires grad is being used in an in-place operation"


def describe_error(rec: Recorder, exc: BaseException) -> dict[str, Any]:
    """``{node, detail}`` for in-place and freed-graph errors of a failed pass, else ``{}``."""
    msg = str(exc)
    needle = _INPLACE if _INPLACE in msg else _FREED if _FREED in msg else None
    if needle is None:
        return {}
    failed = [p for p in rec.passes if not p.doc["completed"]]
    roots = failed[-1].doc["roots"] if failed else []
    candidates = _upstream_order(rec, roots) if roots else list(rec.fn_by_id.values())
    if needle == _FREED and failed:
        # the failing pass frees what it has run before it fails (the new graph's nodes): the
        # node to name is one an earlier pass freed (an older graph a carried tensor reaches)
        this = failed[-1].doc["index"]
        earlier = [info for info in candidates
                   if any(s.get("freed_after_pass") is not None and s["freed_after_pass"] < this
                          for s in info.doc["saved"])]
        first = {id(info) for info in earlier}
        candidates = earlier + [info for info in candidates if id(info) not in first]
    for info in candidates:
        bad = _refused(info, needle)
        if not bad:
            continue
        names = ", ".join(f"'{n}'" for n, _ in bad)
        if needle == _INPLACE:
            culprit = _inplace_culprit(rec, info, {n for n, _ in bad})
            where = (f" by `{culprit[1]}` at line {culprit[0]}" if culprit and culprit[0] is not None
                     else f" by `{culprit[1]}`" if culprit else "")
            detail = (f"saved tensor {names} of {_where(info)} was modified in place{where} after "
                      f"it was saved; autograd's version check refused to use it")
            out: dict[str, Any] = {"node": info.id, "detail": detail, "saved_name": bad[0][0],
                                   **(_versions(bad[0][1]) or _versions(msg))}
            if culprit is not None:
                out.update(inplace_op=culprit[1], inplace_line=culprit[0], inplace_node=culprit[2])
            return {k: v for k, v in out.items() if v is not None}
        else:
            passes = sorted({s["freed_after_pass"] for s in info.doc["saved"]
                             if s.get("freed_after_pass") is not None})
            after = f" after pass {passes[0]}" if passes else ""
            detail = (f"saved tensor {names} of {_where(info)} was freed{after}; pass "
                      f"retain_graph=True to the earlier backward to keep it")
        return {"node": info.id, "detail": detail}
    return {}
