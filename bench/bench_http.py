"""HTTP latency of a trivial snippet through the real service (target: p50 <= 20 ms).

    .venv/bin/python bench/bench_http.py [--n 200] [--gap-ms 30] [--quick]

Starts ``gradtrace serve`` (the console script, as a user does) on a free loopback port with
its real fork-server pool, waits for ``/readyz``, then times, in alternating rounds so machine
noise hits every case alike:

* ``GET /healthz`` on a kept-alive connection: the HTTP floor (routing, middleware, no sandbox);
* ``POST /api/runs`` of a trivial snippet on that connection (what the page and a notebook
  client do), and the same on a new connection per request (what ``curl`` does);
* a pair of POSTs back to back: the second meets the zygote while it forks and pre-faults the
  replacement child (NOTE [replace after the job] in ``sandbox/pool.py``).

Each of the first three waits ``--gap-ms`` first (one user clicking Run). Before the server
starts, the same snippet goes through a :class:`ForkServerPool` driven in this process with the
same cadence (no HTTP, no storage), and after it the pool's two CPU stages run here without a
sandbox: capture + the child's JSON, and the web process's validation of that JSON. The split
printed at the end (differences of medians) separates HTTP + storage from the sandbox and from
capture. Everything targets 127.0.0.1 and every loop is bounded in count.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from common import Row, fmt_s, print_table

TRIVIAL = "x = torch.tensor([1.0, 2.0], requires_grad=True)\n(x * x).sum().backward()\n"
READY_TIMEOUT_S = 120.0


def pool_direct(n: int, warmup: int, gap_s: float) -> tuple[list[float], list[float]]:
    """``pool.run`` alone (sandbox + capture + the parent's validation), timed around the await:
    (paced: ``gap_s`` idle before each run; pairs back to back)."""
    from gradtrace.jobs import Job, Limits
    from gradtrace.sandbox.pool import ForkServerPool
    from gradtrace.settings import Settings

    s = Settings()
    limits = Limits(timeout_s=s.timeout_s, cpu_s=s.cpu_s, memory_mb=s.memory_mb,
                    output_bytes=s.output_kb * 1024, result_bytes=s.result_mb << 20,
                    max_nodes=s.max_nodes, max_events=s.max_events)
    job = Job(code=TRIVIAL, device="cpu", seed=0, limits=limits)

    async def one(pool: ForkServerPool) -> float:
        t0 = time.perf_counter()
        result = await pool.run(job)
        dt = time.perf_counter() - t0
        assert result.status == "ok", result
        return dt

    async def settle(pool: ForkServerPool) -> None:
        while pool.state().busy:  # the child's exit is reported: not timed
            await asyncio.sleep(0.002)

    async def series(pool: ForkServerPool) -> tuple[list[float], list[float]]:
        """The cadence of :func:`http_series`: one run after ``gap_s`` idle, then a pair back to back."""
        paced: list[float] = []
        pairs: list[float] = []
        for i in range(warmup + n):
            await asyncio.sleep(gap_s)
            single = await one(pool)
            await settle(pool)
            await asyncio.sleep(gap_s)
            pair = [await one(pool), await one(pool)]
            await settle(pool)
            if i >= warmup:
                paced.append(single)
                pairs += pair
        return paced, pairs

    async def go() -> tuple[list[float], list[float]]:
        pool = ForkServerPool(s, warm_compile=True)  # as the service starts it
        await pool.start()
        try:
            return await series(pool)
        finally:
            await pool.close()

    return asyncio.run(go())


def stages_in_process(n: int, warmup: int) -> tuple[list[float], list[float]]:
    """The two CPU stages inside ``pool.run``, run here without a sandbox: what the job child
    does (``run_snippet`` + its canonical JSON, as ``sandbox/child.py`` writes it) and what the
    web process does with those bytes (``validate_result``: strict parse, id, canonical bytes)."""
    from gradtrace.capture import run_snippet
    from gradtrace.jobs import Job
    from gradtrace.sandbox.kinds.run import validate_result

    job = Job(code=TRIVIAL)
    child: list[float] = []
    parent: list[float] = []
    for i in range(warmup + n):
        t0 = time.perf_counter()
        raw = run_snippet(TRIVIAL, seed=0).json_without_id()
        t1 = time.perf_counter()
        doc = validate_result(job, raw)
        t2 = time.perf_counter()
        assert doc is not None and doc["status"] == "ok"
        if i >= warmup:
            child.append(t1 - t0)
            parent.append(t2 - t1)
    return child, parent


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def gradtrace_serve() -> Iterator[str]:
    """``gradtrace serve`` on a free loopback port with a temporary data directory."""
    exe = shutil.which("gradtrace", path=str(Path(sys.executable).parent))
    if exe is None:
        raise SystemExit("no `gradtrace` console script next to this python: run `make install`")
    port = free_port()
    data = Path(tempfile.mkdtemp(prefix="gradtrace-bench-http-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADTRACE_")}
    env.update({"GRADTRACE_HOST": "127.0.0.1", "GRADTRACE_PORT": str(port), "GRADTRACE_DATA_DIR": str(data),
                "GRADTRACE_RATE_PER_MINUTE": "0", "GRADTRACE_LOG_LEVEL": "warning"})
    log = (data / "server.log").open("wb")
    proc = subprocess.Popen([exe, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=data,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"gradtrace serve exited {proc.returncode}:\n"
                                 f"{(data / 'server.log').read_text(errors='replace')[-3000:]}")
            try:
                if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"gradtrace serve not ready after {READY_TIMEOUT_S:.0f} s")
            time.sleep(0.1)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait(timeout=10)
        log.close()
        shutil.rmtree(data, ignore_errors=True)


def http_series(url: str, n: int, warmup: int, gap_s: float) -> dict[str, list[float]]:
    """Alternating rounds after ``warmup`` of them: GET /healthz, POST kept-alive, POST on a new
    connection, each after ``gap_s`` idle (paced: one user clicking Run), then two POSTs back to
    back (a client in a loop: the next job meets the zygote still pre-faulting a replacement)."""
    out: dict[str, list[float]] = {"health": [], "keep": [], "new": [], "b2b": []}
    body = {"code": TRIVIAL}

    def post(client: httpx.Client) -> float:
        t0 = time.perf_counter()
        r = client.post("/api/runs", json=body)
        dt = time.perf_counter() - t0
        assert r.status_code == 200 and r.json()["status"] == "ok", r.text
        return dt

    with httpx.Client(base_url=url, timeout=60) as client:
        for i in range(warmup + n):
            time.sleep(gap_s)
            t0 = time.perf_counter()
            client.get("/healthz").raise_for_status()
            health = time.perf_counter() - t0
            time.sleep(gap_s)
            keep = post(client)
            time.sleep(gap_s)
            with httpx.Client(base_url=url, timeout=60) as fresh:  # curl: a connection per request
                new = post(fresh)
            time.sleep(gap_s)
            b2b = [post(client), post(client)]
            if i >= warmup:
                out["health"].append(health)
                out["keep"].append(keep)
                out["new"].append(new)
                out["b2b"] += b2b
    return out


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--gap-ms", type=float, default=30.0, help="idle time before each paced request")
    ap.add_argument("--quick", action="store_true", help="n = 30 (smoke test)")
    args = ap.parse_args()
    n = 30 if args.quick else max(10, min(args.n, 2000))
    warmup = 20
    gap = max(0.0, min(args.gap_ms, 1000.0)) / 1000

    paced, b2b = pool_direct(n, warmup, gap)
    with gradtrace_serve() as url:
        http = http_series(url, n, warmup, gap)
    capture, validate = stages_in_process(n, warmup)

    floor = Row("GET /healthz (HTTP floor)", http["health"])
    keep = Row("POST /api/runs, kept-alive connection", http["keep"],
               baseline="GET /healthz", baseline_median_s=floor.median)
    new = Row("POST /api/runs, new connection (as curl)", http["new"],
              baseline="GET /healthz", baseline_median_s=floor.median)
    pool = Row("pool.run in process (sandbox + capture + validation, no HTTP)", paced)
    keep_vs_pool = Row("POST /api/runs kept-alive vs pool.run", http["keep"],
                       baseline="pool.run", baseline_median_s=pool.median)
    cap = Row("  in pool.run: capture + the child's JSON (here, no sandbox)", capture,
              baseline="pool.run", baseline_median_s=pool.median)
    val = Row("  in pool.run: the web process validates the child's JSON", validate,
              baseline="pool.run", baseline_median_s=pool.median)
    b2b_http = Row("POST /api/runs kept-alive, pairs back to back", http["b2b"],
                   baseline="paced POST", baseline_median_s=keep.median)
    b2b_pool = Row("pool.run, pairs back to back", b2b, baseline="paced pool.run", baseline_median_s=pool.median)
    print_table(f"HTTP: a trivial snippet through `gradtrace serve` (target p50 <= 20 ms); paced, "
                f"{gap * 1000:.0f} ms idle before each request; {warmup} warm-up rounds; wall clock",
                [floor, keep, new, pool, keep_vs_pool, cap, val])
    print_table("The same, in pairs back to back (no idle time between the two runs)", [b2b_http, b2b_pool])

    print("\n| case | n | p50 | p90 | p99 |")
    print("| --- | --- | --- | --- | --- |")
    for row in (floor, keep, new, pool, b2b_http, b2b_pool):
        xs = row.samples_s
        print(f"| {row.case} | {len(xs)} | {fmt_s(pct(xs, 0.5))} | {fmt_s(pct(xs, 0.9))} | {fmt_s(pct(xs, 0.99))} |")
    sandbox = pool.median - cap.median - val.median
    print(f"\nsplit of the paced kept-alive p50 {fmt_s(keep.median)} (differences of medians, approximate): "
          f"pool.run {fmt_s(pool.median)} = capture + child JSON {fmt_s(cap.median)} + validation "
          f"{fmt_s(val.median)} + sandbox (hand-over, pipes, event loop, copy-on-write faults) {fmt_s(sandbox)}; "
          f"HTTP + request checks + gzip + storage {fmt_s(keep.median - pool.median)} "
          f"(the HTTP floor alone {fmt_s(floor.median)})")
    verdict = "meets" if keep.median <= 0.020 else "misses"
    print(f"target: paced p50 {fmt_s(keep.median)} {verdict} <= 20 ms; back to back "
          f"{fmt_s(b2b_http.median)} (load average {Path('/proc/loadavg').read_text().split()[0]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
