"""A client that goes away gets its job killed at once; a full pool answers 503 at once.

One server with a single worker and no queue, so a busy-looping snippet occupies the whole
pool: the process that burns CPU is found among the server's descendants, the client
disconnects, and the test checks that this process is gone, the pool is idle again, a new
run is served promptly, and the metrics count a cancelled run.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import gradtrace
from api.helpers import BUSY_LOOP, CHAIN_RULE, assert_error
from conftest import Server, running_server


@pytest.fixture(scope="module")
def one_worker() -> Iterator[Server]:
    env = {"GRADTRACE_WORKERS": "1", "GRADTRACE_QUEUE_SIZE": "0", "GRADTRACE_TIMEOUT_S": "60",
           "GRADTRACE_CPU_S": "60"}
    with running_server(env) as srv:
        yield srv


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(ppid, state, utime+stime ticks) of a live process, or None."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = raw[raw.rindex(")") + 2:].split()
    return int(fields[1]), fields[0], int(fields[11]) + int(fields[12])


def _descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))) is not None:
            parents[int(entry)] = st[0]
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return found


def _busiest_descendant(root: int, timeout_s: float = 60.0) -> int:
    """The descendant of ``root`` that burns CPU, watched until one has (a loaded machine may
    give the job no CPU for a while)."""
    before = {pid: st[2] for pid in _descendants(root) if (st := _stat(pid))}
    deadline = time.monotonic() + timeout_s
    while True:
        time.sleep(0.1)
        growth = {pid: st[2] - ticks for pid, ticks in before.items() if (st := _stat(pid))}
        pid, ticks = max(growth.items(), key=lambda kv: kv[1])
        if ticks >= 5 or time.monotonic() > deadline:
            break
    assert ticks > 0, "no descendant of the server is burning CPU"
    return pid


def _alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[1] != "Z"


def _wait(predicate, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _start_run(server: Server, code: str) -> socket.socket:
    body = json.dumps({"code": code}).encode()
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.sendall(b"POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body)
    return sock


def _health(server: Server) -> dict:
    return httpx.get(server.url + "/healthz", timeout=10).json()


def test_a_disconnecting_client_gets_its_job_killed_at_once(one_worker: Server) -> None:
    sock = _start_run(one_worker, BUSY_LOOP)
    try:
        assert _wait(lambda: _health(one_worker)["busy"] == 1, 60), "the run never started"
        burner = _busiest_descendant(one_worker.process.pid)
    finally:
        sock.close()
    # "at once": well before the 60 s limit that would otherwise end the job (load delays the kill)
    assert _wait(lambda: not _alive(burner), 30.0), "the job kept running after its client left"
    assert _wait(lambda: _health(one_worker)["busy"] == 0, 30.0)
    with one_worker.client() as c:
        r = c.post("/api/runs", json={"code": CHAIN_RULE})  # no queue: a held worker would answer 503
        assert r.status_code == 200 and r.json()["status"] == "ok", "the freed worker serves the next run"
        metrics = c.get("/metrics").text
    assert 'gradtrace_runs_total{status="cancelled"} 1.0' in metrics


def test_a_full_pool_answers_503_with_retry_after_at_once(one_worker: Server) -> None:
    sock = _start_run(one_worker, BUSY_LOOP)
    try:
        assert _wait(lambda: _health(one_worker)["busy"] == 1, 60)
        with one_worker.client() as c:
            err = assert_error(c.post("/api/runs", json={"code": CHAIN_RULE}), 503, "pool_saturated")
            # answered while the busy loop still holds the worker (until its 60 s limit), so at
            # once and not after waiting for a slot, however slow the machine
            assert _health(one_worker)["busy"] == 1, "saturation is answered at once, not after a wait"
            assert "busy" in err["message"]
            assert c.get("/readyz").status_code in (200, 503)  # still answers while saturated
    finally:
        sock.close()
    assert _wait(lambda: _health(one_worker)["busy"] == 0, 30.0)


def test_a_notebook_client_that_gives_up_frees_the_worker(one_worker: Server) -> None:
    with gradtrace.Client(one_worker.url, timeout=1.5) as client:
        with pytest.raises(gradtrace.GradtraceAPIError) as info:
            client.run(BUSY_LOOP)
        assert info.value.code == "timeout"
    assert _wait(lambda: _health(one_worker)["busy"] == 0, 30.0), "the abandoned run still holds the worker"
