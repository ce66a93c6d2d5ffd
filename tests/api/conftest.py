"""Fixtures of the API tests: an httpx client on the shared live server."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from conftest import Server, running_server

TUNED_ENV = {"GRADTRACE_LOG_LEVEL": "info", "GRADTRACE_CORS_ORIGINS": '["http://notebook.example"]',
             "GRADTRACE_MAX_NODES": "50", "GRADTRACE_HEALTH_DETAILS": "true"}


@pytest.fixture(scope="session")
def tuned_server() -> Iterator[Server]:
    """A second server for the tests that need other settings: ``TUNED_ENV``."""
    with running_server(TUNED_ENV) as srv:
        yield srv


@pytest.fixture()
def api(live_server: Server) -> Iterator[httpx.Client]:
    with live_server.client() as client:
        yield client
