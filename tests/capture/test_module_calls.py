"""``RunDocument.modules`` and ``Node.module_stack``: NOTE [module calls] in capture/modules.py.
Both recorders (``native`` False and True) must give them."""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

import pytest

from conftest import Snippet, lesson_code, snippets

BOTH = pytest.mark.parametrize("native", [False, True], ids=["python", "core"])


def _fn_nodes(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in doc["graph"]["nodes"] if n["kind"] == "function"]


def _check_stacks(doc: dict[str, Any]) -> None:
    """Every node's stack ends at its module, and each entry lies inside the one before."""
    calls = {m["path"]: m["calls"] for m in doc["modules"]}
    for n in doc["graph"]["nodes"]:
        stack = n.get("module_stack")
        if n["module"] is None:
            assert stack is None, n
            continue
        assert stack and stack[-1]["path"] == n["module"], n
        for outer, inner in itertools.pairwise(stack):
            assert inner["path"].startswith(outer["path"] + "."), stack
        for entry in stack:
            assert 0 <= entry["call"] < calls[entry["path"]], (entry, calls)


GRU = """\
torch.manual_seed(0)
cell = nn.GRUCell(8, 16)
xs = torch.randn(200, 1, 8)
h = torch.zeros(1, 16)
for x in xs:
    h = cell(x, h)
h.sum().backward()
"""


@BOTH
def test_gru_cell_unrolled_200_steps_is_200_calls_of_the_cell(run: Any, native: bool) -> None:
    doc = run(GRU, native=native)
    assert doc["status"] == "ok"
    assert doc["modules"] == [{"path": "cell", "type": "GRUCell", "calls": 200}]
    _check_stacks(doc)
    by_call: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for n in _fn_nodes(doc):
        if n["module"] == "cell":
            assert len(n["module_stack"]) == 1
            by_call[n["module_stack"][0]["call"]].append(n)
    assert sorted(by_call) == list(range(200))
    # the same graph per step (the first step's h has no history), and in creation order
    sizes = {len(v) for k, v in by_call.items() if k > 0}
    assert len(sizes) == 1, sizes
    for k in range(1, 200):
        first = min(n["seq"] for n in by_call[k] if n["name"] != "AccumulateGrad")
        assert max(n["seq"] for n in by_call[k - 1]) < first


@BOTH
def test_transformer_layers_are_nested_calls(run: Any, native: bool) -> None:
    doc = run(lesson_code("14_transformer_block"), native=native)
    assert doc["status"] == "ok"
    _check_stacks(doc)
    modules = {m["path"]: m for m in doc["modules"]}
    assert modules["encoder"] == {"path": "encoder", "type": "TransformerEncoder", "calls": 1}
    for i in range(2):
        assert modules[f"encoder.layers.{i}"]["type"] == "TransformerEncoderLayer"
        assert modules[f"encoder.layers.{i}"]["calls"] == 1
        assert modules[f"encoder.layers.{i}.self_attn"]["type"] == "MultiheadAttention"
    inner = [n for n in _fn_nodes(doc) if (n["module"] or "").startswith("encoder.layers.1.")]
    assert inner
    for n in inner:
        assert [e["path"] for e in n["module_stack"][:2]] == ["encoder", "encoder.layers.1"]


ADAM = """\
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
x = torch.randn(16, 4)
y = torch.randn(16, 1)
for step in range(20):
    opt.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    opt.step()
"""


@BOTH
def test_adam_loop_call_index_is_the_iteration(run: Any, native: bool) -> None:
    doc = run(ADAM, native=native)
    assert doc["status"] == "ok"
    _check_stacks(doc)
    assert {m["path"]: (m["type"], m["calls"]) for m in doc["modules"]} == {
        "model": ("Sequential", 20), "model.0": ("Linear", 20), "model.1": ("ReLU", 20),
        "model.2": ("Linear", 20)}
    losses = sorted(n["seq"] for n in _fn_nodes(doc) if n["name"] == "MseLossBackward0")
    assert len(losses) == 20
    seen = set()
    for n in _fn_nodes(doc):
        if n["module"] is None or n["name"] == "AccumulateGrad":
            continue
        it = n["module_stack"][0]["call"]
        assert n["module_stack"][0]["path"] == "model"
        assert (losses[it - 1] if it else -1) < n["seq"] < losses[it], (n, it)
        # a layer is called once per call of the model: same index
        assert all(e["call"] == it for e in n["module_stack"])
        seen.add(it)
    assert seen == set(range(20))


@BOTH
def test_no_modules_no_fields(run: Any, native: bool) -> None:
    doc = run("x = torch.ones(2, requires_grad=True)\n(x * x).sum().backward()\n", native=native)
    assert "modules" not in doc
    assert all("module_stack" not in n for n in doc["graph"]["nodes"])


@pytest.mark.parametrize("snippet", snippets(), ids=lambda s: s.name)
def test_every_lesson_and_case_has_consistent_module_calls_and_resets(snippet: Snippet, run: Any) -> None:
    doc = run(snippet.code)
    if "modules" in doc:
        _check_stacks(doc)
    else:
        assert all(n["module"] is None for n in doc["graph"]["nodes"])
    for n in doc["graph"]["nodes"]:
        resets = n.get("grad_resets")
        if resets:
            assert n["role"] == "leaf"
            ats = [r["at"] for r in resets]
            assert ats == sorted(set(ats)) and ats[0] > 0 and ats[-1] < len(n["grad_history"])
