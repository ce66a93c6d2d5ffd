"""A fresh venv with a plain ``pip install .``: does it record at the C++ core's speed?

    .venv/bin/python bench/bench_fresh_install.py [--reps 7] [--quick] [--keep]

In a new temporary directory: ``python3.11 -m venv``, then ``pip install <repo root>`` (no
``-e``, no make). pip takes torch as the project pins it (this machine's CPU wheel from its
local disk; pip's cap on torch is left alone): a ``--dry-run --report`` first checks that
torch comes from a ``file://`` location and that no CUDA package (``nvidia-*``, ``triton``)
would be fetched, and stops before installing anything otherwise.

Then the same probe (this file with ``--probe``) runs in separate processes, each with an empty
``XDG_CACHE_HOME`` so a first use is a real first build (NOTE [building the core] in
``backend/gradtrace/capture/build_native.py``):

1. the fresh venv, first use: the time of ``from gradtrace.capture import native`` (which
   compiles the core into the cache), then the in-process cases;
2. the fresh venv again with that cache: the same import, now loading the cached build;
3. the repo's own ``.venv`` (core built by ``make``), the same cases: the baseline;
4. the fresh venv with no compiler on ``PATH`` (an empty directory; the interpreter is run by
   its absolute path) and an empty cache: the recorder must fall back and say so once.

The cases mirror ``bench/bench_capture.py``'s ``grucell-200`` and ``transformer-6`` and its
``timed_in_process``: one thread, ``with gradtrace.record() as rec`` around forward+backward
then ``rec.document()``, against the same forward+backward bare, alternating, thread CPU time,
a full collection before each (untimed). Every temporary directory is removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
PROBE_TAG = "PROBE_JSON:"
MESSAGE_TAG = "gradtrace:"
CUDA_PACKAGES = ("nvidia-", "triton")


# ----------------------------------------------------------------------------- the probe
# Runs inside the venv under test: standard library, torch and the installed gradtrace only.

def probe(reps: int, cases: list[str]) -> dict[str, Any]:
    import gc
    import statistics
    import warnings

    clock = time.thread_time  # NOTE [clock] in bench/bench_capture.py
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
        import torch
    from torch import nn

    t_torch = time.perf_counter() - t0
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    from gradtrace.capture import native  # the first use: builds the core into the cache if needed

    t_native = time.perf_counter() - t0
    import gradtrace

    out: dict[str, Any] = {
        "python": sys.executable, "gradtrace_file": gradtrace.__file__, "torch": str(torch.__version__),
        "import_torch_s": t_torch, "import_native_s": t_native, "core": native.available(),
        "core_file": getattr(native.core, "__file__", None), "cases": {}}

    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=256, dropout=0.0, batch_first=True)
    encoder = nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False)
    tokens = torch.randn(4, 32, 128)
    cell = nn.GRUCell(16, 32)
    seq = torch.randn(200, 1, 16)

    def gru_loss() -> torch.Tensor:
        h = torch.zeros(1, 32)
        for t in range(seq.shape[0]):
            h = cell(seq[t], h)
        return h.pow(2).sum()

    def transformer_loss() -> torch.Tensor:
        loss: torch.Tensor = encoder(tokens).pow(2).mean()
        return loss

    table = {"grucell-200": (gru_loss, cell), "transformer-6": (transformer_loss, encoder)}

    def bare(loss_fn: Any, model: nn.Module) -> float:
        model.zero_grad(set_to_none=True)
        gc.collect()
        t = clock()
        loss_fn().backward()
        return clock() - t

    def recorded(loss_fn: Any, model: nn.Module) -> tuple[float, float, int]:
        model.zero_grad(set_to_none=True)
        gc.collect()
        t = clock()
        with gradtrace.record() as rec:
            loss_fn().backward()
        t1 = clock()
        doc = rec.document()
        t2 = clock()
        nodes = len(doc.graph.nodes)  # read after the clock stops (NOTE [a document built on first use])
        del doc, rec
        return t2 - t, t2 - t1, nodes

    for name in cases:
        loss_fn, model = table[name]
        for _ in range(2):  # warm-up: allocator, first-use costs
            bare(loss_fn, model)
            recorded(loss_fn, model)
        t_bare: list[float] = []
        t_rec: list[float] = []
        t_doc: list[float] = []
        nodes = 0
        for _ in range(reps):
            t_bare.append(bare(loss_fn, model))
            whole, part, nodes = recorded(loss_fn, model)
            t_rec.append(whole)
            t_doc.append(part)
        out["cases"][name] = {"bare": t_bare, "record": t_rec, "document": t_doc, "nodes": nodes,
                              "median_ratio": statistics.median(t_rec) / statistics.median(t_bare)}
    return out


# ----------------------------------------------------------------------------- the driver

def run_probe(python: Path, *, cache: Path, reps: int, cases: list[str], path: str | None = None,
              cwd: Path) -> tuple[dict[str, Any], list[str], float]:
    """Run the probe under ``python``; returns (its result, its stderr lines, wall seconds)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADTRACE_") and k != "CXX"}
    env["XDG_CACHE_HOME"] = str(cache)
    if path is not None:
        env["PATH"] = path
    cmd = [str(python), str(HERE), "--probe", "--reps", str(reps), *[a for c in cases for a in ("--case", c)]]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False, timeout=1800)
    wall = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(PROBE_TAG)]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"probe under {python} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(lines[-1][len(PROBE_TAG):]), proc.stderr.splitlines(), wall


