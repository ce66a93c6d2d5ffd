"""Creating the SQLAlchemy engine: SQLite in WAL mode by default, PostgreSQL by URL.

NOTE [sqlite durability]
    WAL with ``synchronous=FULL``: a committed share is on disk before its id is answered, so
    neither a killed process nor a power cut loses it, and a crash mid-write leaves the whole
    transaction or nothing. ``busy_timeout`` lets concurrent writers (the thread pool) wait for
    the write lock instead of failing with "database is locked".

    Runs are written through a second engine with ``synchronous=NORMAL`` (``durable=False``):
    in WAL mode a commit then skips its fsync, which cost 1-8 ms on every ``POST /api/runs``
    (NOTE [runs are not fsynced] in ``store.py``). It stays atomic, and a killed process loses
    nothing; only a power cut or a kernel crash may lose the last runs written before the
    next fsync (a share's commit, or a checkpoint). Shares are always FULL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

SQLITE_BUSY_TIMEOUT_MS = 15_000


def make_engine(url: str, *, durable: bool = True) -> Engine:
    """An engine for ``url`` (connects lazily); SQLite connections switch on WAL.

    ``durable=False`` (SQLite only): commits are not fsynced (NOTE [sqlite durability]).
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(url, connect_args={"check_same_thread": False,
                                                  "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
        event.listen(engine, "connect", _sqlite_pragmas if durable else _sqlite_pragmas_fast)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)


def ensure_directory(engine: Engine) -> None:
    """Create the directory of a SQLite file (called before the first connection, not before)."""
    if engine.dialect.name == "sqlite":
        database = engine.url.database or ""
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).parent.mkdir(parents=True, exist_ok=True)


def is_shared_file(engine: Engine) -> bool:
    """True when a second engine on the same URL opens the same database (not ``:memory:``)."""
    if engine.dialect.name != "sqlite":
        return True
    database = engine.url.database or ""
    return bool(database) and database != ":memory:" and "mode=memory" not in database


def _sqlite_pragmas(dbapi_conn: Any, _record: Any, synchronous: str = "FULL") -> None:
    cur = dbapi_conn.cursor()
    try:
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA synchronous={synchronous}")
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    finally:
        cur.close()


def _sqlite_pragmas_fast(dbapi_conn: Any, record: Any) -> None:
    _sqlite_pragmas(dbapi_conn, record, synchronous="NORMAL")
