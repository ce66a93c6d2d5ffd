"""The queue runner end to end: redis-server, PostgreSQL, two API replicas, two workers, for real.

Each semantic of NOTE [queue semantics] (``gradtrace/queue/runner.py``) has its test here. The
order matters only at the end: the SIGKILL test replaces the worker it killed, and the Redis
restart comes last.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
import redis
import torch

from api.test_run_tensors import MLP, SEED, a_weight_gradient, check_run_tensors, in_process, read_range
from scale.fleet import Background, Fleet, busy, counters, entries, fleet, health, post, started_total, wait_until
from security.bait import ORDINARY
from storage.conftest import new_pg_database, pg_cluster

pytestmark = pytest.mark.postgres

ENV = {"GRADTRACE_TIMEOUT_S": "8", "GRADTRACE_CPU_S": "8", "GRADTRACE_QUEUE_SIZE": "1",
       "GRADTRACE_QUEUE_WAIT_S": "2"}
SLEEP = "import time\ntime.sleep({s})\nprint('slept')\n"


@pytest.fixture(scope="module")
def f() -> Iterator[Fleet]:
    with pg_cluster() as pg, fleet({**ENV, "GRADTRACE_DATABASE_URL": new_pg_database(pg.url)},
                                   apis=2, workers=2) as running:
        yield running


def test_a_run_goes_through_the_queue_and_a_share_resolves_on_the_other_replica(f: Fleet) -> None:
    r = post(f, ORDINARY + "print(x.grad)\n")
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["status"] == "ok" and doc["device"] == "cpu" and "tensor([2., 4., 6.])" in doc["stdout"]
    # The run is stored in PostgreSQL by replica 0 and read by replica 1.
    other = httpx.get(f"{f.apis[1].url}/api/runs/{doc['id']}", timeout=10)
    assert other.status_code == 200 and other.json()["id"] == doc["id"]
    share = httpx.post(f.apis[0].url + "/api/shares", json={"run_id": doc["id"]}, timeout=10)
    assert share.status_code == 201, share.text
    got = httpx.get(f"{f.apis[1].url}/api/shares/{share.json()['id']}", timeout=10)
    assert got.status_code == 200 and got.json()["stdout"] == doc["stdout"]


def test_a_run_through_the_queue_keeps_its_tensor_file_and_every_replica_serves_it(f: Fleet) -> None:
    """The worker sends the tensor file back as raw bytes beside the document (NOTE [raw bytes
    through arq] in gradtrace/queue/keys.py); the replica stores it in PostgreSQL with the run."""
    r = post(f, MLP, seed=SEED)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["status"] == "ok" and doc["tensors"]["count"] > 0
    with httpx.Client(base_url=f.apis[1].url, timeout=10) as other:
        entries = check_run_tensors(other, f"/api/runs/{doc['id']}", doc)
        key = a_weight_gradient(doc)
        served = read_range(other, f"/api/runs/{doc['id']}/tensors.safetensors", entries[key])
        assert torch.equal(torch.from_numpy(served.copy()), in_process(MLP, SEED).tensor(key))
        share = httpx.post(f.apis[0].url + "/api/shares", json={"run_id": doc["id"]}, timeout=10)
        assert share.status_code == 201, share.text
        assert check_run_tensors(other, f"/api/shares/{share.json()['id']}", doc) == entries


def test_healthz_and_metrics_show_the_queue_per_device(f: Fleet) -> None:
    for api in f.apis:
        # Each replica reads the registry every 0.5 s (NOTE [worker registry] in
        # gradtrace/queue/keys.py): on a loaded machine a replica's view may trail a moment.
        wait_until(lambda api=api: health(api)["runner"]["queue"]["devices"]["cpu"]["workers"] == 2,  # type: ignore[misc]
                   60, "a replica does not see both workers")
        h = health(api)["runner"]
        assert h["kind"] == "queue" and h["ready"]
        assert h["queue"]["devices"]["cpu"]["workers"] == 2 and h["queue"]["devices"]["cuda"]["workers"] == 0
        assert h["queue"]["redis"]["ok"] is True
        assert h["isolation"]["seccomp"] == "active"
        metrics = httpx.get(api.url + "/metrics", timeout=5).text
        assert 'gradtrace_queue_workers{device="cpu"} 2.0' in metrics
        assert 'gradtrace_queue_depth{device="cpu"}' in metrics


def test_devices_cuda_is_refused_and_auto_takes_a_cpu_worker(f: Fleet) -> None:
    r = post(f, "print(1)\n", device="cuda")
    assert r.status_code == 422 and r.json()["error"]["code"] == "device_unavailable"
    r = post(f, "print(1)\n", device="auto", api=1)
    assert r.status_code == 200 and r.json()["device"] == "cpu" and r.json()["status"] == "ok"


def test_a_full_queue_answers_503_with_retry_after_at_once(f: Fleet) -> None:
    # Two slots and GRADTRACE_QUEUE_SIZE=1: two running + one waiting fill it.
    before = started_total(f)
    held = [Background(f, SLEEP.format(s=5), api=i % 2) for i in range(3)]
    client = redis.Redis.from_url(f.redis.url)
    try:
        wait_until(lambda: client.zcard("gradtrace:queue:cpu") >= 3, 60, "three jobs were not queued")
    finally:
        client.close()
    r = post(f, "print('one too many')\n", api=1)
    # "at once": answered before a slot freed (the two running jobs sleep 5 s), so nothing
    # else started, however slow the machine
    assert started_total(f) <= before + 2, "the answer waited for a slot"
    assert r.status_code == 503 and r.json()["error"]["code"] == "pool_saturated"
    assert float(r.headers["Retry-After"]) >= 1
    answers = [h.join() for h in held]
    # The two that ran are ok; the one that waited either ran after them or hit its 2 s deadline.
    assert sorted(a.status_code for a in answers)[:2] == [200, 200]
    assert all(a.status_code in (200, 503) for a in answers)


def test_a_job_that_waited_past_its_deadline_is_dropped_never_run_late(f: Fleet) -> None:
    wait_until(lambda: busy(f) == 0, 60, "workers still busy")
    before = started_total(f)
    held = [Background(f, SLEEP.format(s=6)) for _ in range(2)]
    wait_until(lambda: busy(f) == 2, 60, "both workers did not start")
    t0 = time.monotonic()
    late = post(f, "print('late')\n", api=1)
    waited = time.monotonic() - t0
    assert late.status_code == 503 and late.json()["error"]["code"] == "pool_saturated", late.text
    # GRADTRACE_QUEUE_WAIT_S=2: it waited its deadline (load only makes that longer) and was
    # answered before a slot freed (the held jobs sleep 6 s): no third job started
    assert waited >= 1.5, waited
    assert started_total(f) <= before + 2, "the late job was answered only once a slot freed"
    assert [h.join().json()["stdout"] for h in held] == ["slept\n", "slept\n"]
    # Slots are free now: a job still in the queue would start before (or beside) this one.
    assert post(f, "print('next')\n").json()["stdout"] == "next\n"
    wait_until(lambda: started_total(f) >= before + 3, 60, "the next job's start was never counted")
    assert started_total(f) == before + 3, "the dropped job ran late"


def test_a_client_that_disconnects_aborts_its_job_and_frees_the_slot(f: Fleet) -> None:
    wait_until(lambda: busy(f) == 0, 60, "workers still busy")
    before = {k: v[2] for k, v in counters(f).items()}
    with pytest.raises(httpx.ReadTimeout):
        post(f, "while True:\n    pass\n", timeout=1.5)
    # The job would run to its 8 s limit; the abort reaches its worker and frees the slot before.
    wait_until(lambda: busy(f) == 0, 6, "the abandoned job still holds its slot")
    finished = {k: v[2] for k, v in counters(f).items()}
    assert sum(finished.values()) == sum(before.values()) + 1
    r = post(f, "print('after cancel')\n", timeout=5)
    assert r.json()["stdout"] == "after cancel\n"


def test_a_worker_killed_mid_run_answers_crashed_and_the_job_never_runs_again(f: Fleet) -> None:
    import os
    import signal

    wait_until(lambda: busy(f) == 0, 60, "workers still busy")
    victim_run = Background(f, SLEEP.format(s=6))
    wait_until(lambda: busy(f) == 1, 60, "the job did not start")
    entry = next(w for w in entries(f) if w["busy"])
    victim = next(w for w in f.workers if w.proc.pid == entry["pid"])
    survivor_id = next(k for k in counters(f) if k != entry["id"])
    os.kill(victim.proc.pid, signal.SIGKILL)
    r = victim_run.join(60)  # the status says the death was seen (a lost job would hang)
    assert r.status_code == 200 and r.json()["status"] == "crashed", r.text
    assert "stopped before it finished" in r.json()["message"]
    f.workers.remove(victim)
    victim.proc.wait(5)
    # The other worker keeps serving, and runs exactly what it is given: never the dead job.
    started = counters(f)[survivor_id][1]
    for i in range(3):
        assert post(f, f"print({i})\n", api=i % 2).json()["stdout"] == f"{i}\n"
    assert counters(f)[survivor_id][1] == started + 3
    client = redis.Redis.from_url(f.redis.url)
    try:
        assert client.zcard("gradtrace:queue:cpu") == 0
    finally:
        client.close()
    f.add_worker()  # back to two for the next test


def test_redis_restarted_in_flight_answers_503_or_crashed_and_new_runs_work_again(f: Fleet) -> None:
    wait_until(lambda: busy(f) == 0, 60, "workers still busy")
    in_flight = Background(f, SLEEP.format(s=2))
    wait_until(lambda: busy(f) == 1, 60, "the job did not start")
    f.redis.restart()
    r = in_flight.join(60)
    assert r.status_code == 503 or (r.status_code == 200 and r.json()["status"] == "crashed"), r.text

    def works(api: int) -> bool:
        try:
            r = post(f, "print('back')\n", api=api, timeout=10)
        except httpx.HTTPError:
            return False
        return r.status_code == 200 and r.json()["stdout"] == "back\n"

    for api in (0, 1):
        wait_until(lambda api=api: works(api), 60, f"replica {api} did not serve again", every=0.3)  # type: ignore[misc]
    assert all(w.proc.poll() is None for w in f.workers), "a worker exited instead of reconnecting"
