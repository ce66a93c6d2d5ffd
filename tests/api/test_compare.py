"""Comparing two runs over HTTP: ``POST /api/compare``, ``GET /api/compare/{a}..{b}``, compare
links through the share store, and every refusal as a clear 4xx."""

from __future__ import annotations

import re

import httpx

from api.helpers import assert_error
from conftest import Server
from gradtrace.schema import SCHEMA_VERSION

# No seed of its own: the request's seed draws the weights.
NET = """import torch
from torch import nn
net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
x = torch.randn(2, 3)
net(x).sum().backward()
"""


def _run(api: httpx.Client, seed: int, code: str = NET) -> dict:
    r = api.post("/api/runs", json={"code": code, "seed": seed})
    assert r.status_code == 200 and r.json()["status"] == "ok", r.text[:300]
    return r.json()


def test_two_seeds_compared_by_run_id_same_graph_other_gradients(api: httpx.Client) -> None:
    a, b = _run(api, 0), _run(api, 1)
    r = api.post("/api/compare", json={"a": {"run_id": a["id"]}, "b": {"run_id": b["id"]}})
    assert r.status_code == 200, r.text[:500]
    c = r.json()
    assert c["same_structure"] and not c["only_a"] and not c["only_b"]
    assert c["a"]["id"] == a["id"] and c["b"]["id"] == b["id"] and c["b"]["seed"] == 1
    assert len(c["pairs"]) == len(a["graph"]["nodes"])
    leaves = {p["name"]: p["grad"] for p in c["pairs"] if p["kind"] == "tensor" and p["grad"]}
    # every parameter's gradient moved but the last bias's: d(sum)/d(bias) is the batch size
    moved = {name for name, g in leaves.items() if g["beyond_tolerance"]}
    assert moved == {"net.0.weight", "net.0.bias", "net.2.weight"}
    assert leaves["net.2.bias"]["max_abs"] == 0
    assert c["first_divergence"]["sentence"] and c["summary"].startswith("Same graph")
    # the same run against itself, given whole: nothing differs
    same = api.post("/api/compare", json={"a": {"document": a}, "b": {"run_id": a["id"]}}).json()
    assert same["first_divergence"] is None
    assert all(p["grad"]["max_abs"] == 0 for p in same["pairs"] if p["grad"])


def test_a_compare_link_round_trips_through_the_share_store(api: httpx.Client) -> None:
    a, b = _run(api, 0), _run(api, 2)
    made = api.post("/api/compare/links", json={"a": {"run_id": a["id"]}, "b": {"run_id": b["id"]}})
    assert made.status_code == 201, made.text
    link = made.json()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/c/[0-9a-f]+\.\.[0-9a-f]+", link["url"])
    assert link["url"].endswith(f"/c/{link['a']}..{link['b']}")
    for share_id, run in ((link["a"], a), (link["b"], b)):
        assert api.get(f"/api/shares/{share_id}").json()["id"] == run["id"]
    by_link = api.get(f"/api/compare/{link['a']}..{link['b']}")
    assert by_link.status_code == 200
    by_runs = api.post("/api/compare", json={"a": {"run_id": a["id"]}, "b": {"run_id": b["id"]}})
    assert by_link.json()["summary"] == by_runs.json()["summary"]
    # the same link again: the same shares
    again = api.post("/api/compare/links", json={"a": {"share_id": link["a"]}, "b": {"run_id": b["id"]}})
    assert again.json()["url"] == link["url"]
    # a run id in the pair works too (runs are kept for a while)
    assert api.get(f"/api/compare/{a['id']}..{b['id']}").status_code == 200


def test_bad_ids_and_bad_pairs_are_clear_4xx(api: httpx.Client) -> None:
    a = _run(api, 0)
    missing = assert_error(api.get(f"/api/compare/{a['id']}..feedbeef"), 404, "not_found")
    assert "run B" in missing["message"] and "feedbeef" in missing["message"]
    unknown = api.post("/api/compare", json={"a": {"run_id": "nope"}, "b": {"run_id": a["id"]}})
    assert "run A" in assert_error(unknown, 404, "not_found")["message"]
    for pair in ("justone", "a..", "..b", "a..b..c"):
        assert_error(api.get(f"/api/compare/{pair}"), 422, "invalid_request")
    both = api.post("/api/compare", json={"a": {"run_id": a["id"], "share_id": "x"}, "b": {"run_id": a["id"]}})
    assert "exactly one" in assert_error(both, 422, "invalid_request")["message"]
    assert_error(api.post("/api/compare", json={"a": {"run_id": a["id"]}}), 422, "invalid_request")
    link = api.post("/api/compare/links", json={"a": {"document": a}, "b": {"run_id": a["id"]}})
    assert "share the document first" in assert_error(link, 422, "invalid_request")["message"]


