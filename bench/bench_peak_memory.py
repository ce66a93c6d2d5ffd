"""Peak memory while recording with a tensor file (NOTE [held within the budget] in
capture/tensorfile.py): for the wide MLP of tests/capture/peak_child.py and GRU-200, each run
in a fresh process (its ``VmHWM``, the peak resident memory since it started), without a
tensor file and with budgets of 32 MiB and 128 MiB, on each kernel set; the peak with a file
less the peak without, against the budget, and the core's own high-water mark of what it held.
The runs of one row alternate (each repeat runs without, then each budget), so they see the
same machine load; the figures are the range over the repeats.

    .venv/bin/python bench/bench_peak_memory.py [repeats] [--kernels core,python]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from capture.peak_child import peak  # noqa: E402

BUDGETS = {"32 MiB": 32 << 20, "128 MiB": 128 << 20}


def main() -> None:
    args = sys.argv[1:]
    kernels = ["core", "python"]
    if "--kernels" in args:
        i = args.index("--kernels")
        kernels = args[i + 1].split(",")
        del args[i:i + 2]
    repeats = int(args[0]) if args else 3
    print("peak resident memory (VmHWM) of a fresh process per run, MiB; extra = with a file - without")
    print(f"{'program':<9} {'kernels':<7} {'budget':>8} {'without':>15} {'with':>15} {'extra':>13} "
          f"{'extra - budget':>15} {'held peak MiB':>13} {'file MiB':>8}")
    for name in ("wide", "GRU-200"):
        for k in kernels:
            runs: dict[str, list[dict[str, float]]] = {"none": [], **{b: [] for b in BUDGETS}}
            for _ in range(repeats):
                runs["none"].append(peak(name, "none", k))
                for label, budget in BUDGETS.items():
                    runs[label].append(peak(name, budget, k))
            without = [r["peak_mib"] for r in runs["none"]]
            for label, budget in BUDGETS.items():
                with_ = [r["peak_mib"] for r in runs[label]]
                extra = [w - o for w, o in zip(with_, without, strict=True)]
                mib = budget >> 20
                held = max(r["held_peak"] for r in runs[label]) / (1 << 20)
                size = max(r["file_bytes"] for r in runs[label]) / (1 << 20)
                print(f"{name:<9} {k:<7} {label:>8} {_range(without):>15} {_range(with_):>15} "
                      f"{_range(extra):>13} {_range([e - mib for e in extra]):>15} {held:>13.1f} {size:>8.1f}")


def _range(xs: list[float]) -> str:
    return f"{min(xs):.0f}..{max(xs):.0f}"


if __name__ == "__main__":
    main()
