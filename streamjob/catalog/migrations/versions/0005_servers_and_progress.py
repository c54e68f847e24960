"""servers, leases, jobs.owner and jobs.progress: the job manager service.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-05

``servers``: one row per running job manager (``streamjob server``): its id
(``host:pid:random``), host, pid, Spark master, start time and latest heartbeat.
``leases``: named leases; the row ``manager``, inserted here with no holder, elects the
one server that runs the jobs (the others are standbys). ``jobs.owner``: the server id
running the job, NULL when none does. ``jobs.progress``: JSON text of the job's latest
progress (batch, rates, lag, last checkpoint time), NULL until a batch ran.
``catalog_meta.schema_version`` becomes ``'0005'``.

Frozen history: does not import streamjob.catalog.models.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_meta = sa.table("catalog_meta", sa.column("key", sa.String), sa.column("value", sa.Text))


def _ts() -> sa.DateTime:
    # streamjob's UTCDateTime: timestamp with time zone (PostgreSQL), naive UTC (SQLite)
    return sa.DateTime(timezone=True)


def _set_schema_version(value: str) -> None:
    op.execute(
        _meta.update().where(_meta.c.key == op.inline_literal("schema_version"))
        .values(value=op.inline_literal(value))
    )


def upgrade() -> None:
    """Create ``servers`` and ``leases`` (with the free lease ``manager``), add
    ``jobs.owner`` and ``jobs.progress`` (NULL for existing jobs); schema_version 0005."""
    op.create_table(
        "servers",
        sa.Column("server_id", sa.String(64), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("spark_master", sa.Text(), nullable=False),
        sa.Column("started_at", _ts(), nullable=False),
        sa.Column("heartbeat_at", _ts(), nullable=False),
        sa.PrimaryKeyConstraint("server_id", name=op.f("pk_servers")),
    )
    leases = op.create_table(
        "leases",
        sa.Column("name", sa.String(32), nullable=False),
        sa.Column("holder", sa.String(64), nullable=True),
        sa.Column("expires_at", _ts(), nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_leases")),
    )
    op.bulk_insert(leases, [{"name": "manager", "holder": None, "expires_at": None}])
    op.add_column("jobs", sa.Column("owner", sa.String(64), nullable=True))
    op.add_column("jobs", sa.Column("progress", sa.Text(), nullable=True))
    _set_schema_version("0005")


def downgrade() -> None:
    """Drop the columns and tables (owners, progress, servers and the lease are lost);
    schema_version 0004."""
    op.drop_column("jobs", "progress")
    op.drop_column("jobs", "owner")
    op.drop_table("leases")
    op.drop_table("servers")
    _set_schema_version("0004")
