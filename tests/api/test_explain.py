"""``GET /api/runs/{id}/explain`` through the real service: the rule with the recorded numbers,
another element on request, and a clear 4xx for a bad node, index or run."""

from __future__ import annotations

from typing import Any

import httpx

from api.tensor_runs import server_store
from capture.tensor_oracle import recorded_run
from capture.test_tensor_oracle import GPT_LIKE
from conftest import Server
from gradtrace.lessons import lesson
from gradtrace.schema.explain import Explanation
from gradtrace.storage.codec import encode
from storage.sample_docs import variant


def _run(api: httpx.Client, code: str) -> dict[str, Any]:
    r = api.post("/api/runs", json={"code": code, "seed": 0})
    r.raise_for_status()
    doc: dict[str, Any] = r.json()
    assert doc["status"] == "ok", doc
    return doc


def test_lesson_04s_addmm_is_explained_at_a_chosen_element(api: httpx.Client) -> None:
    doc = _run(api, lesson("mlp_loss").code)
    node = next(n["id"] for n in doc["graph"]["nodes"] if n["name"] == "AddmmBackward0"
                and {s["name"] for s in n["saved"]} == {"mat1", "mat2"})
    r = api.get(f"/api/runs/{doc['id']}/explain", params={"node": node, "index": "1,0"})
    assert r.status_code == 200, r.text
    answer = Explanation.model_validate(r.json())
    assert answer.known and answer.op == "AddmmBackward0" and r.json()["pass"] == 0
    mat1 = answer.inputs[1]
    assert mat1.rule == "grad_mat1 = grad_out @ mat2ᵀ" and mat1.index == [1, 0]
    assert isinstance(mat1.value, float) and isinstance(mat1.recorded, float)
    assert abs(mat1.value - mat1.recorded) <= 1e-5 * max(1.0, abs(mat1.recorded))  # float32 run


def test_bad_requests_are_4xx(api: httpx.Client) -> None:
    doc = _run(api, lesson("chain_rule").code)
    base = f"/api/runs/{doc['id']}/explain"
    assert api.get(base, params={"node": "n999"}).status_code == 404
    r = api.get(base, params={"node": "n1", "index": "a,b"})
    assert r.status_code == 422 and "index" in r.text
    assert api.get(base).status_code == 422  # no node
    assert api.get("/api/runs/nope/explain", params={"node": "n1"}).status_code == 404
    leaf = next(n["id"] for n in doc["graph"]["nodes"] if n["kind"] == "tensor")
    assert api.get(base, params={"node": leaf}).status_code == 404


def test_every_nodes_explanation_as_a_saved_file_carries_them(api: httpx.Client) -> None:
    """GET /api/runs/{id}/explanations: what the page's Export → HTML embeds."""
    doc = _run(api, lesson("leaf_and_retain_grad").code)
    r = api.get(f"/api/runs/{doc['id']}/explanations")
    assert r.status_code == 200, r.text
    bundle = r.json()
    fns = {n["id"]: n["name"] for n in doc["graph"]["nodes"] if n["kind"] == "function"}
    assert set(bundle["nodes"]) == set(fns) and bundle["skipped_nodes"] == 0
    pow_id = next(i for i, name in fns.items() if name == "PowBackward0")
    carried = bundle["nodes"][pow_id]["inputs"][0]
    one = api.get(f"/api/runs/{doc['id']}/explain", params={"node": pow_id}).json()["inputs"][0]
    assert carried["instance"] == one["instance"] and carried["value"] == one["value"]
    assert bundle["rules"]["PowBackward0"] == [one["rule"]]
    assert [e["index"] for e in carried["elements"]] == [[0], [1]]
    assert api.get("/api/runs/nope/explanations").status_code == 404


def test_a_stored_runs_tensor_file_gives_explain_its_numbers(api: httpx.Client, live_server: Server) -> None:
    """A GPT-like model's attention node, whose operands are far past the document's inline
    values: explained at a picked element from the stored tensor file (read by range), equal
    to the gradient that flowed there."""
    doc, _, _ = recorded_run(GPT_LIKE, native=True)
    data = doc.tensor_bytes()
    assert data
    encoded = encode(doc.model_dump(mode="json", by_alias=True))
    with server_store(live_server) as store:
        store.put_run(encoded, data)
    stored = api.get(f"/api/runs/{encoded.doc_id}").json()
    bmm = next(n["id"] for n in stored["graph"]["nodes"] if n["name"] == "BmmBackward0")
    r = api.get(f"/api/runs/{encoded.doc_id}/explain", params={"node": bmm, "index": "3,5,2"})
    assert r.status_code == 200, r.text
    answer = Explanation.model_validate(r.json())
    for entry in answer.inputs:
        assert entry.index == [3, 5, 2] and entry.note is None, entry
        assert isinstance(entry.value, float) and isinstance(entry.recorded, float)
        assert abs(entry.value - entry.recorded) <= 1e-4 * max(1e-3, abs(entry.recorded))
    # without the tensor file, the same node says which values were not kept
    bare = encode(variant(doc.model_dump(mode="json", by_alias=True), "no tensors"))
    with server_store(live_server) as store:
        store.put_run(bare, None)
    r = api.get(f"/api/runs/{bare.doc_id}/explain", params={"node": bmm, "index": "3,5,2"})
    assert r.status_code == 200 and "not kept" in r.text, r.text
