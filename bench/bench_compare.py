"""Comparing two runs against its speed goals, each case against a baseline measured in the same run.

1. The service: ``POST /api/compare`` of GRU-200 with itself at another seed (goal ≤ 300 ms).
   Baseline: fetching the same two stored runs (``GET /api/runs/{id}`` twice), the least any
   comparison of them in the service costs. In process, ``compare_documents`` against the
   tests' whole-document walk (``analysis/docdiff.py``'s ``compare`` with no limit), and the
   CPU time of what the service does (parse both, compare, write the answer), which a busy
   shared machine inflates less than wall time.
2. The compare page ``/c/{a}..{b}`` of the same pair: from navigation to both panes' first
   frame (goal ≤ 1.5 s), and until the comparison (fetched while the panes lay out) is shown.
   Baseline: the single-run page ``/r/{a}`` of run A to its first frame.
3. What-if on lesson 01's ``x``: one slider step (a key press is an input and a release) to
   run B's redraw (goal ≤ 150 ms). Baseline: ``POST /api/runs`` of lesson 01, the re-run alone.

Run: ``python bench/bench_compare.py`` (needs ``frontend/dist``: ``make frontend``).
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import orjson

from common import ROOT, Row, print_table  # first: it puts tests/ on the path

# isort: split
from conftest import CHROMIUM_ARGS, chromium_path, running_server
from gradtrace.analysis.compare import compare_documents
from gradtrace.analysis.docdiff import compare as docdiff_compare
from gradtrace.collector import gc_paused
from gradtrace.lessons import lesson
from programs import GRU_200

N_SERVICE = 10
N_PAGE = 5
N_WHATIF = 12
READY_MS = 120_000


def timed(fn: Any, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def service_rows(api: httpx.Client, a: str, b: str) -> list[Row]:
    body = {"a": {"run_id": a}, "b": {"run_id": b}}
    api.post("/api/compare", json=body).raise_for_status()  # warm

    def fetch_both() -> None:
        api.get(f"/api/runs/{a}").raise_for_status()
        api.get(f"/api/runs/{b}").raise_for_status()

    fetch = Row("GET both GRU-200 runs (baseline)", timed(fetch_both, N_SERVICE))
    compare = Row("POST /api/compare GRU-200 seed 0 vs 1", timed(lambda: api.post("/api/compare", json=body)
                                                               .raise_for_status(), N_SERVICE),
                  baseline="GET both runs", baseline_median_s=fetch.median)
    doc_a, doc_b = (orjson.loads(api.get(f"/api/runs/{i}").content) for i in (a, b))
    walk = Row("docdiff.compare whole documents (in process)",
               timed(lambda: docdiff_compare(doc_a, doc_b, limit=10**9), 3))
    engine = Row("compare_documents (in process)", timed(lambda: compare_documents(doc_a, doc_b), N_SERVICE),
                 baseline="docdiff walk", baseline_median_s=walk.median)
    # CPU time of this process: what the comparison costs on a machine that is not shared
    raw_a, raw_b = orjson.dumps(doc_a), orjson.dumps(doc_b)

    def parse_and_compare() -> None:
        with gc_paused():
            compare_documents(orjson.loads(raw_a), orjson.loads(raw_b)).model_dump_json()

    cpu = Row("parse both + compare + answer JSON, CPU time (in process)", cpu_timed(parse_and_compare, N_SERVICE),
              baseline="GET both runs", baseline_median_s=fetch.median)
    return [fetch, compare, walk, engine, cpu]


def cpu_timed(fn: Any, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.process_time()
        fn()
        out.append(time.process_time() - t0)
    return out


def first_frame(page: Any, url: str, ready: str) -> float:
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_function(ready, timeout=READY_MS)
    return time.perf_counter() - t0


def page_rows(browser: Any, base: str, a: str, b: str) -> list[Row]:
    page = browser.new_page(viewport={"width": 1280, "height": 800}, bypass_csp=True)
    first_frame(page, f"{base}/c/{a}..{b}", "document.body.dataset.ready === '1'")  # warm caches
    single = Row("/r/{a} single run, first frame (baseline)",
                 [first_frame(page, f"{base}/r/{a}", "Number(document.body.dataset.ready || 0) > 0")
                  for _ in range(N_PAGE)])
    frames, shown = [], []
    for _ in range(N_PAGE):
        t0 = time.perf_counter()
        page.goto(f"{base}/c/{a}..{b}")
        page.wait_for_function("document.body.dataset.frame === '1'", timeout=READY_MS)
        frames.append(time.perf_counter() - t0)
        page.wait_for_function("document.body.dataset.ready === '1'", timeout=READY_MS)
        shown.append(time.perf_counter() - t0)
    page.close()
    both = Row("/c/{a}..{b} compare page, first frame of both panes", frames,
               baseline="/r/{a}", baseline_median_s=single.median)
    full = Row("/c/{a}..{b} compare page, comparison shown too", shown,
               baseline="/r/{a}", baseline_median_s=single.median)
    return [single, both, full]


def whatif_rows(browser: Any, api: httpx.Client, base: str) -> list[Row]:
    code = lesson("01_chain_rule").code
    rerun = Row("POST /api/runs lesson 01 (baseline: the re-run alone)",
                timed(lambda: api.post("/api/runs", json={"code": code}).raise_for_status(), N_WHATIF))
    run_id = api.post("/api/runs", json={"code": code}).json()["id"]
    link = api.post("/api/compare/links", json={"a": {"run_id": run_id}, "b": {"run_id": run_id}}).json()
    page = browser.new_page(viewport={"width": 1280, "height": 800}, bypass_csp=True)
    page.goto(f"{base}{httpx.URL(link['url']).path}")
    page.wait_for_function("document.body.dataset.ready === '1'", timeout=READY_MS)
    page.locator("#wi-slider").focus()
    samples = []
    for k in range(N_WHATIF + 2):
        done = int(page.evaluate("window.gradtrace.page.whatIf.runs"))
        page.keyboard.press("ArrowRight" if k % 2 == 0 else "ArrowLeft")
        page.wait_for_function(f"(w => w.runs > {done} && !w.busy && w.lastMs !== null && w.releasedAt === 0)"
                               "(window.gradtrace.page.whatIf)", timeout=READY_MS)
        if k >= 2:  # the first steps warm the layout worker
            samples.append(float(page.evaluate("window.gradtrace.page.whatIf.lastMs")) / 1000)
    page.close()
    step = Row("what-if slider step on lesson 01's x, release to redraw", samples,
               baseline="POST /api/runs", baseline_median_s=rerun.median)
    return [rerun, step]


def main() -> int:
    path = chromium_path()
    with running_server() as server, httpx.Client(base_url=server.url, timeout=120) as api:
        a = api.post("/api/runs", json={"code": GRU_200, "seed": 0}).json()["id"]
        b = api.post("/api/runs", json={"code": GRU_200, "seed": 1}).json()["id"]
        print_table("Compare GRU-200 with itself at another seed, in the service (goal ≤ 300 ms)",
                    service_rows(api, a, b))
        if path is None:
            print("\n(no Chromium: the page rows are skipped)")
            return 0
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
            try:
                print_table("Compare page GRU-200 seed 0 vs 1, first frame (goal ≤ 1.5 s)",
                            page_rows(browser, server.url, a, b))
                print_table("What-if slider on lesson 01's x (goal ≤ 150 ms)", whatif_rows(browser, api, server.url))
            finally:
                browser.close()
    print(f"\n(from {ROOT.name}: one machine, numbers noisy; compare the ratios)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
