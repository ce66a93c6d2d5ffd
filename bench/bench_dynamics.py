"""Dynamics overhead: what computing the training dynamics adds to a run, the leaves'
``value_steps`` (``capture/valuesteps.py``) and the series and their hints
(``analysis/dynamics/``, ``analysis/hints/dynamics.py``) together.

    .venv/bin/python bench/bench_dynamics.py [--reps N] [--repeats R]

The switch is the user's own: ``gradtrace.record(dynamics=False)`` (``run_snippet(...,
dynamics=False)``), against the default. Two runs a user takes, each of GRU-200 and the
20-step Adam loop:
- ``record``: ``with gradtrace.record(): ...`` then ``rec.document()`` and its analysis (the
  notebook's run, with its default tensor file);
- ``run_snippet``: capture's one call with a tensor file and the analysis (the CLI's run; the
  service runs the same capture in its sandbox and the same analysis in the web process).
Each repeat runs every case ``--reps`` times with the dynamics on and off, alternating, in one
process; the figures are the ratios of the medians and of the minima of the thread's CPU time
(``time.thread_time``: a loaded machine's preemptions, which wall clocks count, count in
neither; the minimum is the run least slowed by other processes' use of the shared caches and
cores), with the wall-time ratio of the medians beside them. A last column times the dynamics'
own code inside the runs with them on (the value steps' looks and comparisons and the series,
each wrapped in a timer, as thread CPU): its share of the rest of the same run, which a loaded
machine's noise cannot hide. One intra-op thread, as in the sandbox worker. Target: <= 1.05x.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch

from common import ROOT

sys.path.insert(0, str(ROOT / "tests"))
import gradtrace.analysis.run as analysis_run
from gradtrace import record
from gradtrace.capture import run_snippet
from gradtrace.capture.valuesteps import ValueSteps
from programs import ADAM_20, GRU_200


def by_record(code: str, dynamics: bool) -> None:
    namespace: dict[str, Any] = {"torch": torch, "nn": torch.nn}
    torch.manual_seed(0)
    with record(dynamics=dynamics) as rec:
        exec(compile(code, "<bench>", "exec"), namespace)
    doc = rec.document()
    assert doc.status == "ok"
    assert (doc.analysis is not None and doc.analysis.dynamics is not None) == dynamics


def by_run_snippet(code: str, dynamics: bool) -> None:
    doc = run_snippet(code, seed=0, tensor_budget=64 << 20, dynamics=dynamics)
    assert doc.status == "ok"
    assert ("dynamics" in (doc.fields.get("analysis") or {})) == dynamics


INSIDE = [0.0]
"""Thread CPU seconds spent in the dynamics' own code during the current run."""


def _timer(fn: Any) -> Any:
    def timed_fn(*a: Any, **k: Any) -> Any:
        c0 = time.thread_time()
        try:
            return fn(*a, **k)
        finally:
            INSIDE[0] += time.thread_time() - c0
    return timed_fn


def time_inside() -> None:
    """Wrap the dynamics' own code (value steps, series) in timers that add to ``INSIDE``."""
    ValueSteps.accumulated = _timer(ValueSteps.accumulated)  # type: ignore[method-assign]
    ValueSteps.final = _timer(ValueSteps.final)  # type: ignore[method-assign]
    analysis_run.series_of = _timer(analysis_run.series_of)


def timed(run: Callable[[str, bool], None], code: str, dynamics: bool) -> tuple[float, float, float]:
    """Thread CPU and wall seconds of one run, and the thread CPU seconds inside the dynamics."""
    INSIDE[0] = 0.0
    t0, c0 = time.perf_counter(), time.thread_time()
    run(code, dynamics)
    return time.thread_time() - c0, time.perf_counter() - t0, INSIDE[0]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=15, help="runs each way in one repeat")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    time_inside()
    cases = [(f"{name}, {kind}", run, code) for name, code in (("GRU-200", GRU_200), ("Adam 20 steps", ADAM_20))
             for kind, run in (("record + document", by_record), ("run_snippet", by_run_snippet))]
    for _, run, code in cases:  # warm-up
        for on in (True, False):
            timed(run, code, on)
    results: dict[str, list[tuple[float, ...]]] = {case: [] for case, _, _ in cases}
    for _ in range(args.repeats):
        for case, run, code in cases:
            cpu: dict[bool, list[float]] = {True: [], False: []}
            wall: dict[bool, list[float]] = {True: [], False: []}
            inside: list[float] = []
            for i in range(args.reps):
                for on in (True, False) if i % 2 else (False, True):
                    c, w, d = timed(run, code, on)
                    cpu[on].append(c)
                    wall[on].append(w)
                    if on:
                        inside.append(d)
            off_cpu, on_cpu = statistics.median(cpu[False]), statistics.median(cpu[True])
            rest = statistics.median(c - d for c, d in zip(cpu[True], inside, strict=True))
            results[case].append((off_cpu, on_cpu, on_cpu / off_cpu, min(cpu[True]) / min(cpu[False]),
                                  statistics.median(wall[True]) / statistics.median(wall[False]),
                                  statistics.median(inside), statistics.median(inside) / rest))
    print(f"\n### Dynamics overhead: dynamics on / off (thread CPU, medians of {args.reps} runs each way, "
          f"{args.repeats} repeats, one process)\n")
    print("| case | off, CPU ms | on, CPU ms | CPU ratio of medians | CPU ratio of minima | wall ratio "
          "| inside: ms, share |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for case, rows in results.items():
        offs = ", ".join(f"{r[0] * 1e3:.1f}" for r in rows)
        ons = ", ".join(f"{r[1] * 1e3:.1f}" for r in rows)
        cpu_r = ", ".join(f"{r[2]:.3f}x" for r in rows)
        cpu_min = ", ".join(f"{r[3]:.3f}x" for r in rows)
        wall_r = ", ".join(f"{r[4]:.3f}x" for r in rows)
        share = ", ".join(f"{r[5] * 1e3:.1f} ms {r[6] * 100:.1f}%" for r in rows)
        print(f"| {case} | {offs} | {ons} | {cpu_r} | {cpu_min} | {wall_r} | {share} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
