"""The wheel, as a user gets it: built by ``python -m build`` from a clean clone, installed into
a fresh venv (no system site-packages, no make, no npm), then record and show.

It takes about a minute on two cores (the venv's torch install and the core's first-use compile
dominate); ``bench/bench_notebook.py`` times the same path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = """
import sys, torch, gradtrace
from gradtrace.capture import native
with gradtrace.record() as rec:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
w = gradtrace.show(rec)
grad = [n["grad"]["values"] for n in w.document["graph"]["nodes"] if n.get("name") == "x"][0]
print("RESULT", native.available(), type(w).__name__, grad, gradtrace.__file__)
"""

pytestmark = pytest.mark.timeout(900)


def _run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]


def test_wheel_from_a_clean_clone_installs_records_and_shows(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    assert _run(["git", "clone", "-q", str(ROOT), str(clone)]).returncode == 0
    assert not (clone / "frontend" / "dist").exists() and not (clone / "frontend" / "node_modules").exists()
    built = _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path / "wheels"), str(clone)])
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = (tmp_path / "wheels").glob("gradtrace-*-py3-none-any.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for part in ("gradtrace/frontend/dist/app.js", "gradtrace/frontend/dist/widget.js",
                 "gradtrace/frontend/dist/standalone.js", "gradtrace/capture/_native.cpp",
                 "gradtrace/capture/cxx/recorder.h", "gradtrace/notebook/widget.py"):
        assert part in names, f"{part} is missing from the wheel"
    assert not [n for n in names if n.endswith(".so")], "the wheel is pure Python: the core is built on first use"

    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)]).returncode == 0
    py = venv / "bin" / "python"
    installed = _run([str(py), "-m", "pip", "install", "-q", f"{wheel}[notebook]"])
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert shutil.which("make", path=str(venv / "bin")) is None

    env = {**os.environ, "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("PYTHONPATH", None)
    first = _run([str(py), "-c", CHECK], env=env, cwd=tmp_path, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "compiling the C++ capture core" in first.stderr
    result = first.stdout.split("RESULT", 1)[1].split()
    assert result[:4] == ["True", "GradtraceWidget", "[2.0,", "4.0]"] and str(venv) in result[4]

    # Without a compiler the pure-Python kernels run, and say so once.
    no_cxx = {**env, "CXX": "/nonexistent/g++", "XDG_CACHE_HOME": str(tmp_path / "cache-no-cxx")}
    fallback = _run([str(py), "-c", CHECK], env=no_cxx, cwd=tmp_path, timeout=300)
    assert fallback.returncode == 0, fallback.stderr[-3000:]
    assert fallback.stdout.split("RESULT", 1)[1].split()[:2] == ["False", "GradtraceWidget"]
    assert fallback.stderr.count("could not be built") == 1, fallback.stderr
    assert "no C++ compiler" in fallback.stderr and "compiling" not in fallback.stderr

    # A compile that fails is tried once, not again by every later process.
    broken = {**env, "CXX": "/bin/false", "XDG_CACHE_HOME": str(tmp_path / "cache-broken")}
    tries = [_run([str(py), "-c", CHECK], env=broken, cwd=tmp_path, timeout=300) for _ in range(2)]
    for t in tries:
        assert t.returncode == 0 and t.stdout.split("RESULT", 1)[1].split()[0] == "False", t.stderr[-3000:]
    assert "compiling the C++ capture core" in tries[0].stderr and "earlier attempt" not in tries[0].stderr
    assert "compiling the C++ capture core" not in tries[1].stderr and "earlier attempt" in tries[1].stderr
