"""Forward mode through the real service: ``{"mode": "forward"}`` on ``POST /api/gradcheck`` and
on a stored run's Function node checks its ``jvp`` in the sandbox (a ``gradcheck`` job), with the
suspect placed on the run's node; a non-Function target is a 422."""

from __future__ import annotations

import httpx

from gradtrace.schema.gradcheck import GradcheckResult

CODE = '''class Cube(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x ** 3

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * grad * x ** 2

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return FACTOR * t * x ** 2

x = torch.tensor([1.0, 2.0, -0.5], requires_grad=True)
Cube.apply(x).sum().backward()
'''


def test_a_wrong_jvp_fails_over_http_and_names_the_function_node(api: httpx.Client) -> None:
    body = {"code": CODE.replace("FACTOR", "1"), "target": {"kind": "function", "name": "Cube"},
            "mode": "forward"}
    r = api.post("/api/gradcheck", json=body, timeout=60)
    assert r.status_code == 200, r.text
    result = GradcheckResult.model_validate(r.json())
    assert result.mode == "forward" and result.verdict == "fail" and result.status == "ok", result.summary()
    assert result.suspect is not None and result.suspect.name == "CubeBackward" and result.suspect.custom
    # its backward is right: the same request in backward mode passes
    back = api.post("/api/gradcheck", json={**body, "mode": "backward"}, timeout=60).json()
    assert back["verdict"] == "pass" and back["mode"] == "backward"

    run = api.post("/api/runs", json={"code": CODE.replace("FACTOR", "1"), "seed": 0}).json()
    node = next(n["id"] for n in run["graph"]["nodes"] if n["name"] == "CubeBackward")
    on_run = api.post(f"/api/runs/{run['id']}/gradcheck", json={"node": node, "mode": "forward"}, timeout=60)
    assert on_run.status_code == 200, on_run.text
    placed = GradcheckResult.model_validate(on_run.json())
    assert placed.verdict == "fail" and placed.suspect is not None and placed.suspect.node_id == node

    leaf = next(n["id"] for n in run["graph"]["nodes"] if n["name"] == "x")
    refused = api.post(f"/api/runs/{run['id']}/gradcheck", json={"node": leaf, "mode": "forward"}, timeout=60)
    assert refused.status_code == 422 and "custom autograd.Function node" in refused.text
    with_pass = api.post(f"/api/runs/{run['id']}/gradcheck", json={"node": node, "mode": "forward", "pass_index": 0},
                         timeout=60)
    assert with_pass.status_code == 422 and "leave pass_index out" in with_pass.text


def test_a_right_jvp_passes_and_a_bad_mode_is_a_422(api: httpx.Client) -> None:
    body = {"code": CODE.replace("FACTOR", "3"), "target": {"kind": "function", "name": "Cube"},
            "mode": "forward"}
    assert api.post("/api/gradcheck", json=body, timeout=60).json()["verdict"] == "pass"
    assert api.post("/api/gradcheck", json={**body, "mode": "sideways"}, timeout=60).status_code == 422
    leaf = api.post("/api/gradcheck", json={**body, "target": {"kind": "leaf", "name": "x"}}, timeout=60)
    assert leaf.status_code == 422 and "kind 'function'" in leaf.text
