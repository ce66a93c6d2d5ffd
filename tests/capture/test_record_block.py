"""``gradtrace.record()`` holds only the nodes made inside its block (NOTE [nodes from before
the block] in capture/graph.py): notebook cells run at module level, where earlier cells'
graphs are alive in the globals. Both recorders."""

from __future__ import annotations

from typing import Any

import pytest

BOTH = pytest.mark.parametrize("native", [False, True], ids=["python", "core"])

EARLIER_CELL = """\
import torch
x = torch.tensor(2.0, requires_grad=True)
y = x * x + 3 * x + 1
y.backward(retain_graph=True)
"""

MLP_CELL = """\
import torch
from torch import nn
import gradtrace
with gradtrace.record(native=NATIVE) as rec:
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    out = mlp(torch.randn(2, 3)).sum()
    out.backward()
doc = rec.document()
"""


def _cells(*cells: str, native: bool) -> Any:
    """Run ``cells`` as a notebook does: one module-level globals dict, each cell compiled as
    its own file."""
    g: dict[str, Any] = {"__name__": "__main__", "NATIVE": native}
    for i, cell in enumerate(cells):
        exec(compile(cell, f"<cell {i}>", "exec"), g)
    return g["doc"]


def _names(doc: Any) -> list[str | None]:
    return [n.name for n in doc.graph.nodes]


@BOTH
def test_an_earlier_cells_graph_stays_out(native: bool) -> None:
    doc = _cells(EARLIER_CELL, MLP_CELL, native=native)
    names = _names(doc)
    assert "x" not in names and "MulBackward0" not in names and "AddBackward0" not in names
    assert sorted(n for n in names if n and "." in n) == ["mlp.0.bias", "mlp.0.weight", "mlp.2.bias", "mlp.2.weight"]
    # the same as recording the MLP alone
    alone = _cells(MLP_CELL, native=native)
    assert names == _names(alone)
    assert [n.grad for n in doc.graph.nodes] == [n.grad for n in alone.graph.nodes]


@BOTH
def test_a_tensor_from_before_the_block_is_an_input_with_its_producer_named(native: bool) -> None:
    cell = MLP_CELL.replace("    out.backward()\n", "    z = out + y\n    z.backward()\n")
    doc = _cells(EARLIER_CELL, cell, native=native)
    nodes = {n.id: n for n in doc.graph.nodes}
    adds = [n for n in doc.graph.nodes if n.name == "AddBackward0"]
    assert len(adds) == 2  # y's producer from the earlier cell, and z = out + y
    old, new = sorted(adds, key=lambda n: n.line is not None)
    assert old.line is None and new.line == 8
    into_old = [e for e in doc.graph.edges if e.target == old.id]
    assert into_old == []  # not walked into: x and its graph stay out
    assert {nodes[e.source].name for e in doc.graph.edges if e.target == new.id} == {"SumBackward0", "AddBackward0"}
    assert "x" not in _names(doc) and "MulBackward0" not in _names(doc)


@BOTH
def test_a_leaf_from_before_the_block_is_a_leaf(native: bool) -> None:
    cell = """\
import gradtrace
with gradtrace.record(native=NATIVE) as rec:
    w = x * 5
    w.backward()
doc = rec.document()
"""
    doc = _cells(EARLIER_CELL, cell, native=native)
    assert _names(doc) == ["AccumulateGrad", "MulBackward0", "x", "w"]
    (x,) = [n for n in doc.graph.nodes if n.name == "x"]
    assert x.role == "leaf"
    # .grad after the block's one accumulation: 7 from the earlier cell, then 5
    assert len(x.grad_history) == 1 and x.grad_history[0].values == 12.0
    assert x.grad is not None and x.grad.values == 12.0


@BOTH
def test_inside_a_function_too(native: bool) -> None:
    import torch
    from torch import nn

    import gradtrace

    x = torch.tensor(2.0, requires_grad=True)
    y = x * x + 3 * x + 1
    y.backward(retain_graph=True)

    def cell() -> Any:
        with gradtrace.record(native=native) as rec:
            lin = nn.Linear(2, 1)
            (lin(torch.ones(1, 2)) * y).sum().backward()
        return rec.document()

    doc = cell()
    names = _names(doc)
    assert "x" not in names
    # lin(...) * y: y's producer (named, not walked into), the block's own Mul and Addmm
    assert names.count("AddBackward0") == 1 and names.count("MulBackward0") == 1


@BOTH
def test_document_equals_the_validated_dict(native: bool) -> None:
    """NOTE [documents in process]: ``rec.document()`` (validated from the canonical bytes, the
    collector paused) is the document capture's exit gives, parsed and validated the plain way."""
    import gc

    import torch
    from torch import nn

    import gradtrace
    from gradtrace.schema import RunDocument
    from rundoc import record_doc

    def record() -> Any:
        torch.manual_seed(0)
        cell = nn.GRUCell(3, 4)
        with gradtrace.record(native=native) as rec:
            h = torch.zeros(1, 4)
            for x in torch.randn(5, 1, 3):
                h = cell(x, h)
            h.sum().backward()
        return rec

    was = gc.isenabled()
    fast = record().document()
    assert gc.isenabled() == was
    plain = RunDocument.model_validate(record_doc(record()))
    assert fast.id == plain.id
    assert fast.model_dump(by_alias=True, mode="json") == plain.model_dump(by_alias=True, mode="json")


@BOTH
def test_a_cell_recorded_as_the_cell_magic_does(native: bool) -> None:
    """``%%gradtrace`` records with the user namespace given (``_namespace``) and execs the
    cell in it: earlier cells' graphs live there, and stay out."""
    import gradtrace

    g: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(EARLIER_CELL, "<cell 0>", "exec"), g)
    cell = "mlp = torch.nn.Linear(3, 1)\nout = mlp(torch.randn(2, 3)).sum()\nout.backward()\n"
    with gradtrace.record(native=native, _filename="<cell 1>", _namespace=g) as rec:
        exec(compile(cell, "<cell 1>", "exec"), g)
    names = _names(rec.document())
    assert "x" not in names and "MulBackward0" not in names and "AddBackward0" not in names
    assert {"mlp.weight", "mlp.bias", "out"} <= set(names)
