"""The golden comparison (tests/docdiff.py) accepts what CPU kernels change and nothing else."""

from __future__ import annotations

import copy
import math

from docdiff import differences

DOC = {
    "id": "abc",
    "status": "ok",
    "stdout": "tensor(0.1161) torch.Size([8, 4]) 1.0234567890123\n",
    "graph": {"nodes": [{"id": "n1", "name": "MulBackward0", "line": 5, "grad": {
        "shape": [3], "dtype": "float32", "values": [0.116127245, -2.5, 1e-9],
        "stats": {"min": -2.5, "max": 0.116127245, "mean": -0.79462425, "norm": 2.5026937}}}],
        "edges": [{"source": "n0", "target": "n1"}]},
}


def _changed(path: list[object], value: object) -> dict:
    doc = copy.deepcopy(DOC)
    target: object = doc
    for key in path[:-1]:
        target = target[key]  # type: ignore[index]
    target[path[-1]] = value  # type: ignore[index]
    return doc


VALUES = ["graph", "nodes", 0, "grad", "values"]


def test_last_bits_of_floats_and_printed_digits_and_the_id_are_tolerated() -> None:
    got = _changed(VALUES, [math.nextafter(0.116127245, 1) * (1 + 3e-7), -2.5000002, 3e-9])
    got["id"] = "other"
    got["stdout"] = "tensor(0.1162) torch.Size([8, 4]) 1.0234567890178\n"
    assert differences(DOC, got) == []


def test_structure_names_lines_integers_and_text_must_match_exactly() -> None:
    cases = [
        (["graph", "nodes", 0, "name"], "AddBackward0"),
        (["graph", "nodes", 0, "line"], 6),
        (["graph", "edges"], []),
        (["status"], "error"),
        (["stdout"], "tensor(0.1161) torch.Size([8, 5]) 1.0234567890123\n"),
        (["stdout"], "tensor(0.1181) torch.Size([8, 4]) 1.0234567890123\n"),
        (["stdout"], "Tensor(0.1161) torch.Size([8, 4]) 1.0234567890123\n"),
        (VALUES, [0.116127245, -2.5]),
        (VALUES, [0.1171, -2.5, 1e-9]),
        (["graph", "nodes", 0, "grad", "shape"], [4]),
    ]
    for path, value in cases:
        assert differences(DOC, _changed(path, value)), (path, value)


def test_a_value_that_cancelled_to_nearly_zero_is_compared_to_the_tensors_magnitude() -> None:
    # -0.79462425 is the mean; an error of 1e-5 × max|x| = 2.5e-5 is rounding, 1e-3 is not
    assert differences(DOC, _changed(["graph", "nodes", 0, "grad", "stats", "mean"], -0.7946245)) == []
    assert differences(DOC, _changed(["graph", "nodes", 0, "grad", "stats", "mean"], -0.7956)) != []


def test_gradient_noise_is_judged_against_the_documents_largest_gradient() -> None:
    noisy = {"shape": [2], "dtype": "float32", "values": [2.3022949e-08, -2.5804184e-08],
             "stats": {"min": -2.5804184e-08, "max": 2.3022949e-08, "mean": 0.0, "norm": 3.4e-08}}
    kernel = copy.deepcopy(noisy)
    kernel["values"] = [2.289562e-08, -2.5622285e-08]  # what another CPU kernel gives: 0.5% apart
    big = {"shape": [1], "dtype": "float32", "values": [1e-3], "stats": {"min": 1e-3, "max": 1e-3}}
    alone = {"events": [{"grad_inputs": [noisy]}]}
    beside_big = {"events": [{"grad_inputs": [noisy, big]}]}
    assert differences(alone, {"events": [{"grad_inputs": [kernel]}]}) != []
    assert differences(beside_big, {"events": [{"grad_inputs": [kernel, big]}]}) == []


def test_each_difference_is_typed_with_its_place_kind_and_both_values() -> None:
    from docdiff import Difference, compare

    got = _changed(["graph", "nodes", 0, "line"], 6)
    got["graph"]["edges"] = []
    got["graph"]["nodes"][0]["grad"]["stats"]["max"] = 0.2
    assert compare(DOC, got) == [
        Difference("doc.graph.nodes[0].line", "value", 5, 6),
        Difference("doc.graph.nodes[0].grad.stats.max", "number", 0.116127245, 0.2),
        Difference("doc.graph.edges", "length", 1, 0),
    ]
    assert str(compare(DOC, got)[2]) == "doc.graph.edges: 1 items, now 0"
    assert len(compare(DOC, _changed(["stdout"], "x"), limit=0)) == 0
