"""databases: the databases declared by CREATE DATABASE.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25

``databases``: one row per database declared by ``CREATE DATABASE`` (issue 16); its name
and when it was created. Streams, tables and jobs keep naming their database in their
own ``database`` column, as before: a database also exists while it holds objects, and
``default`` always exists, so catalogs made before this revision need no rows.
``catalog_meta.schema_version`` becomes ``'0008'``.

Frozen history: does not import streamjob.catalog.models.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_meta = sa.table("catalog_meta", sa.column("key", sa.String), sa.column("value", sa.Text))


def _set_schema_version(value: str) -> None:
    op.execute(
        _meta.update().where(_meta.c.key == op.inline_literal("schema_version"))
        .values(value=op.inline_literal(value))
    )


def upgrade() -> None:
    """Create ``databases``; schema_version 0008."""
    op.create_table(
        "databases",
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_databases")),
    )
    _set_schema_version("0008")


def downgrade() -> None:
    """Drop ``databases`` (declared but empty databases are forgotten); schema_version 0007."""
    op.drop_table("databases")
    _set_schema_version("0007")
