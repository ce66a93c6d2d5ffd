"""The store against real SQLite and PostgreSQL databases (each test runs on both)."""

from __future__ import annotations

import gzip
import json
import threading
import time

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import select, update

from gradtrace.errors import StorageUnavailable
from gradtrace.schema import SCHEMA_VERSION, RunDocument, canonical_json, content_hash, document_id
from gradtrace.storage.codec import encode, load
from gradtrace.storage.store import SHARE_ID_MIN, Store
from gradtrace.storage.tables import metadata, runs, shares
from storage.sample_docs import chain_document, variant


def test_same_document_gets_the_same_share_id_and_one_row(store: Store) -> None:
    doc = encode(chain_document(5))
    first = store.create_share(doc.blob)
    again = store.create_share(encode(chain_document(5)).blob)
    assert first.created and first.delete_token
    assert not again.created and again.delete_token is None
    assert again.id == first.id == doc.content_hash[:SHARE_ID_MIN]
    assert store.count_shares() == 1


def test_share_id_is_the_content_hash_of_the_canonical_document(store: Store) -> None:
    raw = chain_document(3)
    result = store.create_share(encode(raw).blob)
    stored = load(store.get_share(result.id))  # type: ignore[arg-type]
    assert content_hash(stored).startswith(result.id)
    expected = RunDocument.model_validate(raw).model_dump(mode="json", by_alias=True)
    expected["id"] = document_id(expected)  # the id is recomputed from the full document
    assert stored == expected


def test_spelling_out_defaults_does_not_change_the_share_id(store: Store) -> None:
    terse = chain_document(2)
    verbose = RunDocument.model_validate(terse).model_dump(mode="json", by_alias=True)
    verbose["id"] = "a-stale-id-that-the-server-recomputes"
    assert store.create_share(encode(terse).blob).id == store.create_share(encode(verbose).blob).id


def test_a_taken_prefix_makes_the_share_id_one_character_longer(store: Store) -> None:
    doc = encode(chain_document(4))
    squatter = encode(variant(chain_document(4), "another document"))
    taken = doc.content_hash[:SHARE_ID_MIN]
    with store.engine.begin() as conn:  # a different document already holds the 8-char prefix
        conn.execute(shares.insert().values(
            id=taken, content_hash=squatter.content_hash, schema_version=1, body=squatter.blob.gz,
            size=len(squatter.raw), created_at=time.time()))
    result = store.create_share(doc.blob)
    assert result.id == doc.content_hash[:SHARE_ID_MIN + 1]
    assert store.create_share(doc.blob).id == result.id
    assert load(store.get_share(taken))["stdout"] == "another document"  # type: ignore[arg-type]


def test_concurrent_identical_shares_give_one_row_and_one_id(store: Store) -> None:
    doc = encode(chain_document(50))
    n = 12
    barrier = threading.Barrier(n)
    ids: list[str] = []
    created: list[bool] = []
    errors: list[BaseException] = []

    def share() -> None:
        try:
            barrier.wait(timeout=10)
            r = store.create_share(doc.blob)
            ids.append(r.id)
            created.append(r.created)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=share) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert len(set(ids)) == 1 and len(ids) == n
    assert created.count(True) == 1
    assert store.count_shares() == 1


def test_documents_are_stored_gzip_compressed_with_their_schema_version(store: Store) -> None:
    doc = encode(chain_document(30))
    result = store.create_share(doc.blob)
    with store.engine.connect() as conn:
        row = conn.execute(select(shares.c.body, shares.c.schema_version, shares.c.size)
                           .where(shares.c.id == result.id)).one()
    body = bytes(row.body)
    assert body[:2] == b"\x1f\x8b"  # gzip magic
    assert gzip.decompress(body) == doc.raw == canonical_json(json.loads(doc.raw))
    assert row.schema_version == SCHEMA_VERSION
    assert row.size == len(doc.raw) and len(body) < len(doc.raw) / 3


def test_a_stored_run_is_kept_by_id_and_refreshed_when_stored_again(store: Store) -> None:
    doc = encode(chain_document(3))
    store.put_run(doc, now=time.time() - 10 * 86400)
    assert store.get_run(doc.doc_id, max_age_s=86400) is None
    assert store.get_run(doc.doc_id) is not None
    store.put_run(doc)  # same run again: one row, retention clock restarted
    assert store.get_run(doc.doc_id, max_age_s=86400) is not None
    with store.engine.connect() as conn:
        assert len(conn.execute(select(runs.c.id)).all()) == 1
    assert load(store.get_run(doc.doc_id))["id"] == doc.doc_id  # type: ignore[arg-type]


