"""The tables: runs (kept for ``run_retention_days``), shares (kept forever), and the tensor
files that belong to either (``tensor_files`` + ``tensor_chunks``).

The migrations in ``migrations/versions/`` create exactly these; the storage tests compare
the migrated schema with this metadata so the two cannot drift.

NOTE [timestamps as epoch seconds]
    ``created_at`` is a float of Unix seconds rather than a DATETIME: SQLite has no time-zone
    aware type, and a number compares the same way on every backend.

NOTE [tensor files in chunks]
    A run's tensor file (safetensors, up to hundreds of MB) is stored as it is, uncompressed,
    cut into rows of ``CHUNK_BYTES`` in ``tensor_chunks``: a Range read of a few KiB then
    reads one or two rows, on SQLite and PostgreSQL alike, instead of loading (or
    decompressing) the whole file; serving the whole file streams the rows in order. gzip of
    the whole file would defeat exactly that, and float buffers barely compress anyway.
    ``owner`` says whose file it is (``run`` or ``share``, the id in ``owner_id``): a share
    keeps its own copy, so a run's retention never takes a shared file with it. The
    ``tensor_files`` row carries the file's SHA-256 (its ETag) and length; the chunks are
    checked against the length on every read (a truncated file is an error, never short
    bytes). There is no foreign key (one table serves both owners): the store deletes a
    file's rows in the same transaction as its run or share.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Double,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    UniqueConstraint,
)

metadata = MetaData()

runs = Table(
    "runs",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("schema_version", Integer, nullable=False),
    Column("status", String(32), nullable=False),
    Column("content_hash", String(64), nullable=False, comment="SHA-256 of the canonical JSON"),
    Column("body", LargeBinary, nullable=False, comment="gzip of the canonical JSON"),
    Column("size", Integer, nullable=False, comment="uncompressed bytes"),
    Column("created_at", Double, nullable=False, index=True),
)

shares = Table(
    "shares",
    metadata,
    Column("id", String(64), primary_key=True, comment="shortest free prefix (>= 8) of content_hash"),
    Column("content_hash", String(64), nullable=False),
    Column("schema_version", Integer, nullable=False),
    Column("body", LargeBinary, nullable=False, comment="gzip of the canonical JSON"),
    Column("size", Integer, nullable=False, comment="uncompressed bytes"),
    Column("created_at", Double, nullable=False),
    Column("delete_token_hash", String(64), nullable=True),
    UniqueConstraint("content_hash", name="uq_shares_content_hash"),
)

TENSOR_OWNERS = ("run", "share")

tensor_files = Table(
    "tensor_files",
    metadata,
    Column("owner", String(8), nullable=False, comment="run or share"),
    Column("owner_id", String(64), nullable=False, comment="the run's or the share's id"),
    Column("sha256", String(64), nullable=False, comment="SHA-256 of the whole file"),
    Column("size", BigInteger, nullable=False, comment="bytes of the whole file"),
    Column("chunk_bytes", Integer, nullable=False, comment="bytes per chunk (the last may be shorter)"),
    PrimaryKeyConstraint("owner", "owner_id", name="pk_tensor_files"),
)

tensor_chunks = Table(
    "tensor_chunks",
    metadata,
    Column("owner", String(8), nullable=False),
    Column("owner_id", String(64), nullable=False),
    Column("seq", Integer, nullable=False, comment="0-based chunk number"),
    Column("data", LargeBinary, nullable=False, comment="bytes seq*chunk_bytes onwards, uncompressed"),
    PrimaryKeyConstraint("owner", "owner_id", "seq", name="pk_tensor_chunks"),
)
