"""The browser page, shipped inside the Python package as ``gradtrace.frontend``.

``templates/`` holds the Jinja2 pages, ``static/`` the hand-written CSS, ``src/`` the ES
modules (layout → render → animate), and ``dist/`` the esbuild bundle that ``make`` builds
from ``src/`` and the npm lockfile. ``dist/`` is never committed.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent
TEMPLATES = ROOT / "templates"
STATIC = ROOT / "static"
DIST = ROOT / "dist"
