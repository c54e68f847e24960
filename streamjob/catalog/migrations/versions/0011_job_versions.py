"""job_versions: every version of a job's query.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27

``job_versions``: one row per version of a job's query (issue 30, docs/upgrades.md),
unique by job and version: the query text, its JOBPROPERTIES, when and by whom (the
statement log's principal) it was made, and the upgrade class it was applied under.
Each existing job gets its current query as version 1 (when: its creation; by whom:
unknown). Rows go with their job (ON DELETE CASCADE; DROP STREAMJOB deletes them).
``catalog_meta.schema_version`` becomes ``'0011'``.

Frozen history: does not import streamjob.catalog.models.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
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
    """Create ``job_versions`` with version 1 of every job; schema_version 0011."""
    op.create_table(
        "job_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("principal", sa.String(255), nullable=True),
        sa.Column("change", sa.String(32), nullable=True),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name=op.f("fk_job_versions_job_id_jobs"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_versions")),
        sa.UniqueConstraint("job_id", "version", name=op.f("uq_job_versions_job_id_version")),
    )
    op.execute(sa.text(
        "INSERT INTO job_versions (job_id, version, query, properties, created_at) "
        "SELECT id, 1, query, properties, created_at FROM jobs"))
    _set_schema_version("0011")


def downgrade() -> None:
    """Drop ``job_versions`` (the jobs keep their current query); schema_version 0010."""
    op.drop_table("job_versions")
    _set_schema_version("0010")
