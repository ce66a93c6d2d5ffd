"""The service's run with its tensor file against the same run without: ``POST /api/runs``.

``python bench/bench_run_tensors.py`` starts the real service twice (the default
``GRADTRACE_TENSOR_BUDGET_MB``, and ``0``: no tensor file), and posts the same programs over
HTTP to each in turn, each run timed until its document has arrived (the target is a p50
ratio <= 1.2x). The programs: the chain-rule lesson (a trivial run), the MLP lesson, and a
small MLP's training step. ``BENCH_REPEATS`` rounds (3), each with ``BENCH_N`` runs a service
(30), interleaved run by run, so both services see the same machine load; two ways of posting:

* **one at a time**: each run is posted once both services are quiet (no CPU used by the
  web process, the zygote or its children over two ticks in a row), as a person's run finds
  a service that is not busy with someone else's;
* **back to back**: each run the moment the last answered. After each run the sandbox forks
  and pre-faults a replacement child (NOTE [replace after the job] in sandbox/pool.py), about
  50 ms of CPU that here lands on the other service's run; on a shared 2-core machine that
  is most of what this mode measures, and the ratio moves with the load.

Each table also gives the CPU each run cost, whatever the load: the web process's, and the
sandbox's (the zygote, its job child and the child's replacement), as the mean over the round.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from common import fmt_s
from gradtrace.lessons import lesson

PROGRAMS = {
    "chain rule lesson": lesson("chain_rule").code,
    "MLP loss lesson": lesson("mlp_loss").code,
    "MLP training step": ("net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))\n"
                          "opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
                          "for _ in range(5):\n"
                          "    opt.zero_grad()\n"
                          "    F.cross_entropy(net(torch.randn(8, 16)), torch.randint(0, 4, (8,))).backward()\n"
                          "    opt.step()\n"),
}
QUIET_TICKS = 2
"""Clock ticks in a row without CPU used by either service: quiet."""


def ticks(pid: int) -> int:
    """utime+stime of ``pid`` and of its reaped children, in clock ticks (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return sum(int(f) for f in fields[11:15])


def tree(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def wait_quiet(pids: list[int], tick_s: float, limit_s: float = 5.0) -> None:
    """Until ``pids`` and their descendants use no CPU for QUIET_TICKS ticks (at most ``limit_s``)."""
    deadline, calm, last = time.monotonic() + limit_s, 0, -1
    while calm < QUIET_TICKS and time.monotonic() < deadline:
        now = sum(ticks(p) for root in pids for p in tree(root))
        calm = calm + 1 if now == last else 0
        last = now
        time.sleep(tick_s)


def p90(xs: list[float]) -> float:
    return sorted(xs)[min(len(xs) - 1, round(0.9 * (len(xs) - 1)))]


def main() -> int:
    from bench_sandbox import zygote_of
    from conftest import running_server

    n = int(os.environ.get("BENCH_N", "30"))
    repeats = int(os.environ.get("BENCH_REPEATS", "3"))
    tick_s = 1 / os.sysconf("SC_CLK_TCK")
    env = {"GRADTRACE_RATE_PER_MINUTE": "0"}
    with running_server(env) as kept, running_server({**env, "GRADTRACE_TENSOR_BUDGET_MB": "0"}) as bare, \
            httpx.Client(timeout=120) as client:
        servers = {"with": kept, "without": bare}
        web = {k: s.process.pid for k, s in servers.items()}
        zygote = {k: zygote_of(s.process.pid) for k, s in servers.items()}
        every = [*web.values(), *zygote.values()]

        def post(label: str, code: str) -> float:
            r = client.post(servers[label].url + "/api/runs", json={"code": code, "seed": 1})
            r.raise_for_status()
            assert ("tensors" in r.json()) == (label == "with"), label
            return r.elapsed.total_seconds()

        modes: dict[str, Callable[[], None]] = {"one at a time": lambda: wait_quiet(every, tick_s),
                                                "back to back": lambda: None}
        print("| program | mode | round | without p50 / p90 | with p50 / p90 | ratio p50 | "
              "CPU per run without: web + sandbox | with: web + sandbox |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        only = os.environ.get("BENCH_ONLY", "")  # a part of a program's name, to run that one alone
        for name, code in PROGRAMS.items():
            if only not in name:
                continue
            for label in servers:  # warm-up
                for _ in range(3):
                    post(label, code)
            for mode, before in modes.items():
                if os.environ.get("BENCH_MODE", mode) != mode:
                    continue
                for round_ in range(1, repeats + 1):
                    wait_quiet(every, tick_s)
                    cpu0 = {k: (ticks(web[k]), ticks(zygote[k])) for k in servers}
                    samples: dict[str, list[float]] = {k: [] for k in servers}
                    for _ in range(n):
                        for label in servers:
                            before()
                            samples[label].append(post(label, code))
                    wait_quiet(every, tick_s)
                    cpu = {k: tuple((b - a) * tick_s / n for a, b in
                                    zip(cpu0[k], (ticks(web[k]), ticks(zygote[k])), strict=True)) for k in servers}
                    w, o = samples["with"], samples["without"]
                    print(f"| {name} | {mode} | {round_} | {fmt_s(statistics.median(o))} / {fmt_s(p90(o))} | "
                          f"{fmt_s(statistics.median(w))} / {fmt_s(p90(w))} | "
                          f"{statistics.median(w) / statistics.median(o):.3f}× | "
                          f"{fmt_s(cpu['without'][0])} + {fmt_s(cpu['without'][1])} | "
                          f"{fmt_s(cpu['with'][0])} + {fmt_s(cpu['with'][1])} |")
                    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
