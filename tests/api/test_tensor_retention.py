"""A run's tensor file lives as long as its run, a share's copy as long as the share: on the real
service over HTTP, once on SQLite and once on a real PostgreSQL (the fleet's database, where
any replica serves the file)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import func, select

from api.helpers import assert_error
from api.tensor_runs import fresh_run, server_store
from conftest import Server, running_server
from gradtrace.storage.tables import runs, tensor_chunks, tensor_files
from gradtrace.storage.tensor_rows import CHUNK_BYTES
from storage.conftest import new_pg_database, pg_cluster
from storage.tensor_files import make_file, sample_arrays

RETENTION = {"GRADTRACE_RUN_RETENTION_DAYS": "2"}


@contextlib.contextmanager
def _service(backend: str) -> Iterator[Server]:
    if backend == "sqlite":
        with running_server(RETENTION) as srv:
            yield srv
        return
    with pg_cluster() as cluster, running_server(
            {**RETENTION, "GRADTRACE_DATABASE_URL": new_pg_database(cluster.url)}) as srv:
        yield srv


def _stored_rows(srv: Server, owner: str, owner_id: str) -> tuple[int, int]:
    with server_store(srv) as store, store.engine.connect() as conn:
        return tuple(int(conn.execute(select(func.count()).select_from(t).where(
            t.c.owner == owner, t.c.owner_id == owner_id)).scalar_one())
            for t in (tensor_files, tensor_chunks))  # type: ignore[return-value]


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_retention_takes_the_runs_file_and_leaves_the_shares_copy(backend: str) -> None:
    data = make_file(sample_arrays(seed=21, big=CHUNK_BYTES // 2))
    old, kept = fresh_run(), fresh_run()
    with _service(backend) as srv, srv.client() as api:
        with server_store(srv) as store:
            store.put_run(old, data, now=time.time() - 1.5 * 86400)
            store.put_run(kept, data)
        share = api.post("/api/shares", json={"run_id": old.doc_id}).json()
        with server_store(srv) as store, store.engine.begin() as conn:  # the old run ages past the window
            conn.execute(runs.update().where(runs.c.id == old.doc_id).values(created_at=time.time() - 3 * 86400))
        error = assert_error(api.get(f"/api/runs/{old.doc_id}/tensors.safetensors"), 404, "not_found")
        assert "runs are kept 2 days" in error["message"]

        with server_store(srv) as store:  # what the service's hourly purge does
            assert store.purge_runs(older_than_s=2 * 86400) == 1
        assert _stored_rows(srv, "run", old.doc_id) == (0, 0)
        assert _stored_rows(srv, "run", kept.doc_id) == (1, 3)
        assert _stored_rows(srv, "share", share["id"]) == (1, 3)
        assert api.get(f"/api/shares/{share['id']}/tensors.safetensors").content == data
        part = api.get(f"/api/runs/{kept.doc_id}/tensors.safetensors", headers={"Range": "bytes=8-15"})
        assert part.status_code == 206 and part.content == data[8:16]

        token = {"X-Delete-Token": share["delete_token"]}
        assert api.delete(f"/api/shares/{share['id']}", headers=token).status_code == 204
        assert _stored_rows(srv, "share", share["id"]) == (0, 0)
