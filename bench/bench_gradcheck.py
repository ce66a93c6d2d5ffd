"""A gradient check over HTTP through the real service, next to the plain run of the same snippet;
and what a click that reads a large stored run costs with and without the parsed documents.

    .venv/bin/python bench/bench_gradcheck.py [--n 15] [--clicks-only]

Starts the service (its real sandboxed fork-server pool) on a free loopback port and, in
alternating rounds so machine noise hits both alike, times for each snippet:

* ``POST /api/runs``: the plain run (recorded, stored, answered), the baseline;
* ``POST /api/runs/{id}/gradcheck``: the check (``2 * elements + 2`` re-runs of the snippet in
  one sandboxed job), of every parameter of lesson 04 (58 elements) and of the Cube's input
  (``tests/gradcheck/cube.py``, the wrong backward: the suspect search runs too).

Target: a check's p50 <= 1.5 s.

Per click (:func:`clicks`): two services, one keeping no parsed document
(``GRADTRACE_COMPARE_CACHE_MB=0``: every click decompresses and parses the stored run, as
before NOTE [parsed documents] in ``api/documents.py``) and one with the default budget, each
storing the same GRU-200 run (same code, same seed: the same content hash). Each then answers,
in alternating rounds, ``GET /api/runs/{id}/explain`` of a backward node in the middle of the
run, and ``POST /api/runs/{id}/gradcheck`` of a node that cannot be checked (a 422: everything
the route does before the sandbox, which is where the document is read; the re-runs themselves
take seconds on GRU-200 and read no document). The ratio is kept / not kept. Bounded loops,
127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import httpx
import orjson

from common import Row, print_table
from gradcheck.cube import WRONG_CUBE
from gradtrace.lessons import lesson
from programs import GRU_200

CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("lesson 04, every parameter", lesson("mlp_loss").code, {"target": {"kind": "parameters"}}),
    ("wrong Cube, its input x", WRONG_CUBE, {"target": {"kind": "leaf", "name": "x"}}),
]


def clicks(n: int) -> list[Row]:
    """Per-click time of explain and of gradcheck's reading side on GRU-200, without and with the
    parsed documents kept (see the module's docstring)."""
    from contextlib import ExitStack

    from conftest import running_server

    with ExitStack() as stack:
        servers = {"not kept": stack.enter_context(running_server({"GRADTRACE_COMPARE_CACHE_MB": "0"})),
                   "kept": stack.enter_context(running_server())}
        clients = {k: stack.enter_context(httpx.Client(base_url=s.url, timeout=120)) for k, s in servers.items()}
        runs = {k: c.post("/api/runs", json={"code": GRU_200, "seed": 0}).raise_for_status().json()
                for k, c in clients.items()}
        assert runs["kept"]["id"] == runs["not kept"]["id"], "the same run in both services"
        doc = runs["kept"]
        backward = [e for e in doc["events"] if e["phase"] == "backward"]
        event = backward[len(backward) // 2]
        plain = next(n["id"] for n in doc["graph"]["nodes"] if n.get("kind") == "function"
                     and n.get("name", "").endswith("Backward0"))
        explain = f"/api/runs/{doc['id']}/explain?node={event['node']}&pass={event['pass']}"
        check = f"/api/runs/{doc['id']}/gradcheck"
        times: dict[tuple[str, str], list[float]] = {}
        for i in range(n + 2):  # two warm-up rounds
            for k, c in clients.items():
                t0 = time.perf_counter()
                c.get(explain).raise_for_status()
                t1 = time.perf_counter()
                r = c.post(check, json={"node": plain})
                t2 = time.perf_counter()
                assert r.status_code == 422, r.text
                if i >= 2:
                    times.setdefault(("explain", k), []).append(t1 - t0)
                    times.setdefault(("gradcheck", k), []).append(t2 - t1)
    size = len(orjson.dumps(doc)) / 1e6
    rows: list[Row] = []
    for what, label in (("explain", "GET /api/runs/{id}/explain"),
                        ("gradcheck", "POST /api/runs/{id}/gradcheck (422 before the sandbox)")):
        before = Row(f"GRU-200 ({size:.1f} MB): {label}, parse every click", times[(what, "not kept")])
        rows += [before, Row(f"GRU-200: {label}, parsed document kept", times[(what, "kept")],
                             baseline="parse every click", baseline_median_s=before.median)]
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=15)
    parser.add_argument("--clicks-only", action="store_true", help="only the per-click rows")
    args = parser.parse_args()
    from conftest import running_server

    print_table("A click that reads a stored GRU-200 run: parsed every click vs kept", clicks(args.n * 2))
    if args.clicks_only:
        return 0
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
