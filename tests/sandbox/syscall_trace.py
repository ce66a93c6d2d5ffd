"""Measure which syscalls a job child makes after lock-down, with ``strace -f -ff`` on a real pool.

How the seccomp allow-list (``gradtrace/sandbox/seccomp_filter.py``) was derived, and how its
test keeps it honest. A driver process owns a :class:`PoolHarness` and runs the given jobs; the
whole tree (driver, zygote, every job child and its threads) runs under strace with one output
file per task. In a job child's file, everything after the call that loads the seccomp filter is
the job's own doing (the pre-fault run, the snippet, the result write, ``_exit``); a task that a
locked-down task cloned (a thread of OpenMP or of torch's intra-op pool) counts from its start.

Run as a script to print the measured set for the lessons, the real programs, lesson 15 with
torch.compile warmed, a gradient check and the hostile suite:
``.venv/bin/python tests/sandbox/syscall_trace.py``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
LESSONS = ROOT / "backend" / "gradtrace" / "lessons" / "snippets"

_CALL = re.compile(r"^(?:\d+:\d+:\d+(?:\.\d+)? )?([a-z0-9_]+)\(")
_RESUMED = re.compile(r"^<\.\.\. ([a-z0-9_]+) resumed>")
# libseccomp probes flags with seccomp(SECCOMP_SET_MODE_FILTER, flag, NULL) (EFAULT): only a load
# that succeeded counts.
_LOADS_FILTER = re.compile(r"^(?:seccomp\(SECCOMP_SET_MODE_FILTER|prctl\(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)"
                           r".*\) = 0$")
_CLONE = re.compile(r"^clone\(.*\) = (\d+)")

DRIVER = r"""
import json, sys
sys.path[:0] = [sys.argv[2]]
from sandbox.pool_harness import PoolHarness
from gradtrace.jobs import RUN, Job
from gradtrace.sandbox.kinds import table
spec = json.load(open(sys.argv[1]))
kinds = table()
h = PoolHarness(warm_compile=spec["warm_compile"], **spec["settings"])
try:
    out = []
    for job in spec["jobs"]:
        kind = job.get("kind", RUN)
        params = kinds.kind(kind).params.model_validate(job.get("params", {}))
        r = h.call(h.pool.run(Job(code=job["code"], kind=kind, params=params, seed=0, limits=h.limits())))
        out.append([job["name"], r.status])
        h.settle()
    print(json.dumps(out))
finally:
    h.close()
"""


def syscalls_after_lockdown(trace_dir: Path) -> Counter[str]:
    """Count, over every job child and its threads, the syscalls made after the filter loaded."""
    files = {int(p.suffix[1:]): p for p in trace_dir.glob("t.*")}
    counts: Counter[str] = Counter()
    locked: set[int] = set()  # tasks that started locked down (cloned by a locked-down task)
    pending = sorted(files)
    # Children are cloned after their parent's lock-down line, so walk until nothing new is found.
    seen: set[int] = set()
    while pending:
        pid = pending.pop(0)
        if pid in seen and pid not in locked:
            continue
        seen.add(pid)
        after = pid in locked
        for line in files[pid].read_text(errors="replace").splitlines():
            if not after:
                after = bool(_LOADS_FILTER.match(line))
                continue
            m = _CALL.match(line) or _RESUMED.match(line)
            if m is None:
                continue  # signals, exits, "+++ exited"
            if not line.startswith("<..."):
                counts[m.group(1)] += 1
            clone = _CLONE.match(line)
            if clone and int(clone.group(1)) in files and int(clone.group(1)) not in locked:
                locked.add(int(clone.group(1)))
                pending.append(int(clone.group(1)))
    return counts


def trace_jobs(jobs: list[dict[str, Any]], *, warm_compile: bool = False,
               settings: dict[str, Any] | None = None, timeout: float = 600.0) -> tuple[Counter[str], list[Any]]:
    """Run ``jobs`` (dicts with name, code and optional kind/params) through a real pool under
    strace; returns the syscalls the job children made after lock-down and each job's status."""
    with tempfile.TemporaryDirectory(prefix="gradtrace-strace-") as tmp:
        spec = Path(tmp) / "spec.json"
        spec.write_text(json.dumps({"jobs": jobs, "warm_compile": warm_compile, "settings": settings or {}}))
        trace = Path(tmp) / "trace"
        trace.mkdir()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.run(["strace", "-f", "-ff", "-qq", "-s", "0", "-o", str(trace / "t"),
                               sys.executable, "-c", DRIVER, str(spec), str(HERE.parent)],
                              capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp)
        if proc.returncode != 0:
            raise RuntimeError(f"traced driver failed ({proc.returncode}): {proc.stderr[-3000:]}")
        statuses = json.loads(proc.stdout.strip().splitlines()[-1])
        return syscalls_after_lockdown(trace), statuses


THREADS = ("import threading, torch\ntorch.set_num_threads(2)\na = torch.randn(300, 300, requires_grad=True)\n"
           "t = threading.Thread(target=lambda: (a @ a).sum())\nt.start()\nt.join()\n"
           "(a @ a).relu().sum().backward()\n")
"""Python threads and torch's intra-op pool both clone threads, which must still work."""


def benign_jobs() -> list[dict[str, Any]]:
    """Every lesson, the real programs of tests/programs.py, and a gradient check."""
    sys.path.insert(0, str(HERE.parent))
    import programs

    jobs = [{"name": p.stem, "code": p.read_text()} for p in sorted(LESSONS.glob("*.py"))]
    jobs += [{"name": name, "code": getattr(programs, name)} for name in ("GRU_200", "ADAM_20", "TRANSFORMER_6")]
    jobs.append({"name": "gradcheck", "kind": "gradcheck",
                 "code": "w = torch.randn(3, requires_grad=True)\n(w.sin() * w).sum().backward()\n",
                 "params": {"target": {"kind": "leaf", "name": "w"}, "max_elements": 8, "sample_seed": 0}})
    return jobs


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "benign"
    if which == "hostile":
        sys.path.insert(0, str(HERE.parent))
        from security.test_hostile_snippets import CASES

        values = {"canary": "/var/tmp/none", "canary_file": "/var/tmp/none/c", "source_file": __file__,
                  "test_pid": 1, "secret_file": "/nonexistent", "port": 9}
        jobs = [{"name": c.id, "code": c.code.format(**values)} for c in CASES]
        settings = {"timeout_s": 2, "cpu_s": 1, "memory_mb": 384, "output_kb": 16}
    else:
        jobs, settings = [*benign_jobs(), {"name": "threads", "code": THREADS}], {}
    counts, statuses = trace_jobs(jobs, warm_compile=which != "hostile", settings=settings)
    print(json.dumps(statuses))
    for name, n in sorted(counts.items()):
        print(f"{name} {n}")
