"""``POST /api/runs/{id}/gradcheck`` and ``POST /api/gradcheck`` through the real service and
its sandboxed pool: the Cube caught, nodes turned into targets and back, and every bad request
a clear 4xx (never a 500 or a hang)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from gradcheck.cube import RIGHT_CUBE, WRONG_CUBE
from gradtrace.lessons import lesson
from gradtrace.schema.canonical import canonical_with_id
from gradtrace.schema.gradcheck import GradcheckResult


def _run(api: httpx.Client, code: str, seed: int | None = 0) -> dict[str, Any]:
    r = api.post("/api/runs", json={"code": code, "seed": seed})
    r.raise_for_status()
    doc: dict[str, Any] = r.json()
    assert doc["status"] == "ok", doc
    return doc


def _node(doc: dict[str, Any], name: str) -> str:
    return str(next(n["id"] for n in doc["graph"]["nodes"] if n["name"] == name))


def test_checking_the_wrong_cube_node_fails_and_names_the_cube_node(api: httpx.Client) -> None:
    doc = _run(api, WRONG_CUBE)
    cube = _node(doc, "CubeBackward")
    r = api.post(f"/api/runs/{doc['id']}/gradcheck", json={"node": cube}, timeout=60)
    assert r.status_code == 200, r.text
    result = GradcheckResult.model_validate(r.json())
    assert result.verdict == "fail" and result.status == "ok" and result.run_id == doc["id"]
    assert result.suspect is not None and result.suspect.node_id == cube and result.suspect.custom
    assert float(result.elements[result.worst or 0].rel_error) == pytest.approx(2 / 3, rel=1e-6)
    _served_as_canonical_with_its_hash(r)


def _served_as_canonical_with_its_hash(r: httpx.Response) -> None:
    """NOTE [the answer's bytes] in ``analysis/gradcheck/answer.py``: what is served is canonical
    JSON, and its id is the hash of the rest of it (the run's node ids and run_id included)."""
    served = r.json()
    assert canonical_with_id(served) == (served["id"], r.content)


def test_checking_a_leaf_of_the_right_cube_passes(api: httpx.Client) -> None:
    doc = _run(api, RIGHT_CUBE)
    r = api.post(f"/api/runs/{doc['id']}/gradcheck", json={"node": _node(doc, "x")}, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["verdict"] == "pass" and r.json()["tensors"][0]["name"] == "x"


def test_every_parameter_of_lesson_04_passes(api: httpx.Client) -> None:
    doc = _run(api, lesson("mlp_loss").code)
    r = api.post(f"/api/runs/{doc['id']}/gradcheck", json={"target": {"kind": "parameters"}}, timeout=60)
    assert r.status_code == 200, r.text
    result = r.json()
    assert result["verdict"] == "pass", result["reasons"]
    names = ["model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"]
    assert [t["name"] for t in result["tensors"]] == names
    assert result["checked"] == 58 and result["executions"] == 2 * 58 + 2


def test_relu_at_zero_over_http_is_inconclusive_with_the_kink_on_the_relu_node(api: httpx.Client) -> None:
    doc = _run(api, "x = torch.tensor([0.0, 2.0], requires_grad=True)\ntorch.relu(x).sum().backward()\n")
    r = api.post(f"/api/runs/{doc['id']}/gradcheck", json={"node": _node(doc, "x")}, timeout=60)
    result = r.json()
    assert result["verdict"] == "inconclusive"
    kink = next(x for x in result["reasons"] if x["code"] == "kink")
    assert kink["node"] == "ReluBackward0" and kink["node_id"] == _node(doc, "ReluBackward0")
    _served_as_canonical_with_its_hash(r)


def test_the_code_route_checks_a_snippet_and_seeds_pick_the_same_elements(api: httpx.Client) -> None:
    """The snippet route serves the kind's final answer as the runner returned it."""
    code = "w = torch.randn(40, 40, requires_grad=True)\n(w.sin() * w).sum().backward()\n"
    body = {"code": code, "target": {"kind": "leaf", "name": "w"}, "seed": 5, "max_elements": 8}
    first = api.post("/api/gradcheck", json=body, timeout=60)
    _served_as_canonical_with_its_hash(first)
    a = first.json()
    b = api.post("/api/gradcheck", json=body, timeout=60).json()
    assert a["run_id"] is None and a["verdict"] == "pass" and a["checked"] == 8 and a["total"] == 1600
    assert [e["index"] for e in a["elements"]] == [e["index"] for e in b["elements"]]
    assert "sampled" in [x["code"] for x in a["reasons"]]
    _served_as_canonical_with_its_hash(api.post("/api/gradcheck", json=body, timeout=60))


@pytest.mark.parametrize(("body", "status", "words"), [
    ({"node": "n999"}, 404, "no node"),
    ({}, 422, "say what to check"),
    ({"target": {"kind": "leaf", "name": "nope"}}, 422, "no leaf named 'nope'"),
    ({"target": {"kind": "function", "name": "Cube", "occurrence": 4}}, 422, "called 1 time"),
    ({"target": {"kind": "parameters"}, "max_elements": 513}, 422, ""),
    ({"target": {"kind": "bogus"}}, 422, ""),
])
def test_bad_targets_are_clear_4xx(api: httpx.Client, body: dict[str, Any], status: int, words: str) -> None:
    doc = _run(api, RIGHT_CUBE)
    r = api.post(f"/api/runs/{doc['id']}/gradcheck", json=body, timeout=60)
    assert r.status_code == status, r.text
    assert words in r.json()["error"]["message"]


def test_a_builtin_node_and_an_unknown_run_are_refused(api: httpx.Client) -> None:
    doc = _run(api, RIGHT_CUBE)
    r = api.post(f"/api/runs/{doc['id']}/gradcheck", json={"node": _node(doc, "SumBackward0")})
    assert r.status_code == 422 and "cannot be checked" in r.json()["error"]["message"]
    assert api.post("/api/runs/nope/gradcheck", json={"node": "n0"}).status_code == 404


def test_a_slow_snippet_checks_fewer_elements_to_fit_the_time_limit(api: httpx.Client) -> None:
    code = "import time\nw = torch.ones(64, requires_grad=True)\ntime.sleep(0.1)\n(w * w).sum().backward()\n"
    r = api.post("/api/gradcheck", json={"code": code, "target": {"kind": "leaf", "name": "w"}}, timeout=60)
    assert r.status_code == 200, r.text
    result = r.json()
    assert result["verdict"] == "pass" and result["status"] == "ok" and 1 <= result["checked"] < 64
    assert any(x["code"] == "sampled" and "time limit" in x["message"] for x in result["reasons"])


def test_a_snippet_past_the_time_limit_is_inconclusive_not_an_error(api: httpx.Client) -> None:
    code = "import time\nw = torch.ones(4, requires_grad=True)\ntime.sleep(2.0)\n(w * w).sum().backward()\n"
    r = api.post("/api/gradcheck", json={"code": code, "target": {"kind": "leaf", "name": "w"}}, timeout=60)
    assert r.status_code == 200, r.text
    result = r.json()
    assert result["verdict"] == "inconclusive" and result["status"] == "timeout"
    assert result["reasons"][-1]["code"] == "limit"


LOOP = '''import torch
torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for step in range(4):
    opt.zero_grad()
    loss = (w.sin() * w).sum()
    loss.backward()
    opt.step()
'''


def test_a_chosen_pass_of_a_loop_is_checked_and_said(api: httpx.Client) -> None:
    doc = _run(api, LOOP)
    leaf = _node(doc, "w")
    r = api.post(f"/api/runs/{doc['id']}/gradcheck", json={"node": leaf, "pass_index": 3}, timeout=60)
    assert r.status_code == 200, r.text
    result = GradcheckResult.model_validate(r.json())
    assert result.verdict == "pass"
    assert (result.pass_index, result.pass_count, result.pass_line, result.iteration) == (3, 4, 8, 4)
    final = next(n for n in doc["graph"]["nodes"] if n["id"] == leaf)["grad"]
    assert final is not None  # the value torch holds at the end: iteration 4's gradient
    assert [float(e.analytic) for e in result.elements] == pytest.approx(final["values"], rel=1e-4)
    r = api.post(f"/api/runs/{doc['id']}/gradcheck", json={"node": leaf, "pass_index": 4}, timeout=60)
    assert r.status_code == 422 and "no pass 4" in r.json()["error"]["message"]


def test_a_function_after_torchs_gradcheck_in_the_snippet_is_checkable(api: httpx.Client) -> None:
    code = WRONG_CUBE.split("x = torch.tensor")[0] + (
        "t = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)\n"
        "print(torch.autograd.gradcheck(torch.sin, (t,)))\n"
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\n"
        "Cube.apply(x).sum().backward()\n")
    doc = _run(api, code)
    cube = _node(doc, "CubeBackward")
    r = api.post(f"/api/runs/{doc['id']}/gradcheck", json={"node": cube}, timeout=60)
    assert r.status_code == 200, r.text
    result = GradcheckResult.model_validate(r.json())
    assert result.verdict == "fail" and result.suspect is not None and result.suspect.node_id == cube
    assert result.pass_index == len(doc["passes"]) - 1
