"""Versioned schema migrations of the catalog database (alembic, run from code).

The revisions live in ``versions/`` (``0001`` the initial schema, ``0002`` adds
``jobs.session_properties``, ...); the database records its revision in alembic's
``alembic_version`` table. :class:`~streamjob.catalog.engine.CatalogEngine` calls
:func:`is_at_head` on every open (cheap: one query, the script directory is read once
per process) and, when the database is behind, :func:`upgrade_to_head` inside its
locked write transaction. No ``alembic.ini`` is needed: :func:`alembic_config` builds
the configuration in code; Python logging is left alone and nothing is printed.

A catalog made before streamjob used alembic (its tables, ``catalog_meta.schema_version
= '1'`` and no ``alembic_version``) is revision 0001: it is stamped and upgraded.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection

from streamjob.exceptions import CatalogError

__all__ = [
    "LEGACY_SCHEMA_VERSION",
    "SCRIPT_LOCATION",
    "alembic_config",
    "current_revision",
    "foreign_keys_off",
    "head_revision",
    "is_at_head",
    "known_revisions",
    "upgrade_to_head",
]

#: The directory of ``env.py`` and ``versions/`` (alembic's ``script_location``).
SCRIPT_LOCATION = str(Path(__file__).resolve().parent)
#: ``catalog_meta.schema_version`` of catalogs made before alembic (= revision 0001).
LEGACY_SCHEMA_VERSION = "1"
_LEGACY_REVISION = "0001"
#: Tables of revision 0001 (a database holding some of them is not a fresh one).
_CATALOG_TABLES = frozenset(
    {"catalog_meta", "streams", "tables", "jobs", "job_dependencies", "runs", "checkpoints"}
)

_lock = threading.Lock()
_script: tuple[ScriptDirectory, str, frozenset[str]] | None = None


def alembic_config(connection: Connection | None = None) -> Config:
    """An alembic :class:`~alembic.config.Config` for the catalog migrations, built in
    code (no ini file, output discarded), with ``connection`` passed to ``env.py`` as
    ``attributes["connection"]``. For ``alembic.command`` calls, e.g. in tests:
    ``command.downgrade(alembic_config(conn), "0001")`` inside ``with engine.begin()``.
    """
    cfg = Config(stdout=io.StringIO())
    cfg.set_main_option("script_location", SCRIPT_LOCATION.replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def _scripts() -> tuple[ScriptDirectory, str, frozenset[str]]:
    global _script
    with _lock:
        if _script is None:
            script = ScriptDirectory.from_config(alembic_config())
            head = script.get_current_head()
            if head is None:  # pragma: no cover - packaging error
                raise CatalogError(f"no catalog migrations found in {SCRIPT_LOCATION}")
            _script = (script, head, frozenset(s.revision for s in script.walk_revisions()))
        return _script


def head_revision() -> str:
    """The newest schema revision this streamjob knows (e.g. ``"0002"``); read once per
    process. Raises CatalogError if the migration scripts are missing or branched."""
    return _scripts()[1]


def known_revisions() -> frozenset[str]:
    """Every revision id of this streamjob's migrations."""
    return _scripts()[2]


def current_revision(connection: Connection) -> str | None:
    """The database's revision (``alembic_version``), None when it has none.

    Raises CatalogError if the database records several revisions (alembic branches,
    which streamjob never makes).
    """
    heads = MigrationContext.configure(connection).get_current_heads()
    if len(heads) > 1:
        raise CatalogError(f"the database records several schema revisions: {', '.join(heads)}")
    return heads[0] if heads else None


def is_at_head(connection: Connection) -> bool:
    """True if the database is at :func:`head_revision` (nothing to migrate)."""
    heads = MigrationContext.configure(connection).get_current_heads()
    return heads == (head_revision(),)


def upgrade_to_head(connection: Connection, masked_url: str) -> bool:
    """Bring the database on ``connection`` to the head revision, in the transaction the
    connection is in (the caller holds the write lock and commits). Returns True if it
    migrated anything, False if the database was at head already.

    A fresh database gets every revision; a pre-alembic catalog (``schema_version`` 1)
    is stamped 0001 first. Raises :class:`CatalogError` naming ``masked_url``, changing
    nothing, if the database has a revision this streamjob does not know (a newer
    streamjob migrated it), a pre-alembic schema version other than 1, or some catalog
    tables but no schema version at all.
    """
    try:
        current = current_revision(connection)
    except CatalogError as exc:
        raise CatalogError(f"catalog {masked_url}: {exc}") from None
    head = head_revision()
    if current == head:
        return False
    if current is not None and current not in known_revisions():
        raise CatalogError(
            f"catalog {masked_url} has schema revision {current}, which this streamjob "
            f"does not know (it knows up to {head}); upgrade streamjob"
        )
    cfg = alembic_config(connection)
    if current is None and _is_legacy(connection, masked_url):
        command.stamp(cfg, _LEGACY_REVISION)
    command.upgrade(cfg, "head")
    if connection.dialect.name == "sqlite":
        broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
        if broken:
            raise CatalogError(
                f"catalog {masked_url}: migrating to {head} would break {len(broken)} "
                f"foreign key(s), first in table {broken[0][0]}; nothing was changed"
            )
    return True


@contextmanager
def foreign_keys_off(connection: Connection) -> Iterator[None]:
    """SQLite: foreign-key enforcement off on ``connection`` for the block; no-op on
    other databases. Enter it outside a transaction (SQLite ignores the pragma inside
    one; RuntimeError otherwise) and run the migration transaction inside it.

    SQLite alters most things by a batch "move and copy": a new table is filled and the
    old one dropped, and with foreign keys on that DROP deletes every row referencing it
    by ON DELETE CASCADE (all runs, checkpoints and dependencies for ``jobs``). The
    keys are checked (``PRAGMA foreign_key_check``) by :func:`upgrade_to_head` instead.
    """
    if connection.dialect.name != "sqlite":
        yield
        return
    if connection.in_transaction():
        raise RuntimeError("foreign_keys_off() must be entered outside a transaction")
    raw = connection.connection.driver_connection
    raw.execute("PRAGMA foreign_keys = OFF")
    try:
        yield
    finally:
        raw.execute("PRAGMA foreign_keys = ON")


def _is_legacy(connection: Connection, masked_url: str) -> bool:
    """True for a catalog made before alembic, False for an empty database."""
    present = _CATALOG_TABLES.intersection(inspect(connection).get_table_names())
    if not present:
        return False
    version = None
    if "catalog_meta" in present:
        version = connection.scalar(
            text("SELECT value FROM catalog_meta WHERE key = 'schema_version'")
        )
    if version == LEGACY_SCHEMA_VERSION:
        missing = _CATALOG_TABLES - present
        if not missing:
            return True
        raise CatalogError(
            f"catalog {masked_url} has schema version {version} but lacks tables "
            f"{', '.join(sorted(missing))}"
        )
    if version is not None:
        raise CatalogError(
            f"catalog {masked_url} has schema version {version}, which this streamjob "
            f"does not know; upgrade streamjob"
        )
    raise CatalogError(
        f"catalog {masked_url} has tables {', '.join(sorted(present))} but no schema "
        f"version; it is not a streamjob catalog"
    )
