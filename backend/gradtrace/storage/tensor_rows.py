"""Tensor files as chunk rows: writing, copying, deleting and reading byte ranges.

NOTE [tensor files in chunks] in ``tables.py`` says why chunks. Everything here takes an open
connection (the caller's transaction), so a run or a share and its file are written and
deleted together. Reading goes through a :class:`TensorSource`: a stored file reads only the
chunks a byte range touches; a run still waiting to be written (NOTE [runs written behind]
in ``behind.py``) is served from its bytes in memory.

NOTE [reading only the asked bytes]
    A read asks the database for ``substr(data, …)`` of each chunk it touches, so only the
    asked bytes leave the database (SQLite slices in C; PostgreSQL slices an EXTERNAL, i.e.
    uncompressed, value without reading its other TOAST pieces), and ``length(data)`` beside
    it (SQLite reads a blob's length from its record header; PostgreSQL from the TOAST
    pointer) to tell a short chunk. On PostgreSQL the rows come in psycopg's binary format:
    bytea as text is hex, twice the bytes and three times the time for a whole file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import ColumnElement, Connection, Integer, Select, bindparam, case, delete, func, literal, select
from sqlalchemy.exc import DBAPIError

from gradtrace.errors import NotFound, TensorFileDamaged
from gradtrace.storage.tables import tensor_chunks, tensor_files

CHUNK_BYTES = 256 << 10
"""Bytes per stored chunk: a 64 KiB Range read touches at most two (512 KiB read)."""
INSERT_CHUNKS = 8
"""Chunks per INSERT statement: a 200 MB file is written 2 MiB at a time, never all at once."""
READ_CHUNKS = 8
"""Chunks fetched per query while streaming a whole file."""
DELETE_IDS = 500


def _pieces_query() -> Select[Any]:
    """Chunks ``lo``..``hi`` of one file, each cut to the bytes ``start``..``end`` it holds
    (NOTE [reading only the asked bytes]). Built once with bound parameters: building the
    expression took most of a Range read's own time (about 1 ms of 1.2)."""
    col, c = tensor_chunks.c, bindparam("chunk", type_=Integer)
    at = col.seq * c
    skip = case((at < bindparam("start"), bindparam("start") - at), else_=0)
    stop = case((bindparam("end") - at < c, bindparam("end") - at), else_=c)
    return (select(col.seq, func.length(col.data), func.substr(col.data, skip + 1, stop - skip))
            .where(col.owner == bindparam("owner"), col.owner_id == bindparam("owner_id"),
                   col.seq.between(bindparam("lo"), bindparam("hi")))
            .order_by(col.seq))


_PIECES = _pieces_query()
_STILL_STORED = select(tensor_files.c.size).where(tensor_files.c.owner == bindparam("owner"),
                                                  tensor_files.c.owner_id == bindparam("owner_id"))


