"""The walking skeleton: the chain-rule lesson gives PyTorch's own graph and gradient."""

from __future__ import annotations

from typing import Any

import torch

from conftest import lesson_code, line_of


def _fn_names(doc: dict[str, Any]) -> list[str]:
    return [n["name"] for n in doc["graph"]["nodes"] if n["kind"] == "function"]


def test_chain_rule_records_nodes_lines_and_grad(run: Any) -> None:
    doc = run(lesson_code("01_chain_rule"))
    assert doc["status"] == "ok"
    assert _fn_names(doc) == ["AccumulateGrad", "MulBackward0", "MulBackward0", "AddBackward0",
                              "AddBackward0"]
    x = next(n for n in doc["graph"]["nodes"] if n["kind"] == "tensor" and n["name"] == "x")
    # the oracle: the same computation in plain torch
    xt = torch.tensor(2.0, requires_grad=True)
    (xt * xt + 3 * xt + 1).backward()
    assert x["grad"]["values"] == xt.grad.item() == 7.0
    by_id = {n["id"]: n for n in doc["graph"]["nodes"]}
    lines = [line_of("01_chain_rule", t) for t in ("a = x", "a = x", "b = 3", "y = a", "y = a")]
    assert [by_id[e["node"]]["line"] for e in doc["events"] if e["phase"] == "forward"] == lines
    backward = [e for e in doc["events"] if e["phase"] == "backward"]
    assert [by_id[e["node"]]["name"] for e in backward][-1] == "AccumulateGrad"
    assert backward[-1]["grad"]["values"] == 7.0
    assert doc["passes"][0]["line"] == line_of("01_chain_rule", "y.backward()")
