"""Between a stored run and a gradient check: which target a node names, and which node a
check's answer names.

The page asks to check a node of a run (``POST /api/runs/{id}/gradcheck`` with its node id);
the sandbox re-runs the snippet and knows tensors by name and order, not by the document's ids
(NOTE [how a re-run finds the same tensor] in ``gradcheck/probe.py``). This module
turns a node into a :class:`~gradtrace.schema.gradcheck.TargetSpec` and, for the answer, the
suspect's and reasons' (name, occurrence) back into node ids. Torch-free: the web process runs it.

NOTE [which backward pass a node belongs to]
    The check re-runs the snippet up to one backward call (NOTE [checking a later backward
    pass] in ``gradcheck/probe.py``) and counts Function calls since the call before
    it. A node's pass is therefore the first backward pass that began after the node was
    made: the number of passes whose first backward event comes before the node's forward
    event in ``events`` (which are in time order). A leaf is checked in the pass the page shows
    (the request's ``pass_index``), else in the first pass that reached its AccumulateGrad.
"""

from __future__ import annotations

import re
from typing import Any

from gradtrace.errors import InvalidRequest, NotFound
from gradtrace.schema.gradcheck import GradcheckResult, TargetSpec

_BUILTIN = re.compile(r"Backward\d+$")


def is_custom_function(node: dict[str, Any], code: str | None = None) -> bool:
    """A node of a user-defined ``torch.autograd.Function``: autograd names it after the class
    (``CubeBackward``), where built-in nodes end in a number (``MulBackward0``). With the
    snippet's ``code``, only a Function whose class the code defines (torch makes nodes named
    so too: ``UndefinedGradBackward`` inside ``torch.autograd.gradcheck``); the page's
    ``frontend/src/graph/custom.js`` says the same."""
    name = str(node.get("name", ""))
    named = (node.get("kind") == "function" and name.endswith("Backward") and not _BUILTIN.search(name)
             and name not in ("CompiledFunctionBackward", "CheckpointFunctionBackward"))
    if not named or code is None:
        return named
    cls = re.escape(name.removesuffix("Backward"))
    return re.search(rf"^\s*class\s+{cls}\b", code, re.M) is not None


def _segments(doc: dict[str, Any]) -> dict[str, int]:
    """Function node id → its backward pass (NOTE [which backward pass a node belongs to])."""
    started: set[Any] = set()
    out: dict[str, int] = {}
    for ev in doc.get("events", []):
        if ev.get("phase") == "backward":
            started.add(ev.get("pass"))
        elif ev.get("phase") == "forward":
            out.setdefault(str(ev.get("node")), len(started))
    return out


def _function_nodes(doc: dict[str, Any], name: str, segment: int | None = None) -> list[dict[str, Any]]:
    nodes = [n for n in doc.get("graph", {}).get("nodes", []) if n.get("kind") == "function" and n.get("name") == name]
    if segment is not None:
        seg = _segments(doc)
        nodes = [n for n in nodes if seg.get(str(n.get("id")), 0) == segment]
    return sorted(nodes, key=lambda n: (n.get("seq") is None, n.get("seq") or 0))


def _first_pass_reaching(doc: dict[str, Any], node_ids: set[str]) -> int | None:
    for ev in doc.get("events", []):
        if ev.get("phase") == "backward" and ev.get("node") in node_ids and isinstance(ev.get("pass"), int):
            return int(ev["pass"])
    return None


def target_for_node(doc: dict[str, Any], node_id: str, pass_index: int | None = None) -> TargetSpec:
    """The check a click on ``node_id`` asks for, in backward pass ``pass_index`` (by default
    the node's own: NOTE [which backward pass a node belongs to]); a 422 for a node that
    cannot be checked."""
    nodes = {n.get("id"): n for n in doc.get("graph", {}).get("nodes", [])}
    node = nodes.get(node_id)
    if node is None:
        raise NotFound(f"the run has no node {node_id!r}", detail={"node": node_id})
    accumulate = {node_id} if node.get("name") == "AccumulateGrad" else set()
    if node.get("name") == "AccumulateGrad":  # the leaf behind it
        for e in doc.get("graph", {}).get("edges", []):
            if e.get("target") == node_id and nodes.get(e.get("source"), {}).get("role") == "leaf":
                node = nodes[e["source"]]
                break
    _check_pass(doc, pass_index)
    if node.get("kind") == "tensor" and node.get("role") == "leaf":
        leaf_id = node.get("id")
        accumulate |= {str(e.get("target")) for e in doc.get("graph", {}).get("edges", [])
                       if e.get("source") == leaf_id and nodes.get(e.get("target"), {}).get("name") == "AccumulateGrad"}
        chosen = pass_index if pass_index is not None else _first_pass_reaching(doc, accumulate)
        return TargetSpec(kind="leaf", name=str(node.get("name")), pass_index=chosen or 0)
    code = doc.get("code")
    if is_custom_function(node, code if isinstance(code, str) else None):
        own = _segments(doc).get(node_id, 0)
        if pass_index is not None and pass_index != own:
            raise InvalidRequest(f"node {node_id} ({node.get('name')}) was made for backward pass {own}, not "
                                 f"{pass_index}: a Function call belongs to the pass that follows it",
                                 detail={"node": node_id, "pass_index": pass_index})
        same = _function_nodes(doc, str(node["name"]), own)
        return TargetSpec(kind="function", name=str(node["name"]), pass_index=own,
                          occurrence=next(i for i, n in enumerate(same) if n.get("id") == node_id))
    raise InvalidRequest(f"node {node_id} ({node.get('name')}) cannot be checked: pick a leaf, a parameter or a "
                         "custom autograd.Function node", detail={"node": node_id, "name": node.get("name")})


