"""The built front-end files the notebook needs, from ``gradtrace.frontend.DIST``.

A wheel always holds them (``python -m build`` runs the esbuild step, see ``setup.py``); a
checkout has them after ``make frontend``. A missing file is a clear error, never a blank cell.
"""

from __future__ import annotations

import functools
from pathlib import Path

from gradtrace.errors import GradtraceError
from gradtrace.frontend import DIST


class AssetsMissing(GradtraceError):
    """The front-end bundle was not built in this checkout."""


def asset(name: str) -> Path:
    path: Path = DIST / name
    if not path.is_file():
        raise AssetsMissing(f"gradtrace's front-end bundle is missing ({path}): in a checkout, run "
                            "`make frontend` (npm ci && npm run build in frontend/); a wheel always has it")
    return path


@functools.cache
def asset_text(name: str) -> str:
    return asset(name).read_text(encoding="utf-8")
