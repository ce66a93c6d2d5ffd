"""Fixtures for the playground's browser tests: the built page, and helpers that act as a user.

The shared ``live_server``, ``browser`` and ``page`` fixtures come from ``tests/conftest.py``.
The page needs ``frontend/dist`` (``npm ci && npm run build`` in ``frontend/``; ``make test``
does it). When the bundle is missing but ``node_modules`` exists, it is built once here.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gradtrace.frontend import DIST, ROOT

from pageguard import wait_until


@pytest.fixture(scope="session")
def frontend_bundle() -> Path:
    """``frontend/dist/app.js``, built from the lockfile's packages if it is not there yet."""
    app = DIST / "app.js"
    if not app.exists():
        npm = shutil.which("npm")
        if npm is None or not (ROOT / "node_modules").is_dir():
            pytest.fail("frontend/dist is not built: run `make frontend` "
                        "(npm ci && npm run build in frontend/)")
        subprocess.run([npm, "run", "--silent", "build"], cwd=ROOT, check=True, timeout=300)
    return app


@pytest.fixture()
def playground(page: Any, live_server: Any, frontend_bundle: Path) -> Iterator[Any]:
    """The playground page, open and ready, failing the test on any uncaught page error."""
    page.goto(live_server.url + "/")
    wait_until(page, "window.gradtrace !== undefined")
    yield page
    assert page.page_errors == [], f"uncaught errors in the page: {page.page_errors}"
