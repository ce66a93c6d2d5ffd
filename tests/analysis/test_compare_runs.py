"""The comparison of two runs (``gradtrace/analysis/compare/documents.py``) on real recorded runs, judged
against torch's own gradients."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import torch

from conftest import LESSONS
from gradcheck.cube import IN_A_CHAIN, RIGHT_FACTOR, WRONG_FACTOR, cube
from gradtrace.analysis.compare import compare_documents
from gradtrace.schema.compare import Comparison
from programs import UNSEEDED_MLP as MLP
from rundoc import run_doc

GOLDEN = Path(__file__).resolve().parents[1] / "golden"

CUSTOM = cube("2 * ", IN_A_CHAIN)
CUSTOM_FIXED = CUSTOM.replace(WRONG_FACTOR, RIGHT_FACTOR)


@pytest.fixture(autouse=True)
def one_thread() -> Any:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _every_delta(c: Comparison) -> list[float | None]:
    return [d.max_abs for p in c.pairs for d in (p.value, p.grad) if d is not None]


def test_the_same_code_and_seed_pair_every_node_with_all_deltas_zero() -> None:
    a, b = run_doc(MLP, seed=3), run_doc(MLP, seed=3)
    c = compare_documents(a, b)
    assert c.same_structure and not c.only_a and not c.only_b
    assert len(c.pairs) == len(a["graph"]["nodes"]) and c.keys_used == {"line": len(c.pairs)}
    deltas = _every_delta(c)
    assert deltas and all(d == 0.0 for d in deltas)
    assert c.first_divergence is None and c.backward_order.same
    assert "Same graph" in c.summary and "No value or gradient differs" in c.summary


@pytest.mark.parametrize("item", LESSONS, ids=lambda item: item.stem)
def test_no_lesson_diverges_from_a_rerun_of_itself(item: Any) -> None:
    """No false alarm: every lesson, run twice, compares as the same run."""
    a, b = run_doc(item.code, seed=0), run_doc(item.code, seed=0)
    c = compare_documents(a, b)
    assert c.same_structure and not c.only_a and not c.only_b, c.summary
    assert c.first_divergence is None, c.summary
    assert all(d == 0.0 for d in _every_delta(c)), c.summary


def test_another_seed_keeps_the_structure_and_moves_the_gradients() -> None:
    a, b = run_doc(MLP, seed=0), run_doc(MLP, seed=1)
    c = compare_documents(a, b)
    assert c.same_structure and not c.only_a and not c.only_b
    leaves = [p for p in c.pairs if p.kind == "tensor" and p.grad is not None]
    assert len(leaves) == 6  # three weights, three biases
    assert all(p.grad is not None and p.grad.max_abs and p.grad.beyond_tolerance for p in leaves)
    # the loss's own gradient (1) is the same in both: the root's backward agrees
    root = next(p for p in c.pairs if p.name == "SumBackward0")
    assert root.grad is not None and root.grad.max_abs == 0.0 and not root.grad.beyond_tolerance
    assert c.first_divergence is not None and c.first_divergence.phase == "forward"


def test_an_inserted_relu_is_the_one_node_only_in_b_and_every_other_node_stays_paired() -> None:
    b_code = MLP.replace("h = l2(h)\n", "h = l2(h)\nh = h.relu()\n")
    a, b = run_doc(MLP, seed=0), run_doc(b_code, seed=0)
    c = compare_documents(a, b)
    assert not c.only_a
    assert [n.name for n in c.only_b] == ["ReluBackward0"]
    assert c.only_b[0].line == b_code.splitlines().index("h = h.relu()") + 1
    assert len(c.pairs) == len(a["graph"]["nodes"]) == len(b["graph"]["nodes"]) - 1
    # the nodes after the inserted line moved one line down and still paired by their line
    shifted = [p for p in c.pairs if p.line_a is not None and p.line_b == p.line_a + 1]
    assert shifted and all(p.key == "line" for p in shifted)
    assert all(p.name == c.pairs[k].name for k, p in enumerate(c.pairs))
    assert "1 node only in B: ReluBackward0" in c.summary
    # one timeline for both: every event of A in order, the relu's two events of B in between
    assert [ka for ka, _ in c.steps if ka is not None] == list(range(len(a["events"])))
    assert sorted(kb for _, kb in c.steps if kb is not None) == list(range(len(b["events"])))
    alone = [kb for ka, kb in c.steps if ka is None]
    assert len(alone) == 2 and {b["events"][kb]["node"] for kb in alone} == {c.only_b[0].id}


def test_a_fixed_custom_function_is_the_first_divergence_in_the_backward() -> None:
    a, b = run_doc(CUSTOM, seed=0), run_doc(CUSTOM_FIXED, seed=0)
    c = compare_documents(a, b)
    assert c.same_structure
    div = c.first_divergence
    assert div is not None and div.phase == "backward" and div.what == "grad_inputs"
    assert div.name == "CubeBackward"
    node = next(n for n in a["graph"]["nodes"] if n["id"] == div.a)
    assert node["line"] == CUSTOM.splitlines().index("y = Cube.apply(a)") + 1
    assert a["events"][div.a_event]["node"] == div.a and b["events"][div.b_event]["node"] == div.b
    # before the custom node, the backward agrees; the forward agrees everywhere
    earlier = [e for e in a["events"][: div.a_event]]
    assert all(e["phase"] == "forward" or e["node"] != div.a for e in earlier)
    assert all(p.value is None or not p.value.beyond_tolerance for p in c.pairs)


def _grads_by_torch(code: str, seed: int, names: tuple[str, ...]) -> dict[str, torch.Tensor]:
    """Run ``code`` without gradtrace, seeded as run_snippet seeds it, and read ``.grad``."""
    random.seed(seed)
    torch.manual_seed(seed)
    space: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(code, "<torch>", "exec"), space)
    return {name: space[name].grad.detach().clone() if hasattr(space[name], "grad") else space[name]
            for name in names}


@pytest.mark.parametrize(("code_a", "code_b", "seed_b"), [(MLP, MLP, 7), (CUSTOM, CUSTOM_FIXED, 0)],
                         ids=["another-seed", "fixed-backward"])
def test_leaf_gradient_deltas_are_torchs_own(code_a: str, code_b: str, seed_b: int) -> None:
    names = ("x",) if code_a is MLP else ("w",)
    # the MLP's parameters are module attributes: compare the leaves the snippet names
    code_a2 = code_a.replace("x = torch.randn(5, 4)", "x = torch.randn(5, 4, requires_grad=True)")
    code_b2 = code_b.replace("x = torch.randn(5, 4)", "x = torch.randn(5, 4, requires_grad=True)")
    c = compare_documents(run_doc(code_a2, seed=0), run_doc(code_b2, seed=seed_b))
    want_a, want_b = _grads_by_torch(code_a2, 0, names), _grads_by_torch(code_b2, seed_b, names)
    for name in names:
        pair = next(p for p in c.pairs if p.kind == "tensor" and p.name == name)
        assert pair.grad is not None and pair.grad.exact
        diff = (want_b[name] - want_a[name]).double()
        assert pair.grad.max_abs == pytest.approx(diff.abs().max().item(), rel=1e-5, abs=1e-7)
        rel = (diff.norm() / want_a[name].double().norm()).item()
        assert pair.grad.rel_l2 == pytest.approx(rel, rel=1e-5)
        assert pair.grad.beyond_tolerance


@pytest.mark.parametrize("item", LESSONS, ids=lambda item: item.stem)
def test_no_lesson_diverges_from_its_golden_document(item: Any) -> None:
    """Across CPUs and kernels: the golden document (written on another machine, perhaps) and
    a fresh run compare as the same run, within the golden tests' own tolerance."""
    golden = json.loads((GOLDEN / f"lesson_{item.stem}.json").read_text())
    c = compare_documents(golden, run_doc(item.code, seed=0))
    assert c.same_structure and c.first_divergence is None, c.summary
