"""Tensor files in the store, on real SQLite and PostgreSQL (each test runs on both): kept with
their run, read by byte range from chunk rows, deleted at retention, copied by a share and
deleted with it, and refused as damaged when their rows do not hold together."""

from __future__ import annotations

import hashlib
import time

import pytest
from sqlalchemy import delete, func, select, update

from gradtrace.errors import NotFound, TensorFileDamaged
from gradtrace.storage.codec import encode
from gradtrace.storage.store import Store
from gradtrace.storage.tables import tensor_chunks, tensor_files
from gradtrace.storage.tensor_rows import CHUNK_BYTES
from storage.sample_docs import chain_document
from storage.tensor_files import assert_same_tensors, make_file, sample_arrays

BIG = (3 * CHUNK_BYTES) // 4 + 1001
"""float32 elements of a tensor that spreads the file over four chunks, the last one short."""


def _rows(store: Store, owner: str, owner_id: str) -> tuple[int, int]:
    """(file rows, chunk rows) stored for ``owner_id``."""
    with store.engine.connect() as conn:
        files = conn.execute(select(func.count()).select_from(tensor_files).where(
            tensor_files.c.owner == owner, tensor_files.c.owner_id == owner_id)).scalar_one()
        chunks = conn.execute(select(func.count()).select_from(tensor_chunks).where(
            tensor_chunks.c.owner == owner, tensor_chunks.c.owner_id == owner_id)).scalar_one()
    return int(files), int(chunks)


def test_a_run_keeps_its_file_and_any_byte_range_reads_back_exactly(store: Store) -> None:
    data = make_file(sample_arrays(big=BIG))
    doc = encode(chain_document(3))
    store.put_run(doc, data)
    source = store.run_tensors(doc.doc_id)
    assert source is not None
    assert source.size == len(data) and source.sha256 == hashlib.sha256(data).hexdigest()
    assert _rows(store, "run", doc.doc_id) == (1, 4)
    for start, end in [(0, 8), (0, len(data)), (CHUNK_BYTES - 3, CHUNK_BYTES + 5), (len(data) - 1, len(data)),
                       (CHUNK_BYTES, 3 * CHUNK_BYTES), (17, 17 + 64 * 1024)]:
        assert source.read(start, end) == data[start:end]
        assert b"".join(source.stream(start, end)) == data[start:end]
    assert_same_tensors(source.read(0, source.size), sample_arrays(big=BIG))
    with store.engine.connect() as conn:  # stored as it is: the raw buffers are in the rows
        first = bytes(conn.execute(select(tensor_chunks.c.data).where(tensor_chunks.c.seq == 0)).scalar_one())
    assert first == data[:CHUNK_BYTES]


def test_storing_a_run_again_keeps_one_file_and_a_run_without_tensors_has_none(store: Store) -> None:
    data = make_file(sample_arrays())
    with_file, without = encode(chain_document(3)), encode(chain_document(4))
    store.put_run(with_file)  # first without the file, then with it, then again
    assert store.run_tensors(with_file.doc_id) is None
    store.put_run(with_file, data)
    store.put_run(with_file, data)
    store.put_run(without)
    assert _rows(store, "run", with_file.doc_id) == (1, 1)
    assert store.run_tensors(without.doc_id) is None
    assert store.run_tensors("no-such-run") is None


def test_retention_deletes_the_file_with_its_run_and_never_a_shares_copy(store: Store) -> None:
    data = make_file(sample_arrays(big=BIG))
    old, new = encode(chain_document(2)), encode(chain_document(3))
    store.put_run(old, data, now=time.time() - 40 * 86400)
    store.put_run(new, data)
    share = store.create_share(old.blob, tensors_of_run=old.doc_id)
    assert store.run_tensors(old.doc_id, max_age_s=30 * 86400) is None  # past the window: not served
    assert store.purge_runs(older_than_s=30 * 86400) == 1
    assert _rows(store, "run", old.doc_id) == (0, 0)
    assert _rows(store, "run", new.doc_id) == (1, 4)
    copy = store.share_tensors(share.id)
    assert copy is not None and copy.read(0, copy.size) == data


def test_a_share_keeps_its_own_copy_while_it_lives(store: Store) -> None:
    data = make_file(sample_arrays(big=BIG))
    doc = encode(chain_document(5))
    store.put_run(doc, data)
    share = store.create_share(doc.blob, tensors_of_run=doc.doc_id)
    again = store.create_share(doc.blob, tensors_of_run=doc.doc_id)
    assert again.id == share.id and not again.created
    assert _rows(store, "share", share.id) == (1, 4)
    copy = store.share_tensors(share.id)
    assert copy is not None and copy.sha256 == hashlib.sha256(data).hexdigest()
    assert copy.read(0, copy.size) == data
    assert store.delete_share(share.id, "wrong token") is False
    assert store.delete_share(share.id, share.delete_token or "") is True
    assert _rows(store, "share", share.id) == (0, 0)
    assert store.share_tensors(share.id) is None
    assert _rows(store, "run", doc.doc_id) == (1, 4)  # the run's own file is untouched