def tensor_sha256(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


class TensorSource(Protocol):
    """A tensor file to serve: its hash, its length, and its bytes by range."""

    @property
    def sha256(self) -> str:
        """Hex SHA-256 of the whole file, as computed when it was stored."""

    @property
    def size(self) -> int:
        """Bytes in the whole file."""

    def read(self, start: int, end: int) -> bytes:
        """Bytes ``start`` to ``end`` (exclusive); the range lies within the file."""

    def stream(self, start: int, end: int) -> Iterator[bytes]:
        """The same bytes in pieces of a few chunks, for an answer that must not hold them all."""

    @property
    def local(self) -> bool:
        """Its bytes are in memory or in a database file on this machine (no network)."""


@dataclass(frozen=True)
class MemoryTensors:
    """A tensor file held in memory (a run not written yet)."""

    data: bytes
    sha256: str

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def local(self) -> bool:
        """Read without any I/O (NOTE [cheap reads on the event loop] in api/tensors.py)."""
        return True

    def read(self, start: int, end: int) -> bytes:
        return self.data[start:end]

    def stream(self, start: int, end: int) -> Iterator[bytes]:
        step = CHUNK_BYTES * READ_CHUNKS
        for at in range(start, end, step):
            yield self.data[at:min(end, at + step)]


@dataclass(frozen=True)
class StoredTensors:
    """A tensor file in ``tensor_chunks``; ``connect`` opens a connection for each read.
    ``local``: the database is a file on this machine (SQLite), so a small read is a fraction
    of a millisecond and never waits on a network."""

    owner: str
    owner_id: str
    sha256: str
    size: int
    chunk_bytes: int
    connect: Callable[[], Any]
    local: bool = False

    def read(self, start: int, end: int) -> bytes:
        return b"".join(self.stream(start, end))

    def stream(self, start: int, end: int) -> Iterator[bytes]:
        if end <= start:
            return
        c = self.chunk_bytes
        first, last = start // c, (end - 1) // c
        for lo in range(first, last + 1, READ_CHUNKS):
            yield from self._pieces(lo, min(last, lo + READ_CHUNKS - 1), start, end)

    def _pieces(self, lo: int, hi: int, start: int, end: int) -> list[bytes]:
        """Bytes ``start``..``end`` held by chunks ``lo``..``hi``, cut by the database (NOTE
        [reading only the asked bytes]), each chunk checked to have its full length."""
        c = self.chunk_bytes
        params = {"chunk": c, "start": start, "end": end, "owner": self.owner, "owner_id": self.owner_id,
                  "lo": lo, "hi": hi}
        with self.connect() as conn:
            rows = _fetch(conn, _PIECES, params)
            if not rows and conn.execute(_STILL_STORED, params).first() is None:
                # a source remembered from an earlier read (Store.known_tensors) whose owner
                # was deleted since, maybe by another replica: gone, not damaged
                raise NotFound(f"the {self.owner}'s tensor file is no longer stored: the {self.owner} was deleted",
                               detail={f"{self.owner}_id": self.owner_id, "reason": "no_tensor_file"})
        for want, (seq, length, piece) in enumerate(rows, lo):
            asked = min(end, (want + 1) * c) - max(start, want * c)
            if seq != want or length != min(c, self.size - want * c) or len(piece) != asked:
                break
        else:
            if len(rows) == hi - lo + 1:
                return [piece for _seq, _length, piece in rows]
        raise TensorFileDamaged(
            f"the stored tensor file is truncated: bytes {lo * c} onwards of its {self.size} are "
            "missing or short", detail={"reason": "truncated", "chunk": lo})


def _fetch(conn: Connection, query: Select[Any], params: dict[str, Any]) -> list[tuple[int, int, bytes]]:
    """Run ``query`` (seq, length, bytes); on PostgreSQL in psycopg's binary format (NOTE
    [reading only the asked bytes])."""
    if conn.dialect.name != "postgresql":
        return [(int(a), int(b), bytes(d)) for a, b, d in conn.execute(query, params).all()]
    compiled = query.compile(dialect=conn.dialect)
    driver = conn.connection.driver_connection
    assert driver is not None
    try:
        with driver.cursor(binary=True) as cursor:
            cursor.execute(str(compiled), {**compiled.params, **params})
            return [(int(a), int(b), bytes(d)) for a, b, d in cursor.fetchall()]
    except Exception as exc:  # the driver's own error: the same 503 as any database failure
        raise DBAPIError(str(compiled), compiled.params, exc) from exc


def write(conn: Connection, insert: Callable[[Any], Any], owner: str, owner_id: str,
          data: bytes, sha256: str) -> bool:
    """Store ``data`` as ``owner``'s file unless it has one already; True when written."""
    head = insert(tensor_files).values(owner=owner, owner_id=owner_id, sha256=sha256, size=len(data),
                                       chunk_bytes=CHUNK_BYTES)
    if conn.execute(head.on_conflict_do_nothing().returning(tensor_files.c.owner)).first() is None:
        return False
    view = memoryview(data)
    seqs = range(0, max(1, -(-len(data) // CHUNK_BYTES)))
    for lo in range(0, len(seqs), INSERT_CHUNKS):
        rows = [{"owner": owner, "owner_id": owner_id, "seq": seq,
                 "data": view[seq * CHUNK_BYTES:(seq + 1) * CHUNK_BYTES]}
                for seq in seqs[lo:lo + INSERT_CHUNKS]]
        conn.execute(tensor_chunks.insert(), rows)
    return True


def copy(conn: Connection, insert: Callable[[Any], Any], source: tuple[str, str],
         target: tuple[str, str]) -> bool:
    """Copy ``source``'s file (owner, id) to ``target`` inside the database; True when copied
    (False: no file to copy, or the target has one)."""
    (src, src_id), (dst, dst_id) = source, target
    files = select(literal(dst), literal(dst_id), tensor_files.c.sha256, tensor_files.c.size,
                   tensor_files.c.chunk_bytes).where(tensor_files.c.owner == src,
                                                     tensor_files.c.owner_id == src_id)
    head = insert(tensor_files).from_select(["owner", "owner_id", "sha256", "size", "chunk_bytes"], files)
    if conn.execute(head.on_conflict_do_nothing().returning(tensor_files.c.owner)).first() is None:
        return False
    chunks = select(literal(dst), literal(dst_id), tensor_chunks.c.seq, tensor_chunks.c.data).where(
        tensor_chunks.c.owner == src, tensor_chunks.c.owner_id == src_id)
    conn.execute(tensor_chunks.insert().from_select(["owner", "owner_id", "seq", "data"], chunks))
    return True


def remove(conn: Connection, owner: str, owner_ids: Sequence[str]) -> None:
    """Delete the files of ``owner_ids`` (any number, in batches)."""
    for lo in range(0, len(owner_ids), DELETE_IDS):
        batch = list(owner_ids[lo:lo + DELETE_IDS])
        for table in (tensor_chunks, tensor_files):
            conn.execute(delete(table).where(table.c.owner == owner, table.c.owner_id.in_(batch)))


def find(conn: Connection, owner: str, owner_id: str, connect: Callable[[], Any], *,
         kept: ColumnElement[bool] | None = None, local: bool = False) -> StoredTensors | None:
    """The stored file of ``owner_id``, checked to have all its chunks; None when it has none
    (or when ``kept``, a condition on its owner's row, does not hold). One query."""
    f, c = tensor_files.c, tensor_chunks.c
    count = (select(func.count()).select_from(tensor_chunks)
             .where(c.owner == f.owner, c.owner_id == f.owner_id).scalar_subquery())
    query = select(f.sha256, f.size, f.chunk_bytes, count).where(f.owner == owner, f.owner_id == owner_id)
    if kept is not None:
        query = query.where(kept)
    row = conn.execute(query).first()
    if row is None:
        return None
    sha256, size, chunk, stored = str(row[0]), int(row[1]), int(row[2]), int(row[3])
    expected = max(1, -(-size // chunk))
    if stored != expected:
        raise TensorFileDamaged(f"the stored tensor file is truncated: {stored} of its {expected} chunks "
                                "are stored", detail={"reason": "truncated", "chunks": stored,
                                                      "expected": expected})
    return StoredTensors(owner, owner_id, sha256, size, chunk, connect, local)
