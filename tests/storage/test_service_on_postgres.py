"""The real service on PostgreSQL (``GRADTRACE_DATABASE_URL``): it migrates on start, reports
the database in ``/readyz``, and its links survive a restart."""

from __future__ import annotations

import gc

import pytest

from conftest import running_server
from storage.conftest import new_pg_database
from storage.sample_docs import chain_document

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.filterwarnings(  # NOTE [server log leak] in tests/api/conftest.py
        r"ignore:Exception ignored in. <_io\.(FileIO|BufferedWriter) name='[^']*server\.log'"
        ":pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings(r"ignore:unclosed file <_io\.BufferedWriter name='[^']*server\.log'>"
                               ":ResourceWarning"),
]


def test_the_service_runs_on_postgresql_and_keeps_links_across_restarts(pg_server: str) -> None:
    env = {"GRADTRACE_DATABASE_URL": new_pg_database(pg_server)}
    with running_server(env) as first, first.client() as c:
        ready = c.get("/readyz").json()
        assert ready["checks"]["database"]["ok"]
        share = c.post("/api/shares", json=chain_document(6)).json()
        stored = c.get(f"/api/shares/{share['id']}").content
        data_dir = first.data_dir
    with running_server(env) as second, second.client() as c:
        assert c.get(f"/api/shares/{share['id']}").content == stored
        assert c.post("/api/shares", json=chain_document(6)).status_code == 200  # same link, no new row
    assert not (data_dir / "gradtrace.db").exists(), "nothing went to SQLite"
    gc.collect()
