"""job_leases and the servers' share: many active servers, one owner per job (issue 33).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27

``job_leases``: one row per job that a sharing server (``streamjob server --share``)
placed: the job's uid, the server holding the lease (``holder``, NULL once released),
its fencing ``epoch`` (incremented each time another server takes the lease: the
compare-and-set of every renewal), when it expires (the database's clock), when it was
taken and why (``reason``: ``new``, ``orphaned``, ``released``). ``servers`` gains the
share a server declares: ``shares`` (it runs a share of the jobs under job leases),
``max_jobs`` (NULL: no limit) and ``labels`` (comma-separated, NULL: none).
``catalog_meta.schema_version`` becomes ``'0012'``.

Frozen history: does not import streamjob.catalog.models.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_meta = sa.table("catalog_meta", sa.column("key", sa.String), sa.column("value", sa.Text))


def UTCDateTime() -> sa.DateTime:  # noqa: N802 - reads as the models' type
    # streamjob's UTCDateTime: timestamp with time zone (PostgreSQL), naive UTC (SQLite)
    return sa.DateTime(timezone=True)


def _set_schema_version(value: str) -> None:
    op.execute(
        _meta.update().where(_meta.c.key == op.inline_literal("schema_version"))
        .values(value=op.inline_literal(value))
    )


def upgrade() -> None:
    """Create ``job_leases``, add the servers' share columns; schema_version 0012."""
    op.create_table(
        "job_leases",
        sa.Column("job_uid", sa.String(64), nullable=False),
        sa.Column("holder", sa.String(64), nullable=True),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.Column("acquired_at", UTCDateTime(), nullable=True),
        sa.Column("reason", sa.String(32), nullable=True),
        sa.PrimaryKeyConstraint("job_uid", name=op.f("pk_job_leases")),
    )
    op.create_index(op.f("ix_job_leases_holder"), "job_leases", ["holder"])
    with op.batch_alter_table("servers") as batch:
        batch.add_column(sa.Column("shares", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))
        batch.add_column(sa.Column("max_jobs", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("labels", sa.Text(), nullable=True))
    _set_schema_version("0012")


def downgrade() -> None:
    """Drop ``job_leases`` and the share columns; schema_version 0011."""
    with op.batch_alter_table("servers") as batch:
        batch.drop_column("labels")
        batch.drop_column("max_jobs")
        batch.drop_column("shares")
    op.drop_index(op.f("ix_job_leases_holder"), table_name="job_leases")
    op.drop_table("job_leases")
    _set_schema_version("0011")
