"""API and storage speed: share reads, share creation, and stored size per node.

``python bench/bench_api.py`` (``make bench`` runs it) starts the real service on a free port
and, in the same run, a plain static-file server (uvicorn + Starlette ``StaticFiles``) that
serves the very same bytes, then prints:

* ``GET /api/shares/{id}`` of a ~3,000-node document from a real run (gzip as browsers ask,
  and identity), against the static file of the same bytes (target: p50 <= 15 ms);
* share creation (from a run id, from a posted document the service answered, from a new
  posted document, repeated), against a bare
  ``GET /healthz`` round trip as the HTTP floor (target: p50 <= 30 ms);
* the stored (gzip'd canonical JSON) size per node.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from common import ROOT, Row, fmt_s, print_table
from gradtrace.lessons import lesson

BIG_SNIPPET = (
    "x = torch.ones(4, requires_grad=True)\n"
    "y = x\n"
    "for i in range(1500):\n"
    "    y = y * 1.001 + 0.1\n"
    "y.sum().backward()\n"
)
SMALL_SNIPPET = lesson("chain_rule").code


def static_app() -> object:
    """The baseline: Starlette's StaticFiles over ``GRADTRACE_BENCH_STATIC`` (uvicorn --factory)."""
    from starlette.applications import Starlette
    from starlette.routing import Mount
    from starlette.staticfiles import StaticFiles

    return Starlette(routes=[Mount("/", StaticFiles(directory=os.environ["GRADTRACE_BENCH_STATIC"]))])


def timed(n: int, fn: Callable[[int], object], warmup: int = 5) -> list[float]:
    for i in range(warmup):
        fn(-1 - i)
    samples = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        samples.append(time.perf_counter() - t0)
    return samples


def _raw_get(client: httpx.Client, path: str) -> int:
    """GET without decoding the body (what the static baseline does with its .gz file)."""
    with client.stream("GET", path) as r:
        r.raise_for_status()
        return sum(len(chunk) for chunk in r.iter_raw())


def start_static(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    from conftest import free_port

    port = free_port()
    env = {**os.environ, "GRADTRACE_BENCH_STATIC": str(directory)}
    proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "--factory", "bench_api:static_app",
                             "--app-dir", str(ROOT / "bench"), "--port", str(port), "--log-level", "warning"],
                            env=env)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            httpx.get(url + "/nothing", timeout=1)
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.05)
    raise RuntimeError("static server did not start")


