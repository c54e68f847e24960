"""jobs.pending_switch: the durable intent of a query switch in progress (issue 30 point 5).

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28

``jobs.pending_switch`` (JSON text, NULL when no switch is in progress): written in the
transaction that starts the graceful stop of an ALTER STREAMJOB ... AS / CREATE OR
REPLACE STREAMJOB of a running job, cleared in the transaction of the catalog switch
(docs/upgrades.md, "A switch killed midway"). It names the version pending and the
process doing the switch (host, pid, server id). ``catalog_meta.schema_version`` becomes
``'0013'``.

Frozen history: does not import streamjob.catalog.models.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_meta = sa.table("catalog_meta", sa.column("key", sa.String), sa.column("value", sa.Text))


def _set_schema_version(value: str) -> None:
    op.execute(
        _meta.update().where(_meta.c.key == op.inline_literal("schema_version"))
        .values(value=op.inline_literal(value))
    )


def upgrade() -> None:
    """Add ``jobs.pending_switch``; schema_version 0013."""
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("pending_switch", sa.Text(), nullable=True))
    _set_schema_version("0013")


def downgrade() -> None:
    """Drop ``jobs.pending_switch``; schema_version 0012."""
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("pending_switch")
    _set_schema_version("0012")
