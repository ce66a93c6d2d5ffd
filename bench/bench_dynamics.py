"""Dynamics overhead: what the series by iteration (``analysis/dynamics/``) and the leaves'
``value_steps`` (``capture/valuesteps.py``) add to a run.

    .venv/bin/python bench/bench_dynamics.py [--reps N]

Each repetition runs the same program twice in the same process, alternating: as it is (capture
follows each leaf's value around its steps, the analysis computes the series from the document
and the kept tensors), and with both replaced by no-ops (the baseline). The run is
``run_snippet`` with a tensor file (``tensor_budget``) and its analysis, so the series read the
kept tensors (mean |grad|, the activation shares): the dearest case. A third row times the
series alone on the finished document; a fourth, the value steps and the series as they ran
inside the run (the direct cost, which the noise of a shared machine cannot hide).
Target: GRU-200 and the 20-step Adam loop at <= 1.05x. One intra-op thread, as in the sandbox
worker.
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
import gradtrace.analysis.run as analysis_run
from gradtrace import record
from gradtrace.analysis.docview import DocView
from gradtrace.analysis.dynamics import dynamics
from gradtrace.capture import run_snippet
from gradtrace.capture.valuesteps import ValueSteps
from programs import ADAM_20, GRU_200


def one_run(code: str) -> float:
    t0 = time.perf_counter()
    doc = run_snippet(code, seed=0, tensor_budget=64 << 20)
    elapsed = time.perf_counter() - t0
    assert doc.status == "ok"
    return elapsed


def series_alone(code: str) -> float:
    """Seconds of the series on the finished document, its tensors in process."""
    namespace: dict[str, Any] = {"torch": torch, "nn": torch.nn}
    torch.manual_seed(0)
    with record() as rec:
        exec(compile(code, "<bench>", "exec"), namespace)
    doc = rec.document().as_json_dict()
    held = rec.recorder.tensor_file.tensors if rec.recorder.tensor_file is not None else {}
    view = DocView(doc)
    t0 = time.perf_counter()
    dynamics(view, held.get)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    real = (analysis_run.dynamics, ValueSteps.accumulated, ValueSteps.final)
    spent = [0.0]

    def timed(fn: Any) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[0] += time.perf_counter() - t0
        return wrapper

    def off(on: bool) -> None:
        if on:  # the real ones, their time summed into `spent`
            analysis_run.dynamics, ValueSteps.accumulated, ValueSteps.final = (  # type: ignore[method-assign]
                timed(f) for f in real)
        else:
            analysis_run.dynamics = lambda view, tensors=None: None  # type: ignore[assignment]
            ValueSteps.accumulated = lambda self, leaves: None  # type: ignore[method-assign]
            ValueSteps.final = lambda self: None  # type: ignore[method-assign]

    rows = []
    for name, code in (("GRU-200", GRU_200), ("Adam 20 steps", ADAM_20)):
        series: dict[str, list[float]] = {"base": [], "new": [], "alone": [], "inside": []}
        for i in range(args.reps + 2):
            for on in (False, True) if i % 2 else (True, False):
                off(on)
                spent[0] = 0.0
                t = one_run(code)
                if i >= 2:  # two warm-up rounds
                    series["new" if on else "base"].append(t)
                    if on:
                        series["inside"].append(spent[0])
            off(True)
            if i >= 2:
                series["alone"].append(series_alone(code))
        b = Row(f"{name}: run_snippet with tensors + analysis, no dynamics", series["base"])
        rows += [b, Row(f"{name}: the same + value steps + dynamics", series["new"], baseline="no dynamics",
                        baseline_median_s=b.median),
                 Row(f"{name}: the series alone, on the finished document", series["alone"],
                     baseline="run, no dynamics", baseline_median_s=b.median),
                 Row(f"{name}: value steps + series, timed inside the run", series["inside"],
                     baseline="run, no dynamics", baseline_median_s=b.median)]
    print_table("Dynamics overhead (one thread, same process)", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
