"""The catalog's database connection: engine, schema and transactions.

:class:`CatalogEngine` is the base of :class:`~streamjob.catalog.api.Catalog`; it turns
the catalog URL into an SQLAlchemy engine (``postgresql://`` on psycopg 3 when psycopg2
is absent, ``~`` expanded and the parent directory created for a SQLite file, one
serialized connection for an in-memory SQLite database), installs the SQLite connection
events (WAL journal, busy timeout, foreign keys, ``BEGIN IMMEDIATE`` for writers),
brings the schema to this code's revision (alembic migrations of
:mod:`streamjob.catalog.migrations`; an empty database is made at it in one step,
:mod:`streamjob.catalog.fresh`), and runs each method's transaction (:meth:`_tx`),
turning database errors into :class:`~streamjob.exceptions.CatalogError` naming the URL
with its password masked. The method groups (:mod:`~streamjob.catalog.objects`,
:mod:`~streamjob.catalog.jobs`, :mod:`~streamjob.catalog.checkpoints`) build on it and
share the small helpers at the end of this module.
"""

from __future__ import annotations

import importlib.util
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, select, text
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from streamjob.catalog.models import SCHEMA_VERSION, Job
from streamjob.exceptions import CatalogError

__all__ = [
    "BUSY_TIMEOUT_MS",
    "NOTIFY_CHANNEL",
    "CatalogEngine",
    "Conflict",
    "check_choice",
    "now_utc",
    "qualified",
]

#: Execution option marking a connection whose transaction writes (SQLite: BEGIN IMMEDIATE).
_WRITE = "streamjob_catalog_write"
#: Advisory-lock key (PostgreSQL) taken while the schema is migrated.
_SCHEMA_LOCK_KEY = 0x5354524A4F42  # "STRJOB"
#: SQLite busy timeout, milliseconds.
BUSY_TIMEOUT_MS = 30000
#: PostgreSQL LISTEN/NOTIFY channel of catalog changes (see ``CatalogEngine._notify``).
NOTIFY_CHANNEL = "streamjob_catalog"


class Conflict(CatalogError):
    """A unique or foreign-key constraint refused a write (a concurrent writer won)."""


# Engines are disposed (without closing the parent's connections) in a forked child, so
# that a Catalog created before os.fork() opens fresh connections in the child.
_ENGINES: "weakref.WeakSet[Engine]" = weakref.WeakSet()


def _dispose_after_fork() -> None:
    for engine in list(_ENGINES):
        engine.dispose(close=False)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_dispose_after_fork)


