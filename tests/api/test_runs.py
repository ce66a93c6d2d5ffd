"""``POST /api/runs`` and ``GET /api/runs/{id}`` over HTTP against the real service and sandbox."""

from __future__ import annotations

import gzip

import httpx

from api.helpers import CHAIN_RULE, assert_error
from conftest import lesson_code
from gradtrace.schema import RunDocument, document_id


def test_a_run_answers_its_document_and_can_be_fetched_again_by_id(api: httpx.Client) -> None:
    r = api.post("/api/runs", json={"code": CHAIN_RULE})
    assert r.status_code == 200, r.text
    doc = r.json()
    RunDocument.model_validate(doc)
    assert doc["status"] == "ok" and doc["id"] == document_id(doc)
    assert any(n["name"] == "MulBackward0" for n in doc["graph"]["nodes"])
    again = api.get(f"/api/runs/{doc['id']}")
    assert again.status_code == 200 and again.content == r.content


def test_the_same_snippet_and_seed_give_byte_identical_documents(api: httpx.Client) -> None:
    code = "x = torch.randn(3, requires_grad=True)\n(x * 2).sum().backward()\n"
    a = api.post("/api/runs", json={"code": code, "seed": 7})
    b = api.post("/api/runs", json={"code": code, "seed": 7})
    c = api.post("/api/runs", json={"code": code, "seed": 8})
    assert a.content == b.content
    assert a.json()["id"] != c.json()["id"]


def test_a_failing_snippet_is_a_200_document_with_the_error_and_its_line(api: httpx.Client) -> None:
    r = api.post("/api/runs", json={"code": lesson_code("06_graph_freed")})
    assert r.status_code == 200
    doc = r.json()
    assert doc["status"] == "error" and doc["error"]["type"] == "RuntimeError"
    assert isinstance(doc["error"]["line"], int)
    assert doc["graph"]["nodes"], "the graph is returned as far as the run got"


def test_cuda_on_a_server_without_one_is_refused_with_a_clear_422(api: httpx.Client) -> None:
    if api.get("/healthz").json()["cuda_available"]:
        r = api.post("/api/runs", json={"code": CHAIN_RULE, "device": "auto"})
        assert r.json()["device"].startswith("cuda")
        return
    err = assert_error(api.post("/api/runs", json={"code": CHAIN_RULE, "device": "cuda"}), 422,
                       "device_unavailable")
    assert "cuda" in err["message"]
    auto = api.post("/api/runs", json={"code": CHAIN_RULE, "device": "auto"})
    assert auto.status_code == 200 and auto.json()["device"] == "cpu"


def test_documents_travel_gzip_when_the_client_accepts_it(live_server) -> None:
    with httpx.Client(base_url=live_server.url, timeout=60) as raw_client:
        plain = raw_client.post("/api/runs", json={"code": CHAIN_RULE},
                                headers={"Accept-Encoding": "identity"})
        zipped = raw_client.stream("POST", "/api/runs", json={"code": CHAIN_RULE},
                                   headers={"Accept-Encoding": "gzip"})
        with zipped as response:
            assert response.headers["content-encoding"] == "gzip"
            body = gzip.decompress(b"".join(response.iter_raw()))
    assert "content-encoding" not in plain.headers
    assert body == plain.content


def test_an_unknown_run_id_is_a_404(api: httpx.Client) -> None:
    err = assert_error(api.get("/api/runs/0123456789abcdef"), 404, "not_found")
    assert "0123456789abcdef" in err["message"]


def test_the_service_returns_names_definitions_and_blocks_without_a_graph(api: httpx.Client) -> None:
    """What capture notes in the sandbox (variables, definition lines, tied paths, frozen
    parameters) passes the web process's validation, and its analysis adds the no_grad block
    (tests/capture/test_definitions.py holds them against torch)."""
    from programs import FINE_TUNE, TINY_LM

    lm = api.post("/api/runs", json={"code": TINY_LM}).json()
    assert lm["status"] == "ok" and lm["id"] == document_id(lm)
    nodes = lm["graph"]["nodes"]
    assert [n["tied"] for n in nodes if n.get("tied")] == [["model.emb.weight", "model.lm_head.weight"]]
    assert {"e", "h", "logits", "loss"} <= {n["var"] for n in nodes if n.get("var")}
    assert all(n.get("def_line") for n in nodes if n.get("role") == "leaf")
    tune = api.post("/api/runs", json={"code": FINE_TUNE}).json()
    assert tune["analysis"]["grad_off"] == [{"kind": "no_grad", "line": 10, "start": 11, "end": 12}]
    assert {m["path"]: m.get("frozen") for m in tune["modules"]}["backbone.0"] == ["weight", "bias"]
