"""``analysis/gradcheck.py`` (torch-free): nodes of a stored run as check targets, and the
answer's names back on the run's node ids."""

from __future__ import annotations

from typing import Any

import pytest

from gradtrace.analysis.gradcheck import is_custom_function, place_on_run, target_for_node
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
    assert target_for_node(DOC, "n4") == TargetSpec(kind="leaf", name="x")
    assert target_for_node(DOC, "n0") == TargetSpec(kind="leaf", name="x")  # the leaf behind it
    assert target_for_node(DOC, "n2") == TargetSpec(kind="function", name="CubeBackward", occurrence=1)
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
