"""jobs.expired_checkpoints: how many of the job's checkpoints expired (DESIGN §4).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21

A checkpoint still running after ``morphling.checkpoint.timeout`` is logged as expired
and counted here (DESCRIBE STREAMJOB shows the count); retention may purge the
checkpoint rows themselves, so the count lives on the job. Existing jobs start at 0.
``catalog_meta.schema_version`` becomes ``'0003'``.

Frozen history: does not import streamjob.catalog.models.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_meta = sa.table("catalog_meta", sa.column("key", sa.String), sa.column("value", sa.Text))


def _set_schema_version(value: str) -> None:
    op.execute(
        _meta.update().where(_meta.c.key == op.inline_literal("schema_version"))
        .values(value=op.inline_literal(value))
    )


def upgrade() -> None:
    """Add ``jobs.expired_checkpoints`` (0 for existing jobs); schema_version 0003."""
    op.add_column("jobs", sa.Column("expired_checkpoints", sa.Integer(), nullable=False,
                                    server_default="0"))
    _set_schema_version("0003")


def downgrade() -> None:
    """Drop ``jobs.expired_checkpoints``; schema_version 0002."""
    op.drop_column("jobs", "expired_checkpoints")
    _set_schema_version("0002")
