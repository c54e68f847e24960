"""jobs.missing_columns: declared columns that no record of a batch carried.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24

``jobs.missing_columns``: for each source stream of the job, how many micro-batches held
records none of which carried a value for a declared column (the column was absent, or
NULL, in every record of the batch: a misspelt JSON key reads as NULL, never as an
error), as JSON text of ``{stream: {column: batches}}``; NULL until one is counted
(issue 13, DESIGN §7: counted, never silent). ``catalog_meta.schema_version`` becomes
``'0006'``.

Frozen history: does not import streamjob.catalog.models.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_meta = sa.table("catalog_meta", sa.column("key", sa.String), sa.column("value", sa.Text))


def _set_schema_version(value: str) -> None:
    op.execute(
        _meta.update().where(_meta.c.key == op.inline_literal("schema_version"))
        .values(value=op.inline_literal(value))
    )


def upgrade() -> None:
    """Add ``jobs.missing_columns`` (NULL for existing rows); schema_version 0006."""
    op.add_column("jobs", sa.Column("missing_columns", sa.Text(), nullable=True))
    _set_schema_version("0006")


def downgrade() -> None:
    """Drop ``jobs.missing_columns`` (the counts are lost); schema_version 0005."""
    op.drop_column("jobs", "missing_columns")
    _set_schema_version("0005")
