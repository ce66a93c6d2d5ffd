"""The real service on PostgreSQL (``GRADTRACE_DATABASE_URL``), on a cluster of its own: it
migrates on start, reports the database in ``/readyz``, its links survive a restart, and a
database outage is a 503 with ``Retry-After`` (never a 500) that heals when the database is
back."""

from __future__ import annotations

import pytest

from api.helpers import assert_error
from conftest import running_server
from storage.conftest import new_pg_database, pg_cluster
from storage.sample_docs import chain_document

pytestmark = pytest.mark.postgres


def test_the_service_on_postgresql_keeps_links_across_restarts_and_survives_an_outage() -> None:
    with pg_cluster() as cluster:
        env = {"GRADTRACE_DATABASE_URL": new_pg_database(cluster.url)}
        with running_server(env) as first, first.client() as c:
            assert c.get("/readyz").json()["checks"]["database"]["ok"]
            share = c.post("/api/shares", json=chain_document(6)).json()
            stored = c.get(f"/api/shares/{share['id']}").content
            data_dir = first.data_dir
        assert not (data_dir / "gradtrace.db").exists(), "nothing went to SQLite"
        with running_server(env) as second, second.client() as c:  # a fresh data dir: only PostgreSQL
            assert c.get(f"/api/shares/{share['id']}").content == stored
            assert c.post("/api/shares", json=chain_document(6)).status_code == 200  # same link, no new row

            cluster.stop()
            assert_error(c.get(f"/api/shares/{share['id']}"), 503, "storage_unavailable")
            assert_error(c.post("/api/shares", json=chain_document(4)), 503, "storage_unavailable")
            ready = c.get("/readyz")
            assert ready.status_code == 503
            assert ready.json()["error"]["detail"]["checks"]["database"]["ok"] is False
            assert c.get("/healthz").status_code == 200, "liveness does not depend on the database"
            cluster.start()
            assert c.get(f"/api/shares/{share['id']}").content == stored
            assert c.get("/readyz").status_code == 200
