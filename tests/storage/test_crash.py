"""A crash mid-write leaves either the whole share or none: a writer process killed with SIGKILL.

The writer (a separate Python process using the real Store) encodes 30 distinct ~50 kB
documents up front, then shares them as fast as it can (so it is nearly always inside a
database write) and prints each id once ``create_share`` has returned.
The test kills it with SIGKILL at an arbitrary moment, while writes are in flight, then opens
the database again and checks that every acknowledged share is there and complete, and that
every row present (acknowledged or not) decompresses into a valid run document.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from sqlalchemy import select, text

from gradtrace.schema import RunDocument, content_hash
from gradtrace.storage.codec import StoredBlob, load
from gradtrace.storage.store import Store
from gradtrace.storage.tables import shares

TESTS = Path(__file__).resolve().parent.parent
WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from storage.sample_docs import chain_document, variant
    from gradtrace.storage.codec import encode
    from gradtrace.storage.store import Store
    store = Store({url!r})
    base = chain_document(400)
    docs = [encode(variant(base, f"writer {{i}}")) for i in range(30)]  # so the loop is all writes
    print("ready", flush=True)
    for i, doc in enumerate(docs):
        r = store.create_share(doc.blob)
        print(r.id, i, flush=True)
""")


def test_a_writer_killed_mid_write_leaves_whole_shares_or_none(db_url: str) -> None:
    store = Store(db_url)
    store.migrate()
    proc = subprocess.Popen([sys.executable, "-c", WRITER.format(tests=str(TESTS), url=db_url)],
                            stdout=subprocess.PIPE, text=True)
    acknowledged: dict[str, int] = {}
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        while len(acknowledged) < 6 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("ready"):
                continue
            share_id, i = line.split()
            acknowledged[share_id] = int(i)
        time.sleep(0.013)  # land somewhere inside the next write
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        for line in proc.stdout.read().splitlines():  # ids printed just before the kill
            share_id, i = line.split()
            acknowledged[share_id] = int(i)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    assert len(acknowledged) >= 6, "the writer did not get going"

    store.close()
    reopened = Store(db_url)
    try:
        reopened.migrate()
        if reopened.engine.dialect.name == "sqlite":
            with reopened.engine.connect() as conn:
                assert conn.execute(text("PRAGMA integrity_check")).scalar_one() == "ok"
        for share_id, i in acknowledged.items():
            blob = reopened.get_share(share_id)
            assert blob is not None, f"acknowledged share {share_id} was lost"
            assert load(blob)["stdout"] == f"writer {i}"
        with reopened.engine.connect() as conn:
            rows = conn.execute(select(shares.c.id, shares.c.content_hash, shares.c.schema_version,
                                       shares.c.body, shares.c.size)).all()
        assert len(rows) >= len(acknowledged)
        for row in rows:  # every row present is a whole document, acknowledged or not
            doc = load(StoredBlob(row.schema_version, bytes(row.body), row.size))
            RunDocument.model_validate(doc)
            assert content_hash(doc) == row.content_hash and row.content_hash.startswith(row.id)
    finally:
        reopened.close()
