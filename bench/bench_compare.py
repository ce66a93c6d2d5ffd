"""Comparing two runs against its speed goals, old against new in the same run.

1. The service: ``POST /api/compare`` of GRU-200 with itself at another seed (goal ≤ 300 ms).
   New: a pair the service has never seen (each sample shares two fresh documents, so nothing
   is cached: fetch, decompress, the comparison's read, compare, answer), the same pair again
   (its kept answer: NOTE [comparison caches] in ``api/compare_cache.py``), the server's CPU
   time for a never-seen pair (what a loaded machine does not inflate), and the what-if
   pattern (run A kept, run B new). Old: with ``--baseline-tree``, the code before, served by a
   second server in the same run (it parses and compares at every request). Baseline: fetching
   both stored runs (``GET /api/runs/{id}`` twice).
   In process, thread CPU time (what a shared, loaded machine inflates least): the old path
   (orjson parse of both whole documents, compare, answer JSON) against the new one (the
   comparison's read, ``analysis/compare/read.py``), and where the time goes.
2. The compare page ``/c/{a}..{b}`` of the same pair: from navigation to both panes' first
   frame (goal ≤ 1.5 s), and until the comparison is shown too; the old page (two documents
   inlined in the HTML) with ``--baseline-tree``. Baseline: the single-run page ``/r/{a}``.
3. What-if on lesson 01's ``x``: one slider step (a key press is an input and a release) to
   run B's redraw (goal ≤ 150 ms). Baseline: ``POST /api/runs`` of lesson 01, the re-run alone.

Run: ``python bench/bench_compare.py [--baseline-tree DIR]`` (needs ``frontend/dist``: ``make
frontend``). DIR is an older checkout with its front end built, e.g. ``git archive main | tar -x
-C DIR``, ``ln -s ../../frontend DIR/backend/gradtrace/frontend``, the capture core's ``.so``
copied into ``DIR/backend/gradtrace/capture/`` and ``npm run build`` in ``DIR/frontend``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson

from common import ROOT, Row, print_table  # first: it puts tests/ on the path

# isort: split
from conftest import CHROMIUM_ARGS, Server, chromium_path, running_server
from gradtrace.analysis.compare import compare_documents, memory_timeline, read_for_compare
from gradtrace.analysis.compare.align import line_map, pair_nodes
from gradtrace.analysis.compare.steps import merged_steps, paired_events
from gradtrace.collector import gc_paused
from gradtrace.lessons import lesson
from gradtrace.storage.codec import compress, decompress
from gradtrace.storage.store import Store
from programs import GRU_200

N_SERVICE = 10
N_COLD = 6
N_PAGE = 5
N_WHATIF = 12
READY_MS = 120_000


def timed(fn: Any, n: int, clock: Any = time.perf_counter) -> list[float]:
    out = []
    for _ in range(n):
        t0 = clock()
        fn()
        out.append(clock() - t0)
    return out


def fresh_shares(api: httpx.Client, doc: dict[str, Any], tag: str, n: int) -> list[str]:
    """``n`` shares of documents the service has never seen: ``doc`` with another stdout each."""
    return [api.post("/api/shares", json={"document": {**doc, "stdout": f"{tag} {k}"}}).json()["id"]
            for k in range(n)]


def post_compare(api: httpx.Client, a: dict[str, str], b: dict[str, str]) -> None:
    api.post("/api/compare", json={"a": a, "b": b}).raise_for_status()


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system, all threads) process ``pid`` has used (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def service_rows(api: httpx.Client, pids: tuple[int, int | None], a: str, b: str, old: httpx.Client | None,
                 doc_a: dict[str, Any], doc_b: dict[str, Any]) -> list[Row]:
    """Old and new in turn, sample by sample (the machine's load drifts): wall and server CPU."""
    def fetch_both() -> None:
        api.get(f"/api/runs/{a}").raise_for_status()
        api.get(f"/api/runs/{b}").raise_for_status()

    def sample(client: httpx.Client, pid: int, sa: dict[str, str], sb: dict[str, str]) -> tuple[float, float]:
        c0, t0 = process_cpu(pid), time.perf_counter()
        post_compare(client, sa, sb)
        return time.perf_counter() - t0, process_cpu(pid) - c0

    fetch = Row("GET both GRU-200 runs (baseline)", timed(fetch_both, N_SERVICE))
    base = {"baseline": "GET both runs", "baseline_median_s": fetch.median}
    rows = [fetch]
    pairs = list(zip(fresh_shares(api, doc_a, "a", N_COLD), fresh_shares(api, doc_b, "b", N_COLD), strict=True))
    old_pair = None
    if old is not None:
        ids = [old.post("/api/shares", json={"document": d}).json()["id"] for d in (doc_a, doc_b)]
        old_pair = ({"share_id": ids[0]}, {"share_id": ids[1]})
        post_compare(old, *old_pair)  # warm
    new_s, old_s = [], []
    for sa, sb in pairs:
        if old is not None and old_pair is not None and pids[1] is not None:
            old_s.append(sample(old, pids[1], *old_pair))
        new_s.append(sample(api, pids[0], {"share_id": sa}, {"share_id": sb}))
    base_cpu = base
    if old_s:
        rows += [Row("old: POST /api/compare (parses and compares at every request)", [w for w, _ in old_s], **base),
                 Row("old: the same, the server process's CPU time", [c for _, c in old_s])]
        base = {"baseline": "old POST", "baseline_median_s": rows[-2].median}
        base_cpu = {"baseline": "old CPU", "baseline_median_s": rows[-1].median}
    rows += [Row("new: POST /api/compare, a pair never seen (nothing cached)", [w for w, _ in new_s], **base),
             Row("new: the same, the server process's CPU time", [c for _, c in new_s], **base_cpu)]
    a_kept = {"run_id": a}
    post_compare(api, a_kept, {"run_id": b})
    rows.append(Row("new: POST /api/compare, the same pair again (kept answer)",
                    timed(lambda: post_compare(api, a_kept, {"run_id": b}), N_SERVICE), **base))
    whatif = [sample(api, pids[0], a_kept, {"share_id": sb})[0] for sb in fresh_shares(api, doc_b, "what-if", N_COLD)]
    rows.append(Row("new: POST /api/compare, A kept and B never seen (what-if)", whatif, **base))
    return rows


def cpu_rows(raw_a: bytes, raw_b: bytes) -> list[Row]:
    """Old path against new in this process, thread CPU time."""
    clock = time.thread_time

    def old_path() -> None:
        with gc_paused():
            compare_documents(orjson.loads(raw_a), orjson.loads(raw_b)).model_dump_json()

    def new_path() -> None:
        with gc_paused():
            compare_documents(read_for_compare(raw_a), read_for_compare(raw_b)).model_dump_json()

    old = Row("old: orjson parse both + compare + answer JSON (CPU)", timed(old_path, N_SERVICE, clock))
    new = Row("new: the comparison's read of both + compare + answer JSON (CPU)", timed(new_path, N_SERVICE, clock),
              baseline="old path", baseline_median_s=old.median)
    return [old, new]


def breakdown_rows(store: Store, a: str, b: str, raw_a: bytes, raw_b: bytes) -> list[Row]:
    """Where a never-seen comparison's time goes, stage by stage (thread CPU time)."""
    clock = time.thread_time
    gz_a, gz_b = compress(raw_a), compress(raw_b)
    rows = [Row("fetch both from storage (SQLite)",
                timed(lambda: (store.get_run(a), store.get_run(b)), N_SERVICE, clock)),
            Row("decompress both", timed(lambda: (decompress(gz_a), decompress(gz_b)), N_SERVICE, clock))]
    with gc_paused():
        rows.append(Row("parse both whole (orjson, old)", timed(lambda: (orjson.loads(raw_a), orjson.loads(raw_b)),
                                                                N_SERVICE, clock)))
        rows.append(Row("the comparison's read of both (new)",
                        timed(lambda: (read_for_compare(raw_a), read_for_compare(raw_b)), N_SERVICE, clock),
                        baseline="orjson whole", baseline_median_s=rows[-1].median))
        da, db = read_for_compare(raw_a), read_for_compare(raw_b)
        na, nb = da["graph"]["nodes"], db["graph"]["nodes"]
        lines = line_map(da.get("code"), db.get("code"))
        rows.append(Row("align (pair the nodes)", timed(lambda: pair_nodes(na, nb, lines), N_SERVICE, clock)))
        made = pair_nodes(na, nb, lines)[0]
        b_of = {na[i]["id"]: nb[j]["id"] for i, j, _ in made}
        ea, eb = da["events"], db["events"]
        rows.append(Row("memory timelines of both", timed(lambda: (memory_timeline(da), memory_timeline(db)),
                                                          N_SERVICE, clock)))
        rows.append(Row("steps (one timeline for both)",
                        timed(lambda: merged_steps(len(ea), len(eb), paired_events(ea, eb, b_of)), N_SERVICE, clock)))
        whole = Row("compare_documents, all of it", timed(lambda: compare_documents(da, db), N_SERVICE, clock))
        rest = sum(r.median for r in rows[-3:])
        rows.append(Row("deltas, first divergence, rows, words (the rest)", [max(0.0, whole.median - rest)]))
        rows.append(whole)
        result = compare_documents(da, db)
        rows.append(Row("answer JSON (model_dump_json)", timed(result.model_dump_json, N_SERVICE, clock)))
    return rows


def first_frame(page: Any, url: str, ready: str) -> float:
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_function(ready, timeout=READY_MS)
    return time.perf_counter() - t0


def page_sample(page: Any, url: str) -> tuple[float, float]:
    """Seconds from navigation to both panes' first frame, and to the comparison shown."""
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_function("document.body.dataset.frame === '1'", timeout=READY_MS)
    frame = time.perf_counter() - t0
    page.wait_for_function("document.body.dataset.ready === '1'", timeout=READY_MS)
    return frame, time.perf_counter() - t0


def page_rows(browser: Any, base: str, a: str, b: str, old: tuple[str, str, str] | None) -> list[Row]:
    """Old and new pages measured in turn (the machine's load drifts), after a warm-up each."""
    page = browser.new_page(viewport={"width": 1280, "height": 800}, bypass_csp=True)
    single = Row("/r/{a} single run, first frame (baseline)",
                 [first_frame(page, f"{base}/r/{a}", "Number(document.body.dataset.ready || 0) > 0")
                  for _ in range(N_PAGE)])
    urls = {"new": f"{base}/c/{a}..{b}"}
    if old is not None:
        urls["old"] = f"{old[0]}/c/{old[1]}..{old[2]}"
    samples: dict[str, list[tuple[float, float]]] = {k: [] for k in urls}
    for url in urls.values():
        page_sample(page, url)  # warm caches
    for _ in range(N_PAGE):
        for key, url in urls.items():
            samples[key].append(page_sample(page, url))
    page.close()
    rows = [single]
    ref = {"baseline": "/r/{a}", "baseline_median_s": single.median}
    ref_shown = ref
    if old is not None:
        rows += [Row("old /c/{a}..{b}: first frame of both panes", [f for f, _ in samples["old"]], **ref),
                 Row("old /c/{a}..{b}: comparison shown too", [s for _, s in samples["old"]], **ref)]
        ref = {"baseline": "old first frame", "baseline_median_s": rows[-2].median}
        ref_shown = {"baseline": "old shown", "baseline_median_s": rows[-1].median}
    return [*rows, Row("new /c/{a}..{b}: first frame of both panes", [f for f, _ in samples["new"]], **ref),
            Row("new /c/{a}..{b}: comparison shown too", [s for _, s in samples["new"]], **ref_shown)]


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


@contextlib.contextmanager
def old_server(tree: Path | None) -> Iterator[Server | None]:
    """The code of ``tree`` served on its own port (its ``backend`` first on the path)."""
    if tree is None:
        yield None
        return
    with running_server({"PYTHONPATH": str(tree / "backend")}) as server:
        yield server


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline-tree", type=Path, help="an older checkout to serve as 'old' (see above)")
    args = parser.parse_args()
    path = chromium_path()
    with (running_server() as server, httpx.Client(base_url=server.url, timeout=120) as api,
          old_server(args.baseline_tree) as before):
        old_api = httpx.Client(base_url=before.url, timeout=120) if before else None
        a = api.post("/api/runs", json={"code": GRU_200, "seed": 0}).json()["id"]
        b = api.post("/api/runs", json={"code": GRU_200, "seed": 1}).json()["id"]
        raw_a, raw_b = (api.get(f"/api/runs/{i}").content for i in (a, b))
        doc_a, doc_b = orjson.loads(raw_a), orjson.loads(raw_b)
        print_table("Compare GRU-200 with itself at another seed, in the service (goal ≤ 300 ms, wall)",
                    service_rows(api, (server.process.pid, before.process.pid if before else None), a, b,
                                 old_api, doc_a, doc_b))
        print_table("The same, in process: old path against new (thread CPU time)", cpu_rows(raw_a, raw_b))
        store = Store(f"sqlite:///{(server.data_dir / 'gradtrace.db').resolve()}")
        print_table("Where a never-seen comparison's time goes (thread CPU time)",
                    breakdown_rows(store, a, b, raw_a, raw_b))
        if path is None:
            print("\n(no Chromium: the page rows are skipped)")
            return 0
        from playwright.sync_api import sync_playwright

        old_ids = None
        if old_api is not None and before is not None:
            shares = [old_api.post("/api/shares", json={"document": d}).json()["id"] for d in (doc_a, doc_b)]
            old_ids = (before.url, shares[0], shares[1])
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
            try:
                print_table("Compare page GRU-200 seed 0 vs 1, first frame (goal ≤ 1.5 s)",
                            page_rows(browser, server.url, a, b, old_ids))
                print_table("What-if slider on lesson 01's x (goal ≤ 150 ms)", whatif_rows(browser, api, server.url))
            finally:
                browser.close()
        if old_api is not None:
            old_api.close()
    print(f"\n(from {ROOT.name}: one machine, numbers noisy; compare the ratios)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
