"""Storage fixtures: a Store on SQLite (a file in tmp) and on a real PostgreSQL server.

The PostgreSQL server is Debian's ``postgresql`` package (``make test`` installs it), started
here with ``initdb`` / ``pg_ctl`` in a temporary directory on a free loopback port, as the
``postgres`` system user because initdb refuses to run as root. Each test gets its own fresh
database in that cluster.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import free_port
from gradtrace.storage.store import Store

PG_BINS = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def _as_user(user: str) -> list[str]:
    return [] if os.geteuid() != 0 else ["runuser", "-u", user, "--"]


@dataclass
class PgCluster:
    """A PostgreSQL cluster started by the tests."""

    url: str
    """``postgresql+psycopg://postgres@127.0.0.1:PORT`` (no database name)."""
    bindir: Path
    data: Path
    base: Path
    port: int
    run_as: list[str]

    def ctl(self, *args: str) -> None:
        subprocess.run([*self.run_as, str(self.bindir / "pg_ctl"), "-D", str(self.data), *args],
                       check=True, capture_output=True, cwd=self.base, timeout=120)

    def start(self) -> None:
        opts = f"-h 127.0.0.1 -p {self.port} -k {self.base / 'sock'} -c fsync=off -c max_connections=60"
        self.ctl("-o", opts, "-l", str(self.base / "log"), "-w", "-t", "60", "start")

    def stop(self) -> None:
        self.ctl("-m", "immediate", "-w", "stop")


@contextlib.contextmanager
def pg_cluster() -> Iterator[PgCluster]:
    """Start a throw-away cluster (initdb + pg_ctl, as the postgres user when root)."""
    if not PG_BINS or not Path(PG_BINS[-1], "initdb").exists():
        pytest.skip("PostgreSQL binaries are not installed (make test installs Debian's postgresql)")
    bindir = Path(PG_BINS[-1])
    user = "postgres" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
    base = Path(tempfile.mkdtemp(prefix="gradtrace-pg-"))
    (base / "sock").mkdir()
    if os.geteuid() == 0:
        pw = pwd.getpwnam(user)
        for p in (base, base / "sock"):
            os.chown(p, pw.pw_uid, pw.pw_gid)
    port = free_port()
    run = _as_user(user)
    subprocess.run([*run, str(bindir / "initdb"), "-D", str(base / "data"), "-U", "postgres",
                    "--auth=trust", "--no-sync", "-E", "UTF8"], check=True, capture_output=True, cwd=base)
    cluster = PgCluster(f"postgresql+psycopg://postgres@127.0.0.1:{port}", bindir, base / "data", base,
                        port, run)
    cluster.start()
    try:
        yield cluster
    finally:
        with contextlib.suppress(subprocess.SubprocessError):
            cluster.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A PostgreSQL cluster for the session; yields a URL without a database name."""
    with pg_cluster() as cluster:
        yield cluster.url


def new_pg_database(server_url: str) -> str:
    """Create an empty database on the test cluster; answers its URL."""
    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    dsn = server_url.replace("postgresql+psycopg://", "postgresql://") + "/postgres"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{server_url}/{name}"


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL of an empty database, once for SQLite and once for PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'data' / 'gradtrace.db'}"
    return new_pg_database(request.getfixturevalue("pg_server"))


@pytest.fixture()
def store(db_url: str) -> Iterator[Store]:
    s = Store(db_url)
    s.migrate()
    try:
        yield s
    finally:
        with contextlib.suppress(Exception):
            s.close()