def test_purging_forgets_old_runs_but_never_shares(store: Store) -> None:
    old, new = encode(chain_document(2)), encode(chain_document(3))
    store.put_run(old, now=time.time() - 40 * 86400)
    store.put_run(new)
    share = store.create_share(old.blob)
    assert store.purge_runs(older_than_s=30 * 86400) == 1
    assert store.get_run(old.doc_id) is None and store.get_run(new.doc_id) is not None
    assert store.get_share(share.id) is not None


def test_a_share_is_deleted_only_with_its_token(store: Store) -> None:
    result = store.create_share(encode(chain_document(2)).blob)
    assert result.delete_token
    assert store.delete_share(result.id, "not-the-token") is False
    assert store.get_share(result.id) is not None
    assert store.delete_share(result.id, result.delete_token) is True
    assert store.get_share(result.id) is None
    assert store.delete_share(result.id, result.delete_token) is None


def test_shares_without_a_token_cannot_be_deleted(store: Store) -> None:
    result = store.create_share(encode(chain_document(2)).blob)
    with store.engine.begin() as conn:
        conn.execute(update(shares).values(delete_token_hash=None))
    assert store.delete_share(result.id, result.delete_token or "") is False


def test_migrations_are_idempotent_and_match_the_table_definitions(store: Store) -> None:
    store.migrate()  # a second start finds nothing to do
    with store.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    assert diff == []


def test_an_unreachable_database_is_storage_unavailable_not_a_crash() -> None:
    from conftest import free_port

    dead = Store(f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/nothing?connect_timeout=2")
    try:
        with pytest.raises(StorageUnavailable) as info:
            dead.ping()
        assert info.value.status_code == 503 and info.value.retry_after > 0
        with pytest.raises(StorageUnavailable):
            dead.get_share("abcdefgh")
    finally:
        dead.close()


def test_sqlite_runs_in_wal_mode_with_full_sync(tmp_path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'nested' / 'dir' / 'g.db'}")
    try:
        store.migrate()  # creates the directory
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar_one() == "wal"
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar_one() == 2  # FULL
    finally:
        store.close()


def test_the_migrate_command_upgrades_a_database_by_hand(tmp_path) -> None:
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'by-hand.db'}"
    r = subprocess.run([sys.executable, "-m", "gradtrace.storage.migrate", url], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "database at revision 0002"


def test_runs_commit_without_waiting_for_the_disk_and_shares_with(store: Store) -> None:
    """NOTE [runs are not fsynced]: run commits skip the fsync, shares keep it (both backends)."""
    from sqlalchemy import event, text

    settings: list[tuple[str, str]] = []
    engines = {store.engine, store._runs_engine}
    sql = ("PRAGMA synchronous" if store.engine.dialect.name == "sqlite" else "SHOW synchronous_commit")

    def spy(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if statement.lstrip().upper().startswith("INSERT"):
            table = "runs" if "INTO runs" in statement else "shares"
            settings.append((table, str(cursor.connection.execute(sql).fetchone()[0])))

    for engine in engines:
        event.listen(engine, "before_cursor_execute", spy)
    try:
        doc = encode(chain_document(3))
        store.put_run(doc)
        store.create_share(doc.blob)
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", spy)
    fast, durable = ("1", "2") if store.engine.dialect.name == "sqlite" else ("off", "on")
    assert settings == [("runs", fast), ("shares", durable)]
    assert store.get_run(doc.doc_id) is not None  # and the run is there for everyone to read
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM runs")).scalar_one() == 1


def test_a_run_written_behind_is_readable_at_once_and_in_the_database_after_close(store: Store) -> None:
    """NOTE [runs written behind]: ``get_run`` answers from memory until the writer thread has
    stored the run, and ``close`` writes whatever is still waiting."""
    docs = [encode(chain_document(n)) for n in range(2, 8)]
    for doc in docs:
        assert store.put_run_behind(doc)
        blob = store.get_run(doc.doc_id)
        assert blob is not None and gzip.decompress(blob.gz) == doc.raw
    store.close()
    with store.engine.connect() as conn:
        stored = {row[0] for row in conn.execute(select(runs.c.id))}
    assert stored == {doc.doc_id for doc in docs}
    assert not store.put_run_behind(docs[0])  # closed: the caller stores it itself


def test_runs_written_behind_refuse_when_too_many_wait(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import gradtrace.storage.behind as behind_module

    monkeypatch.setattr(behind_module, "RUNS_BEHIND_MAX", 0)
    doc = encode(chain_document(3))
    assert not store.put_run_behind(doc)
    assert store.get_run(doc.doc_id) is None
