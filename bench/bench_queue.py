"""The queue hop and the fleet: ``python bench/bench_queue.py`` (also run by ``make bench``).

Everything runs on 127.0.0.1, bounded in count and time: a redis-server, API replicas and
``gradtrace worker`` processes started here (tests/scale/fleet.py), against the embedded local
pool measured in the same run.

1. Queue hop vs local pool: the same trivial snippet, sequential requests, one worker slot each;
   the p50 difference is what the queue adds (target ≤ 5 ms).
2. 16 clients for a fixed time against 1, then 2 worker processes (one slot each): errors and
   runs/s.
3. The capacity model (docs/scaling.md): runs/s per worker core measured here, for a trivial
   and a lesson-size snippet, and the workers a class of N students needs for p99 ≤ 2 s.
4. The API's side of the hop on a 4 MB document (a GRU unrolled 200 steps): what it did with the
   worker's answer before (parse the whole document to read id, status and schema version) and
   what it does now (read the frame's header: NOTE [read three fields] in gradtrace/sandbox/wire.py),
   timed in the same run on the same text. ``--parse`` runs only this part (no fleet).
"""

from __future__ import annotations

import math
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import orjson

from common import Row, print_table  # puts tests/ on sys.path: the tests' real launchers
from conftest import running_server
from gradtrace.jobs import Job, JobResult
from gradtrace.lessons import lesson
from gradtrace.sandbox.wire import decode_result, encode_result
from gradtrace.schema.canonical import CanonicalDocument
from programs import GRU_200
from scale.fleet import Fleet, fleet

TRIVIAL = lesson("chain_rule").code
LESSON = lesson("transformer_block").code
ENV = {"GRADTRACE_RATE_PER_MINUTE": "0", "GRADTRACE_QUEUE_SIZE": "64"}
SEQUENTIAL = 80
LOAD_S = 8.0
CLIENTS = 16
P99_TARGET_S = 2.0


def sequential(url: str, code: str, n: int) -> list[float]:
    samples = []
    with httpx.Client(base_url=url, timeout=60) as client:
        for _ in range(5):
            client.post("/api/runs", json={"code": code}).raise_for_status()
        for _ in range(n):
            t0 = time.perf_counter()
            r = client.post("/api/runs", json={"code": code})
            samples.append(time.perf_counter() - t0)
            assert r.status_code == 200 and r.json()["status"] == "ok", r.text[:300]
    return samples


def load(urls: list[str], code: str, clients: int, seconds: float) -> dict[str, Any]:
    """``clients`` threads post ``code`` back to back for ``seconds``; counts runs and errors."""
    ok, errors, latencies = [0], [0], []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(i: int) -> None:
        with httpx.Client(base_url=urls[i % len(urls)], timeout=60) as c:
            while time.monotonic() < stop:
                t0 = time.perf_counter()
                try:
                    r = c.post("/api/runs", json={"code": code})
                    good = r.status_code == 200 and r.json()["status"] == "ok"
                except httpx.HTTPError:
                    good = False
                with lock:
                    (ok if good else errors)[0] += 1
                    latencies.append(time.perf_counter() - t0)

    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    xs = sorted(latencies)
    return {"ok": ok[0], "errors": errors[0], "runs_s": ok[0] / wall,
            "p50": statistics.median(xs), "p99": xs[min(len(xs) - 1, round(0.99 * (len(xs) - 1)))]}


@contextmanager
def queue_fleet(workers: int) -> Iterator[Fleet]:
    with fleet({**ENV, "GRADTRACE_WORKERS": "1"}, apis=1, workers=workers) as f:
        yield f


def workers_needed(students: int, service_s: float, p99_s: float, window_s: float = 60.0) -> int:
    """Smallest worker count c with p99 response ≤ 2 s when ``students`` each press Run once
    in ``window_s``: Poisson arrivals, M/M/c queueing (Erlang C: P(wait > t) = C·e^{-(cμ-λ)t}),
    with the wait budget being 2 s less the run's own p99."""
    lam, mu = students / window_s, 1.0 / service_s
    for c in range(1, 10_000):
        a = lam / mu
        if a >= c:
            continue
        term = sum(a ** k / math.factorial(k) for k in range(c)) if c < 150 else None
        if term is None:  # large c: the queue is empty in practice once utilisation < 1
            return c
        top = a ** c / math.factorial(c) * c / (c - a)
        erlang_c = top / (term + top)
        budget = P99_TARGET_S - p99_s
        if budget <= 0:
            return -1
        if erlang_c * math.exp(-(c * mu - lam) * budget) <= 0.01:
            return c
    return -1


