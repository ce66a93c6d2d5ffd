"""Fixtures of the API tests: an httpx client on the shared live server."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from conftest import Server, running_server

# NOTE [server log leak]: tests/conftest.py's launch_server opens the server log without closing
# it; the ResourceWarning surfaces (as an unraisable-exception warning) in the test that started
# the server. Only that one warning is ignored here, until the launcher closes the file
# (the same workaround as tests/browser/conftest.py).
LOG_LEAK = r"ignore:Exception ignored in. <_io\.(FileIO|BufferedWriter) name='[^']*server\.log'"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.filterwarnings(LOG_LEAK + ":pytest.PytestUnraisableExceptionWarning"))
            item.add_marker(pytest.mark.filterwarnings(
                r"ignore:unclosed file <_io\.BufferedWriter name='[^']*server\.log'>:ResourceWarning"))


@pytest.fixture(autouse=True)
def _collect_leaked_server_logs() -> Iterator[None]:
    """Collect garbage after each API test, so a leaked log file (NOTE [server log leak]) is
    reported here, under the filter above, and not in some unrelated later test."""
    yield
    gc.collect()


TUNED_ENV = {"GRADTRACE_LOG_LEVEL": "info", "GRADTRACE_CORS_ORIGINS": '["http://notebook.example"]',
             "GRADTRACE_MAX_NODES": "50"}


@pytest.fixture(scope="session")
def tuned_server() -> Iterator[Server]:
    """A second server for the tests that need other settings: ``TUNED_ENV``."""
    with running_server(TUNED_ENV) as srv:
        yield srv


@pytest.fixture()
def api(live_server: Server) -> Iterator[httpx.Client]:
    with live_server.client() as client:
        yield client
