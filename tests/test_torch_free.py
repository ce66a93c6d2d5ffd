"""The web process and the analysis package never import torch.

Every module of ``gradtrace.analysis``, ``api/``, ``storage/``, ``schema/`` and the job kinds,
the HTTP client, both runners and the FastAPI app (built with :func:`create_app`) are imported
in a fresh interpreter, which then lists the torch modules in ``sys.modules``. The same check,
handed one extra module that imports torch, must fail: that is how we know it can.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WEB_PACKAGES = ("gradtrace.analysis", "gradtrace.api", "gradtrace.storage", "gradtrace.schema",
                "gradtrace.sandbox.kinds")
WEB_MODULES = ("gradtrace", "gradtrace.client", "gradtrace.errors", "gradtrace.settings", "gradtrace.api.app",
               "gradtrace.jobs", "gradtrace.runners", "gradtrace.sandbox.pool", "gradtrace.queue.runner")
"""The runners' web side too: the pool and the queue runner, and every job kind's module, live
in the web process (NOTE [adding a job kind] in ``gradtrace/jobs.py``)."""
SKIPPED = ("gradtrace.storage.migrations",)
"""Alembic's ``env.py`` runs a migration when imported; alembic loads it inside ``store.migrate``."""

_PROBE = textwrap.dedent("""
    import importlib, pkgutil, sys
    packages, modules, skipped = sys.argv[1].split(","), sys.argv[2].split(","), tuple(sys.argv[3].split(","))
    names = list(modules)
    for package in packages:
        root = importlib.import_module(package)
        names += [m.name for m in pkgutil.walk_packages(root.__path__, package + ".")
                  if not m.name.startswith(skipped)]
    for name in names:
        importlib.import_module(name)
    from gradtrace.api.app import create_app
    create_app()
    bad = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
    print("imported:", ",".join(names))
    print(len(names), "modules;", "torch modules:", bad[:5])
    sys.exit(1 if bad else 0)
""")


def _probe(packages: tuple[str, ...], modules: tuple[str, ...], path: str = "") -> subprocess.CompletedProcess[str]:
    env_path = [path] if path else []
    code = f"import sys; sys.path[:0] = {env_path!r}\n" + _PROBE
    return subprocess.run(
        [sys.executable, "-c", code, ",".join(packages), ",".join(modules), ",".join(SKIPPED)],
        capture_output=True, text=True, timeout=180, cwd=ROOT)


def test_the_web_process_and_the_analysis_package_never_import_torch() -> None:
    r = _probe(WEB_PACKAGES, WEB_MODULES)
    assert r.returncode == 0, f"torch was imported by the web process: {r.stdout}{r.stderr}"
    assert "torch modules: []" in r.stdout
    imported = set(r.stdout.split("imported: ", 1)[1].split("\n", 1)[0].split(",")) | set(WEB_PACKAGES)
    analysis = ROOT / "backend" / "gradtrace" / "analysis"
    every = {".".join(("gradtrace", *p.relative_to(analysis.parent).with_suffix("").parts)).removesuffix(".__init__")
             for p in analysis.rglob("*.py")}
    assert every <= imported, f"analysis modules the probe never imported: {sorted(every - imported)}"


def test_the_check_fails_on_a_module_that_imports_torch(tmp_path: Path) -> None:
    (tmp_path / "web_module_importing_torch.py").write_text("import torch\n")
    r = _probe(WEB_PACKAGES, (*WEB_MODULES, "web_module_importing_torch"), str(tmp_path))
    assert r.returncode == 1, f"{r.stdout}{r.stderr}"
    assert "torch modules: ['torch'" in r.stdout
