"""Hints name tensors so that two are never the same word (``analysis/docview.py``'s
``tensor_label``): leaves sharing a variable name are told apart by order and line."""

from __future__ import annotations

from gradtrace.analysis.docview import DocView


def test_leaves_sharing_a_name_are_told_apart_and_unique_names_stay_as_they_are() -> None:
    doc = {"graph": {"nodes": [
        {"id": "n0", "kind": "tensor", "role": "leaf", "name": "W", "line": 9, "def_line": 5},
        {"id": "n1", "kind": "tensor", "role": "leaf", "name": "W", "line": 9, "def_line": 5},
        {"id": "n2", "kind": "tensor", "role": "leaf", "name": "model.0.weight", "line": 3},
        {"id": "n3", "kind": "tensor", "role": "root", "name": "loss", "line": 10},
        {"id": "n4", "kind": "tensor", "role": "root", "name": "loss", "line": 10},
    ], "edges": []}}
    view = DocView(doc)
    labels = [view.tensor_label(n) for n in view.nodes]
    assert labels == ["W#1 (line 5)", "W#2 (line 5)", "model.0.weight", "loss", "loss"]
