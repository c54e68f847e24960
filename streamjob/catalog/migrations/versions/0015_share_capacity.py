"""Sharing servers' capacity and the jobs' placement counters (issue 33).

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28

``servers.cores`` and ``servers.memory_mb``: the cores and memory (MiB) a sharing
server declares for its drivers (``--cores``, ``--memory``); NULL: not declared (no
limit). ``job_leases.waiting``: why no sharing server can take the job now (labels,
room, cores, memory, refusals); NULL: it is not waiting. ``job_leases.moves``: times the
job was handed over at a checkpoint boundary (rebalancing); ``job_leases.losses``: times
its holder lost the lease (died, froze, or its renewals failed) and another server took
it. ``catalog_meta.schema_version`` becomes ``'0015'``.

Frozen history: does not import streamjob.catalog.models.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_meta = sa.table("catalog_meta", sa.column("key", sa.String), sa.column("value", sa.Text))


def _set_schema_version(value: str) -> None:
    op.execute(
        _meta.update().where(_meta.c.key == op.inline_literal("schema_version"))
        .values(value=op.inline_literal(value))
    )


def upgrade() -> None:
    """Add the capacity columns and the placement counters; schema_version 0015."""
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("cores", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("memory_mb", sa.Integer(), nullable=True))
    with op.batch_alter_table("job_leases") as batch:
        batch.add_column(sa.Column("waiting", sa.Text(), nullable=True))
        batch.add_column(sa.Column("moves", sa.BigInteger(), nullable=False,
                                   server_default="0"))
        batch.add_column(sa.Column("losses", sa.BigInteger(), nullable=False,
                                   server_default="0"))
    _set_schema_version("0015")


def downgrade() -> None:
    """Drop them; schema_version 0014."""
    with op.batch_alter_table("job_leases") as batch:
        batch.drop_column("losses")
        batch.drop_column("moves")
        batch.drop_column("waiting")
    with op.batch_alter_table("servers") as batch:
        batch.drop_column("memory_mb")
        batch.drop_column("cores")
    _set_schema_version("0014")
