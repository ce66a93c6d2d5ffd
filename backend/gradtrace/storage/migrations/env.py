"""Alembic environment, driven from :func:`gradtrace.storage.migrate.upgrade`.

The caller hands over an open connection in ``config.attributes["connection"]``; from the
command line a URL in ``sqlalchemy.url`` works too.

NOTE [concurrent starts]
    Several service processes may start at once against one PostgreSQL database; a
    transaction-scoped advisory lock makes the second wait until the first has migrated, and
    then find nothing to do. SQLite serialises writers by itself.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, create_engine, text

from gradtrace.storage.tables import metadata

MIGRATION_LOCK_KEY = 0x67726164  # "grad"


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=metadata,
                      render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
        context.run_migrations()


def run() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = create_engine(context.config.get_main_option("sqlalchemy.url") or "")
    try:
        with engine.begin() as conn:
            _run(conn)
    finally:
        engine.dispose()


run()