def test_documents_of_another_schema_version_or_not_documents_are_refused(api: httpx.Client) -> None:
    a = _run(api, 0)
    future = {**a, "schema_version": SCHEMA_VERSION + 1}
    r = api.post("/api/compare", json={"a": {"run_id": a["id"]}, "b": {"document": future}})
    err = assert_error(r, 422, "invalid_request")
    assert f"schema version {SCHEMA_VERSION + 1}" in err["message"] and err["detail"]["side"] == "b"
    broken = {**a, "graph": {"nodes": [{"kind": "function"}]}}
    r = api.post("/api/compare", json={"a": {"document": broken}, "b": {"run_id": a["id"]}})
    assert "not a valid run document" in assert_error(r, 422, "invalid_request")["message"]
    r = api.post("/api/compare", json={"a": {"document": {"hello": 1}}, "b": {"run_id": a["id"]}})
    assert "run A" in assert_error(r, 422, "invalid_request")["message"]


def test_runs_too_large_to_compare_are_413(tuned_server: Server) -> None:
    """The tuned server compares at most 50 nodes (``GRADTRACE_MAX_NODES``)."""
    with tuned_server.client() as api:
        small = _run(api, 0)
        big = {**small, "graph": {**small["graph"], "nodes": small["graph"]["nodes"] * 8}}
        r = api.post("/api/compare", json={"a": {"run_id": small["id"]}, "b": {"document": big}})
        err = assert_error(r, 413, "payload_too_large")
        assert err["detail"] == {"side": "b", "field": "nodes", "count": len(big["graph"]["nodes"]), "limit": 50}


def test_the_compare_page_answers_its_link_and_says_what_is_wrong_with_a_bad_one(api: httpx.Client) -> None:
    a, b = _run(api, 0), _run(api, 4)
    link = api.post("/api/compare/links", json={"a": {"run_id": a["id"]}, "b": {"run_id": b["id"]}}).json()
    page = api.get(f"/c/{link['a']}..{link['b']}", headers={"accept": "text/html"})
    assert page.status_code == 200 and "/dist/compare.js" in page.text
    # the page names both documents (its shares), which it fetches as they are stored
    urls = [f"/api/shares/{link[side]}" for side in ("a", "b")]
    assert all(f'<link rel="preload" href="{u}" as="fetch"' in page.text for u in urls)
    for url, run in zip(urls, (a, b), strict=True):
        assert api.get(url).json()["id"] == run["id"]
    # a kept run named by its run id is fetched from /api/runs
    by_run = api.get(f"/c/{a['id']}..{link['b']}", headers={"accept": "text/html"})
    assert by_run.status_code == 200 and f'href="/api/runs/{a["id"]}"' in by_run.text
    missing = api.get(f"/c/{link['a']}..0000dead", headers={"accept": "text/html"})
    assert missing.status_code == 404 and "run B" in missing.text
    assert missing.headers["content-type"].startswith("text/html")
    bad = api.get("/c/only-one-id", headers={"accept": "text/html"})
    assert bad.status_code == 422 and "a..b" in bad.text


def test_stored_tensor_files_give_the_exact_first_divergence(api: httpx.Client, live_server: Server) -> None:
    """Two runs stored with their tensor files, where swapping two input elements keeps every
    statistic: the service reads both files by range and names the multiplication that read
    the swapped values (the documents alone would name the next op)."""
    from api.tensor_runs import server_store
    from capture.tensor_oracle import recorded_run
    from gradtrace.storage.codec import encode

    code = ("import torch\nx = torch.tensor({xs})\nw = torch.ones(2, requires_grad=True)\ny = x * w\n"
            "loss = (y * torch.tensor([1.0, 3.0])).sum()\nloss.backward()\n")
    ids = []
    for xs in ([1.0, 2.0], [2.0, 1.0]):
        doc, _, _ = recorded_run(code.format(xs=xs), native=True)
        encoded = encode(doc.model_dump(mode="json", by_alias=True))
        with server_store(live_server) as store:
            store.put_run(encoded, doc.tensor_bytes())
        ids.append(encoded.doc_id)
    r = api.post("/api/compare", json={"a": {"run_id": ids[0]}, "b": {"run_id": ids[1]}})
    assert r.status_code == 200, r.text
    first = r.json()["first_divergence"]
    assert (first["name"], first["line_a"], first["what"]) == ("MulBackward0", 4, "value"), first
    assert first["delta"]["exact"] and abs(first["delta"]["max_abs"] - 1.0) < 1e-6