def gru_result() -> JobResult:
    """A real 4 MB run document, recorded here and validated as the worker's pool does."""
    from gradtrace.capture import run_snippet
    from gradtrace.sandbox.kinds.run import validate
    from gradtrace.sandbox.wire import Answer

    raw = run_snippet(GRU_200, seed=0, max_nodes=200_000, max_events=800_000).json_without_id()
    result = validate(Job(code=GRU_200, seed=0), Answer(raw))
    assert result is not None and result.status == "ok"
    return result


def hop_parse(n: int = 30) -> None:
    """Row 4 of the module docstring: old and new reading of one worker answer, same text."""
    result = gru_result()
    old_raw = result.canonical  # what a worker answered before: the document alone
    new_raw = encode_result(result)  # now: a frame of a header, the same bytes and the attachment

    def old() -> tuple[str, str, int]:
        doc = CanonicalDocument(orjson.loads(old_raw), old_raw)
        return str(doc["id"]), str(doc["status"]), int(doc["schema_version"])

    def new() -> tuple[str, str, int]:
        got = decode_result(new_raw)
        return got.id, got.status, got.schema_version

    assert old() == new() == (result.id, result.status, result.schema_version)
    times: dict[str, list[float]] = {"old": [], "new": []}
    for i in range(n + 3):
        for name, fn in (("old", old), ("new", new)):
            t0 = time.perf_counter()
            fn()
            if i >= 3:
                times[name].append(time.perf_counter() - t0)
    print_table(f"The API reads a worker's answer: GRU-200 document, {result.size / 1e6:.1f} MB", [
        Row("before: parse the document for id/status/schema_version", times["old"]),
        Row("now: read the frame's header (NOTE [read three fields])", times["new"],
            "parse the document", statistics.median(times["old"]))])


def main() -> None:
    hop_parse()
    if "--parse" in sys.argv:
        return
    rows: list[Row] = []
    with running_server({**ENV, "GRADTRACE_WORKERS": "1"}) as local:
        base = sequential(local.url, TRIVIAL, SEQUENTIAL)
    rows.append(Row("local pool (forkserver), trivial snippet", base))
    with queue_fleet(1) as f:
        hop = sequential(f.apis[0].url, TRIVIAL, SEQUENTIAL)
        lesson_s = sequential(f.apis[0].url, LESSON, 30)
        one = load([f.apis[0].url], TRIVIAL, CLIENTS, LOAD_S)
    rows.append(Row("queue (redis + gradtrace worker), trivial snippet", hop, "local pool", statistics.median(base)))
    print_table("Queue hop vs local pool (one worker slot, sequential)", rows)
    print(f"\np50 overhead of the queue hop: {(statistics.median(hop) - statistics.median(base)) * 1000:.1f} ms "
          "(target ≤ 5 ms)")
    with queue_fleet(2) as f:
        two = load([f.apis[0].url], TRIVIAL, CLIENTS, LOAD_S)
    print(f"\n### {CLIENTS} clients for {LOAD_S:g} s, trivial snippet\n")
    print("| worker processes | runs | errors | runs/s | p50 | p99 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n, r in ((1, one), (2, two)):
        print(f"| {n} | {r['ok']} | {r['errors']} | {r['runs_s']:.1f} | {r['p50'] * 1000:.0f} ms | "
              f"{r['p99'] * 1000:.0f} ms |")
    print(f"\nthroughput 2 vs 1 worker processes: {two['runs_s'] / one['runs_s']:.2f}×")
    trivial, heavy = Row("", hop), Row("", lesson_s)
    print("\n### Capacity model (docs/scaling.md)\n")
    print(f"runs/s per worker core: trivial (chain_rule) {1 / trivial.median:.0f} sequential, "
          f"{one['runs_s']:.0f} under load; lesson 14 (transformer_block) {1 / heavy.median:.1f} "
          f"(p50 {heavy.median * 1000:.0f} ms, p99 {heavy.p['p99'] * 1000:.0f} ms)")
    print("\n| students pressing Run in one minute | worker slots (chain_rule) | (transformer_block) "
          "| (1 s of CPU per run, model) |")
    print("| --- | --- | --- | --- |")
    for n in (30, 100, 300, 1000, 3000):
        print(f"| {n} | {workers_needed(n, trivial.median, trivial.p['p99'])} | "
              f"{workers_needed(n, heavy.median, heavy.p['p99'])} | {workers_needed(n, 1.0, 1.0)} |")


if __name__ == "__main__":
    main()
