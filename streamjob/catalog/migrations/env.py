"""alembic environment of the streamjob catalog.

streamjob runs the migrations itself (:func:`streamjob.catalog.migrations.upgrade_to_head`,
called when a :class:`~streamjob.catalog.api.Catalog` opens) on a connection that is
already inside its locked write transaction, passed as ``config.attributes["connection"]``;
alembic then neither begins nor commits a transaction of its own. For development
(``alembic revision --autogenerate`` from code or an ini file) a ``sqlalchemy.url``
main option works too. Logging is left as the application configured it.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from streamjob.catalog.models import Base

config = context.config
target_metadata = Base.metadata


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite has almost no ALTER: autogenerate renders batch operations for it
        # (a table copy: safe only with foreign keys off, see foreign_keys_off()).
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise RuntimeError("the streamjob catalog migrations run online only (no --sql mode)")

_connection = config.attributes.get("connection")
if _connection is not None:
    _run(_connection)
else:
    _url = config.get_main_option("sqlalchemy.url")
    if not _url:
        raise RuntimeError(
            "streamjob catalog migrations need config.attributes['connection'] "
            "or the sqlalchemy.url option"
        )
    _engine = create_engine(_url)
    try:
        with _engine.connect() as _conn:
            _run(_conn)
            _conn.commit()
    finally:
        _engine.dispose()
