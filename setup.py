"""Build steps setuptools cannot declare in pyproject.toml: the page and widget bundles.

NOTE [what the wheel holds]
    ``python -m build`` from a clean clone makes the sdist, then the wheel from it. The sdist
    step runs the esbuild step (``npm ci`` when ``frontend/node_modules`` is missing, then
    ``npm run build``) so that the sdist carries ``frontend/dist`` and the wheel needs no npm;
    a wheel built straight from a checkout does the same in ``build_py``. The user's machine
    never runs npm or make. The wheel is pure Python (``py3-none-any``): the C++ capture core
    ships as source and is compiled against the installed torch on first use
    (NOTE [building the core] in ``backend/gradtrace/capture/build_native.py``).
    Editable installs (``make install``) skip this: ``make frontend`` builds the bundle there.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

FRONTEND = Path(__file__).resolve().parent / "frontend"
BUNDLES = ("app.js", "layout-worker.js", "widget.js", "standalone.js", "viewer.css", "standalone-csp.txt")


def build_frontend() -> None:
    """Run the esbuild step unless every bundle is there and newer than the sources."""
    dist = FRONTEND / "dist"
    sources = [*FRONTEND.joinpath("src").rglob("*.js"), FRONTEND / "static" / "app.css", FRONTEND / "build.mjs",
               FRONTEND / "package-lock.json", FRONTEND / "standalone-csp.mjs", FRONTEND / "static" / "standalone.html"]
    newest = max((p.stat().st_mtime for p in sources if p.exists()), default=0.0)
    if all((dist / b).exists() and (dist / b).stat().st_mtime >= newest for b in BUNDLES):
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("building gradtrace needs npm (node 20) once, to bundle the page: "
                         "apt-get install nodejs npm; the wheel it makes needs neither")
    if not (FRONTEND / "node_modules").is_dir():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=FRONTEND, check=True)
    subprocess.run([npm, "run", "--silent", "build"], cwd=FRONTEND, check=True)


class BuildPyWithFrontend(build_py):
    def run(self) -> None:
        if not getattr(self, "editable_mode", False):
            build_frontend()
        super().run()


class SdistWithFrontend(sdist):
    def run(self) -> None:
        build_frontend()
        super().run()


setup(cmdclass={"build_py": BuildPyWithFrontend, "sdist": SdistWithFrontend})
