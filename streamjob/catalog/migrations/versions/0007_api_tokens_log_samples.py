"""The HTTP API's bearer tokens, the statement log, and progress samples.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25

``api_tokens``: one row per bearer token of ``streamjob server --http`` (its SHA-256
hash, never the token; a role, viewer or operator). ``statement_log``: who executed
which kind of statement on which object, and whether it succeeded (issue 15: every
statement records who submitted it; the text is not kept, it may carry secrets).
``progress_samples``: a job's rates and lag over time, for the console's charts.
``checkpoints.state_bytes``: the bytes of state after a checkpoint (NULL for older rows).
``catalog_meta.schema_version`` becomes ``'0007'``.

Frozen history: does not import streamjob.catalog.models.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

def UTCDateTime() -> sa.DateTime:  # noqa: N802 - reads as the models' type
    # streamjob's UTCDateTime: timestamp with time zone (PostgreSQL), naive UTC (SQLite)
    return sa.DateTime(timezone=True)


_meta = sa.table("catalog_meta", sa.column("key", sa.String), sa.column("value", sa.Text))


def _set_schema_version(value: str) -> None:
    op.execute(
        _meta.update().where(_meta.c.key == op.inline_literal("schema_version"))
        .values(value=op.inline_literal(value))
    )


def upgrade() -> None:
    """Create the three tables, add ``checkpoints.state_bytes``; schema_version 0007."""
    op.create_table(
        "api_tokens",
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("last_used_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_api_tokens_token_hash")),
    )
    op.create_table(
        "statement_log",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("principal", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("object", sa.String(511), nullable=True),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_statement_log")),
    )
    op.create_index(op.f("ix_statement_log_at"), "statement_log", ["at"])
    op.create_table(
        "progress_samples",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("batch_id", sa.BigInteger(), nullable=True),
        sa.Column("input_rows_per_s", sa.Float(), nullable=True),
        sa.Column("processed_rows_per_s", sa.Float(), nullable=True),
        sa.Column("lag_records", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE",
                                name=op.f("fk_progress_samples_job_id_jobs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_progress_samples")),
    )
    op.create_index(op.f("ix_progress_samples_job_id_at"), "progress_samples", ["job_id", "at"])
    op.add_column("checkpoints", sa.Column("state_bytes", sa.BigInteger(), nullable=True))
    _set_schema_version("0007")


def downgrade() -> None:
    """Drop the three tables and ``checkpoints.state_bytes`` (tokens, log, samples and
    state sizes are lost); schema_version 0006."""
    op.drop_column("checkpoints", "state_bytes")
    op.drop_index("ix_progress_samples_job_id_at", table_name="progress_samples")
    op.drop_table("progress_samples")
    op.drop_index("ix_statement_log_at", table_name="statement_log")
    op.drop_table("statement_log")
    op.drop_table("api_tokens")
    _set_schema_version("0006")
