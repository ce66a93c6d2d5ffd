"""A backward root's tensor node has one edge from the node that made it, however often the
same root is backpropagated or was first retained (``retain_grad``); and each pass of a loop
gets its own root's edge. The recorder finds an edge it already added by (source, target)
(``Recorder.tensor_edges``), not by a scan of every edge."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rundoc import run_doc


def _root_edges(doc: dict[str, Any]) -> Counter[tuple[str, str]]:
    """(source, target) of each edge into a tensor node that a pass names as a root."""
    roots = {r for p in doc["passes"] for r in p["roots"]}
    return Counter((e["source"], e["target"]) for e in doc["graph"]["edges"] if e["target"] in roots)


def test_the_same_root_backpropagated_twice_has_one_edge() -> None:
    doc = run_doc("x = torch.ones(3, requires_grad=True)\n"
                  "loss = (x * 2).sum()\n"
                  "loss.backward(retain_graph=True)\n"
                  "loss.backward()\n")
    assert len(doc["passes"]) == 2
    assert doc["passes"][0]["roots"] == doc["passes"][1]["roots"]
    edges = _root_edges(doc)
    assert len(edges) == 1 and set(edges.values()) == {1}, edges


def test_a_retained_tensor_then_backpropagated_has_one_edge() -> None:
    doc = run_doc("x = torch.ones(3, requires_grad=True)\n"
                  "y = (x * 2).sum()\n"
                  "y.retain_grad()\n"
                  "y.backward()\n")
    (root,) = doc["passes"][0]["roots"]
    node = next(n for n in doc["graph"]["nodes"] if n["id"] == root)
    assert set(node.get("roles", [node["role"]])) >= {"root"}
    edges = _root_edges(doc)
    assert list(edges.values()) == [1], edges


def test_each_pass_of_a_loop_has_its_roots_edge_once() -> None:
    doc = run_doc("w = torch.ones(2, requires_grad=True)\n"
                  "for _ in range(40):\n"
                  "    loss = (w * w).sum()\n"
                  "    loss.backward()\n")
    assert len(doc["passes"]) == 40
    edges = _root_edges(doc)
    assert len(edges) == 40 and set(edges.values()) == {1}
    assert {t for _, t in edges} == {p["roots"][0] for p in doc["passes"]}
