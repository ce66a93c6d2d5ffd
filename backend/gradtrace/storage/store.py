"""The store: runs and shares behind one small class, for SQLite and PostgreSQL alike.

Everything is synchronous SQLAlchemy Core; the API calls it from its thread pool. Every
database failure leaves here as :class:`gradtrace.errors.StorageUnavailable` (a 503), never as
a raw driver exception.

NOTE [share ids]
    A share's id is the shortest prefix of at least ``SHARE_ID_MIN`` hex characters of the
    SHA-256 of its canonical JSON that no *other* document holds. Creation is one
    ``INSERT … ON CONFLICT DO NOTHING`` per candidate length, each in its own short
    transaction, followed by a look-up by full hash: the unique constraint on ``content_hash``
    makes concurrent identical shares collapse into one row (whoever loses the race reads the
    winner's id), and a primary-key clash with a different document moves on to a longer
    prefix. No lock is held across statements, so this is the same on SQLite and PostgreSQL.

NOTE [runs are not fsynced]
    Every ``POST /api/runs`` stores its run before answering (so it can be shared by id at
    once), and waiting for the disk was the largest part of the web process's share of a
    trivial run (1-8 ms, more when the disk is busy). A run is kept for a while, a share
    forever; so a run's commit does not wait for the disk: on SQLite it goes through an
    engine with ``synchronous=NORMAL`` (NOTE [sqlite durability] in ``engine.py``), on
    PostgreSQL its transaction sets ``synchronous_commit`` off. Both stay atomic and survive a
    killed server; a power cut may lose the last runs (sharing one by ``run_id`` then answers
    404, saying to share the document itself). Shares and everything else commit durably.

NOTE [runs written behind]
    ``put_run_behind`` hands the run to one writer thread and returns: the answer to
    ``POST /api/runs`` does not wait for the insert (a thread hand-over and a commit, 1-4 ms
    of a trivial run's ~19, 10 ms in the tail). Until it is written the run stays in memory,
    and ``get_run`` answers from there, so a run can be read or shared by id the moment its
    answer leaves. ``close`` writes what is left before the engines go. The queue is bounded:
    past ``RUNS_BEHIND_MAX`` waiting runs, ``put_run_behind`` refuses and the caller stores the
    run itself (the database is slower than the runs; waiting for it is then right).
"""

from __future__ import annotations

import hashlib
import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, delete, func, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError

from gradtrace.errors import StorageUnavailable
from gradtrace.storage import migrate
from gradtrace.storage.codec import EncodedDocument, StoredBlob
from gradtrace.storage.engine import ensure_directory, is_shared_file, make_engine
from gradtrace.storage.tables import runs, shares

SHARE_ID_MIN = 8
RUNS_BEHIND_MAX = 256
"""Runs waiting for the writer thread at most (NOTE [runs written behind])."""
log = logging.getLogger("gradtrace.storage")
RETRY_AFTER_S = 2.0
T = TypeVar("T")


