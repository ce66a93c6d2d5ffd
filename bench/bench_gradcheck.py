"""A gradient check over HTTP through the real service, next to the plain run of the same snippet.

    .venv/bin/python bench/bench_gradcheck.py [--n 15]

Starts the service (its real sandboxed fork-server pool) on a free loopback port and, in
alternating rounds so machine noise hits both alike, times for each snippet:

* ``POST /api/runs``: the plain run (recorded, stored, answered), the baseline;
* ``POST /api/runs/{id}/gradcheck``: the check (``2 * elements + 2`` re-runs of the snippet in
  one sandboxed job), of every parameter of lesson 04 (58 elements) and of the Cube's input
  (``tests/gradcheck/cube.py``, the wrong backward: the suspect search runs too).

Target: a check's p50 <= 1.5 s. Bounded loops, 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import httpx

from common import Row, print_table
from gradcheck.cube import WRONG_CUBE
from gradtrace.lessons import lesson

CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("lesson 04, every parameter", lesson("mlp_loss").code, {"target": {"kind": "parameters"}}),
    ("wrong Cube, its input x", WRONG_CUBE, {"target": {"kind": "leaf", "name": "x"}}),
]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=15)
    args = parser.parse_args()
    from conftest import running_server

    rows: list[Row] = []
    with running_server() as server, httpx.Client(base_url=server.url, timeout=120) as client:
        for name, code, body in CASES:
            run_ids = []
            for _ in range(2):  # warm-up: the pool's children, the first compile of each path
                doc = client.post("/api/runs", json={"code": code}).raise_for_status().json()
                client.post(f"/api/runs/{doc['id']}/gradcheck", json=body).raise_for_status()
                run_ids.append(doc["id"])
            plain: list[float] = []
            check: list[float] = []
            verdict = executions = None
            for _ in range(args.n):
                t0 = time.perf_counter()
                doc = client.post("/api/runs", json={"code": code}).raise_for_status().json()
                plain.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                result = client.post(f"/api/runs/{doc['id']}/gradcheck", json=body).raise_for_status().json()
                check.append(time.perf_counter() - t0)
                verdict, executions = result["verdict"], result["executions"]
            base = Row(f"{name}: POST /api/runs (plain run)", plain)
            rows += [base, Row(f"{name}: POST /api/runs/{{id}}/gradcheck ({verdict}, {executions} runs)", check,
                               baseline="plain run", baseline_median_s=base.median)]
    print_table("Gradient check over HTTP vs the plain run of the same snippet (target: check p50 <= 1.5 s)", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
