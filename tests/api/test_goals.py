"""Exercise goals over HTTP: every lesson's starting code fails its goals, pointing at the right
node and line, and its reference solution passes them all; malformed goals are 422s naming them."""

from __future__ import annotations

import httpx
import pytest

from api.helpers import assert_error
from gradtrace.lessons import all_lessons, lesson

LESSONS = [item for item in all_lessons() if item.exercise is not None]

EXPECTED: dict[str, tuple[str, str | None, str]] = {
    # lesson → (the goal that fails, the node it names, the text of the line it names)
    "01_chain_rule": ("same graph as the reference", None, "b = 3 * x.detach()"),
    "02_branch_per_input": ("same graph as the reference", "SumBackward0", "if v.sum() > 0:"),
    "03_loop": ("x.grad equals the reference", "x", "x = torch.tensor(1.0, requires_grad=True)"),
    "04_mlp_loss": ("no hint double-softmax", "SoftmaxBackward0", "loss = nn.CrossEntropyLoss()(probs, target)"),
    "05_leaf_and_retain_grad": ("no hint nonleaf-grad", None, "print(w.grad, h.grad)  # h.grad is None"),
    "06_graph_freed": ("no hint graph-freed", "MulBackward0", "z.backward()"),
    "07_detach_and_no_grad": ("x.grad equals the reference", "AddBackward0", "out = (y + z + s).sum()"),
    "08_inplace_hazard": ("x.grad equals the reference", "x", "x = torch.tensor([1.0, 2.0], requires_grad=True)"),
    "09_accumulating_grads": ("no hint grad-accumulated", "w", "loss.backward()"),
    "10_finite_difference_check": ("gradient check passes on Cube", "CubeBackward", "Cube.apply(x).sum().backward()"),
    "11_recursion_tree": ("no non-finite value", "LogBackward0",  # the op that made the first -inf
                          "return torch.maximum(reduce(v[:half]), reduce(v[half:])) + 0.1 * v.log().mean()"),
    "12_checkpoint_memory": ("peak saved bytes below 8192", "AddmmBackward0", "h = block(h)"),
    "13_double_backward": ("x.grad equals the reference", "x", "x = torch.tensor(3.0, requires_grad=True)"),
    "14_transformer_block": ("loss below 0.97", "loss", "loss.backward()"),
    "15_compiled": ("x.grad equals the reference", "CompiledFunctionBackward", "def f(x):"),
}


def _run(api: httpx.Client, code: str, **extra: object) -> dict:
    r = api.post("/api/runs", json={"code": code, "seed": 0, **extra}, timeout=120)
    assert r.status_code == 200, r.text[:500]
    return r.json()


def _name(doc: dict, node_id: str | None) -> str | None:
    return next((n.get("name") for n in doc["graph"]["nodes"] if n["id"] == node_id), None) if node_id else None


def test_every_lesson_has_an_exercise() -> None:
    assert [item.stem for item in LESSONS] == [item.stem for item in all_lessons()]
    assert set(EXPECTED) == {item.stem for item in LESSONS}


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_start_fails_at_its_node_and_line_and_solution_passes(api: httpx.Client, stem: str) -> None:
    item = lesson(stem)
    assert item.exercise is not None
    start = _run(api, item.exercise.start, exercise=item.id)
    report = start["goals"]
    assert report["exercise"] == stem and report["done"] is False
    text, node_name, line_text = EXPECTED[stem]
    failing = {r["text"]: r for r in report["results"] if r["status"] == "fail"}
    assert text in failing, report
    result = failing[text]
    assert _name(start, result["node"]) == node_name, result
    lines = item.exercise.start.splitlines()
    assert result["line"] is not None and lines[result["line"] - 1].strip() == line_text, result
    assert result["why"]
    solved = _run(api, item.exercise.solution, exercise=item.id)
    assert solved["status"] == "ok"
    assert solved["goals"]["done"] is True, solved["goals"]
    assert all(r["status"] == "pass" for r in solved["goals"]["results"])
    # the stored run is the run as recorded: its id names a document without goals
    stored = api.get(f"/api/runs/{solved['id']}").json()
    assert "goals" not in stored and stored["code"] == item.exercise.solution


def test_goals_as_lines_and_objects_with_a_stored_reference(api: httpx.Client) -> None:
    item = lesson("09_accumulating_grads")
    assert item.exercise is not None
    ref = _run(api, item.exercise.solution)
    goals = ["w.grad equals the reference", {"kind": "no_hint", "code": "grad-accumulated"}, "loss below 5"]
    doc = _run(api, item.exercise.start, goals=goals, reference={"run_id": ref["id"]})
    statuses = [r["status"] for r in doc["goals"]["results"]]
    assert statuses == ["fail", "fail", "pass"], doc["goals"]
    share = api.post("/api/shares", json={"document": doc}).json()
    shared = api.get(f"/api/shares/{share['id']}").json()
    assert shared["goals"] == doc["goals"], "goals are kept with a share"


@pytest.mark.parametrize(("goals", "named"), [
    (["no hint"], "no hint"),
    (["x.grad is small"], "x.grad is small"),
    (["peak saved bytes below 12 parsecs"], "parsecs"),
    ([{"kind": "loss_below"}], "goal 0"),
    ([{"kind": "teleport"}], "goal 0"),
    (["no non-finite value", 7], "goals.1"),
])
def test_a_malformed_goal_is_a_422_that_names_it(api: httpx.Client, goals: list, named: str) -> None:
    r = api.post("/api/runs", json={"code": "x = 1", "goals": goals})
    body = assert_error(r, 422, "invalid_request")
    assert named in body["message"], body


def test_comparing_goals_need_a_reference_and_exercises_must_exist(api: httpx.Client) -> None:
    body = assert_error(api.post("/api/runs", json={"code": "x = 1", "goals": ["same graph as the reference"]}),
                        422, "invalid_request")
    assert "reference" in body["message"]
    body = assert_error(api.post("/api/runs", json={"code": "x = 1", "exercise": "no_such_lesson"}), 422,
                        "invalid_request")
    assert "no_such_lesson" in body["message"]
