"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
Create Date: ${create_date}

Migrations are frozen history: never import streamjob.catalog.models here; spell out
the tables, columns and constraint names (see NAMING_CONVENTION in models.py). On
SQLite, batch operations that copy a table are safe only because streamjob migrates
with foreign keys off (streamjob.catalog.migrations.foreign_keys_off): a downgrade or
upgrade run another way must do the same, or DROP TABLE cascades to referencing rows.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
${imports if imports else ""}

# revision identifiers, used by Alembic.
revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = ${repr(branch_labels)}
depends_on = ${repr(depends_on)}


def upgrade() -> None:
    ${upgrades if upgrades else "pass"}


def downgrade() -> None:
    ${downgrades if downgrades else "pass"}
