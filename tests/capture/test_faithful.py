"""Recording never changes the program: each tutorial-style program of faithful_programs.py runs
bare and under ``gradtrace.record()`` (both kernel sets) with the same stdout, stderr
(warnings included), exceptions, tensors and gradients; a subset also through the service's
sandbox, whose output must be the bare run's. Compiled programs (a compiled model,
``model.compile()``, a graph break called twice, a recompile) are among them.

Each mode runs all programs in one fresh process (faithful_runner.py), in the same order:
torch and Python print many warnings once per process, and a process per program would cost
minutes of imports on two cores.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capture.faithful_programs import COMPILED, INDUCTOR, PROGRAMS, SERVICE
from gradtrace.capture.compiled import BACKEND_UNAVAILABLE
from gradtrace.capture.snippet import library_relative

pytestmark = pytest.mark.slow  # four processes, dynamo compiles and the real service: minutes on two cores
HERE = Path(__file__).resolve().parent
NAMES = [*PROGRAMS, *COMPILED]
RUNS = {"bare": ("bare", {}), "plain": ("plain", {}), "core": ("record", {"GRADTRACE_KERNELS": "native"}),
        "python": ("record", {"GRADTRACE_KERNELS": "python"})}
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_KINETO_LOG = re.compile(r"^(USDT|[IWE])(:?)\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? \d+:\d+ ", re.M)
"""The head of a line the profiler's C++ library (Kineto) writes to the process's stderr as a
profile starts and stops: its time and process id, which no two runs share."""


def _process_output(run: dict[str, Any]) -> dict[str, str]:
    return {k: _KINETO_LOG.sub(r"\1\2<time> <pid> ", v) for k, v in run["<process>"].items()}


@pytest.fixture(scope="module")
def runs() -> Iterator[dict[str, dict[str, Any]]]:
    """Every mode's results, by mode then program; the four processes run side by side."""
    with tempfile.TemporaryDirectory(prefix="gradtrace-faithful-") as tmp:
        procs = {}
        for key, (mode, env) in RUNS.items():
            names = [n for n in NAMES if n in SERVICE] if key == "plain" else NAMES
            out = Path(tmp) / f"{key}.json"
            procs[key] = (out, subprocess.Popen(
                [sys.executable, str(HERE / "faithful_runner.py"), mode, str(out), *names],
                env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        results: dict[str, dict[str, Any]] = {}
        for key, (out, proc) in procs.items():
            stdout, stderr = proc.communicate(timeout=1200)
            assert proc.returncode == 0, f"{key} runner failed:\n{stderr[-4000:]}"
            results[key] = json.loads(out.read_text())
            results[key]["<process>"] = {"stdout": stdout, "stderr": stderr}
        yield results


def _close(a: Any, b: Any, where: str = "") -> list[str]:
    """Where ``a`` and ``b`` differ: structure exactly, floats to float32 tolerance."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{where}: keys {sorted(a)} != {sorted(b)}"]
        return [d for k in a for d in _close(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: length {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _close(x, y, f"{where}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        same = (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)
        return [] if same else [f"{where}: {a} != {b}"]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


@pytest.mark.parametrize("kernels", ["core", "python"])
@pytest.mark.parametrize("name", NAMES)
def test_recorded_run_is_the_bare_run(runs: dict[str, dict[str, Any]], name: str, kernels: str) -> None:
    bare, recorded = runs["bare"][name], runs[kernels][name]
    assert recorded["stdout"] == bare["stdout"]
    assert recorded["stderr"] == bare["stderr"]
    assert recorded["raised"] == bare["raised"]
    assert bare["raised"] is None, f"the program itself must run: {bare['raised']}"
    assert _close(bare["tensors"], recorded["tensors"], name) == []
    assert any(k.endswith(".grad") for k in bare["tensors"]), "a program that computes no gradient proves little"
    doc = recorded["document"]
    assert "failed" not in doc, doc
    assert (doc["status"], doc["error"], doc["recorder_errors"]) == ("ok", None, None)


@pytest.mark.parametrize("kernels", ["core", "python"])
def test_nothing_else_reaches_the_process_output(runs: dict[str, dict[str, Any]], kernels: str) -> None:
    """What bypasses ``sys.stdout``/``sys.stderr`` (dynamo's logging handlers) is the same too."""
    assert _process_output(runs[kernels]) == _process_output(runs["bare"])


@pytest.mark.parametrize("kernels", ["core", "python"])
def test_what_the_documents_show(runs: dict[str, dict[str, Any]], kernels: str) -> None:
    """Compiled regions are one CompiledFunctionBackward each (a graph break makes two per
    call; a built-in module compiled with ``.compile()`` runs eagerly, as bare); a Function
    that allows one read of its saved tensors is left unread."""
    docs = {name: runs[kernels][name]["document"] for name in NAMES}
    count = {name: doc["functions"].count("CompiledFunctionBackward") for name, doc in docs.items()}
    assert count["compile_module"] == 1
    assert count["module_compile_method"] == 1 and "TanhBackward0" in docs["module_compile_method"]["functions"]
    assert count["graph_break_called_twice"] == 4
    assert count["recompile_on_shape_change"] == 2
    assert docs["fn_clear_saved_tensors_on_access"]["saved_once"] == ["TwoMatmulsBackward"]
    assert "_MaskedWhereBackward" in docs["masked_tensor_where"]["functions"]


# ---------------------------------------------------------------- through the service
@pytest.fixture(scope="module")
def service(start_server: Any) -> Iterator[Any]:
    """The real service; compiling on a loaded two-core machine needs more than 5 s."""
    with start_server({"GRADTRACE_TIMEOUT_S": "120", "GRADTRACE_CPU_S": "120", "GRADTRACE_WORKERS": "1"}) as srv:
        yield srv


@pytest.mark.parametrize("name", SERVICE)
def test_the_service_prints_what_the_bare_run_prints(runs: dict[str, dict[str, Any]], service: Any,
                                                      name: str) -> None:
    """The sandbox's run of the program prints what it prints bare, warnings included (the
    service names library files relative to their package and hides object addresses)."""
    code = (PROGRAMS | COMPILED)[name]
    with service.client(timeout=300) as c:
        r = c.post("/api/runs", json={"code": code})
    assert r.status_code in (200, 201), r.text
    doc = r.json()
    assert (doc["status"], doc["error"]) == ("ok", None), doc["error"]
    bare = runs["plain"][name]
    assert doc["stdout"] == library_relative(_ADDRESS.sub(" at 0x…", bare["stdout"]))


def test_inductor_in_the_sandbox_says_to_use_aot_eager(service: Any) -> None:
    """The default backend cannot start its compiler in the sandbox: the run says so in words
    and names the backend that works."""
    with service.client(timeout=300) as c:
        doc = c.post("/api/runs", json={"code": INDUCTOR}).json()
    assert doc["status"] == "error"
    assert doc["error"]["line"] == 4
    assert doc["error"]["detail"] == BACKEND_UNAVAILABLE
    assert doc["message"] == BACKEND_UNAVAILABLE
    assert 'backend="aot_eager"' in doc["message"]
