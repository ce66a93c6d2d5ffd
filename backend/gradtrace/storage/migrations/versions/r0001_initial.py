"""Initial schema: runs and shares, documents stored as gzip'd canonical JSON.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("schema_version", sa.Integer, nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False, comment="SHA-256 of the canonical JSON"),
        sa.Column("body", sa.LargeBinary, nullable=False, comment="gzip of the canonical JSON"),
        sa.Column("size", sa.Integer, nullable=False, comment="uncompressed bytes"),
        sa.Column("created_at", sa.Double, nullable=False),
    )
    op.create_index("ix_runs_created_at", "runs", ["created_at"])
    op.create_table(
        "shares",
        sa.Column("id", sa.String(64), primary_key=True,
                  comment="shortest free prefix (>= 8) of content_hash"),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("schema_version", sa.Integer, nullable=False),
        sa.Column("body", sa.LargeBinary, nullable=False, comment="gzip of the canonical JSON"),
        sa.Column("size", sa.Integer, nullable=False, comment="uncompressed bytes"),
        sa.Column("created_at", sa.Double, nullable=False),
        sa.Column("delete_token_hash", sa.String(64), nullable=True),
        sa.UniqueConstraint("content_hash", name="uq_shares_content_hash"),
    )


def downgrade() -> None:
    op.drop_table("shares")
    op.drop_index("ix_runs_created_at", table_name="runs")
    op.drop_table("runs")
