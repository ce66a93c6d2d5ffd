"""Small helpers shared by the benchmarks: timing series, a live server, the table printer.

Benchmarks print tables rather than assert: the machines are noisy, so every case is compared
with its baseline measured in the same run, and the ratio is what we quote.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # reuse the tests' real-server launcher


@dataclass
class Row:
    case: str
    samples_s: list[float]
    baseline: str = ""
    baseline_median_s: float | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.samples_s)

    @property
    def p(self) -> dict[str, float]:
        xs = sorted(self.samples_s)

        def pct(q: float) -> float:
            return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]

        return {"p95": pct(0.95), "p99": pct(0.99)}


def fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1000:.1f} ms" if x < 10 else f"{x:.2f} s"


def print_table(title: str, rows: Sequence[Row]) -> None:
    """Print ``case | n | median | p95 | p99 | baseline | ratio`` as a Markdown table."""
    print(f"\n### {title}\n")
    print("| case | n | median | p95 | p99 | baseline | baseline median | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        ratio = f"{r.median / r.baseline_median_s:.3f}×" if r.baseline_median_s else "-"
        print(f"| {r.case} | {len(r.samples_s)} | {fmt_s(r.median)} | {fmt_s(r.p['p95'])} | "
              f"{fmt_s(r.p['p99'])} | {r.baseline or '-'} | {fmt_s(r.baseline_median_s)} | {ratio} |")
    sys.stdout.flush()
