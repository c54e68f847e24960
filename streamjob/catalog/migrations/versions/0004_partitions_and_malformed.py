"""tables.partitioned_by and jobs.malformed_counts.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-28

``tables.partitioned_by``: the partition columns of a file table (``PARTITIONED BY``),
as JSON text of a list of column names; NULL for an unpartitioned table and for tables
created before it. ``jobs.malformed_counts``: how many malformed source records each
job skipped, per stream (DESIGN §7: a malformed record is counted, never dropped
silently), as JSON text of an object ``{stream: count}``; NULL until one is counted.
``catalog_meta.schema_version`` becomes ``'0004'``.

Frozen history: does not import streamjob.catalog.models.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_meta = sa.table("catalog_meta", sa.column("key", sa.String), sa.column("value", sa.Text))


def _set_schema_version(value: str) -> None:
    op.execute(
        _meta.update().where(_meta.c.key == op.inline_literal("schema_version"))
        .values(value=op.inline_literal(value))
    )


def upgrade() -> None:
    """Add ``tables.partitioned_by`` and ``jobs.malformed_counts`` (NULL for existing
    rows); schema_version 0004."""
    op.add_column("tables", sa.Column("partitioned_by", sa.Text(), nullable=True))
    op.add_column("jobs", sa.Column("malformed_counts", sa.Text(), nullable=True))
    _set_schema_version("0004")


def downgrade() -> None:
    """Drop both columns (partitioning and counts are lost); schema_version 0003."""
    op.drop_column("jobs", "malformed_counts")
    op.drop_column("tables", "partitioned_by")
    _set_schema_version("0003")
