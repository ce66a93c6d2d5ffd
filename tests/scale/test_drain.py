"""A worker drains on SIGTERM, and the queue bound holds under concurrent admission.

Real redis-server, two API replicas and ``gradtrace worker`` processes on loopback (NOTE [drain
on SIGTERM] in ``gradtrace/queue/worker.py``, NOTE [hard queue bound] in
``gradtrace/queue/admission.py``). Signals go to the worker's own pid, as a container runtime
sends them to its main process.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from scale.fleet import Background, Fleet, WorkerProc, busy, counters, entries, fleet, health, post, queued, wait_until

ENV = {"GRADTRACE_TIMEOUT_S": "40", "GRADTRACE_CPU_S": "10", "GRADTRACE_QUEUE_SIZE": "1",
       "GRADTRACE_QUEUE_WAIT_S": "15", "GRADTRACE_WORKER_DRAIN_S": "20"}
SLEEP = "import time\ntime.sleep({s})\nprint('slept')\n"
DRAINED = "was shut down"


@pytest.fixture(scope="module")
def f() -> Iterator[Fleet]:
    with fleet(ENV, apis=2, workers=2) as running:
        yield running


def slots(f: Fleet, api: int = 0) -> int:
    return int(health(f.apis[api])["runner"]["queue"]["devices"]["cpu"]["slots"])


def busy_worker(f: Fleet) -> WorkerProc:
    """The process of a worker that is running a job now."""
    pids = {w["pid"] for w in entries(f) if w["busy"]}
    return next(w for w in f.workers if w.proc.pid in pids)


def fill_every_slot(f: Fleet, seconds: float) -> list[Background]:
    wait_until(lambda: busy(f) == 0, 60, "workers still busy")
    n = sum(w["slots"] for w in entries(f))
    held = [Background(f, SLEEP.format(s=seconds), api=i % 2) for i in range(n)]
    wait_until(lambda: busy(f) == n, 60, f"{n} jobs did not start")
    return held


def burst(f: Fleet, n: int, code: str) -> list[tuple[httpx.Response, float]]:
    """``n`` POSTs released at the same instant, alternating between the two replicas."""
    gate = threading.Barrier(n)
    answers: list[tuple[httpx.Response, float]] = []
    lock = threading.Lock()

    def one(api: int) -> None:
        gate.wait()
        t0 = time.monotonic()
        r = post(f, code, api=api)
        with lock:
            answers.append((r, time.monotonic() - t0))

    threads = [threading.Thread(target=one, args=(i % 2,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return answers


def test_concurrent_admission_from_both_replicas_never_overshoots_the_bound(f: Fleet) -> None:
    # Two slots and GRADTRACE_QUEUE_SIZE=1: three jobs may be in the queue, never a fourth.
    bound = slots(f) + 1
    assert bound == 3
    for round_ in range(3):
        wait_until(lambda: queued(f) == 0 and busy(f) == 0, 60, "the previous round is still queued")
        answers = burst(f, 10, SLEEP.format(s=8))
        assert len(answers) == 10, f"round {round_}: a request hung"
        refused = [(r, dt) for r, dt in answers if r.status_code == 503]
        accepted = [(r, dt) for r, dt in answers if r.status_code == 200]
        assert len(accepted) + len(refused) == 10, [r.text for r, _ in answers]
        # Every refusal came before any job could end (each sleeps 8 s, however fast the
        # machine), so none could have taken a freed place: exactly the bound was admitted.
        assert max(dt for _r, dt in refused) < min(dt for _r, dt in accepted), answers
        assert len(accepted) == bound, f"round {round_}: {len(accepted)} accepted, bound {bound}"
        assert all(r.json()["stdout"] == "slept\n" for r, _dt in accepted)
        for r, _dt in refused:
            assert r.json()["error"]["code"] == "pool_saturated" and "runs are waiting" in r.text, r.text
            assert float(r.headers["Retry-After"]) >= 1


def test_sigterm_lets_the_running_job_finish_and_leaves_the_queued_one_to_another_worker(f: Fleet) -> None:
    wait_until(lambda: busy(f) == 0, 60, "workers still busy")
    first = Background(f, SLEEP.format(s=6))
    wait_until(lambda: busy(f) == 1, 60, "the first job did not start")
    victim = busy_worker(f)
    second = Background(f, SLEEP.format(s=8), api=1)
    wait_until(lambda: busy(f) == 2, 60, "the second job did not start")
    survivor_id = next(w["id"] for w in entries(f) if w["pid"] != victim.proc.pid)
    behind = Background(f, "print('queued behind')\n")
    wait_until(lambda: queued(f) == 3, 60, "the third job was not queued")
    survivor_started = counters(f)[survivor_id][1]

    t0 = time.monotonic()
    os.kill(victim.proc.pid, signal.SIGTERM)
    # It stops advertising its slot at once, but stays registered while its job runs.
    wait_until(lambda: any(w["draining"] for w in entries(f) if w["pid"] == victim.proc.pid), 30,
               "the worker did not mark itself draining")
    for api in (0, 1):
        wait_until(lambda api=api: slots(f, api) == 1, 30, f"replica {api} still counts the draining slot")  # type: ignore[misc]
        # Its running job still counts as running: of the three in the queue, one waits.
        assert health(f.apis[api])["runner"]["queue"]["devices"]["cpu"]["queued"] == 1
    r = first.join(60)
    assert r.status_code == 200 and r.json()["status"] == "ok" and r.json()["stdout"] == "slept\n", r.text
    assert victim.proc.wait(60) == 0, victim.log()[-3000:]
    drained_in = time.monotonic() - t0
    # the job had < 6 s left: the exit follows it, not the 20 s drain limit
    assert drained_in < 16, drained_in
    f.workers.remove(victim)
    assert all(w["pid"] != victim.proc.pid for w in entries(f)), "the drained worker is still registered"
    # The job queued behind it was never lost: the other worker runs it once its own job is over.
    assert behind.join(60).json()["stdout"] == "queued behind\n"
    assert second.join(60).json()["stdout"] == "slept\n"
    assert counters(f)[survivor_id][1] == survivor_started + 1
    assert queued(f) == 0
    print(f"drain of a job with < 6 s left: worker exited {drained_in:.2f} s after SIGTERM")


def test_a_drain_past_its_grace_answers_crashed_with_the_reason_and_the_worker_exits_0(f: Fleet) -> None:
    short = f.add_worker(env={"GRADTRACE_WORKER_DRAIN_S": "1"})
    held = fill_every_slot(f, 25)
    assert any(w["busy"] for w in entries(f) if w["pid"] == short.proc.pid)
    t0 = time.monotonic()
    os.kill(short.proc.pid, signal.SIGTERM)
    assert short.proc.wait(60) == 0, short.log()[-3000:]
    exited_in = time.monotonic() - t0
    f.workers.remove(short)
    answers = [h.join(60) for h in held]
    cut = [a.json() for a in answers if a.json()["status"] == "crashed"]
    assert len(cut) == 1 and DRAINED in cut[0]["message"] and "1 s" in cut[0]["message"], cut
    assert sorted(a.json()["status"] for a in answers).count("ok") == len(answers) - 1
    # the 1 s grace, then the stopped job's document, then exit: never the job's own 25 s
    assert 1.0 <= exited_in < 15.0, exited_in
    print(f"drain past a 1 s grace: worker exited {exited_in:.2f} s after SIGTERM")


def test_a_second_sigterm_ends_the_drain_at_once(f: Fleet) -> None:
    held = fill_every_slot(f, 25)
    victim = busy_worker(f)
    t0 = time.monotonic()
    os.kill(victim.proc.pid, signal.SIGTERM)
    wait_until(lambda: any(w["draining"] for w in entries(f) if w["pid"] == victim.proc.pid), 30,
               "the worker did not mark itself draining")
    os.kill(victim.proc.pid, signal.SIGTERM)
    assert victim.proc.wait(60) == 0, victim.log()[-3000:]
    exited_in = time.monotonic() - t0
    f.workers.remove(victim)
    answers = [h.join(60).json() for h in held]
    cut = [a for a in answers if a["status"] == "crashed"]
    assert len(cut) == 1 and DRAINED in cut[0]["message"], answers
    assert exited_in < 15.0, exited_in  # not the 20 s drain limit, nor the job's own 25 s
