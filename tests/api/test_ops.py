"""Operations: health, readiness, metrics, the OpenAPI document, request ids, logs, CORS."""

from __future__ import annotations

import json
import os
import sys
import time

import httpx

from api.helpers import CHAIN_RULE
from conftest import Server
from storage.sample_docs import chain_document, variant


def test_healthz_reports_the_pool_and_nothing_about_the_host(api: httpx.Client, live_server: Server) -> None:
    r = api.get("/healthz")
    body = r.json()
    assert body["status"] == "ok" and body["runner"]["ready"] is True
    assert body["workers"] >= 1 and body["busy"] >= 0 and body["queued"] >= 0
    assert isinstance(body["cuda_available"], bool)
    # NOTE [health for strangers] in api/ops.py: no layer, version of torch, path or worker list
    assert set(body["runner"]) == {"ready", "workers", "busy", "queued", "queue_capacity", "cuda_available"}
    for secret in (sys.prefix, sys.base_prefix, str(live_server.data_dir), "/tmp", "torch"):
        assert secret not in r.text, (secret, r.text)
    ready = api.get("/readyz")
    assert ready.status_code == 200 and "isolation" not in ready.text and sys.prefix not in ready.text


def test_healthz_details_are_an_operator_setting(tuned_server: Server) -> None:
    with tuned_server.client() as c:  # GRADTRACE_HEALTH_DETAILS=true
        body = c.get("/healthz").json()
        assert c.get("/readyz").json()["checks"]["runner"]["isolation"] == body["runner"]["isolation"]
    assert body["runner"]["capture_core"] == "C++"  # make install builds it
    assert body["runner"]["torch_version"] and body["runner"]["kind"] == "forkserver"
    layers = body["runner"]["isolation"]
    assert layers and all(v.startswith(("active", "off")) for v in layers.values()), layers
    if os.geteuid() == 0:  # the tests run as root here and in CI: every kernel layer is on
        for name in ("seccomp", "uid", "netns", "mountns", "no_new_privs"):
            assert layers[name].startswith("active"), (name, layers)


def test_readyz_checks_the_database_and_the_pool(api: httpx.Client) -> None:
    r = api.get("/readyz")
    assert r.status_code == 200
    checks = r.json()["checks"]
    assert checks["database"]["ok"] and checks["runner"]["ok"]


def _metric(text: str, name: str, labels: str = "") -> float:
    for line in text.splitlines():
        if line.startswith(name + (("{" + labels + "}") if labels else " ")):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_metrics_count_runs_by_status_shares_and_latency(api: httpx.Client) -> None:
    before = api.get("/metrics").text
    api.post("/api/runs", json={"code": CHAIN_RULE})
    api.post("/api/runs", json={"code": "raise ValueError('boom')"})
    api.post("/api/shares", json=variant(chain_document(2), "metrics test"))
    after = api.get("/metrics")
    assert after.headers["content-type"].startswith("text/plain")
    text = after.text
    assert _metric(text, "gradtrace_runs_total", 'status="ok"') >= _metric(before, "gradtrace_runs_total",
                                                                           'status="ok"') + 1
    assert _metric(text, "gradtrace_runs_total", 'status="error"') >= 1
    shares = "gradtrace_shares_created_total"
    assert _metric(text, shares) >= _metric(before, shares) + 1
    # both runs' results took the fast path (NOTE [fast path] in schema/fast.py)
    validated = "gradtrace_results_validated_total"
    assert _metric(text, validated, 'path="strict"') >= _metric(before, validated, 'path="strict"') + 2
    assert _metric(text, validated, 'path="general"') == _metric(before, validated, 'path="general"')
    assert _metric(text, "gradtrace_run_duration_seconds_count") >= 2
    assert "gradtrace_pool_queue_depth" in text and "gradtrace_pool_workers" in text


def test_openapi_documents_the_public_api_and_its_error_model(api: httpx.Client) -> None:
    spec = api.get("/openapi.json").json()
    for path in ("/api/runs", "/api/runs/{run_id}", "/api/shares", "/api/shares/{share_id}"):
        assert path in spec["paths"], path
    post_runs = spec["paths"]["/api/runs"]["post"]["responses"]
    for status in ("413", "415", "422", "429", "503"):
        assert post_runs[status]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorResponse")
    assert "RunDocument" in spec["components"]["schemas"]
    assert api.get("/docs").status_code == 200


def test_every_answer_carries_a_request_id_and_keeps_a_sane_one_given(api: httpx.Client) -> None:
    assert len(api.get("/healthz").headers["x-request-id"]) == 32
    assert api.get("/healthz", headers={"X-Request-ID": "nb-42.a_b"}).headers["x-request-id"] == "nb-42.a_b"
    replaced = api.get("/healthz", headers={"X-Request-ID": "bad id; <x>"}).headers["x-request-id"]
    assert replaced != "bad id; <x>" and len(replaced) == 32


def test_one_json_log_line_per_request_with_its_id_and_no_snippet_source(tuned_server: Server) -> None:
    marker = "very_secret_identifier_4711"
    code = f"{marker} = torch.ones(2, requires_grad=True)\n({marker} * 3).sum().backward()\n"
    # tuned_server: GRADTRACE_LOG_LEVEL=info, GRADTRACE_CORS_ORIGINS=["http://notebook.example"]
    with tuned_server.client() as c:
        r = c.post("/api/runs", json={"code": code}, headers={"X-Request-ID": "trace-me-1"})
        assert r.status_code == 200 and r.json()["status"] == "ok"
        pre = c.options("/api/runs", headers={"Origin": "http://notebook.example",
                                              "Access-Control-Request-Method": "POST"})
        assert pre.headers["access-control-allow-origin"] == "http://notebook.example"
        denied = c.options("/api/runs", headers={"Origin": "http://evil.example",
                                                 "Access-Control-Request-Method": "POST"})
        assert "access-control-allow-origin" not in denied.headers
    mine: list[dict] = []
    deadline = time.monotonic() + 10  # the line is written just after the answer is sent
    while not mine and time.monotonic() < deadline:
        log = tuned_server.log()
        lines = [json.loads(line) for line in log.splitlines() if line.startswith('{"event":"request"')]
        mine = [line for line in lines if line["request_id"] == "trace-me-1"]
        time.sleep(0.05)
    assert marker not in log, "the snippet's source must never reach the logs"
    assert len(mine) == 1
    assert mine[0]["route"] == "/api/runs" and mine[0]["status"] == 200 and mine[0]["run_status"] == "ok"
    assert len(mine[0]["code_sha256"]) == 16 and mine[0]["run_id"] == r.json()["id"]