def forward_target(doc: dict[str, Any], node_id: str | None, target: TargetSpec | None) -> TargetSpec:
    """The Function call a forward-mode check asks for: its calls are counted from the snippet's
    start (a forward-mode check stops at the call, whatever backward passes came before)."""
    if (node_id is None) == (target is None):
        raise InvalidRequest("give either a node or a target: a custom Function's node, or "
                             '{"kind": "function", "name": ..., "occurrence": ...}', detail={"field": "node"})
    if target is not None:
        if target.kind != "function":
            raise InvalidRequest("forward mode checks a custom Function's jvp: give a target of kind 'function'",
                                 detail={"field": "target"})
        return target
    nodes = {n.get("id"): n for n in doc.get("graph", {}).get("nodes", [])}
    node = nodes.get(node_id)
    if node is None:
        raise NotFound(f"the run has no node {node_id!r}", detail={"node": node_id})
    code = doc.get("code")
    if not is_custom_function(node, code if isinstance(code, str) else None):
        raise InvalidRequest(f"node {node_id} ({node.get('name')}) cannot be checked in forward mode: pick a "
                             "custom autograd.Function node", detail={"node": node_id, "name": node.get("name")})
    same = _function_nodes(doc, str(node["name"]))
    return TargetSpec(kind="function", name=str(node["name"]),
                      occurrence=next(i for i, n in enumerate(same) if n.get("id") == node_id))


def spec_for_target(doc: dict[str, Any], spec: TargetSpec) -> TargetSpec:
    """A target spelled out for a stored run, with its default pass: "every parameter" is
    checked in the first pass that reached a parameter (a snippet may call
    ``torch.autograd.gradcheck`` before its training loop, whose passes reach none)."""
    if spec.pass_index is not None or spec.kind != "parameters":
        return spec
    nodes = doc.get("graph", {}).get("nodes", [])
    params = {str(n.get("id")) for n in nodes if n.get("kind") == "tensor" and n.get("role") == "leaf"
              and "." in str(n.get("name") or "")}
    accs = {str(e.get("target")) for e in doc.get("graph", {}).get("edges", []) if e.get("source") in params}
    first = _first_pass_reaching(doc, accs)
    return spec if first is None else spec.model_copy(update={"pass_index": first})


def for_the_rerun(doc: dict[str, Any], spec: TargetSpec) -> TargetSpec:
    """``spec`` with its pass counted as the re-run counts backward calls: the document's
    ``engine`` passes (a reentrant checkpoint's inner backward, another thread's) are no call
    the snippet made, so the probe never counts them (NOTE [checking a later backward pass]
    in ``gradcheck/probe.py``); one of them cannot be checked (a 422)."""
    if spec.pass_index is None:
        return spec
    passes = doc.get("passes") or []
    if spec.pass_index < len(passes) and passes[spec.pass_index].get("api") == "engine":
        raise InvalidRequest(f"backward pass {spec.pass_index} was run by autograd's engine, not called by the "
                             "snippet (a reentrant checkpoint's inner backward, or another thread's): check the "
                             "pass that called it", detail={"pass_index": spec.pass_index})
    calls = sum(1 for p in passes[:spec.pass_index] if p.get("api") != "engine")
    return spec.model_copy(update={"pass_index": calls})


def _doc_pass(doc: dict[str, Any], call: int) -> int:
    """The document's index of the re-run's backward call ``call``."""
    seen = 0
    for p in doc.get("passes") or []:
        if p.get("api") == "engine":
            continue
        if seen == call:
            return int(p.get("index", call))
        seen += 1
    return call


def _check_pass(doc: dict[str, Any], pass_index: int | None) -> None:
    count = len(doc.get("passes") or [])
    if pass_index is not None and pass_index >= count:
        raise InvalidRequest(f"the run made {count} backward pass(es): there is no pass {pass_index} "
                             "(counted from 0)", detail={"pass_index": pass_index})


def node_id_for(doc: dict[str, Any], name: str, occurrence: int, segment: int | None = None) -> str | None:
    """The id of the ``occurrence``-th node named ``name`` made for backward pass ``segment``
    (every pass when None)."""
    same = _function_nodes(doc, name, segment)
    return str(same[occurrence]["id"]) if occurrence < len(same) else None


def place_on_run(doc: dict[str, Any], result: GradcheckResult) -> GradcheckResult:
    """``result`` with the suspect's and the reasons' node ids in ``doc`` filled in (and only
    those: ids the sandbox wrote are never trusted), and the checked pass's line and
    iteration (which call of that line it was). A forward-mode check's calls count from the
    snippet's start, in no pass."""
    if result.mode == "forward":
        if result.suspect is not None:
            result.suspect.node_id = node_id_for(doc, result.suspect.name, result.suspect.occurrence)
        for r in result.reasons:
            r.node_id = None
        return result
    k = result.pass_index = _doc_pass(doc, result.pass_index)
    if result.suspect is not None:
        result.suspect.node_id = node_id_for(doc, result.suspect.name, result.suspect.occurrence, k)
    for r in result.reasons:
        r.node_id = node_id_for(doc, r.node, r.occurrence or 0, k) if r.node is not None else None
    passes = doc.get("passes") or []
    result.pass_count = len(passes)
    if k < len(passes):
        line = passes[k].get("line")
        result.pass_line = line if isinstance(line, int) else None
        result.iteration = 1 + sum(1 for p in passes[:k] if p.get("line") == line) if result.pass_line else None
    return result
