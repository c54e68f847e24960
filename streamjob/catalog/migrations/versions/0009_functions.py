"""functions: the user functions registered by CREATE FUNCTION.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27

``functions``: one row per user function (issue 31, docs/functions.md): its database and
name (unique together), kind (``python``), source reference (``module:callable``),
location (the module file's real path, or ``dist==version``), return type, parameter
names (JSON text; NULL: any number), code hash (SHA-256 hex), the principal that registered it, and
whether it was written TEMPORARY. Jobs calling a function name it in
``job_dependencies`` (kind ``function``), which needs no change.
``catalog_meta.schema_version`` becomes ``'0009'``.

Frozen history: does not import streamjob.catalog.models.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
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
    """Create ``functions``; schema_version 0009."""
    op.create_table(
        "functions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("database", sa.String(255), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("location", sa.Text(), nullable=False),
        sa.Column("return_type", sa.Text(), nullable=True),
        sa.Column("parameters", sa.Text(), nullable=True),
        sa.Column("code_hash", sa.String(64), nullable=False),
        sa.Column("owner", sa.String(255), nullable=True),
        sa.Column("temporary", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_functions")),
        sa.UniqueConstraint("database", "name", name=op.f("uq_functions_database_name")),
    )
    _set_schema_version("0009")


def downgrade() -> None:
    """Drop ``functions`` (registered functions are forgotten); schema_version 0008."""
    op.drop_table("functions")
    _set_schema_version("0008")
