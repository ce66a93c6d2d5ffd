"""Sandbox benchmark: a trivial snippet through the warm fork-server pool, over HTTP and direct.

Prints tables (case, n, median, p95, p99, baseline, ratio) against a cold
``python -c "import torch"`` measured in the same run, then throughput with 16 concurrent
clients and the server's RSS over many runs. Targets: HTTP p50 <= 20 ms and
p99 <= 60 ms; >= 40 runs/s with 16 clients on 2 cores and 0 errors; server RSS flat (+-10 %)
over 5,000 runs.

Usage: ``python bench/bench_sandbox.py [--quick]`` (``--quick`` shrinks every count ~10x).
Everything targets 127.0.0.1 only; every loop is bounded in count.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from common import Row, fmt_s, print_table

TRIVIAL = "x = torch.ones(2, requires_grad=True)\ny = (x * 2).sum()\ny.backward()\n"
QUICK = "--quick" in sys.argv
SCALE = 10 if QUICK else 1


def cold_import_torch(n: int) -> list[float]:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True, capture_output=True)
        samples.append(time.perf_counter() - t0)
    return samples


def pool_direct(n: int) -> list[float]:
    from sandbox.pool_harness import PoolHarness

    harness = PoolHarness(warm_compile=True)  # as the service starts it
    try:
        for _ in range(5):
            harness.run(TRIVIAL)
        samples = []
        for _ in range(n):
            t0 = time.perf_counter()
            doc = harness.run(TRIVIAL)
            samples.append(time.perf_counter() - t0)
            assert doc["status"] == "ok", doc
        return samples
    finally:
        harness.close()


def cpu_s(pid: int, children: bool = False) -> float:
    """utime+stime of ``pid`` (plus its reaped children's with ``children``), in seconds."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / os.sysconf("SC_CLK_TCK")


def zygote_of(server_pid: int) -> int:
    """The zygote the server started (its child running gradtrace.sandbox.zygote)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes()
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError):
                continue
            if ppid == server_pid and b"gradtrace.sandbox.zygote" in cmd:
                return int(entry.name)
    raise RuntimeError("no zygote found under the server")


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def _hammer(url: str, total: int, clients: int) -> tuple[float, int, list[float]]:
    """``total`` runs from ``clients`` concurrent clients: (elapsed s, errors, latencies)."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(total):
        queue.put_nowait(i)
    errors = 0
    latencies: list[float] = []

    async def client_loop() -> None:
        nonlocal errors
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            while True:
                try:
                    queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                t0 = time.perf_counter()
                r = await client.post("/api/runs", json={"code": TRIVIAL})
                latencies.append(time.perf_counter() - t0)
                if r.status_code != 200 or r.json().get("status") != "ok":
                    errors += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(client_loop() for _ in range(clients)))
    return time.perf_counter() - t0, errors, latencies


def main() -> int:
    from conftest import running_server

    cold = Row('cold `python -c "import torch"`', cold_import_torch(max(3, 5 // SCALE)))
    direct = Row("pool.run trivial (direct, warm)", pool_direct(300 // SCALE),
                 baseline="cold import torch", baseline_median_s=cold.median)
    env = {"GRADTRACE_RATE_PER_MINUTE": "0", "GRADTRACE_LOG_LEVEL": "warning"}
    with running_server(env) as server, httpx.Client(base_url=server.url, timeout=60) as client:
        for _ in range(10):
            client.post("/api/runs", json={"code": TRIVIAL}).raise_for_status()
        samples = []
        for _ in range(500 // SCALE):
            t0 = time.perf_counter()
            r = client.post("/api/runs", json={"code": TRIVIAL})
            samples.append(time.perf_counter() - t0)
            assert r.status_code == 200 and r.json()["status"] == "ok", r.text
        http = Row("POST /api/runs trivial (HTTP, warm)", samples, baseline="cold import torch",
                   baseline_median_s=cold.median)
        print_table("Sandbox: a trivial snippet, warm pool vs a cold torch process", [cold, direct, http])
        print(f"\ntargets: HTTP p50 {fmt_s(http.median)} (<= 20 ms), p99 {fmt_s(http.p['p99'])} (<= 60 ms)")

        total = 400 // SCALE
        zygote = zygote_of(server.process.pid)
        cpu0 = cpu_s(server.process.pid), cpu_s(zygote, children=True)
        elapsed, errors, lat = asyncio.run(_hammer(server.url, total, 16))
        cpu1 = cpu_s(server.process.pid), cpu_s(zygote, children=True)
        web_ms, jobs_ms = ((b - a) / total * 1000 for a, b in zip(cpu0, cpu1, strict=True))
        print("\n### Throughput: 16 concurrent clients, 2 workers\n")
        print("| case | n | elapsed | runs/s | errors | median latency | p99 latency | target |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        lat.sort()
        p99 = lat[int(0.99 * (len(lat) - 1))]
        print(f"| 16 clients, trivial snippet | {total} | {elapsed:.2f} s | {total / elapsed:.1f} | {errors} "
              f"| {fmt_s(statistics.median(lat))} | {fmt_s(p99)} | >= 40/s, 0 errors |")
        print(f"\nCPU per run: web process {web_ms:.1f} ms + zygote and job children {jobs_ms:.1f} ms = "
              f"{web_ms + jobs_ms:.1f} ms, i.e. at most {2000 / (web_ms + jobs_ms):.0f} runs/s on 2 idle cores "
              f"(load average during this run: {Path('/proc/loadavg').read_text().split()[0]})")

        runs = 5000 // SCALE
        step = runs // 5
        pid = server.process.pid
        rows = [(0, rss_kb(pid))]
        for done in range(step, runs + 1, step):
            _e, errs, _l = asyncio.run(_hammer(server.url, step, 8))
            assert errs == 0, f"{errs} errors in the RSS run"
            rows.append((done, rss_kb(pid)))
        print(f"\n### Server RSS over {runs} runs (8 concurrent clients)\n")
        print("| runs | server RSS | change vs first |")
        print("| --- | --- | --- |")
        base = rows[1][1]  # after the first batch: warmed caches, pools, imports
        for done, kb in rows:
            print(f"| {done} | {kb / 1024:.1f} MiB | {100 * (kb - base) / base:+.1f} % |")
        print("\n(change is measured against the RSS after the first batch, once the server is warm)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
