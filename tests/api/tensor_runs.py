"""Runs with a tensor file, stored where a live server reads them.

The run path hands the store the sandbox's tensor bytes in one ``put_run`` call; these tests
make that call themselves, through a :class:`Store` on the server's own database (its SQLite
file, or the PostgreSQL database it was started with), with real safetensors files, and then
talk to the server over HTTP only.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from conftest import Server
from gradtrace.storage.codec import EncodedDocument, encode
from gradtrace.storage.store import Store
from storage.sample_docs import chain_document, variant


def server_db_url(server: Server) -> str:
    return server.env.get("GRADTRACE_DATABASE_URL") or f"sqlite:///{server.data_dir / 'gradtrace.db'}"


@contextmanager
def server_store(server: Server) -> Iterator[Store]:
    """A store on the database ``server`` uses (migrated by the server at its start)."""
    store = Store(server_db_url(server))
    try:
        yield store
    finally:
        store.close()


def fresh_run() -> EncodedDocument:
    """A run document no other test stores."""
    return encode(variant(chain_document(4), f"tensors test {uuid.uuid4().hex}"))


def store_run(server: Server, tensors: bytes | None) -> EncodedDocument:
    doc = fresh_run()
    with server_store(server) as store:
        store.put_run(doc, tensors)
    return doc
