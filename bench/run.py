"""Run every benchmark and print their tables: ``make bench`` (or ``python bench/run.py``).

The first case is the foundation's: the HTTP round trip of the chain-rule snippet through the
real service and its warm worker pool, against a cold ``python -c "import torch"`` process
measured in the same run. Every other ``bench/bench_*.py`` script then runs in turn.
"""

from __future__ import annotations

import subprocess
import sys
import time

import httpx

from common import ROOT, Row, print_table
from gradtrace.lessons import lesson

CHAIN_RULE_CODE = lesson("chain_rule").code


def cold_import_torch(n: int) -> list[float]:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True)
        samples.append(time.perf_counter() - t0)
    return samples


def http_round_trip(n: int) -> list[float]:
    from conftest import running_server

    samples = []
    with running_server() as server, httpx.Client(base_url=server.url, timeout=60) as client:
        for _ in range(3):  # warm-up
            client.post("/api/runs", json={"code": CHAIN_RULE_CODE}).raise_for_status()
        for _ in range(n):
            t0 = time.perf_counter()
            r = client.post("/api/runs", json={"code": CHAIN_RULE_CODE})
            samples.append(time.perf_counter() - t0)
            r.raise_for_status()
            assert r.json()["status"] == "ok", r.text
    return samples


def main() -> int:
    cold = Row("cold `python -c \"import torch\"`", cold_import_torch(5))
    http = Row("POST /api/runs chain rule (warm pool)", http_round_trip(50),
               baseline="cold import torch", baseline_median_s=cold.median)
    print_table("Foundation: one run over HTTP vs a cold torch process", [cold, http])
    failed = 0
    for script in sorted((ROOT / "bench").glob("bench_*.py")):
        print(f"\n## {script.name}", flush=True)
        failed |= subprocess.run([sys.executable, str(script)], cwd=ROOT).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
