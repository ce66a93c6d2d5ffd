"""The tensor file's cost: record + document with tensors against without (the same run, the
same machine), on GRU-200, the 6-layer transformer and the GPT-like model of
tests/capture/test_tensor_oracle.py; the file's size; the peak resident memory of each (a fresh
process per row, with the default budget and with ``SMALL_BUDGET``: what is held while recording
stays within the budget, NOTE [held within the budget] in capture/tensorfile.py); and GRU-200
record + document without tensors against the bare run.

    .venv/bin/python bench/bench_tensors.py [repeats] [--cpu]
    .venv/bin/python bench/bench_tensors.py --table [repeats] [--baseline DIR]

``--table``: only the with/without table, thread CPU and wall clock, each repeat a fresh
process running every program without and with tensors alternated (``_one_round``); ``--baseline DIR``
alternates each repeat with the same table measured by another checkout (``DIR/.venv``'s
Python with ``DIR/backend`` first on the path, e.g. the main branch), so before and after come
from the same run of the machine.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "capture")]


def _programs() -> dict[str, str]:
    from test_tensor_oracle import GPT_LIKE

    from programs import GRU_200, TRANSFORMER_6

    return {"GRU-200": GRU_200, "transformer-6": TRANSFORMER_6, "GPT-like": GPT_LIKE}


CPU = "--cpu" in sys.argv
"""Time the process's CPU (all its threads) instead of the wall clock: on a machine that other
work shares, the wall clock measures the neighbours too."""


def _clock() -> float:
    return time.process_time() if CPU else time.perf_counter()


def _run(code: str, budget: int | None, record: bool = True) -> tuple[float, Any]:
    import torch

    import gradtrace

    torch.manual_seed(0)
    ns: dict[str, Any] = {"__name__": "__main__"}
    start = _clock()
    if not record:
        exec(compile(code, "<snippet>", "exec"), ns)
        return _clock() - start, None
    with gradtrace.record(tensor_budget=budget, _filename="<snippet>", _namespace=ns, _fresh=True) as rec:
        exec(compile(code, "<snippet>", "exec"), ns)
    doc = rec.document()
    doc.canonical_json()
    return _clock() - start, doc


def _medians(code: str, budgets: list[int | None], repeats: int, record: bool = True) -> list[float]:
    """The median time of each budget's run, the runs alternated (each repeat runs every
    budget once) so that all of them see the same machine load."""
    for b in budgets:
        _run(code, b, record)  # warm
    times: list[list[float]] = [[] for _ in budgets]
    for _ in range(repeats):
        for i, b in enumerate(budgets):
            times[i].append(_run(code, b, record)[0])
    return [statistics.median(t) for t in times]


SMALL_BUDGET = 8 << 20
_BUDGETS = {"none": None, "small": SMALL_BUDGET}
# A program whose tensors pass the budget many times over (8 MiB activations, 16 of them, and
# as many gradients): its peak shows what is held while recording against the budget.
WIDE = """import torch
from torch import nn
net = nn.Sequential(*[nn.Sequential(nn.Linear(1024, 1024), nn.Tanh()) for _ in range(8)])
x = torch.randn(2048, 1024)
net(x).sum().backward()
"""
WIDE_BUDGETS = {"none": None, "32 MiB": 32 << 20, "128 MiB": 128 << 20}


def _peak(name: str, budget: str) -> int:
    """Peak RSS (MiB) of a fresh process that records ``name`` once (``bare``: runs it only)."""
    out = subprocess.run([sys.executable, __file__, "--peak", name, budget], capture_output=True, text=True,
                         check=True, env={**os.environ})
    return int(out.stdout.strip().splitlines()[-1])


def _own_peak_mib() -> int:
    """This process's peak resident memory. ``VmHWM`` (/proc), which starts afresh at exec;
    ``ru_maxrss`` where there is no /proc, though it keeps the parent's peak across fork and
    exec (a bench that has run the wide MLP would pass its own peak to every child)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--cpu"]
    repeats = int(args[0]) if args else 5
    print("times: process CPU seconds" if CPU else "times: wall clock")
    from gradtrace.capture.tensorfile import DEFAULT_RECORD_BUDGET

    print(f"{'program':<14} {'without ms':>10} {'with ms':>8} {'ratio':>6} {'file MB':>8} "
          f"{'peak MiB w/o':>12} {'peak MiB with':>13} {'peak MiB 8 MiB budget':>21}")
    for name, code in _programs().items():
        without, with_ = _medians(code, [None, DEFAULT_RECORD_BUDGET], repeats)
        _, doc = _run(code, DEFAULT_RECORD_BUDGET)
        size = (doc.tensors.bytes if doc.tensors else 0) / 1e6
        print(f"{name:<14} {without * 1e3:>10.1f} {with_ * 1e3:>8.1f} {with_ / without:>6.2f} {size:>8.2f} "
              f"{_peak(name, 'none'):>12} {_peak(name, 'default'):>13} {_peak(name, 'small'):>21}")
    gru = _programs()["GRU-200"]
    (bare,) = _medians(gru, [None], repeats, record=False)
    (rec,) = _medians(gru, [None], repeats)
    print(f"GRU-200 record + document without tensors vs bare: {rec / bare:.2f}x "
          f"({rec * 1e3:.1f} ms vs {bare * 1e3:.1f} ms)")
    # NOTE [held within the budget] in capture/tensorfile.py: peak = the run without tensors
    # + budget + a constant (the file, made once, and the document's own overhead)
    base = _peak("wide", "none")
    print(f"wide MLP (tensors {2 * 16 * 8} MiB and more): peak without tensors {base} MiB, "
          f"bare {_peak('wide', 'bare')} MiB")
    for label, budget in WIDE_BUDGETS.items():
        if budget is None:
            continue
        peak = _peak("wide", label)
        mib = budget >> 20
        print(f"  budget {label:>8}: peak {peak} MiB = without + {peak - base} MiB "
              f"= without + budget + {peak - base - mib} MiB")