def test_a_document_shared_first_without_tensors_gets_them_when_its_run_is_shared(store: Store) -> None:
    data = make_file(sample_arrays())
    doc = encode(chain_document(6))
    first = store.create_share(doc.blob)  # the posted document: no file
    assert store.share_tensors(first.id) is None
    store.put_run(doc, data)
    assert store.create_share(doc.blob, tensors_of_run=doc.doc_id).id == first.id
    copy = store.share_tensors(first.id)
    assert copy is not None and copy.read(0, copy.size) == data


def test_a_run_written_behind_serves_and_shares_its_file_before_and_after_it_is_written(store: Store) -> None:
    data = make_file(sample_arrays(seed=3))
    doc = encode(chain_document(7))
    assert store.put_run_behind(doc, data)
    source = store.run_tensors(doc.doc_id)
    assert source is not None and source.read(0, source.size) == data
    share = store.create_share(doc.blob, tensors_of_run=doc.doc_id)
    store.close()  # writes what is waiting
    reopened = Store(store.engine.url.render_as_string(hide_password=False))
    try:
        stored = reopened.run_tensors(doc.doc_id)
        assert stored is not None and stored.read(0, stored.size) == data
        copy = reopened.share_tensors(share.id)
        assert copy is not None and copy.read(0, copy.size) == data
    finally:
        reopened.close()


def test_missing_or_short_chunks_are_refused_as_damaged(store: Store) -> None:
    data = make_file(sample_arrays(big=BIG))
    doc = encode(chain_document(8))
    store.put_run(doc, data)
    mine = (tensor_chunks.c.owner == "run") & (tensor_chunks.c.owner_id == doc.doc_id)
    with store.engine.begin() as conn:  # the last chunk loses its tail
        conn.execute(update(tensor_chunks).where(mine & (tensor_chunks.c.seq == 3)).values(data=b"\0" * 10))
    source = store.run_tensors(doc.doc_id)
    assert source is not None
    assert source.read(0, 100) == data[:100]  # untouched chunks still read
    with pytest.raises(TensorFileDamaged, match="truncated"):
        source.read(len(data) - 20, len(data))
    with store.engine.begin() as conn:  # now a whole chunk goes
        conn.execute(delete(tensor_chunks).where(mine & (tensor_chunks.c.seq == 1)))
    with pytest.raises(TensorFileDamaged, match="3 of its 4 chunks"):
        store.run_tensors(doc.doc_id)


def test_a_file_found_once_is_known_without_a_query_and_a_deletion_anywhere_is_a_404(store: Store) -> None:
    """NOTE [files the store has found]: the second look at a file is answered from memory, a
    run's retention still holds, and a file deleted since (here by another store on the same
    database, as another replica would) reads as gone, not as damaged."""
    data = make_file(sample_arrays(seed=5, big=BIG))
    doc = encode(chain_document(9))
    store.put_run(doc, data, now=time.time() - 100)
    assert store.known_tensors("run", doc.doc_id) is None  # never looked up yet
    found = store.run_tensors(doc.doc_id)
    known = store.known_tensors("run", doc.doc_id)
    assert known is found and known is not None and known.read(0, known.size) == data
    assert known.local == (store.engine.dialect.name == "sqlite")
    assert store.known_tensors("run", doc.doc_id, max_age_s=50) is None  # stored 100 s ago
    share = store.create_share(doc.blob, tensors_of_run=doc.doc_id)
    copy = store.share_tensors(share.id)
    assert copy is not None and store.known_tensors("share", share.id) is copy

    replica = Store(store.engine.url.render_as_string(hide_password=False))
    try:
        assert replica.purge_runs(older_than_s=50) == 1
        assert replica.delete_share(share.id, share.delete_token or "") is True
    finally:
        replica.close()
    for gone in (known, copy):
        with pytest.raises(NotFound, match="no longer stored"):
            gone.read(CHUNK_BYTES, CHUNK_BYTES + 10)
    assert store.run_tensors(doc.doc_id) is None and store.known_tensors("run", doc.doc_id) is None
    assert store.share_tensors(share.id) is None and store.known_tensors("share", share.id) is None


def test_purging_or_deleting_here_forgets_the_known_file(store: Store) -> None:
    data = make_file(sample_arrays(seed=6))
    doc = encode(chain_document(10))
    store.put_run(doc, data, now=time.time() - 100)
    share = store.create_share(doc.blob, tensors_of_run=doc.doc_id)
    assert store.run_tensors(doc.doc_id) is not None and store.share_tensors(share.id) is not None
    assert store.purge_runs(older_than_s=50) == 1
    assert store.delete_share(share.id, share.delete_token or "") is True
    assert store.known_tensors("run", doc.doc_id) is None and store.known_tensors("share", share.id) is None
