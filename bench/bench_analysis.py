"""Analysis overhead: what hints and the first non-finite values add to a service run.

    .venv/bin/python bench/bench_analysis.py [--reps N]

The service's run is the sandbox child's work: ``run_snippet(...,
analysis=False).json_without_id()`` (record, build the document, its canonical JSON), then the web process's
validation of those bytes (:func:`gradtrace.sandbox.kinds.run.validate_result`), which is where
the service computes the analysis, on the document it has just parsed (NOTE [one analysis] in
gradtrace/sandbox/kinds/run.py). Each repetition runs the same program twice, in the same process
and alternating: with the analysis (new), and with ``run_kind._analyse`` replaced by a no-op
(the baseline). A third row times the analysis alone on the validated document, against the
service run without it; the last two time capture's own analysis (``record()``, ``gradtrace
run``: it parses the core's JSON for it) against ``run_snippet(..., analysis=False)``.
Target: the service's run of GRU-200 and of the 20-step Adam loop at <= 1.10x.
One intra-op thread, as in the sandbox worker.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from typing import Any

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch

from common import ROOT, Row, print_table

sys.path.insert(0, str(ROOT / "tests"))
import gradtrace.sandbox.kinds.run as run_kind
from gradtrace.capture import run_snippet
from gradtrace.jobs import Job
from gradtrace.sandbox.kinds.run import validate_result
from programs import ADAM_20, GRU_200


def service_run(code: str) -> float:
    """Seconds for the child's run and the web process's validation of its bytes."""
    t0 = time.perf_counter()
    raw = run_snippet(code, seed=0, analysis=False).json_without_id()  # the child
    doc = validate_result(Job(code=code, seed=0, device="cpu"), raw)
    elapsed = time.perf_counter() - t0
    assert doc is not None and doc["status"] == "ok"
    return elapsed


def analysis_alone(code: str, analyse: Any) -> float:
    """Seconds of ``analyse`` (the real ``run_kind._analyse``) on the document the web process
    validated."""
    raw = run_snippet(code, seed=0, analysis=False).json_without_id()
    doc = validate_result(Job(code=code, seed=0, device="cpu"), raw)
    assert doc is not None
    plain = dict(doc)
    t0 = time.perf_counter()
    analyse(plain)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    real = run_kind._analyse

    def without(doc: dict[str, Any]) -> None:
        return None

    def in_process(code: str, analysis: bool) -> float:
        t0 = time.perf_counter()
        doc = run_snippet(code, seed=0, analysis=analysis)
        elapsed = time.perf_counter() - t0
        assert doc.status == "ok"
        return elapsed

    rows = []
    for name, code in (("GRU-200", GRU_200), ("Adam 20 steps", ADAM_20)):
        series: dict[str, list[float]] = {"base": [], "new": [], "own-base": [], "own": [], "alone": []}
        for i in range(args.reps + 2):
            for analysed in (False, True) if i % 2 else (True, False):
                run_kind._analyse = real if analysed else without  # type: ignore[assignment]
                t = service_run(code)
                t_own = in_process(code, analysed)
                if i >= 2:  # two warm-up rounds
                    series["new" if analysed else "base"].append(t)
                    series["own" if analysed else "own-base"].append(t_own)
            if i >= 2:
                series["alone"].append(analysis_alone(code, real))
        run_kind._analyse = real  # type: ignore[assignment]
        b = Row(f"{name}: service run (child + validation), no analysis", series["base"])
        c = Row(f"{name}: record() document, no analysis", series["own-base"])
        rows += [b, Row(f"{name}: service run + analysis", series["new"], baseline="no analysis",
                        baseline_median_s=b.median),
                 Row(f"{name}: the analysis alone, on the validated document", series["alone"],
                     baseline="service run, no analysis", baseline_median_s=b.median),
                 c, Row(f"{name}: record() document + analysis (parses the core's JSON)", series["own"],
                        baseline="no analysis", baseline_median_s=c.median)]
    print_table("Analysis overhead on the service's run (one thread, same process)", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
