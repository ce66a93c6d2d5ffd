"""RunError's additions: the in-place hazard's op, node and versions; an exception raised inside
a module located by module, class, op and the shapes it got. Both recorders."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import lesson_code, line_of

BOTH = pytest.mark.parametrize("native", [False, True], ids=["python", "core"])


@BOTH
def test_inplace_hazard_names_op_node_and_versions(run: Any, native: bool) -> None:
    doc = run(lesson_code("08_inplace_hazard"), native=native)
    err = doc["error"]
    assert "is at version 1; expected version 0 instead" in err["message"]
    assert err["saved_version"] == 0 and err["current_version"] == 1
    assert err["saved_name"] == "result"
    assert err["inplace_op"] == "add_" and err["inplace_line"] == line_of("08_inplace_hazard", "add_(")
    nodes = {n["id"]: n for n in doc["graph"]["nodes"]}
    assert nodes[err["node"]]["name"] == "ExpBackward0"
    made = nodes[err["inplace_node"]]
    assert made["name"] == "AddBackward0" and made["line"] == err["inplace_line"]


@BOTH
def test_versions_count_every_change(run: Any, native: bool) -> None:
    code = """\
x = torch.ones(3, requires_grad=True)
y = x.sigmoid()
y.mul_(2)
y.add_(1)
y.sum().backward()
"""
    err = run(code, native=native)["error"]
    assert (err["saved_version"], err["current_version"]) == (0, 2)
    assert err["inplace_op"] == "add_" and err["inplace_line"] == 4


@BOTH
def test_shape_error_in_a_sequential_names_the_layer(run: Any, native: bool) -> None:
    code = "model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(5, 2))\nout = model(torch.randn(3, 4))\n"
    doc = run(code, native=native)
    err = doc["error"]
    assert doc["status"] == "error" and err["line"] == 2
    assert (err["module"], err["module_type"], err["op"], err["shapes"]) == ("model.2", "Linear", "linear", [[3, 8]])
    # the layers that worked are still in the graph
    assert {"model.0", "model.1"} <= {n["module"] for n in doc["graph"]["nodes"]}


@BOTH
def test_error_in_a_snippet_module_and_at_top_level(run: Any, native: bool) -> None:
    code = """\
class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(5, 2))
    def forward(self, x):
        return torch.tanh(x) @ self.w
net = nn.ModuleDict({"head": Head()})
try:
    net["head"](torch.randn(3, 4))
except RuntimeError:
    pass
a = torch.randn(2, 3, requires_grad=True)
b = a.sum(dim=7)
"""
    err = run(code, native=native)["error"]
    # the module error was caught: only the last one is the run's
    assert err["type"] == "IndexError" and err["line"] == 13
    assert (err["op"], err["shapes"]) == ("sum", [[2, 3]])
    assert "module" not in err
    caught = run(code.replace("try:\n    ", "").replace("except RuntimeError:\n    pass\n", ""), native=native)["error"]
    assert (caught["module"], caught["module_type"], caught["op"], caught["shapes"]) == (
        "net.head", "Head", "matmul", [[3, 4]])


@BOTH
def test_an_exception_of_the_snippet_itself_has_no_location_fields(run: Any, native: bool) -> None:
    err = run("x = torch.ones(2)\nraise ValueError('mine')\n", native=native)["error"]
    assert err["type"] == "ValueError"
    assert not {"module", "module_type", "op", "shapes", "inplace_op"} & set(err)


@pytest.mark.parametrize("case", ["training_loop_resets", "shape_error_in_sequential", "gru_cell_unrolled"])
def test_the_additions_take_the_fast_path(case: str) -> None:
    """Documents with every addition are fixed points of the strict schema (NOTE [fast path] in
    schema/fast.py): the web process validates them the fast way."""
    from pathlib import Path

    from gradtrace.schema import canonical_json
    from gradtrace.schema.fast import validate_strict_json
    from rundoc import run_doc

    doc = run_doc((Path(__file__).parent / "cases" / f"{case}.py").read_text())
    assert validate_strict_json(canonical_json(doc)) is not None