def _both(code: str, budget: int | None) -> tuple[float, float]:
    """(CPU, wall) seconds of one record + document."""
    cpu, wall = time.thread_time(), time.perf_counter()
    _run(code, budget)
    return time.thread_time() - cpu, time.perf_counter() - wall


PAIRS = 5
"""Runs without and with tensors, alternated, per program in one round: its medians."""


def _one_round() -> dict[str, dict[str, list[float]]]:
    """Every program without and with tensors, ``PAIRS`` times alternated after a warm run of
    each: the medians. One intra-op thread and the thread's own CPU time: on a machine that
    others share, idle OpenMP workers spinning for the CPU made process time swing 5x."""
    import torch

    from gradtrace.capture.tensorfile import DEFAULT_RECORD_BUDGET

    torch.set_num_threads(1)
    out: dict[str, dict[str, list[float]]] = {}
    for name, code in _programs().items():
        _both(code, None)
        _both(code, DEFAULT_RECORD_BUDGET)
        runs: dict[str, list[tuple[float, float]]] = {"without": [], "with": []}
        for _ in range(PAIRS):
            runs["without"].append(_both(code, None))
            runs["with"].append(_both(code, DEFAULT_RECORD_BUDGET))
        out[name] = {k: [statistics.median(r[i] for r in v) for i in range(2)] for k, v in runs.items()}
    return out


def _round_in(checkout: Path | None) -> dict[str, dict[str, list[float]]]:
    """``_one_round`` in a fresh process of ``checkout`` (None: this one)."""
    import json

    root = checkout or ROOT
    python = root / ".venv" / "bin" / "python"
    env = {**os.environ, "PYTHONPATH": str(root / "backend")}
    out = subprocess.run([str(python), __file__, "--round"], capture_output=True, text=True, check=True, env=env)
    found: dict[str, dict[str, list[float]]] = json.loads(out.stdout.strip().splitlines()[-1])
    return found


def _span(xs: list[float]) -> str:
    return f"{min(xs):.2f}-{max(xs):.2f}" if len(xs) > 1 else f"{xs[0]:.2f}"


def table(repeats: int, baseline: Path | None) -> None:
    """The with/without table: per program and clock, the median of each and the ratio of the
    medians, with the range of the per-repeat ratios."""
    rows: dict[str, list[dict[str, dict[str, list[float]]]]] = {"this": []}
    if baseline is not None:
        rows["baseline"] = []
    for _ in range(repeats):
        for label in rows:
            rows[label].append(_round_in(baseline if label == "baseline" else None))
    print(f"{repeats} repeats; each a fresh process, its medians of {PAIRS} runs without and with tensors alternated"
          + (f", {baseline} and this checkout alternated" if baseline else ""))
    print(f"{'checkout':<9} {'program':<14} {'clock':<5} {'without ms':>10} {'with ms':>8} {'ratio':>6} "
          f"{'ratio range':>11}")
    for label, rounds in rows.items():
        for name in rounds[0]:
            for i, clock in enumerate(("cpu", "wall")):
                wo = [r[name]["without"][i] for r in rounds]
                wi = [r[name]["with"][i] for r in rounds]
                ratios = [b / a for a, b in zip(wo, wi, strict=True)]
                print(f"{label:<9} {name:<14} {clock:<5} {statistics.median(wo) * 1e3:>10.1f} "
                      f"{statistics.median(wi) * 1e3:>8.1f} {statistics.median(wi) / statistics.median(wo):>6.2f} "
                      f"{_span(ratios):>11}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--round":
        import json

        print(json.dumps(_one_round()))
    elif "--table" in sys.argv:
        rest = [a for a in sys.argv[1:] if a != "--table"]
        base = Path(rest[rest.index("--baseline") + 1]) if "--baseline" in rest else None
        nums = [a for a in rest if a.isdigit()]
        table(int(nums[0]) if nums else 3, base)
    elif len(sys.argv) > 1 and sys.argv[1] == "--peak":
        from gradtrace.capture.tensorfile import DEFAULT_RECORD_BUDGET

        name, label = sys.argv[2], sys.argv[3]
        code = WIDE if name == "wide" else _programs()[name]
        budget = WIDE_BUDGETS.get(label) if name == "wide" else _BUDGETS.get(label, DEFAULT_RECORD_BUDGET)
        _run(code, budget, record=label != "bare")
        print(_own_peak_mib())
    else:
        main()
