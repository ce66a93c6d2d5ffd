"""Hostile requests through the real service over HTTP (``POST /api/runs``), not just the pool."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from conftest import Server
from sandbox.pool_harness import LoopbackListener

pytestmark = [
    pytest.mark.security,
    # tests/conftest.py's launch_server leaves its server.log handle to the garbage collector; the
    # ResourceWarning lands in whichever test started the server. Reported to the lead; remove
    # these two filters once the launcher closes the handle after Popen.
    pytest.mark.filterwarnings("ignore:unclosed file.*server.log:ResourceWarning"),
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in.*server.log:pytest.PytestUnraisableExceptionWarning"),
]

ORDINARY = "x = torch.tensor([1.0, 2.0], requires_grad=True)\n(x * x).sum().backward()\n"


def _run(server: Server, code: str, **kw: Any) -> dict[str, Any]:
    with server.client() as client:
        r = client.post("/api/runs", json={"code": code, **kw})
    assert r.status_code == 200, r.text
    doc: dict[str, Any] = r.json()
    return doc


def _still_serving_clean_runs(server: Server) -> None:
    with server.client() as client:
        assert client.get("/readyz").status_code == 200
    doc = _run(server, ORDINARY)
    assert doc["status"] == "ok" and doc["error"] is None
    grads = [n["grad"]["values"] for n in doc["graph"]["nodes"] if n["kind"] == "tensor" and n["name"] == "x"]
    assert grads == [[2.0, 4.0]]  # d/dx sum(x*x) = 2x


def test_huge_source_is_refused_with_413(live_server: Server) -> None:
    code = "#" * (64 * 1024 + 1)
    with live_server.client() as client:
        r = client.post("/api/runs", json={"code": code})
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "payload_too_large"
    _still_serving_clean_runs(live_server)


def test_snippet_cannot_connect_to_the_service_or_a_loopback_listener(live_server: Server) -> None:
    listener = LoopbackListener()
    try:
        for port in (live_server.port, listener.port):
            doc = _run(live_server, f"import socket\nsocket.create_connection(('127.0.0.1', {port}), 1)\n")
            assert doc["status"] == "error" and doc["error"]["type"] == "PermissionError"
        assert listener.connections == 0
    finally:
        listener.close()
    _still_serving_clean_runs(live_server)


def test_snippet_cannot_read_the_service_database(live_server: Server) -> None:
    secrets = [p for p in live_server.data_dir.iterdir() if p.is_file()]
    assert secrets, "the service wrote nothing to its data directory"
    for path in secrets:
        doc = _run(live_server, f"print(open({str(path)!r}, 'rb').read()[:64])\n")
        assert doc["status"] == "error", doc
        assert doc["error"]["type"] in ("FileNotFoundError", "PermissionError")
    _still_serving_clean_runs(live_server)


def test_fork_bomb_over_http_is_contained(live_server: Server) -> None:
    doc = _run(live_server, "import os\nwhile True:\n    os.fork()\n")
    assert doc["status"] == "error" and doc["error"]["type"] == "PermissionError"
    _still_serving_clean_runs(live_server)


def test_cuda_on_a_host_without_it_is_a_clear_4xx(live_server: Server) -> None:
    with live_server.client() as client:
        r = client.post("/api/runs", json={"code": ORDINARY, "device": "cuda"})
    assert r.status_code == 422
    assert r.json()["error"]["message"] == (
        'cuda was requested but this server has no CUDA device; use device "cpu" or "auto"')


def test_full_pool_answers_503_at_once_and_recovers(start_server: Any) -> None:
    env = {"GRADTRACE_WORKERS": "1", "GRADTRACE_QUEUE_SIZE": "0", "GRADTRACE_TIMEOUT_S": "10"}
    with start_server(env) as server:
        results: list[dict[str, Any]] = []
        sleeper = threading.Thread(
            target=lambda: results.append(_run(server, "import time\ntime.sleep(30)\n")))
        sleeper.start()
        with server.client() as client:
            deadline = time.monotonic() + 60  # wait for the sleeper to hold the one worker, not a fixed time
            while client.get("/healthz").json()["busy"] != 1:
                assert time.monotonic() < deadline and not results, "the sleeping run never started"
                time.sleep(0.02)
            r = client.post("/api/runs", json={"code": ORDINARY})
            # at once: answered while the sleeper still holds the worker (until its 10 s limit)
            sleeper_done = bool(results)
        assert r.status_code == 503 and not sleeper_done
        assert r.json()["error"]["code"] == "pool_saturated"
        sleeper.join(60)
        assert results and results[0]["status"] == "timeout"
        assert results[0]["message"] == "Stopped: the snippet ran longer than 10 s."
        _still_serving_clean_runs(server)
