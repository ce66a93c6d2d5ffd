"""Tensor files: a run's or a share's safetensors file, in uncompressed chunks.

NOTE [tensor files in chunks] in ``storage/tables.py``. On PostgreSQL the chunks' ``data`` is
stored EXTERNAL (out of line, never compressed): floats barely compress, and an uncompressed
TOAST value can be sliced without reading all of it.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "tensor_files",
        sa.Column("owner", sa.String(8), nullable=False, comment="run or share"),
        sa.Column("owner_id", sa.String(64), nullable=False, comment="the run's or the share's id"),
        sa.Column("sha256", sa.String(64), nullable=False, comment="SHA-256 of the whole file"),
        sa.Column("size", sa.BigInteger, nullable=False, comment="bytes of the whole file"),
        sa.Column("chunk_bytes", sa.Integer, nullable=False,
                  comment="bytes per chunk (the last may be shorter)"),
        sa.PrimaryKeyConstraint("owner", "owner_id", name="pk_tensor_files"),
    )
    op.create_table(
        "tensor_chunks",
        sa.Column("owner", sa.String(8), nullable=False),
        sa.Column("owner_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False, comment="0-based chunk number"),
        sa.Column("data", sa.LargeBinary, nullable=False,
                  comment="bytes seq*chunk_bytes onwards, uncompressed"),
        sa.PrimaryKeyConstraint("owner", "owner_id", "seq", name="pk_tensor_chunks"),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE tensor_chunks ALTER COLUMN data SET STORAGE EXTERNAL")


def downgrade() -> None:
    op.drop_table("tensor_chunks")
    op.drop_table("tensor_files")
