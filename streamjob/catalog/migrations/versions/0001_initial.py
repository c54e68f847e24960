"""The initial catalog schema (what streamjob created before it used alembic).

Revision ID: 0001
Revises:
Create Date: 2024-06-01

Tables ``catalog_meta``, ``streams``, ``tables``, ``jobs``, ``job_dependencies``,
``runs`` and ``checkpoints``, with constraint and index names as models.NAMING_CONVENTION
gives them, and the row ``catalog_meta.schema_version = '1'`` that streamjob versions
before alembic wrote and check. A catalog made by those versions is this revision: it
is stamped 0001 instead of running this upgrade.

Frozen history: does not import streamjob.catalog.models.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

NAME = sa.String(255)


def _ts() -> sa.DateTime:
    # streamjob's UTCDateTime: timestamp with time zone (PostgreSQL), naive UTC (SQLite)
    return sa.DateTime(timezone=True)


def _id() -> sa.Column:
    return sa.Column("id", sa.Integer(), nullable=False)


def _job_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["job_id"], ["jobs.id"], name=op.f(f"fk_{table}_job_id_jobs"), ondelete="CASCADE"
    )


def upgrade() -> None:
    """Create the catalog tables and ``catalog_meta.schema_version = '1'``."""
    meta = op.create_table(
        "catalog_meta",
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_catalog_meta")),
    )
    op.create_table(
        "streams",
        _id(),
        sa.Column("database", NAME, nullable=False),
        sa.Column("name", NAME, nullable=False),
        sa.Column("columns", sa.JSON(), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=False),
        sa.Column("row_format", sa.JSON(), nullable=True),
        sa.Column("query", sa.Text(), nullable=True),
        sa.Column("created_at", _ts(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_streams")),
        sa.UniqueConstraint("database", "name", name=op.f("uq_streams_database_name")),
    )
    op.create_table(
        "tables",
        _id(),
        sa.Column("database", NAME, nullable=False),
        sa.Column("name", NAME, nullable=False),
        sa.Column("columns", sa.JSON(), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=False),
        sa.Column("row_format", sa.JSON(), nullable=True),
        sa.Column("stored_as", sa.String(32), nullable=True),
        sa.Column("location", sa.Text(), nullable=True),
        sa.Column("created_at", _ts(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tables")),
        sa.UniqueConstraint("database", "name", name=op.f("uq_tables_database_name")),
    )
    op.create_table(
        "jobs",
        _id(),
        sa.Column("uid", sa.String(32), nullable=False),
        sa.Column("database", NAME, nullable=False),
        sa.Column("name", NAME, nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("properties", sa.JSON(), nullable=False),
        sa.Column("desired_state", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", _ts(), nullable=False),
        sa.Column("updated_at", _ts(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
        sa.UniqueConstraint("database", "name", name=op.f("uq_jobs_database_name")),
        sa.UniqueConstraint("uid", name=op.f("uq_jobs_uid")),
    )
    op.create_table(
        "checkpoints",
        _id(),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("checkpoint_id", sa.BigInteger(), nullable=False),
        sa.Column("started_at", _ts(), nullable=False),
        sa.Column("ended_at", _ts(), nullable=True),
        sa.Column("duration_ms", sa.BigInteger(), nullable=True),
        sa.Column("source_offsets", sa.JSON(), nullable=True),
        sa.Column("input_rows", sa.BigInteger(), nullable=False),
        sa.Column("state_rows", sa.BigInteger(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("fingerprint", sa.String(255), nullable=True),
        _job_fk("checkpoints"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_checkpoints")),
        sa.UniqueConstraint(
            "job_id", "checkpoint_id", name=op.f("uq_checkpoints_job_id_checkpoint_id")
        ),
    )
    op.create_table(
        "job_dependencies",
        _id(),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("database", NAME, nullable=False),
        sa.Column("name", NAME, nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        _job_fk("job_dependencies"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_dependencies")),
    )
    op.create_index(
        op.f("ix_job_dependencies_job_id"), "job_dependencies", ["job_id"], unique=False
    )
    op.create_index(
        op.f("ix_job_dependencies_kind_database_name"),
        "job_dependencies",
        ["kind", "database", "name"],
        unique=False,
    )
    op.create_table(
        "runs",
        _id(),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("started_at", _ts(), nullable=False),
        sa.Column("ended_at", _ts(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("cause", sa.Text(), nullable=True),
        _job_fk("runs"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
    )
    op.create_index(op.f("ix_runs_job_id"), "runs", ["job_id"], unique=False)
    op.bulk_insert(meta, [{"key": "schema_version", "value": "1"}])


def downgrade() -> None:
    """Drop every catalog table (and its rows)."""
    op.drop_index(op.f("ix_runs_job_id"), table_name="runs")
    op.drop_table("runs")
    op.drop_index(op.f("ix_job_dependencies_kind_database_name"), table_name="job_dependencies")
    op.drop_index(op.f("ix_job_dependencies_job_id"), table_name="job_dependencies")
    op.drop_table("job_dependencies")
    op.drop_table("checkpoints")
    op.drop_table("jobs")
    op.drop_table("tables")
    op.drop_table("streams")
    op.drop_table("catalog_meta")