def main() -> int:
    from conftest import running_server

    n = int(os.environ.get("BENCH_N", "200"))
    tmp = Path(tempfile.mkdtemp(prefix="gradtrace-bench-api-"))
    with running_server() as server, httpx.Client(base_url=server.url, timeout=120) as api:
        big = api.post("/api/runs", json={"code": BIG_SNIPPET})
        big.raise_for_status()
        doc = big.json()
        nodes = len(doc["graph"]["nodes"])
        share_id = api.post("/api/shares", json={"run_id": doc["id"]}).json()["id"]
        raw = api.get(f"/api/shares/{share_id}", headers={"Accept-Encoding": "identity"}).content
        with api.stream("GET", f"/api/shares/{share_id}") as streamed:
            gz_bytes = b"".join(streamed.iter_raw())
        (tmp / "doc.json").write_bytes(raw)
        (tmp / "doc.json.gz").write_bytes(gz_bytes)
        static, static_url = start_static(tmp)
        try:
            with httpx.Client(base_url=static_url, timeout=60) as st:
                base_raw = Row("static file: same JSON bytes", timed(n, lambda _i: st.get(
                    "/doc.json", headers={"Accept-Encoding": "identity"}).raise_for_status()))
                base_gz = Row("static file: same gzip bytes", timed(n, lambda _i: st.get(
                    "/doc.json.gz").raise_for_status()))
        finally:
            static.terminate()
            static.wait(timeout=10)
        gzip_get = Row(f"GET /api/shares/{{id}} {nodes} nodes, gzip (bytes as sent)", timed(
            n, lambda _i: _raw_get(api, f"/api/shares/{share_id}")),
            baseline="static gzip file", baseline_median_s=base_gz.median)
        decoded_get = Row(f"GET /api/shares/{{id}} {nodes} nodes, gzip + client decode", timed(
            n, lambda _i: api.get(f"/api/shares/{share_id}").raise_for_status()),
            baseline="static gzip file", baseline_median_s=base_gz.median)
        plain_get = Row(f"GET /api/shares/{{id}} {nodes} nodes, identity", timed(
            n, lambda _i: api.get(f"/api/shares/{share_id}",
                                  headers={"Accept-Encoding": "identity"}).raise_for_status()),
            baseline="static JSON file", baseline_median_s=base_raw.median)
        print_table(f"Share reads: a {nodes}-node document ({len(raw)} bytes JSON, {len(gz_bytes)} gzip)",
                    [base_gz, gzip_get, decoded_get, base_raw, plain_get])

        health = Row("GET /healthz (HTTP floor)", timed(n, lambda _i: api.get("/healthz").raise_for_status()))
        m = min(n, 60)
        small_runs = [api.post("/api/runs", json={"code": SMALL_SNIPPET, "seed": 1000 + i}).json()
                      for i in range(m + 5)]
        from_run = Row("POST /api/shares {run_id} (new share, chain rule)", timed(
            m, lambda i: api.post("/api/shares", json={"run_id": small_runs[i]["id"]}).raise_for_status()),
            baseline="GET /healthz", baseline_median_s=health.median)
        big_runs = [api.post("/api/runs", json={"code": BIG_SNIPPET, "seed": 2000 + i}).json()["id"]
                    for i in range(25)]
        from_big_run = Row(f"POST /api/shares {{run_id}} (new share, {nodes} nodes)", timed(
            20, lambda i: api.post("/api/shares", json={"run_id": big_runs[i]}).raise_for_status()),
            baseline="GET /healthz", baseline_median_s=health.median)
        answered = [api.get(f"/api/runs/{rid}").json() for rid in big_runs[20:25]]
        page_like = Row(
            f"POST /api/shares {{document}} (an answered run, {nodes} nodes, as the page)",
            timed(5, lambda i: api.post("/api/shares", json={"document": answered[i]}).raise_for_status(),
                  warmup=0), baseline="GET /healthz", baseline_median_s=health.median)
        small_doc = small_runs[0]
        from_doc = Row("POST /api/shares {document} (new share, chain rule)", timed(
            m, lambda i: api.post("/api/shares", json={"document": {**small_doc, "stdout": f"b{i}"}})
            .raise_for_status()), baseline="GET /healthz", baseline_median_s=health.median)
        from_big_doc = Row(f"POST /api/shares {{document}} (new share, {nodes} nodes)", timed(
            10, lambda i: api.post("/api/shares", json={"document": {**doc, "stdout": f"b{i}"}})
            .raise_for_status(), warmup=1), baseline="GET /healthz", baseline_median_s=health.median)
        repeat = Row("POST /api/shares {run_id} (already shared)", timed(
            m, lambda _i: api.post("/api/shares", json={"run_id": doc["id"]}).raise_for_status()),
            baseline="GET /healthz", baseline_median_s=health.median)
        print_table("Share creation (target p50 <= 30 ms)", [health, from_run, from_big_run, page_like,
                                                            from_doc, from_big_doc, repeat])

        print("\n### Stored size per node (gzip level of the store, canonical JSON)\n")
        print("| document | nodes | events | JSON bytes | gzip bytes | gzip bytes/node | ratio |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for name, d in (("chain rule (01)", small_runs[0]), (f"loop of {nodes} nodes", doc)):
            body = api.get(f"/api/runs/{d['id']}", headers={"Accept-Encoding": "identity"}).content
            gz_len = len(gzip.compress(body, 5, mtime=0))
            k = len(d["graph"]["nodes"])
            print(f"| {name} | {k} | {len(d['events'])} | {len(body)} | {gz_len} | {gz_len / k:.0f} | "
                  f"{len(body) / gz_len:.1f}× |")
        print(f"\n(HTTP samples: medians {fmt_s(gzip_get.median)} gzip read, {fmt_s(from_run.median)} share)")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "tests"))
    raise SystemExit(main())
