"""Between a stored run and a gradient check: which target a node names, and which node a
check's answer names.

The page asks to check a node of a run (``POST /api/runs/{id}/gradcheck`` with its node id);
the sandbox re-runs the snippet and knows tensors by name and order, not by the document's ids
(NOTE [how a re-run finds the same tensor] in ``capture/numcheck/probe.py``). This module
turns a node into a :class:`~gradtrace.schema.gradcheck.TargetSpec` and, for the answer, the
suspect's and reasons' (name, occurrence) back into node ids. Torch-free: the web process runs it.
"""

from __future__ import annotations

import re
from typing import Any

from gradtrace.errors import InvalidRequest, NotFound
from gradtrace.schema.gradcheck import GradcheckResult, TargetSpec

_BUILTIN = re.compile(r"Backward\d+$")


def is_custom_function(node: dict[str, Any]) -> bool:
    """A node of a user-defined ``torch.autograd.Function``: autograd names it after the class
    (``CubeBackward``), where built-in nodes end in a number (``MulBackward0``)."""
    name = str(node.get("name", ""))
    return (node.get("kind") == "function" and name.endswith("Backward") and not _BUILTIN.search(name)
            and name not in ("CompiledFunctionBackward", "CheckpointFunctionBackward"))


def _function_nodes(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    nodes = [n for n in doc.get("graph", {}).get("nodes", []) if n.get("kind") == "function" and n.get("name") == name]
    return sorted(nodes, key=lambda n: (n.get("seq") is None, n.get("seq") or 0))


def target_for_node(doc: dict[str, Any], node_id: str) -> TargetSpec:
    """The check a click on ``node_id`` asks for; a 422 for a node that cannot be checked."""
    nodes = {n.get("id"): n for n in doc.get("graph", {}).get("nodes", [])}
    node = nodes.get(node_id)
    if node is None:
        raise NotFound(f"the run has no node {node_id!r}", detail={"node": node_id})
    if node.get("name") == "AccumulateGrad":  # the leaf behind it
        for e in doc.get("graph", {}).get("edges", []):
            if e.get("target") == node_id and nodes.get(e.get("source"), {}).get("role") == "leaf":
                node = nodes[e["source"]]
                break
    if node.get("kind") == "tensor" and node.get("role") == "leaf":
        return TargetSpec(kind="leaf", name=str(node.get("name")))
    if is_custom_function(node):
        same = _function_nodes(doc, str(node["name"]))
        return TargetSpec(kind="function", name=str(node["name"]),
                          occurrence=next(i for i, n in enumerate(same) if n.get("id") == node_id))
    raise InvalidRequest(f"node {node_id} ({node.get('name')}) cannot be checked: pick a leaf, a parameter or a "
                         "custom autograd.Function node", detail={"node": node_id, "name": node.get("name")})


def node_id_for(doc: dict[str, Any], name: str, occurrence: int) -> str | None:
    same = _function_nodes(doc, name)
    return str(same[occurrence]["id"]) if occurrence < len(same) else None


def place_on_run(doc: dict[str, Any], result: GradcheckResult) -> GradcheckResult:
    """``result`` with the suspect's and the reasons' node ids in ``doc`` filled in (and only
    those: ids the sandbox wrote are never trusted)."""
    if result.suspect is not None:
        result.suspect.node_id = node_id_for(doc, result.suspect.name, result.suspect.occurrence)
    for r in result.reasons:
        r.node_id = node_id_for(doc, r.node, r.occurrence or 0) if r.node is not None else None
    return result