def pip(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(venv / "bin" / "python"), "-m", "pip", *args], capture_output=True, text=True,
                          check=False, timeout=1800)


def check_plan(venv: Path, report: Path) -> list[tuple[str, str, str]]:
    """What ``pip install`` would install, from a dry run; stops when it would fetch a CUDA torch."""
    proc = pip(venv, "install", "--dry-run", "--quiet", "--report", str(report), str(ROOT))
    if proc.returncode != 0:
        raise SystemExit(f"pip's dry run failed:\n{proc.stderr[-4000:]}")
    plan = [(i["metadata"]["name"], i["metadata"]["version"], i["download_info"]["url"])
            for i in json.loads(report.read_text())["install"]]
    torch = [p for p in plan if p[0].lower() == "torch"]
    cuda = [p for p in plan if p[0].lower().startswith(CUDA_PACKAGES)]
    if not torch or not torch[0][2].startswith("file://") or cuda:
        print("pip would not take torch from this machine's disk (or would fetch CUDA packages): stopping.")
        for name, version, url in plan:
            print(f"  {name} {version} {url}")
        raise SystemExit(2)
    return plan


def short(path: str | None, tmp: Path) -> str:
    if path is None:
        return "-"
    return path.replace(str(tmp), "$TMP").replace(str(ROOT), "$REPO").replace(str(Path.home()), "~")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--case", action="append", choices=["grucell-200", "transformer-6"])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="3 repetitions")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (and say where)")
    args = ap.parse_args()
    reps = 3 if args.quick else max(1, min(args.reps, 50))
    cases = args.case or ["grucell-200", "transformer-6"]
    if args.probe:
        print(PROBE_TAG + json.dumps(probe(reps, cases)), flush=True)
        return 0

    from common import Row, fmt_s, print_table

    python = shutil.which("python3.11")
    if python is None:
        raise SystemExit("python3.11 is not on PATH")
    own = ROOT / ".venv" / "bin" / "python"
    if not own.exists():
        raise SystemExit("the repo's .venv is missing: run `make install`")
    tmp = Path(tempfile.mkdtemp(prefix="gradtrace-bench-fresh-"))
    made_build = not (ROOT / "build").exists()  # pip builds in the tree; leave no build/ behind
    try:
        venv = tmp / "venv"
        t0 = time.perf_counter()
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        t_venv = time.perf_counter() - t0
        plan = check_plan(venv, tmp / "report.json")
        t0 = time.perf_counter()
        proc = pip(venv, "install", "--quiet", str(ROOT))
        t_pip = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"pip install failed:\n{proc.stderr[-4000:]}")
        site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig."
                                    "get_paths()['purelib'])"], capture_output=True, text=True,
                                   check=True).stdout.strip())
        shipped = sorted(p.name for p in (site / "gradtrace" / "capture").glob("_native*.so"))
        torch_src = next(url for name, _v, url in plan if name.lower() == "torch")

        fresh_py = venv / "bin" / "python"
        first, first_err, first_wall = run_probe(fresh_py, cache=tmp / "cache", reps=reps, cases=cases, cwd=tmp)
        again, again_err, again_wall = run_probe(fresh_py, cache=tmp / "cache", reps=1, cases=[], cwd=tmp)
        base, base_err, base_wall = run_probe(own, cache=tmp / "cache-own", reps=reps, cases=cases, cwd=tmp)
        nobin = tmp / "nobin"
        nobin.mkdir()
        nocc, nocc_err, nocc_wall = run_probe(fresh_py, cache=tmp / "cache-nocc", reps=reps, cases=cases,
                                              path=str(nobin), cwd=tmp)

        print("\n### A fresh venv and a plain `pip install .`\n")
        print("| step | time | note |")
        print("| --- | --- | --- |")
        print(f"| `python3.11 -m venv` | {t_venv:.1f} s | |")
        print(f"| `pip install <repo>` | {t_pip:.1f} s | {len(plan)} packages; torch "
              f"{next(v for n, v, _u in plan if n.lower() == 'torch')} from {short(torch_src, tmp)} |")
        print(f"| core in the installed package | - | {', '.join(shipped) or 'none (source only, as designed)'} |")

        print("\n### First use of the capture core (each process with its own empty XDG_CACHE_HOME)\n")
        print("| process | `import torch` | `from gradtrace.capture import native` | core | loaded from | "
              "whole process | stderr lines from gradtrace |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for label, res, err, wall in (("fresh venv, first use", first, first_err, first_wall),
                                      ("fresh venv, cache from the first use", again, again_err, again_wall),
                                      ("repo .venv (make)", base, base_err, base_wall),
                                      ("fresh venv, no compiler on PATH", nocc, nocc_err, nocc_wall)):
            said = [ln for ln in err if ln.startswith(MESSAGE_TAG)]
            print(f"| {label} | {fmt_s(res['import_torch_s'])} | {fmt_s(res['import_native_s'])} | "
                  f"{'C++' if res['core'] else 'Python (fallback)'} | {short(res['core_file'], tmp)} | "
                  f"{wall:.1f} s | {len(said)} |")
        print(f"\nthe first build took {first['import_native_s'] - again['import_native_s']:.1f} s "
              "(first-use import minus the cached import)")

        rows = []
        for name in cases:
            for label, res in (("repo .venv", base), ("fresh venv", first), ("fresh venv, no compiler", nocc)):
                c = res["cases"][name]
                b = Row(f"{name} bare fwd+bwd ({label})", c["bare"])
                r = Row(f"{name} record + document() ({label}, {c['nodes']} nodes)", c["record"],
                        baseline="bare, same process", baseline_median_s=b.median)
                d = Row(f"{name}   of which rec.document() ({label})", c["document"],
                        baseline="bare, same process", baseline_median_s=b.median)
                rows += [b, r, d]
        print_table(f"In process, one thread, thread CPU time, {reps} repetitions alternating with bare "
                    "(targets: GRU <= 2.5×, transformer <= 2×)", rows)

        print("\n### Without a compiler: what the user sees on stderr (all of it)\n")
        print("```")
        for ln in nocc_err or ["(nothing)"]:
            print(short(ln, tmp))
        print("```")
        said = [ln for ln in nocc_err if ln.startswith(MESSAGE_TAG)]
        print(f"\n{len(said)} gradtrace line(s) in a process that recorded "
              f"{(reps + 2) * len(cases)} times; first use with a compiler printed: "
              f"{' / '.join(short(ln, tmp) for ln in first_err if ln.startswith(MESSAGE_TAG)) or 'nothing'}")
    finally:
        if made_build:
            shutil.rmtree(ROOT / "build", ignore_errors=True)
        if args.keep:
            print(f"\n(kept {tmp})")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
