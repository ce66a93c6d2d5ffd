"""Fair shares (NOTE [fair shares] in gradtrace/api/fairshare.py): ``python bench/bench_fairness.py``.

One flooding client sends 5-second spins, four at a time, for the whole phase (on 429 it waits
its ``Retry-After``); four ordinary clients each send the chain-rule lesson with a pause between
runs. The ordinary clients' p50 is measured without the flood and with it, in the same run, on
a 2-worker service with fair shares on (the default cap: half the workers) and, for comparison,
with the cap off (``GRADTRACE_CLIENT_JOBS=0``: the old first-come first-served pool). Target:
with fair shares, the flood leaves the ordinary p50 within 1.5x of its value without it.
Everything runs on 127.0.0.1 and stops by itself (bounded counts and phase lengths).
"""

from __future__ import annotations

import threading
import time

import httpx

from common import Row, print_table  # puts tests/ on sys.path: the tests' real launchers
from conftest import running_server
from gradtrace.lessons import lesson

ORDINARY = lesson("chain_rule").code
SPIN = "import time\nend = time.monotonic() + 5\nwhile time.monotonic() < end:\n    pass\n"
CLIENTS = 4
RUNS_EACH = 10
PAUSE_S = 0.4
FLOOD_THREADS = 4
ENV = {"GRADTRACE_WORKERS": "2", "GRADTRACE_QUEUE_SIZE": "32", "GRADTRACE_RATE_PER_MINUTE": "0",
       "GRADTRACE_TIMEOUT_S": "10", "GRADTRACE_CPU_S": "10", "GRADTRACE_CLIENT_HEADER": "X-API-Key"}


def ordinary_clients(url: str) -> list[float]:
    samples: list[float] = []
    lock = threading.Lock()

    def client(i: int) -> None:
        with httpx.Client(base_url=url, timeout=120, headers={"X-API-Key": f"student-{i}"}) as c:
            for _ in range(RUNS_EACH):
                t0 = time.perf_counter()
                r = c.post("/api/runs", json={"code": ORDINARY})
                took = time.perf_counter() - t0
                r.raise_for_status()
                assert r.json()["status"] == "ok", r.text[:300]
                with lock:
                    samples.append(took)
                time.sleep(PAUSE_S)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    return samples


def flooded(url: str) -> tuple[list[float], dict[int, int]]:
    """The ordinary clients' latencies while one client floods; and the flood's answers by status."""
    stop = threading.Event()
    answers: dict[int, int] = {}
    lock = threading.Lock()

    def flood() -> None:
        with httpx.Client(base_url=url, timeout=120, headers={"X-API-Key": "flood"}) as c:
            while not stop.is_set():
                r = c.post("/api/runs", json={"code": SPIN})
                with lock:
                    answers[r.status_code] = answers.get(r.status_code, 0) + 1
                if r.status_code in (429, 503):
                    stop.wait(min(float(r.headers.get("retry-after", "1")), 10.0))

    threads = [threading.Thread(target=flood) for _ in range(FLOOD_THREADS)]
    for t in threads:
        t.start()
    time.sleep(1.0)  # the flood holds its workers before the ordinary clients start
    try:
        return ordinary_clients(url), answers
    finally:
        stop.set()
        for t in threads:
            t.join(120)


def main() -> int:
    rows: list[Row] = []
    notes = []
    # the tests' launcher turns the cap off (one address sends every test's runs): name it here
    for label, jobs in (("fair shares (cap 1 of 2 workers)", "1"), ("no cap (before)", "0")):
        env = {**ENV, "GRADTRACE_CLIENT_JOBS": jobs}
        with running_server(env) as server:
            with httpx.Client(base_url=server.url, timeout=60) as warm:
                for _ in range(3):
                    warm.post("/api/runs", json={"code": ORDINARY}).raise_for_status()
            quiet = Row(f"ordinary p50, no flood, {label}", ordinary_clients(server.url))
            loud_samples, answers = flooded(server.url)
            loud = Row(f"ordinary p50, one client flooding 5 s spins, {label}", loud_samples,
                       baseline="no flood, same server", baseline_median_s=quiet.median)
            rows += [quiet, loud]
            notes.append(f"{label}: the flood's answers by status {dict(sorted(answers.items()))}")
    print_table("Fair shares: 4 ordinary clients, with and without one flooding client (2 workers)", rows)
    for note in notes:
        print(f"- {note}")
    fair = rows[1].median / rows[0].median
    print(f"\nwith fair shares the flood costs the ordinary clients {fair:.2f}x their p50 (target <= 1.5x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
