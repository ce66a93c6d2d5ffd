"""The ``%%gradtrace`` cell magic in a real IPython shell (in process): what it records, what
it binds, and how a failing cell shows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from gradtrace.notebook.widget import GradtraceWidget


@pytest.fixture()
def shell() -> Iterator[Any]:
    ip = InteractiveShell.instance()
    ip.run_cell("%load_ext gradtrace", store_history=True)
    try:
        yield ip
    finally:
        InteractiveShell.clear_instance()


def test_the_magic_records_the_cell_and_binds_the_widget(shell: Any, widget_bundles: Any) -> None:
    cell = ("%%gradtrace w\n"
            "import torch\n"
            "a = torch.tensor([1.0, 2.0], requires_grad=True)\n"
            "b = (a * a).sum()\n"
            "b.backward()\n")
    result = shell.run_cell(cell, store_history=True)
    assert result.success, result.error_in_exec
    w = shell.user_ns["w"]
    assert isinstance(w, GradtraceWidget) and result.result is w
    doc = w.document
    assert doc["status"] == "ok" and doc["code"] == cell.split("\n", 1)[1]
    by_name = {n.get("name"): n for n in doc["graph"]["nodes"]}
    assert by_name["a"]["line"] in (2, 3), "lines are the cell's own"
    assert by_name["a"]["grad"]["values"] == [2.0, 4.0]
    assert shell.user_ns["a"].grad.tolist() == [2.0, 4.0], "the cell ran in the notebook's namespace"


def test_a_failing_cell_shows_its_run_and_raises(shell: Any, widget_bundles: Any) -> None:
    result = shell.run_cell("%%gradtrace w\nimport torch\nt = torch.ones(2, requires_grad=True)\nu = t * 3\n"
                            "raise KeyError('nope')\n", store_history=True)
    assert isinstance(result.error_in_exec, KeyError)
    doc = shell.user_ns["w"].document
    assert doc["status"] == "error" and doc["error"]["type"] == "KeyError" and doc["error"]["line"] == 4
    assert "MulBackward0" in [n.get("name") for n in doc["graph"]["nodes"]]


def test_a_cell_holds_only_the_nodes_it_made(shell: Any, widget_bundles: Any) -> None:
    shell.run_cell("import torch\nx = torch.tensor(2.0, requires_grad=True)\ny = x * x + 3 * x + 1\ny.backward()\n")
    shell.run_cell("%%gradtrace w\nv = torch.ones(3, requires_grad=True)\n(v * 2).sum().backward()\n")
    names = [n.get("name") for n in shell.user_ns["w"].document["graph"]["nodes"]]
    assert "x" not in names and names.count("AddBackward0") == 0, names
