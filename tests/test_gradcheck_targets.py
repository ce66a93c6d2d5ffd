"""``analysis/gradcheck/runs.py`` (torch-free): nodes of a stored run as check targets, and the
answer's names back on the run's node ids."""

from __future__ import annotations

from typing import Any

import pytest

from gradtrace.analysis.gradcheck import (
    for_the_rerun,
    is_custom_function,
    place_on_run,
    spec_for_target,
    target_for_node,
)
from gradtrace.errors import InvalidRequest, NotFound
from gradtrace.schema.gradcheck import GradcheckResult, Reason, Suspect, TargetSpec

DOC: dict[str, Any] = {"graph": {
    "nodes": [
        {"id": "n0", "kind": "function", "name": "AccumulateGrad", "seq": 0},
        {"id": "n1", "kind": "function", "name": "CubeBackward", "seq": 1},
        {"id": "n2", "kind": "function", "name": "CubeBackward", "seq": 3},
        {"id": "n3", "kind": "function", "name": "SumBackward0", "seq": 4},
        {"id": "n4", "kind": "tensor", "name": "x", "role": "leaf"},
        {"id": "n5", "kind": "tensor", "name": "y", "role": "root"},
    ],
    "edges": [{"source": "n4", "target": "n0", "input_nr": None}, {"source": "n0", "target": "n1", "input_nr": 0}],
}}


def test_nodes_become_targets() -> None:
    assert target_for_node(DOC, "n4") == TargetSpec(kind="leaf", name="x", pass_index=0)
    assert target_for_node(DOC, "n0") == TargetSpec(kind="leaf", name="x", pass_index=0)  # the leaf behind it
    assert target_for_node(DOC, "n2") == TargetSpec(kind="function", name="CubeBackward", occurrence=1, pass_index=0)
    with pytest.raises(InvalidRequest, match="cannot be checked"):
        target_for_node(DOC, "n3")
    with pytest.raises(InvalidRequest):
        target_for_node(DOC, "n5")
    with pytest.raises(NotFound):
        target_for_node(DOC, "n9")


def test_custom_functions_are_told_from_builtins() -> None:
    assert is_custom_function({"kind": "function", "name": "CubeBackward"})
    assert not is_custom_function({"kind": "function", "name": "MulBackward0"})
    assert not is_custom_function({"kind": "function", "name": "CompiledFunctionBackward"})


def test_the_answer_is_placed_on_the_run_and_sandbox_ids_are_not_trusted() -> None:
    r = GradcheckResult(verdict="fail", suspect=Suspect(name="CubeBackward", occurrence=1, custom=True, message="m",
                                                        node_id="forged"),
                        reasons=[Reason(code="upcast", message="u", node_id="forged"),
                                 Reason(code="kink", message="k", node="SumBackward0", occurrence=0)])
    place_on_run(DOC, r)
    assert r.suspect is not None and r.suspect.node_id == "n2"
    assert [x.node_id for x in r.reasons] == [None, "n3"]


def test_only_a_function_the_code_defines_is_the_users() -> None:
    code = "class Cube(torch.autograd.Function):\n    pass\n"
    assert is_custom_function({"kind": "function", "name": "CubeBackward"}, code)
    assert not is_custom_function({"kind": "function", "name": "UndefinedGradBackward"}, code)


LOOP: dict[str, Any] = {
    "code": "class Cube(torch.autograd.Function):\n    pass\n",
    "graph": {"nodes": [
        {"id": "a0", "kind": "function", "name": "AccumulateGrad", "seq": 0},
        {"id": "c0", "kind": "function", "name": "CubeBackward", "seq": 1},
        {"id": "c1", "kind": "function", "name": "CubeBackward", "seq": 2},
        {"id": "c2", "kind": "function", "name": "CubeBackward", "seq": 3},
        {"id": "x", "kind": "tensor", "name": "x", "role": "leaf"},
    ], "edges": [{"source": "x", "target": "a0", "input_nr": None}]},
    "events": [{"phase": "forward", "node": "c0"}, {"phase": "backward", "pass": 0, "node": "c0"},
               {"phase": "backward", "pass": 0, "node": "a0"},
               {"phase": "forward", "node": "c1"}, {"phase": "backward", "pass": 1, "node": "c1"},
               {"phase": "backward", "pass": 1, "node": "a0"},
               {"phase": "forward", "node": "c2"}, {"phase": "backward", "pass": 2, "node": "c2"},
               {"phase": "backward", "pass": 2, "node": "a0"}],
    "passes": [{"index": i, "line": 9, "api": "Tensor.backward"} for i in range(3)],
}


def test_a_function_call_belongs_to_the_pass_after_it_and_leaves_take_the_chosen_pass() -> None:
    assert target_for_node(LOOP, "c2") == TargetSpec(kind="function", name="CubeBackward", occurrence=0, pass_index=2)
    assert target_for_node(LOOP, "x", 1) == TargetSpec(kind="leaf", name="x", pass_index=1)
    assert target_for_node(LOOP, "a0") == TargetSpec(kind="leaf", name="x", pass_index=0)
    with pytest.raises(InvalidRequest, match="no pass 3"):
        target_for_node(LOOP, "x", 3)
    with pytest.raises(InvalidRequest, match="made for backward pass 2"):
        target_for_node(LOOP, "c2", 1)
    r = place_on_run(LOOP, GradcheckResult(verdict="fail", pass_index=2, suspect=Suspect(
        name="CubeBackward", occurrence=0, custom=True, message="m")))
    assert r.suspect is not None and r.suspect.node_id == "c2"
    assert (r.pass_count, r.pass_line, r.iteration) == (3, 9, 3)
    assert r.describe_pass() == "checked backward 3 of 3 (line 9, iteration 3)"


def test_every_parameter_is_checked_in_the_first_pass_that_reached_one() -> None:
    doc = {**LOOP, "graph": {**LOOP["graph"], "nodes": [
        *LOOP["graph"]["nodes"], {"id": "p", "kind": "tensor", "name": "lin.weight", "role": "leaf"},
        {"id": "pa", "kind": "function", "name": "AccumulateGrad", "seq": 9}]},
        "events": [*LOOP["events"], {"phase": "backward", "pass": 2, "node": "pa"}]}
    doc["graph"]["edges"] = [*LOOP["graph"]["edges"], {"source": "p", "target": "pa", "input_nr": None}]
    assert spec_for_target(doc, TargetSpec(kind="parameters")).pass_index == 2
    assert spec_for_target(doc, TargetSpec(kind="parameters", pass_index=1)).pass_index == 1
    assert spec_for_target(LOOP, TargetSpec(kind="parameters")).pass_index is None  # none reached: the first


def test_engine_passes_are_no_call_of_the_snippet() -> None:
    doc = {**LOOP, "passes": [{"index": 0, "line": 9, "api": "Tensor.backward"},
                              {"index": 1, "line": 9, "api": "engine"},
                              {"index": 2, "line": 9, "api": "Tensor.backward"}]}
    assert for_the_rerun(doc, TargetSpec(kind="leaf", name="x", pass_index=2)).pass_index == 1
    assert for_the_rerun(doc, TargetSpec(kind="leaf", name="x")).pass_index is None
    with pytest.raises(InvalidRequest, match="run by autograd's engine"):
        for_the_rerun(doc, TargetSpec(kind="leaf", name="x", pass_index=1))
    r = place_on_run(doc, GradcheckResult(verdict="pass", pass_index=1))
    assert r.pass_index == 2
