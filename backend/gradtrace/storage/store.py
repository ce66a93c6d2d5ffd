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
    ``put_run_behind`` does not even wait for the insert: NOTE [runs written behind] in
    ``behind.py``.

NOTE [tensor files go with their owner]
    A run's tensor file (``put_run(doc, tensors)``) is written in the run's transaction and
    deleted in the transaction that purges the run; a share made from a run copies the file
    inside the database (``INSERT … SELECT``, the bytes never pass through this process), and
    ``delete_share`` deletes the copy with the share. A run's id is the hash of its document,
    which records the file's SHA-256, so storing a run again never meets a different file.


NOTE [files the store has found] in ``known_files.py``: the files ``run_tensors`` and
``share_tensors`` found are remembered; ``known_tensors`` answers from them without a query.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, delete, func, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError

from gradtrace.errors import StorageUnavailable
from gradtrace.storage import migrate, tensor_rows
from gradtrace.storage.behind import WriteBehind
from gradtrace.storage.codec import EncodedDocument, StoredBlob
from gradtrace.storage.engine import ensure_directory, is_shared_file, make_engine
from gradtrace.storage.known_files import KnownFiles
from gradtrace.storage.tables import runs, shares
from gradtrace.storage.tensor_rows import TensorSource

SHARE_ID_MIN = 8
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
        self._behind = WriteBehind(self.put_run)  # NOTE [runs written behind] in behind.py
        self._local = self.engine.dialect.name == "sqlite"
        self._known = KnownFiles()  # NOTE [files the store has found] in known_files.py

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
        self._behind.close()
        self.engine.dispose()
        if self._runs_engine is not self.engine:
            self._runs_engine.dispose()

    # --- runs --------------------------------------------------------------------------------

    def put_run(self, doc: EncodedDocument, tensors: bytes | None = None, tensors_sha256: str | None = None, *,
                now: float | None = None) -> None:
        """Store a run by its id, with its tensor file (safetensors bytes) if it has one (and
        its SHA-256, when the caller has it already); storing the same run again refreshes its
        retention clock (NOTE [tensor files go with their owner])."""
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
            if tensors is not None:
                tensor_rows.write(conn, self._insert, "run", doc.doc_id, tensors,
                                  tensors_sha256 or tensor_rows.tensor_sha256(tensors))

    def put_run_behind(self, doc: EncodedDocument, tensors: bytes | None = None, *, hold: bool = False,
                       tensors_sha256: str | None = None) -> bool:
        """Store a run from the writer thread (NOTE [runs written behind] in ``behind.py``);
        False, storing nothing, when too many runs (or tensor bytes) are waiting already.
        ``hold``: not before ``release_run`` (NOTE [written after the answer]).
        ``tensors_sha256``: the file's SHA-256 where the caller has checked it (else hashed here)."""
        return self._behind.offer(doc, tensors, hold=hold, tensors_sha256=tensors_sha256)

    def release_run(self, run_id: str) -> None:
        """Write a run put behind with ``hold`` (NOTE [written after the answer] in ``behind.py``)."""
        self._behind.release(run_id)

    def get_run(self, run_id: str, *, max_age_s: float | None = None) -> StoredBlob | None:
        """A stored run, or None if unknown or older than ``max_age_s``."""
        waiting = self._behind.get(run_id)
        if waiting is not None:  # NOTE [runs written behind]: just answered, not written yet
            return waiting.doc.blob
        query = (select(runs.c.schema_version, runs.c.body, runs.c.size, runs.c.content_hash)
                 .where(runs.c.id == run_id))
        if max_age_s is not None:
            query = query.where(runs.c.created_at >= time.time() - max_age_s)
        with self._connect() as conn:
            row = conn.execute(query).first()
        return None if row is None else StoredBlob(int(row[0]), bytes(row[1]), int(row[2]), str(row[3]))

    def run_tensors(self, run_id: str, *, max_age_s: float | None = None) -> TensorSource | None:
        """A stored run's tensor file, or None when the run has none or is unknown or older
        than ``max_age_s``; raises TensorFileDamaged when chunks are missing."""
        waiting = self._behind.get(run_id)
        if waiting is not None and waiting.tensors is not None:  # NOTE [runs written behind]
            return waiting.tensors
        with self._connect() as conn:
            stored = conn.execute(select(runs.c.created_at).where(runs.c.id == run_id)).scalar()
            if stored is None:
                self._known.remember("run", run_id, None)
                return None
            if max_age_s is not None and float(stored) < time.time() - max_age_s:
                return None
            source = tensor_rows.find(conn, "run", run_id, self._connect, local=self._local)
        self._known.remember("run", run_id, source, float(stored))
        return source

    def share_tensors(self, share_id: str) -> TensorSource | None:
        """A share's own copy of its tensor file, or None (NOTE [tensor files go with their owner])."""
        with self._connect() as conn:
            source = tensor_rows.find(conn, "share", share_id, self._connect, local=self._local)
        self._known.remember("share", share_id, source)
        return source

    def known_tensors(self, owner: str, owner_id: str, *, max_age_s: float | None = None) -> TensorSource | None:
        """The file of ``owner`` (``run`` or ``share``) ``owner_id`` without a query: a run
        still waiting to be written, or a file found before and (for a run) still within
        ``max_age_s`` of when it was stored; None when not known so (NOTE [files the store
        has found])."""
        if owner == "run":
            waiting = self._behind.get(owner_id)
            if waiting is not None and waiting.tensors is not None:
                return waiting.tensors
        return self._known.get(owner, owner_id, max_age_s=max_age_s)

    def purge_runs(self, *, older_than_s: float) -> int:
        """Delete runs older than the retention window, with their tensor files; answers how
        many went."""
        cutoff = time.time() - older_than_s
        with self._begin() as conn:
            gone = conn.execute(delete(runs).where(runs.c.created_at < cutoff).returning(runs.c.id))
            ids = [str(row[0]) for row in gone.all()]
            tensor_rows.remove(conn, "run", ids)
        self._known.forget("run", ids)
        return len(ids)

    # --- shares ------------------------------------------------------------------------------

    def create_share(self, doc: StoredBlob, *, tensors_of_run: str | None = None) -> ShareResult:
        """Store ``doc`` as a share (see NOTE [share ids]); idempotent per document.

        ``tensors_of_run``: the run ``doc`` is, whose tensor file the share copies (NOTE
        [tensor files go with their owner]); a share that exists without one gets it.
        """
        result = self._create_share(doc)
        if tensors_of_run is not None:
            self._copy_run_tensors(tensors_of_run, result.id)
        return result

    def _copy_run_tensors(self, run_id: str, share_id: str) -> None:
        waiting = self._behind.get(run_id)
        with self._begin() as conn:
            if conn.execute(select(shares.c.id).where(shares.c.id == share_id)).first() is None:
                return  # deleted meanwhile: no file without its share
            if waiting is not None and waiting.tensors is not None:  # NOTE [runs written behind]
                tensor_rows.write(conn, self._insert, "share", share_id, waiting.tensors.data,
                                  waiting.tensors.sha256)
            else:
                tensor_rows.copy(conn, self._insert, ("run", run_id), ("share", share_id))

    def _create_share(self, doc: StoredBlob) -> ShareResult:
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
            tensor_rows.remove(conn, "share", [share_id])
        self._known.forget("share", [share_id])
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
