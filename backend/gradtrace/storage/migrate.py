"""Run the Alembic migrations programmatically (no alembic.ini): the service does it on start.

``python -m gradtrace.storage.migrate [URL]`` upgrades a database by hand, and
``python -m gradtrace.storage.migrate --revision <name> -m "message"`` writes a new revision
file for a developer.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def alembic_config(engine: Engine | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("path_separator", "os")
    if engine is not None:
        cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema of ``engine``'s database up to ``revision`` (idempotent)."""
    cfg = alembic_config(engine)
    with engine.begin() as connection:
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, revision)


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def main() -> int:
    from gradtrace.settings import get_settings
    from gradtrace.storage.engine import make_engine

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url", nargs="?", help="database URL (default: from GRADTRACE_* settings)")
    parser.add_argument("--revision", help="write a new, empty revision with this id")
    parser.add_argument("-m", "--message", default="", help="message of the new revision")
    args = parser.parse_args()
    if args.revision:
        command.revision(alembic_config(), message=args.message, rev_id=args.revision)
        return 0
    engine = make_engine(args.url or get_settings().effective_database_url)
    try:
        upgrade(engine)
        print(f"database at revision {current_revision(engine)}")
    finally:
        engine.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