@dataclass(frozen=True)
class ShareResult:
    """The outcome of creating a share: its id, and a delete token if this call created it."""

    id: str
    created: bool
    delete_token: str | None = None


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Store:
    """Runs and shares in one database (``url`` is any SQLAlchemy URL)."""

    def __init__(self, url: str) -> None:
        self.engine: Engine = make_engine(url)
        self._postgres = self.engine.dialect.name == "postgresql"
        # NOTE [runs are not fsynced]
        self._runs_engine: Engine = (make_engine(url, durable=False)
                                     if self.engine.dialect.name == "sqlite" and is_shared_file(self.engine)
                                     else self.engine)
        self._insert: Callable[[Any], Any] = (
            postgresql.insert if self.engine.dialect.name == "postgresql" else sqlite.insert)
        # NOTE [runs written behind]
        self._queue: queue.SimpleQueue[EncodedDocument | None] = queue.SimpleQueue()
        self._behind: dict[str, EncodedDocument] = {}
        self._behind_lock = threading.Lock()
        self._writer: threading.Thread | None = None
        self._writer_closed = False

    # --- life cycle -------------------------------------------------------------------------

    def migrate(self) -> None:
        """Apply every pending migration (run at service start)."""
        ensure_directory(self.engine)
        self._guard(lambda: migrate.upgrade(self.engine))

    def ping(self) -> None:
        """Raise StorageUnavailable unless the database answers a trivial query."""
        def go() -> None:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        self._guard(go)

    def close(self) -> None:
        self._stop_writer()
        self.engine.dispose()
        if self._runs_engine is not self.engine:
            self._runs_engine.dispose()

    # --- runs --------------------------------------------------------------------------------

    def put_run(self, doc: EncodedDocument, *, now: float | None = None) -> None:
        """Store a run by its id; storing the same run again refreshes its retention clock."""
        stamp = time.time() if now is None else now
        values = {"id": doc.doc_id, "schema_version": doc.blob.schema_version, "status": doc.status,
                  "content_hash": doc.content_hash, "body": doc.blob.gz, "size": doc.blob.size,
                  "created_at": stamp}
        stmt = self._insert(runs).values(**values)
        stmt = stmt.on_conflict_do_update(index_elements=[runs.c.id],
                                          set_={"created_at": stamp})
        with self._begin(self._runs_engine) as conn:  # NOTE [runs are not fsynced]
            if self._postgres:
                conn.execute(text("SET LOCAL synchronous_commit TO OFF"))
            conn.execute(stmt)

    def put_run_behind(self, doc: EncodedDocument) -> bool:
        """Store a run from the writer thread (NOTE [runs written behind]); False, storing
        nothing, when too many runs are waiting already."""
        with self._behind_lock:
            if len(self._behind) >= RUNS_BEHIND_MAX or self._writer_closed:
                return False
            self._behind[doc.doc_id] = doc
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_behind, name="gradtrace-runs",
                                                daemon=True)
                self._writer.start()
        self._queue.put(doc)
        return True

    def _write_behind(self) -> None:
        while True:
            doc = self._queue.get()
            if doc is None:
                return
            try:
                self.put_run(doc)
            except Exception as exc:  # the run was answered; only sharing it by id is lost
                log.warning("a run could not be stored: %s", exc)
            finally:
                with self._behind_lock:
                    if self._behind.get(doc.doc_id) is doc:
                        del self._behind[doc.doc_id]

    def _stop_writer(self) -> None:
        with self._behind_lock:
            self._writer_closed = True
            writer = self._writer
        if writer is not None:
            self._queue.put(None)
            writer.join(timeout=30.0)

    def get_run(self, run_id: str, *, max_age_s: float | None = None) -> StoredBlob | None:
        """A stored run, or None if unknown or older than ``max_age_s``."""
        with self._behind_lock:
            waiting = self._behind.get(run_id)
        if waiting is not None:  # NOTE [runs written behind]: just answered, not written yet
            return waiting.blob
        query = (select(runs.c.schema_version, runs.c.body, runs.c.size, runs.c.content_hash)
                 .where(runs.c.id == run_id))
        if max_age_s is not None:
            query = query.where(runs.c.created_at >= time.time() - max_age_s)
        with self._connect() as conn:
            row = conn.execute(query).first()
        return None if row is None else StoredBlob(int(row[0]), bytes(row[1]), int(row[2]), str(row[3]))

    def purge_runs(self, *, older_than_s: float) -> int:
        """Delete runs older than the retention window; answers how many went."""
        cutoff = time.time() - older_than_s
        with self._begin() as conn:
            gone = conn.execute(delete(runs).where(runs.c.created_at < cutoff).returning(runs.c.id))
            return len(gone.all())

    # --- shares ------------------------------------------------------------------------------

    def create_share(self, doc: StoredBlob) -> ShareResult:
        """Store ``doc`` as a share (see NOTE [share ids]); idempotent per document."""
        full = doc.content_hash
        if full is None or len(full) != 64:
            raise ValueError("a share needs the SHA-256 of its canonical JSON")
        existing = self._share_id_by_hash(full)
        if existing is not None:
            return ShareResult(existing, created=False)
        token = secrets.token_urlsafe(24)
        for length in range(SHARE_ID_MIN, len(full) + 1):
            candidate = full[:length]
            stmt = self._insert(shares).values(
                id=candidate, content_hash=full, schema_version=doc.schema_version, body=doc.gz,
                size=doc.size, created_at=time.time(), delete_token_hash=_token_hash(token),
            ).on_conflict_do_nothing().returning(shares.c.id)
            with self._begin() as conn:
                inserted = conn.execute(stmt).first() is not None
            if inserted:
                return ShareResult(candidate, created=True, delete_token=token)
            winner = self._share_id_by_hash(full)
            if winner is not None:  # an identical share was created concurrently
                return ShareResult(winner, created=False)
        raise StorageUnavailable("could not allocate a share id: every prefix of the hash is taken")

    def get_share(self, share_id: str) -> StoredBlob | None:
        query = (select(shares.c.schema_version, shares.c.body, shares.c.size, shares.c.content_hash)
                 .where(shares.c.id == share_id))
        with self._connect() as conn:
            row = conn.execute(query).first()
        return None if row is None else StoredBlob(int(row[0]), bytes(row[1]), int(row[2]), str(row[3]))

    def delete_share(self, share_id: str, token: str) -> bool | None:
        """Delete a share given its delete token: True done, False wrong token, None unknown id."""
        with self._begin() as conn:
            row = conn.execute(select(shares.c.delete_token_hash)
                               .where(shares.c.id == share_id)).first()
            if row is None:
                return None
            if row[0] is None or not secrets.compare_digest(str(row[0]), _token_hash(token)):
                return False
            conn.execute(delete(shares).where(shares.c.id == share_id))
            return True

    def count_shares(self) -> int:
        with self._connect() as conn:
            return int(conn.execute(select(func.count()).select_from(shares)).scalar_one())

    def _share_id_by_hash(self, full: str) -> str | None:
        with self._connect() as conn:
            row = conn.execute(select(shares.c.id).where(shares.c.content_hash == full)).first()
        return None if row is None else str(row[0])

    # --- plumbing ----------------------------------------------------------------------------

    @contextmanager
    def _connect(self) -> Iterator[Connection]:
        try:
            with self.engine.connect() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise _unavailable(exc) from exc

    @contextmanager
    def _begin(self, engine: Engine | None = None) -> Iterator[Connection]:
        try:
            with (engine or self.engine).begin() as conn:
                yield conn
        except SQLAlchemyError as exc:
            raise _unavailable(exc) from exc

    def _guard(self, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except SQLAlchemyError as exc:
            raise _unavailable(exc) from exc


def _unavailable(exc: SQLAlchemyError) -> StorageUnavailable:
    return StorageUnavailable(f"the database is unavailable ({type(exc).__name__}); retry shortly",
                              retry_after=RETRY_AFTER_S)
