"""jobs.session_properties: the session's SET values captured by CREATE STREAMJOB.

Revision ID: 0002
Revises: 0001
Create Date: 2024-06-15

A job keeps the defaults of the session that created it: a nullable JSON column
``jobs.session_properties`` (NULL for jobs created before it; read back as ``{}``).
``catalog_meta.schema_version`` becomes ``'0002'``, so that a streamjob from before
alembic (which reads version ``'1'``) refuses this catalog instead of ignoring the
column; the downgrade drops the column and restores ``'1'``.

The column is added and dropped with plain ALTER TABLE on both databases (SQLite 3.35
and later drop a column in place), not a batch "move and copy" of ``jobs``: that copy
would be safe only with SQLite's foreign keys off (see
``streamjob.catalog.migrations.foreign_keys_off``), as they are when streamjob migrates,
and it copies every job for nothing.

Frozen history: does not import streamjob.catalog.models.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_meta = sa.table("catalog_meta", sa.column("key", sa.String), sa.column("value", sa.Text))


def _set_schema_version(value: str) -> None:
    op.execute(
        _meta.update().where(_meta.c.key == op.inline_literal("schema_version"))
        .values(value=op.inline_literal(value))
    )


def upgrade() -> None:
    """Add ``jobs.session_properties`` (NULL for existing jobs); schema_version 0002."""
    op.add_column("jobs", sa.Column("session_properties", sa.JSON(), nullable=True))
    _set_schema_version("0002")


def downgrade() -> None:
    """Drop ``jobs.session_properties`` (the captured values are lost); schema_version 1."""
    op.drop_column("jobs", "session_properties")
    _set_schema_version("1")
