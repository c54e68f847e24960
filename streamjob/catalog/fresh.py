"""A fresh catalog database made at the head revision in one step (issue 19).

Alembic's recipe for a new database: create the schema from the models and *stamp* it at
the head revision, instead of running every migration from the first. For streamjob's
catalog that is :func:`create_at_head`: ``create_all`` of :mod:`streamjob.catalog.models`,
the rows the migrations insert (``catalog_meta.schema_version``, the ``manager`` lease)
and ``alembic_version`` at :data:`~streamjob.catalog.models.SCHEMA_VERSION`, written
without importing alembic (a cold ``streamjob run`` in a fresh home spent about 0.2 s
importing alembic and running the eight revisions, under load 0.4 s). A database with
any table goes through :func:`~streamjob.catalog.migrations.upgrade_to_head` as before.

``tests/unit/test_catalog_fresh.py`` checks, on SQLite and PostgreSQL, that the database
made here equals the migrated one: every table's columns (in order, with types,
nullability and defaults), keys, foreign keys, unique constraints, indexes, check
constraints and rows. A new migration that inserts rows or whose result differs from the
models fails that test until this module and the models follow it.
"""

from __future__ import annotations

from sqlalchemy import Column, MetaData, PrimaryKeyConstraint, String, Table, inspect
from sqlalchemy.engine import Connection

from streamjob.catalog.models import MANAGER_LEASE, SCHEMA_VERSION, Base, CatalogMeta, Lease

#: Alembic's version table, as alembic's ``MigrationContext`` creates it.
_VERSION_TABLE = Table("alembic_version", MetaData(),
                       Column("version_num", String(32), nullable=False),
                       PrimaryKeyConstraint("version_num", name="alembic_version_pkc"))


def is_empty(connection: Connection) -> bool:
    """True if the database (the connection's default schema) has no table at all."""
    return not inspect(connection).get_table_names()


def create_at_head(connection: Connection) -> None:
    """Create the catalog's tables, their initial rows and ``alembic_version`` at the
    head revision on ``connection``, in the transaction it is in (the caller holds the
    schema's write lock and commits). Call it only on an empty database
    (:func:`is_empty`).

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the database refused a statement (the caller's
            transaction then rolls back: nothing is left half made).
    """
    Base.metadata.create_all(connection, checkfirst=False)
    _VERSION_TABLE.create(connection)
    connection.execute(_VERSION_TABLE.insert(), {"version_num": SCHEMA_VERSION})
    connection.execute(CatalogMeta.__table__.insert(),
                       {"key": "schema_version", "value": SCHEMA_VERSION})
    connection.execute(Lease.__table__.insert(),
                       {"name": MANAGER_LEASE, "holder": None, "expires_at": None})
