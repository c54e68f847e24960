"""job_leases.refusals: the sharing servers that refused to take a job, and why
(issue 33 point 4).

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-28

``job_leases.refusals``: JSON ``{server id: reason}`` of the sharing servers that
refused to take the job over (its checkpoint directory is not reachable from them:
their checkpoint root is not the storage the job's checkpoints are on); placement
passes them over for that job. NULL: none. A row may now exist for a job no server has
taken yet (``holder`` NULL, ``epoch`` 0). ``catalog_meta.schema_version`` becomes
``'0014'``.

Frozen history: does not import streamjob.catalog.models.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_meta = sa.table("catalog_meta", sa.column("key", sa.String), sa.column("value", sa.Text))


def _set_schema_version(value: str) -> None:
    op.execute(
        _meta.update().where(_meta.c.key == op.inline_literal("schema_version"))
        .values(value=op.inline_literal(value))
    )


def upgrade() -> None:
    """Add ``job_leases.refusals``; schema_version 0014."""
    with op.batch_alter_table("job_leases") as batch:
        batch.add_column(sa.Column("refusals", sa.Text(), nullable=True))
    _set_schema_version("0014")


def downgrade() -> None:
    """Drop ``job_leases.refusals``; schema_version 0013."""
    with op.batch_alter_table("job_leases") as batch:
        batch.drop_column("refusals")
    _set_schema_version("0013")
