"""Parameters paired by their place in the graph (NOTE [parameters by their place] in
``analysis/compare/align.py``): a layer inserted into an ``nn.Sequential`` renames every later one,
and the comparison says renamed, never removed and added. Judged against torch: the paired
parameters are the same module objects of the bare programs (same values after seeding)."""

from __future__ import annotations

from typing import Any

from gradtrace.analysis.compare import compare_documents
from rundoc import run_doc

A = ("import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
     "model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2), nn.Tanh(), nn.Linear(2, 1))\n"
     "loss = model(torch.randn(5, 3)).pow(2).mean()\nloss.backward()\n")
B = A.replace("nn.Linear(4, 2), nn.Tanh(),", "nn.Linear(4, 4), nn.Linear(4, 2), nn.Tanh(),")


def _shapes(code: str) -> dict[str, tuple[int, ...]]:
    ns: dict[str, Any] = {}
    exec(compile(code, "<bare>", "exec"), ns)
    return {n: tuple(p.shape) for n, p in ns["model"].named_parameters(prefix="model")}


def test_an_inserted_layer_renames_the_later_ones_and_adds_only_its_own() -> None:
    c = compare_documents(run_doc(A), run_doc(B))
    renamed = {(p.name, p.name_b) for p in c.pairs if p.key == "place"}
    assert renamed == {("model.2.weight", "model.3.weight"), ("model.2.bias", "model.3.bias"),
                       ("model.4.weight", "model.5.weight"), ("model.4.bias", "model.5.bias")}
    only_b = sorted(n.name for n in c.only_b if n.kind == "tensor")
    assert only_b == ["model.2.bias", "model.2.weight"]  # the inserted layer, and nothing else
    assert not [n for n in c.only_a if n.kind == "tensor"]
    shapes_a, shapes_b = _shapes(A), _shapes(B)
    for a, b in renamed:  # each pair is the same layer of the bare programs
        assert shapes_a[a] == shapes_b[b]
    assert "4 parameters renamed: model.2.weight → model.3.weight" in c.summary
    assert not any(p.shape_changed for p in c.pairs if p.kind == "tensor")


def test_unchanged_names_pair_as_before() -> None:
    c = compare_documents(run_doc(A), run_doc(A.replace("5, 3", "6, 3")))
    assert not [p for p in c.pairs if p.key == "place"] and not c.only_a and not c.only_b
    assert "renamed" not in c.summary


def test_a_changed_layer_width_keeps_its_name_and_says_the_shape_changed() -> None:
    c = compare_documents(run_doc(A), run_doc(A.replace("nn.Linear(4, 2), nn.Tanh(), nn.Linear(2, 1)",
                                                                  "nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1)")))
    assert not [p for p in c.pairs if p.key == "place"]
    changed = {p.name for p in c.pairs if p.kind == "tensor" and p.shape_changed}
    assert {"model.2.weight", "model.2.bias", "model.4.weight"} <= changed
