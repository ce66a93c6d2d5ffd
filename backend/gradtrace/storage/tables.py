"""The two tables: runs (kept for ``run_retention_days``) and shares (kept forever).

The migrations in ``migrations/versions/`` create exactly these; the storage tests compare
the migrated schema with this metadata so the two cannot drift.

NOTE [timestamps as epoch seconds]
    ``created_at`` is a float of Unix seconds rather than a DATETIME: SQLite has no time-zone
    aware type, and a number compares the same way on every backend.
"""

from __future__ import annotations

from sqlalchemy import Column, Double, Integer, LargeBinary, MetaData, String, Table, UniqueConstraint

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
