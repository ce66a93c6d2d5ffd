"""Explain this node: what it would cost in every document, and what one request costs.

    .venv/bin/python bench/bench_explain.py [--reps N]

Decides NOTE [explain on request] (``analysis/explain/node.py``). Baseline: the service's run of the
program (``run_snippet(...).json_without_id()`` then the web process's validation, as in
bench/bench_analysis.py). Rows: explaining every backward event's every input at its first
element (the least a document could carry), every element of every input (what the page's
element picker needs), what a saved HTML file carries (``carried_explanations``: NOTE
[explanations carried offline] in ``analysis/explain/offline.py``; its JSON and gzipped sizes
in the note), and one request (one node, one element) as ``GET /api/runs/{id}/explain``
computes it (which includes finding the node and its event by a scan of the document, as a
request must: the all-events rows pay that scan per event, so they are an upper bound; the
first-element row of the small Adam document, where the scan is cheap, already costs far more
than a few % of its run). One intra-op thread, as in the sandbox worker.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
import warnings
from typing import Any

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch

from common import ROOT, Row, print_table

sys.path.insert(0, str(ROOT / "tests"))
from gradtrace.analysis.explain import carried_explanations, explain_node
from gradtrace.analysis.explain.node import evaluate
from gradtrace.capture import run_snippet
from gradtrace.jobs import Job
from gradtrace.sandbox.kinds.run import validate_result
from programs import ADAM_20, GRU_200


def service_doc(code: str) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    raw = run_snippet(code, seed=0).json_without_id()
    doc = validate_result(Job(code=code, seed=0, device="cpu"), raw)
    elapsed = time.perf_counter() - t0
    assert doc is not None and doc["status"] == "ok"
    return elapsed, dict(doc)


def backward_events(doc: dict[str, Any]) -> list[tuple[str, int]]:
    return [(e["node"], e["pass"]) for e in doc["events"] if e["phase"] == "backward"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    notes = []
    for name, code in (("GRU-200", GRU_200), ("Adam 20 steps", ADAM_20)):
        base: list[float] = []
        first: list[float] = []
        every: list[float] = []
        one: list[float] = []
        carried: list[float] = []
        note = ""
        for i in range(args.reps + 1):
            t_run, doc = service_doc(code)
            events = backward_events(doc)
            t0 = time.perf_counter()
            for node, p in events:
                explain_node(doc, node, p)
            t1 = time.perf_counter()
            for node, p in events:
                evaluate(doc, node, p)
            t2 = time.perf_counter()
            node, p = events[len(events) // 2]
            explain_node(doc, node, p)
            t3 = time.perf_counter()
            bundle = carried_explanations(doc)
            t4 = time.perf_counter()
            text = json.dumps(bundle, ensure_ascii=False, separators=(",", ":")).encode()
            note = (f"{len(bundle['nodes'])} nodes carried, {bundle['skipped_nodes']} skipped; "
                    f"{len(text) / 1e6:.2f} MB JSON, {len(gzip.compress(text)) / 1e6:.2f} MB gzipped")
            if i:  # one warm-up round
                carried.append(t4 - t3)
                base.append(t_run)
                first.append(t1 - t0)
                every.append(t2 - t1)
                one.append(t3 - t2)
        notes.append(f"{name}: a saved file's explanations: {note}")
        b = Row(f"{name}: service run (child + validation)", base)
        rows += [b,
                 Row(f"{name}: explain every backward event, first element", first,
                     baseline="service run", baseline_median_s=b.median),
                 Row(f"{name}: explain every backward event, every element", every,
                     baseline="service run", baseline_median_s=b.median),
                 Row(f"{name}: a saved file's explanations", carried,
                     baseline="service run", baseline_median_s=b.median),
                 Row(f"{name}: one request (one node, one element)", one,
                     baseline="service run", baseline_median_s=b.median)]
    print_table("Explain this node: in every document vs on request (one thread)", rows)
    for line in notes:
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
