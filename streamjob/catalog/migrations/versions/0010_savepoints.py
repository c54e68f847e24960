"""savepoints: checkpoints the user keeps, outside retention.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27

``savepoints``: one row per savepoint (issue 30, docs/checkpoints.md), unique by job and
name: the job incarnation's uid and checkpoint epoch it was taken in, the checkpoint
(batch) id, the query fingerprint, the sources' end offsets (JSON), the folder holding
its files, when its batch completed, when it was taken and by whom. Rows go with their
job (ON DELETE CASCADE); DROP STREAMJOB deletes the files first.
``catalog_meta.schema_version`` becomes ``'0010'``.

Frozen history: does not import streamjob.catalog.models.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
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
    """Create ``savepoints``; schema_version 0010."""
    op.create_table(
        "savepoints",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("job_uid", sa.String(64), nullable=False),
        sa.Column("epoch", sa.String(64), nullable=False),
        sa.Column("checkpoint_id", sa.BigInteger(), nullable=False),
        sa.Column("fingerprint", sa.String(255), nullable=True),
        sa.Column("source_offsets", sa.JSON(), nullable=True),
        sa.Column("location", sa.Text(), nullable=False),
        sa.Column("taken_at", UTCDateTime(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("owner", sa.String(255), nullable=True),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name=op.f("fk_savepoints_job_id_jobs"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_savepoints")),
        sa.UniqueConstraint("job_id", "name", name=op.f("uq_savepoints_job_id_name")),
    )
    _set_schema_version("0010")


def downgrade() -> None:
    """Drop ``savepoints`` (their rows are forgotten; their folders stay); schema_version 0009."""
    op.drop_table("savepoints")
    _set_schema_version("0009")