def _create_private(path: Path) -> None:
    """Create a new SQLite catalog file owner-only (0600; its -wal and -shm files take the
    same mode): it holds job definitions, properties and errors (DESIGN §9). An existing
    file keeps its mode."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def _mask_raw_url(url: str) -> str:
    from ..sensitive import mask_url

    return mask_url(url)


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    msg = str(orig if orig is not None else exc).strip()
    line = msg.splitlines()[0].strip() if msg else ""
    return line or type(orig if orig is not None else exc).__name__


def _enable_wal(cursor: Any) -> None:
    # Turning a new database file to WAL takes an exclusive lock, and SQLite answers
    # "database is locked" at once (no busy handler) to a connection racing another
    # one for it, e.g. two processes opening a new catalog: retry up to the busy timeout.
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    delay = 0.001
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


class CatalogEngine:
    """The connection half of :class:`~streamjob.catalog.api.Catalog` (see there for
    the URL and the errors raised when opening)."""

    def __init__(self, url: str) -> None:
        try:
            parsed = make_url(url)
        except (ArgumentError, ValueError) as exc:
            raise CatalogError(f"invalid catalog URL {_mask_raw_url(str(url))!r}: {exc}") from None
        parsed = self._adjust_url(parsed)
        self._url = parsed
        self._masked = parsed.render_as_string(hide_password=True)
        self._backend = parsed.get_backend_name()
        # an in-memory SQLite database lives in one connection: serialize its use.
        self._serial: threading.RLock | None = None
        self._tx_bound_ms: int | None = None  # bound_transactions
        try:
            self._engine = self._create_engine(parsed)
        except (ArgumentError, NoSuchModuleError, ImportError) as exc:
            raise CatalogError(f"cannot open catalog {self._masked}: {exc}") from None
        except OSError as exc:
            raise CatalogError(f"cannot open catalog {self._masked}: {exc}") from None
        _ENGINES.add(self._engine)
        self._sessions = sessionmaker(self._engine, expire_on_commit=False)
        try:
            self._ensure_schema()
        except CatalogError:
            self._engine.dispose()
            raise
        except SQLAlchemyError as exc:
            self._engine.dispose()
            raise CatalogError(
                f"cannot reach catalog database {self._masked}: {_first_line(exc)}"
            ) from None

    def bound_transactions(self, ms: int) -> None:
        """PostgreSQL: from now on, a transaction of this catalog's connections that
        stays idle (between two statements) for more than ``ms`` milliseconds is ended by
        the database (``idle_in_transaction_session_timeout``), and a statement waits at
        most ``ms`` for a row lock (``lock_timeout``; then CatalogError). A sharing
        server (issue 33) frozen (SIGSTOP) in the middle of a transaction thus cannot
        keep the rows the other servers need to take its jobs over. Clones
        (``clone()``) keep the bound. A no-op on SQLite (one machine). Raises ValueError
        for a non-positive ``ms``."""
        if isinstance(ms, bool) or not isinstance(ms, int) or ms <= 0:
            raise ValueError(f"ms must be a positive int, got {ms!r}")
        self._tx_bound_ms = ms
        if self._backend != "postgresql":
            return

        @event.listens_for(self._engine, "connect")
        def _bound(dbapi_connection, _record) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute(f"SET idle_in_transaction_session_timeout = {int(ms)}")
            cursor.execute(f"SET lock_timeout = {int(ms)}")
            cursor.close()
            dbapi_connection.commit()

        self._engine.dispose()  # pooled connections made before have no bound

    @property
    def url(self) -> str:
        """The catalog URL with any password masked."""
        return self._masked

    @property
    def dialect(self) -> str:
        """The database backend name: ``sqlite`` or ``postgresql``."""
        return self._backend

    # ------------------------------------------------------------------ engine

    @staticmethod
    def _adjust_url(url: URL) -> URL:
        if url.drivername == "postgresql" and importlib.util.find_spec("psycopg2") is None:
            if importlib.util.find_spec("psycopg") is not None:
                url = url.set(drivername="postgresql+psycopg")
        if url.get_backend_name() == "sqlite":
            db = url.database or ""
            if db.startswith("~"):
                url = url.set(database=str(Path(db).expanduser()))
        return url

    def _create_engine(self, url: URL) -> Engine:
        kwargs: dict[str, Any] = {}
        if self._backend == "sqlite":
            db = url.database or ""
            uri = str(url.query.get("uri", "")).lower() in ("true", "1")
            memory = db in ("", ":memory:") or (uri and "mode=memory" in db) or db.startswith(
                "file::memory:"
            )
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000}
            if memory:
                kwargs["poolclass"] = StaticPool
                self._serial = threading.RLock()
            elif not uri:
                Path(db).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                _create_private(Path(db))
            engine = create_engine(url, **kwargs)
            self._install_sqlite_events(engine, wal=not memory)
            return engine
        if self._backend == "postgresql":
            kwargs["pool_pre_ping"] = True
            if url.get_driver_name() in ("psycopg", "psycopg2") and "connect_timeout" not in url.query:
                kwargs["connect_args"] = {"connect_timeout": 10}
        return create_engine(url, **kwargs)

    @staticmethod
    def _install_sqlite_events(engine: Engine, *, wal: bool) -> None:
        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            # SQLAlchemy, not the sqlite3 module, emits BEGIN (see _on_begin).
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                if wal:
                    _enable_wal(cursor)
                    cursor.execute("PRAGMA synchronous = NORMAL")
                cursor.execute("PRAGMA foreign_keys = ON")
            finally:
                cursor.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Any) -> None:
            # A writer takes the write lock up front: a deferred transaction that reads
            # and then writes fails at once with SQLITE_BUSY when another writer
            # committed in between, whatever the busy timeout.
            if conn.get_execution_options().get(_WRITE):
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                conn.exec_driver_sql("BEGIN")

    def _ensure_schema(self) -> None:
        """Bring the database to the schema revision of this code (alembic migrations).

        The single place that prepares the database. Fast path: a read of
        ``alembic_version`` (no lock); at head, nothing else happens. Otherwise the
        migrations run in one write transaction (SQLite ``BEGIN IMMEDIATE``, foreign keys
        off for table copies; PostgreSQL advisory lock), where the revision is read
        again: concurrent first starts migrate once, the others find the head. See
        :func:`~streamjob.catalog.migrations.upgrade_to_head` for the errors.
        """
        with self._serial or nullcontext():
            with self._engine.connect() as conn:
                try:
                    with conn.begin():
                        versions = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
                except SQLAlchemyError:  # no alembic_version table yet
                    versions = []
                if versions == [SCHEMA_VERSION]:
                    return  # at head: alembic is not even imported
                conn = conn.execution_options(**{_WRITE: True})
                if not versions and self._create_fresh(conn):
                    return  # an empty database, made at head: alembic is not imported
                from streamjob.catalog import migrations

                with migrations.foreign_keys_off(conn), conn.begin():
                    self._lock_schema(conn)
                    migrations.upgrade_to_head(conn, self._masked)

    def _create_fresh(self, conn) -> bool:
        """If the database is empty, make it at the head revision from the models
        (:mod:`streamjob.catalog.fresh`) in one write transaction under the schema lock
        (as :meth:`_ensure_schema`'s migrations: concurrent first starts make it once)
        and return True; False, changing nothing, if it has any table."""
        from streamjob.catalog import fresh

        with conn.begin():
            self._lock_schema(conn)
            if not fresh.is_empty(conn):
                return False
            fresh.create_at_head(conn)
            return True

    def _lock_schema(self, conn) -> None:
        """PostgreSQL: the schema's advisory lock for the transaction (SQLite's writer
        transaction, ``BEGIN IMMEDIATE``, is the lock there)."""
        if self._backend == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SCHEMA_LOCK_KEY})

    # ------------------------------------------------------------ transactions

    @contextmanager
    def _tx(self, write: bool = False) -> Iterator[Session]:
        """One transaction; commits at the end of the block, rolls back on error.

        Integrity errors surface as :class:`Conflict`, other database errors as
        :class:`CatalogError`; errors raised by the block itself pass unchanged.
        """
        with self._serial or nullcontext():
            try:
                with self._sessions() as session, session.begin():
                    if write:
                        session.connection(execution_options={_WRITE: True})
                    yield session
            except IntegrityError as exc:
                raise Conflict(f"catalog {self._masked}: {_first_line(exc)}") from exc
            except SQLAlchemyError as exc:
                raise CatalogError(f"catalog {self._masked}: {_first_line(exc)}") from exc

    def _lock_names(self, session: Session, names: Iterable[tuple[str, str]]) -> None:
        """Serialize operations on these stream/table names (PostgreSQL; SQLite writers
        are serialized anyway). Locks are taken in sorted order and released at commit."""
        if self._backend != "postgresql":
            return
        for database, name in sorted(set(names)):
            session.execute(
                text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"),
                {"k": f"streamjob.object:{database}.{name}"},
            )

    def _notify(self, session: Session, kind: str) -> None:
        """Tell listeners (PostgreSQL ``LISTEN streamjob_catalog``) that ``kind``
        (``stream``, ``table``, ``job``, ``lease``) changed, with payload
        ``<schema>:<kind>``: ``pg_notify`` in the write's
        own transaction, so it is delivered at commit and never for a rollback. A no-op
        on SQLite, whose watchers poll (:mod:`~streamjob.catalog.watch`)."""
        if self._backend == "postgresql":
            # the payload names the catalog's schema: catalogs in several schemas of one
            # database share the channel, and each watcher wakes for its own only
            session.execute(text("SELECT pg_notify(:c, current_schema() || ':' || :k)"),
                            {"c": NOTIFY_CHANNEL, "k": kind})

    def _db_now(self, session: Session) -> datetime:
        """The database's clock (PostgreSQL ``clock_timestamp()``, one clock for every
        host sharing the catalog); on SQLite, which serves one machine, this host's.
        Aware UTC."""
        if self._backend == "postgresql":
            value = session.scalar(text("SELECT clock_timestamp()"))
            if isinstance(value, datetime):
                return value.astimezone(timezone.utc) if value.tzinfo else value.replace(
                    tzinfo=timezone.utc)
        return now_utc()

    @staticmethod
    def _job_id_for_uid(session: Session, job_uid: str) -> int | None:
        # FOR KEY SHARE (PostgreSQL): a concurrent DROP waits until this write commits,
        # and a DROP that committed first makes this return None.
        return session.scalar(select(Job.id).where(Job.uid == job_uid).with_for_update(key_share=True))


# ------------------------------------------------------------------ helpers for the method groups


def now_utc() -> datetime:
    """The current time, timezone-aware (UTC)."""
    return datetime.now(timezone.utc)


def qualified(database: str, name: str) -> str:
    """``database.name``, as written in messages."""
    return f"{database}.{name}"


def check_choice(what: str, value: str, allowed: Sequence[str]) -> str:
    """``value`` if it is one of ``allowed``; ValueError naming ``what`` otherwise."""
    if value not in allowed:
        raise ValueError(f"invalid {what} {value!r}; expected one of {', '.join(allowed)}")
    return value
