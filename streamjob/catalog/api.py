"""The one API to the catalog database: streams, tables, jobs, runs and checkpoints.

:class:`Catalog` is safe to use from several threads of one process and from several
processes sharing the database (a SQLite file on one machine, PostgreSQL across hosts):

* every method is one short transaction and returns plain frozen records
  (:mod:`streamjob.catalog.records`), never ORM objects;
* on SQLite, writing transactions start with ``BEGIN IMMEDIATE`` (WAL journal,
  30 s busy timeout), so writers queue instead of failing on a lock upgrade;
* on PostgreSQL, operations on one stream/table name are serialized with transaction
  advisory locks (streams and tables share a name space per database, and dropping an
  object must not race with a job being created on it), and the job row is locked while
  a run or checkpoint is written for it;
* database errors become :class:`~streamjob.exceptions.CatalogError` naming the catalog
  URL (password masked) and a one-line reason.

A running job writes runs and checkpoints by its ``uid``: writes for a uid the catalog no
longer holds (the job was dropped, perhaps recreated) are silently ignored.
"""

from __future__ import annotations

import importlib.util
import os
import re
import threading
import uuid
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, delete, event, insert, select, text, update
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import StaticPool

from streamjob.catalog.models import (
    SCHEMA_VERSION,
    Base,
    CatalogMeta,
    Checkpoint,
    Job,
    JobDependency,
    Run,
    Stream,
    Table,
)
from streamjob.catalog.records import (
    CHECKPOINT_STATUSES,
    DEPENDENCY_KINDS,
    DEPENDENCY_ROLES,
    DESIRED_STATES,
    JOB_STATUSES,
    RUN_STATUSES,
    CheckpointInfo,
    Dependency,
    JobInfo,
    RunInfo,
    StreamInfo,
    TableInfo,
)
from streamjob.exceptions import (
    CatalogError,
    ObjectExistsError,
    ObjectInUseError,
    ObjectNotFoundError,
)

__all__ = ["Catalog"]

#: Execution option marking a connection whose transaction writes (SQLite: BEGIN IMMEDIATE).
_WRITE = "streamjob_catalog_write"
#: Advisory-lock key (PostgreSQL) taken while the schema is created or checked.
_SCHEMA_LOCK_KEY = 0x5354524A4F42  # "STRJOB"
#: SQLite busy timeout, milliseconds.
BUSY_TIMEOUT_MS = 30000


class _UnchangedType:
    def __repr__(self) -> str:
        return "<unchanged>"


_UNCHANGED: Any = _UnchangedType()


class _Conflict(CatalogError):
    """A unique or foreign-key constraint refused a write (a concurrent writer won)."""


# Engines are disposed (without closing the parent's connections) in a forked child, so
# that a Catalog created before os.fork() opens fresh connections in the child.
_ENGINES: "weakref.WeakSet[Engine]" = weakref.WeakSet()


def _dispose_after_fork() -> None:
    for engine in list(_ENGINES):
        engine.dispose(close=False)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_dispose_after_fork)


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _mask_raw_url(url: str) -> str:
    return re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    msg = str(orig if orig is not None else exc).strip()
    line = msg.splitlines()[0].strip() if msg else ""
    return line or type(orig if orig is not None else exc).__name__


def _qualified(database: str, name: str) -> str:
    return f"{database}.{name}"


def _check_choice(what: str, value: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise ValueError(f"invalid {what} {value!r}; expected one of {', '.join(allowed)}")
    return value


class Catalog:
    """The catalog database: streams, tables, jobs, runs and retained checkpoints.

    Args:
        url: an SQLAlchemy URL, e.g. ``sqlite:////home/me/.streamjob/catalog.db`` or
            ``postgresql+psycopg://user:pw@host/db``. A SQLite file's parent directory
            is created. ``postgresql://`` uses psycopg (3) when psycopg2 is absent.

    The schema is created when missing. Raises :class:`CatalogError` naming the URL
    (password masked) if the URL is invalid, its driver is missing, the database cannot
    be reached, or it holds a catalog of another schema version.
    """

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
                Path(db).parent.mkdir(parents=True, exist_ok=True)
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
                    cursor.execute("PRAGMA journal_mode = WAL")
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
        """Create the tables when missing and check ``schema_version``.

        The single place that prepares the database (alembic migrations replace it).
        Concurrent first starts are serialized (SQLite write lock, PostgreSQL advisory
        lock) and DDL runs in the same transaction.
        """
        with self._serial or nullcontext():
            with self._engine.connect() as conn:
                conn = conn.execution_options(**{_WRITE: True})
                with conn.begin():
                    if self._backend == "postgresql":
                        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SCHEMA_LOCK_KEY})
                    Base.metadata.create_all(conn)
                    version = conn.scalar(
                        select(CatalogMeta.value).where(CatalogMeta.key == "schema_version")
                    )
                    if version is None:
                        conn.execute(
                            insert(CatalogMeta).values(key="schema_version", value=SCHEMA_VERSION)
                        )
                    elif version != SCHEMA_VERSION:
                        raise CatalogError(
                            f"catalog {self._masked} has schema version {version}; this "
                            f"streamjob reads version {SCHEMA_VERSION}"
                        )

    @property
    def url(self) -> str:
        """The catalog URL with any password masked."""
        return self._masked

    @property
    def dialect(self) -> str:
        """The database backend name: ``sqlite`` or ``postgresql``."""
        return self._backend

    def close(self) -> None:
        """Close the connection pool. The object stays usable (it reconnects on use)."""
        self._engine.dispose()

    def __enter__(self) -> "Catalog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Catalog({self._masked!r})"

    # ------------------------------------------------------------ transactions

    @contextmanager
    def _tx(self, write: bool = False) -> Iterator[Session]:
        """One transaction; commits at the end of the block, rolls back on error.

        Integrity errors surface as :class:`_Conflict`, other database errors as
        :class:`CatalogError`; errors raised by the block itself pass unchanged.
        """
        with self._serial or nullcontext():
            try:
                with self._sessions() as session, session.begin():
                    if write:
                        session.connection(execution_options={_WRITE: True})
                    yield session
            except IntegrityError as exc:
                raise _Conflict(f"catalog {self._masked}: {_first_line(exc)}") from exc
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

    @staticmethod
    def _job_id_for_uid(session: Session, job_uid: str) -> int | None:
        # FOR KEY SHARE (PostgreSQL): a concurrent DROP waits until this write commits,
        # and a DROP that committed first makes this return None.
        return session.scalar(select(Job.id).where(Job.uid == job_uid).with_for_update(key_share=True))

    # ---------------------------------------------------------- streams, tables

    def create_stream(
        self,
        database: str,
        name: str,
        columns: Sequence[Mapping[str, Any]],
        properties: Mapping[str, Any],
        row_format: Mapping[str, Any] | None = None,
        query: str | None = None,
        if_not_exists: bool = False,
    ) -> bool:
        """Register a stream (a source; with ``query``, a derived stream).

        ``columns`` is a list of ``{"name": ..., "type": ...}`` dicts; ``properties`` the
        TBLPROPERTIES; ``row_format`` the ROW FORMAT clause as a dict.

        Returns True if created, False if a stream of that name existed and
        ``if_not_exists``. Raises :class:`ObjectExistsError` if the stream exists (without
        ``if_not_exists``) or if a *table* of that name exists in the database (streams and
        tables share one name space; ``if_not_exists`` does not hide that).
        """
        values = dict(
            columns=[dict(c) for c in columns],
            properties=dict(properties),
            row_format=dict(row_format) if row_format is not None else None,
            query=query,
        )
        return self._create_object(Stream, Table, database, name, values, if_not_exists)

    def create_table(
        self,
        database: str,
        name: str,
        columns: Sequence[Mapping[str, Any]],
        properties: Mapping[str, Any],
        row_format: Mapping[str, Any] | None = None,
        stored_as: str | None = None,
        location: str | None = None,
        if_not_exists: bool = False,
    ) -> bool:
        """Register a table (a sink, or static data). Same contract as :meth:`create_stream`:
        True if created, False if it existed and ``if_not_exists``; :class:`ObjectExistsError`
        otherwise, and always when a *stream* of that name exists."""
        values = dict(
            columns=[dict(c) for c in columns],
            properties=dict(properties),
            row_format=dict(row_format) if row_format is not None else None,
            stored_as=stored_as,
            location=location,
        )
        return self._create_object(Table, Stream, database, name, values, if_not_exists)

    def _create_object(
        self,
        model: type[Stream] | type[Table],
        other: type[Stream] | type[Table],
        database: str,
        name: str,
        values: dict[str, Any],
        if_not_exists: bool,
    ) -> bool:
        kind, other_kind = model.__tablename__[:-1], other.__tablename__[:-1]
        qname = _qualified(database, name)
        try:
            with self._tx(write=True) as session:
                self._lock_names(session, [(database, name)])
                if session.scalar(
                    select(other.id).where(other.database == database, other.name == name)
                ) is not None:
                    raise ObjectExistsError(
                        f"cannot create {kind} {qname}: a {other_kind} of that name exists"
                    )
                if session.scalar(
                    select(model.id).where(model.database == database, model.name == name)
                ) is not None:
                    if if_not_exists:
                        return False
                    raise ObjectExistsError(f"{kind} {qname} already exists")
                session.add(model(database=database, name=name, created_at=_now(), **values))
        except _Conflict:
            # a concurrent creator won the race (unique constraint)
            if if_not_exists:
                return False
            raise ObjectExistsError(f"{kind} {qname} already exists") from None
        return True

    def get_stream(self, database: str, name: str) -> StreamInfo | None:
        """The stream ``database.name``, or None."""
        with self._tx() as session:
            row = session.scalars(
                select(Stream).where(Stream.database == database, Stream.name == name)
            ).first()
            return self._stream_info(row) if row is not None else None

    def get_table(self, database: str, name: str) -> TableInfo | None:
        """The table ``database.name``, or None."""
        with self._tx() as session:
            row = session.scalars(
                select(Table).where(Table.database == database, Table.name == name)
            ).first()
            return self._table_info(row) if row is not None else None

    def list_streams(self, database: str | None = None) -> list[StreamInfo]:
        """All streams (of ``database`` if given), sorted by database then name."""
        with self._tx() as session:
            stmt = select(Stream).order_by(Stream.database, Stream.name)
            if database is not None:
                stmt = stmt.where(Stream.database == database)
            return [self._stream_info(r) for r in session.scalars(stmt)]

    def list_tables(self, database: str | None = None) -> list[TableInfo]:
        """All tables (of ``database`` if given), sorted by database then name."""
        with self._tx() as session:
            stmt = select(Table).order_by(Table.database, Table.name)
            if database is not None:
                stmt = stmt.where(Table.database == database)
            return [self._table_info(r) for r in session.scalars(stmt)]

    def drop_stream(self, database: str, name: str, if_exists: bool = False) -> bool:
        """Drop a stream. Returns True if dropped, False if missing and ``if_exists``.

        Raises :class:`ObjectNotFoundError` if missing (without ``if_exists``), and
        :class:`ObjectInUseError` naming the job(s) if any job depends on it, e.g.
        ``cannot drop stream default.flights: used by job default.delays (drop the job first)``.
        """
        return self._drop_object(Stream, Table, database, name, if_exists)

    def drop_table(self, database: str, name: str, if_exists: bool = False) -> bool:
        """Drop a table; same contract as :meth:`drop_stream`."""
        return self._drop_object(Table, Stream, database, name, if_exists)

    def _drop_object(
        self,
        model: type[Stream] | type[Table],
        other: type[Stream] | type[Table],
        database: str,
        name: str,
        if_exists: bool,
    ) -> bool:
        kind, other_kind = model.__tablename__[:-1], other.__tablename__[:-1]
        qname = _qualified(database, name)
        with self._tx(write=True) as session:
            self._lock_names(session, [(database, name)])
            row_id = session.scalar(
                select(model.id).where(model.database == database, model.name == name).with_for_update()
            )
            if row_id is None:
                if if_exists:
                    return False
                hint = ""
                if session.scalar(
                    select(other.id).where(other.database == database, other.name == name)
                ) is not None:
                    hint = f" ({qname} is a {other_kind}: use DROP {other_kind.upper()})"
                raise ObjectNotFoundError(f"{kind} {qname} does not exist{hint}")
            users = session.execute(
                select(Job.database, Job.name)
                .join(JobDependency, JobDependency.job_id == Job.id)
                .where(
                    JobDependency.kind == kind,
                    JobDependency.database == database,
                    JobDependency.name == name,
                )
                .distinct()
                .order_by(Job.database, Job.name)
            ).all()
            if users:
                names = ", ".join(_qualified(db, n) for db, n in users)
                if len(users) == 1:
                    raise ObjectInUseError(
                        f"cannot drop {kind} {qname}: used by job {names} (drop the job first)"
                    )
                raise ObjectInUseError(
                    f"cannot drop {kind} {qname}: used by jobs {names} (drop the jobs first)"
                )
            session.execute(delete(model).where(model.id == row_id))
        return True

    @staticmethod
    def _stream_info(row: Stream) -> StreamInfo:
        return StreamInfo(
            database=row.database,
            name=row.name,
            columns=tuple(dict(c) for c in row.columns or ()),
            properties=dict(row.properties or {}),
            row_format=dict(row.row_format) if row.row_format is not None else None,
            query=row.query,
            created_at=row.created_at,
        )

    @staticmethod
    def _table_info(row: Table) -> TableInfo:
        return TableInfo(
            database=row.database,
            name=row.name,
            columns=tuple(dict(c) for c in row.columns or ()),
            properties=dict(row.properties or {}),
            row_format=dict(row.row_format) if row.row_format is not None else None,
            stored_as=row.stored_as,
            location=row.location,
            created_at=row.created_at,
        )

    # -------------------------------------------------------------------- jobs

    def create_job(
        self,
        database: str,
        name: str,
        query: str,
        properties: Mapping[str, Any],
        dependencies: Iterable[Sequence[str]],
        if_not_exists: bool = False,
        check_dependencies: bool = True,
    ) -> bool:
        """Register a job (desired state STOPPED, status CREATED, a fresh uid).

        ``dependencies`` are ``(kind, database, name, role)`` tuples, kind ``stream`` or
        ``table``, role ``source``, ``sink`` or ``static``; duplicates are dropped.

        Returns True if created, False if the job existed and ``if_not_exists``. Raises
        :class:`ObjectExistsError` if it exists (without ``if_not_exists``);
        :class:`ObjectNotFoundError` if a dependency is not in the catalog (checked in the
        same transaction, so a concurrent DROP cannot slip in between; pass
        ``check_dependencies=False`` to skip); ValueError for a bad kind or role.
        """
        deps: list[Dependency] = []
        for dep in dependencies:
            kind, dep_db, dep_name, role = dep
            _check_choice("dependency kind", kind, DEPENDENCY_KINDS)
            _check_choice("dependency role", role, DEPENDENCY_ROLES)
            item = (kind, dep_db, dep_name, role)
            if item not in deps:
                deps.append(item)
        qname = _qualified(database, name)
        try:
            with self._tx(write=True) as session:
                self._lock_names(session, [(d[1], d[2]) for d in deps])
                if session.scalar(
                    select(Job.id).where(Job.database == database, Job.name == name)
                ) is not None:
                    if if_not_exists:
                        return False
                    raise ObjectExistsError(f"streamjob {qname} already exists")
                if check_dependencies:
                    for kind, dep_db, dep_name, _role in deps:
                        model = Stream if kind == "stream" else Table
                        if session.scalar(
                            select(model.id).where(model.database == dep_db, model.name == dep_name)
                        ) is None:
                            raise ObjectNotFoundError(
                                f"{kind} {_qualified(dep_db, dep_name)} does not exist"
                            )
                now = _now()
                job = Job(
                    uid=uuid.uuid4().hex,
                    database=database,
                    name=name,
                    query=query,
                    properties=dict(properties),
                    desired_state="STOPPED",
                    status="CREATED",
                    attempts=0,
                    last_error=None,
                    created_at=now,
                    updated_at=now,
                )
                session.add(job)
                session.flush()
                session.add_all(
                    JobDependency(job_id=job.id, kind=k, database=d, name=n, role=r)
                    for k, d, n, r in deps
                )
        except _Conflict:
            if if_not_exists:
                return False
            raise ObjectExistsError(f"streamjob {qname} already exists") from None
        return True

    def get_job(self, database: str, name: str) -> JobInfo | None:
        """The job ``database.name`` (with its dependencies), or None."""
        with self._tx() as session:
            job = session.scalars(select(Job).where(Job.database == database, Job.name == name)).first()
            return self._job_info(session, job) if job is not None else None

    def get_job_by_uid(self, job_uid: str) -> JobInfo | None:
        """The job whose current incarnation has this uid, or None (dropped)."""
        with self._tx() as session:
            job = session.scalars(select(Job).where(Job.uid == job_uid)).first()
            return self._job_info(session, job) if job is not None else None

    def require_job(self, database: str, name: str) -> JobInfo:
        """Like :meth:`get_job`, but raises :class:`ObjectNotFoundError`
        (``streamjob default.x does not exist``) if missing."""
        job = self.get_job(database, name)
        if job is None:
            raise ObjectNotFoundError(f"streamjob {_qualified(database, name)} does not exist")
        return job

    def list_jobs(self, database: str | None = None) -> list[JobInfo]:
        """All jobs (of ``database`` if given), sorted by database then name."""
        with self._tx() as session:
            stmt = select(Job).order_by(Job.database, Job.name)
            if database is not None:
                stmt = stmt.where(Job.database == database)
            jobs = list(session.scalars(stmt))
            deps: dict[int, list[Dependency]] = {}
            dep_stmt = select(JobDependency).order_by(JobDependency.id)
            if database is not None:
                dep_stmt = dep_stmt.join(Job, Job.id == JobDependency.job_id).where(Job.database == database)
            for dep in session.scalars(dep_stmt):
                deps.setdefault(dep.job_id, []).append((dep.kind, dep.database, dep.name, dep.role))
            return [self._job_info(session, job, deps.get(job.id, [])) for job in jobs]

    def update_job(
        self,
        database: str,
        name: str,
        *,
        status: str | None = None,
        desired_state: str | None = None,
        last_error: str | None = _UNCHANGED,
        attempts: int | None = None,
        properties: Mapping[str, Any] | None = None,
        uid: str | None = None,
    ) -> JobInfo | None:
        """Change a job's fields (those given) and set ``updated_at``; returns the job.

        ``last_error`` is left unchanged unless given (None clears it); ``properties``
        replaces the whole dict. With ``uid``, the update applies only if the job still
        has that uid, and is silently ignored otherwise (returns None) — for writers that
        may race with DROP and re-CREATE. Raises :class:`ObjectNotFoundError` if the job
        does not exist (without ``uid``), ValueError for an unknown status or state.
        """
        if status is not None:
            _check_choice("job status", status, JOB_STATUSES)
        if desired_state is not None:
            _check_choice("desired state", desired_state, DESIRED_STATES)
        with self._tx(write=True) as session:
            job = session.scalars(
                select(Job).where(Job.database == database, Job.name == name).with_for_update()
            ).first()
            if job is None or (uid is not None and job.uid != uid):
                if uid is not None:
                    return None
                raise ObjectNotFoundError(f"streamjob {_qualified(database, name)} does not exist")
            if status is not None:
                job.status = status
            if desired_state is not None:
                job.desired_state = desired_state
            if last_error is not _UNCHANGED:
                job.last_error = last_error
            if attempts is not None:
                job.attempts = attempts
            if properties is not None:
                job.properties = dict(properties)
            job.updated_at = _now()
            session.flush()
            return self._job_info(session, job)

    def drop_job(self, database: str, name: str, if_exists: bool = False) -> JobInfo | None:
        """Delete a job with its dependencies, runs and checkpoints (one transaction).

        Returns the deleted job, or None if it did not exist and ``if_exists``; raises
        :class:`ObjectNotFoundError` if it did not exist otherwise. (Stopping the job and
        purging its checkpoint files is the manager's work.)
        """
        with self._tx(write=True) as session:
            job = session.scalars(
                select(Job).where(Job.database == database, Job.name == name).with_for_update()
            ).first()
            if job is None:
                if if_exists:
                    return None
                raise ObjectNotFoundError(f"streamjob {_qualified(database, name)} does not exist")
            info = self._job_info(session, job)
            job_id = job.id
            for model in (Checkpoint, Run, JobDependency):
                session.execute(delete(model).where(model.job_id == job_id))
            session.execute(delete(Job).where(Job.id == job_id))
            return info

    @staticmethod
    def _job_info(session: Session, job: Job, deps: Sequence[Dependency] | None = None) -> JobInfo:
        if deps is None:
            deps = [
                (d.kind, d.database, d.name, d.role)
                for d in session.scalars(
                    select(JobDependency).where(JobDependency.job_id == job.id).order_by(JobDependency.id)
                )
            ]
        return JobInfo(
            uid=job.uid,
            database=job.database,
            name=job.name,
            query=job.query,
            properties=dict(job.properties or {}),
            desired_state=job.desired_state,
            status=job.status,
            attempts=job.attempts,
            last_error=job.last_error,
            created_at=job.created_at,
            updated_at=job.updated_at,
            dependencies=tuple(deps),
        )

    # -------------------------------------------------------------------- runs

    def start_run(self, job_uid: str, attempt: int) -> int | None:
        """Record the start of a run (status RUNNING, started now); returns the run id,
        or None if no job has this uid (dropped: ignored)."""
        with self._tx(write=True) as session:
            job_id = self._job_id_for_uid(session, job_uid)
            if job_id is None:
                return None
            run = Run(job_id=job_id, attempt=attempt, started_at=_now(), status="RUNNING")
            session.add(run)
            session.flush()
            return run.id

    def end_run(self, run_id: int | None, status: str, cause: str | None = None) -> None:
        """Record the end of a run: ``status`` STOPPED, FAILED or FINISHED, ended now,
        with ``cause`` (the error or reason). A run that is unknown (its job was dropped)
        or already ended is left alone. ValueError for another status."""
        _check_choice("run end status", status, tuple(s for s in RUN_STATUSES if s != "RUNNING"))
        if run_id is None:
            return
        with self._tx(write=True) as session:
            session.execute(
                update(Run)
                .where(Run.id == run_id, Run.ended_at.is_(None))
                .values(status=status, cause=cause, ended_at=_now())
            )

    def list_runs(self, job_uid: str) -> list[RunInfo]:
        """The runs of the job with this uid, oldest first ([] if unknown)."""
        with self._tx() as session:
            rows = session.scalars(
                select(Run).join(Job, Job.id == Run.job_id).where(Job.uid == job_uid).order_by(Run.id)
            )
            return [
                RunInfo(
                    id=r.id,
                    job_uid=job_uid,
                    attempt=r.attempt,
                    started_at=r.started_at,
                    ended_at=r.ended_at,
                    status=r.status,
                    cause=r.cause,
                )
                for r in rows
            ]

    # ------------------------------------------------------------- checkpoints

    def record_checkpoint(
        self,
        job_uid: str,
        checkpoint_id: int,
        *,
        started_at: datetime,
        ended_at: datetime | None,
        duration_ms: int | None,
        source_offsets: Any,
        input_rows: int,
        state_rows: int | None = None,
        status: str = "COMPLETED",
        fingerprint: str | None = None,
        retained: int,
    ) -> None:
        """Record a checkpoint and keep only the job's ``retained`` highest ids.

        Idempotent: recording a checkpoint id again updates that row (e.g. EXPIRED then
        LATE). The upsert and the retention purge are one transaction. Ignored if no job
        has this uid. ``source_offsets`` must be JSON-serializable; naive datetimes are
        taken as UTC. ValueError for an unknown status or ``retained`` < 1.
        """
        _check_choice("checkpoint status", status, CHECKPOINT_STATUSES)
        if retained < 1:
            raise ValueError(f"retained must be at least 1, got {retained}")
        values = dict(
            started_at=started_at,
            ended_at=ended_at,
            duration_ms=duration_ms,
            source_offsets=source_offsets,
            input_rows=input_rows,
            state_rows=state_rows,
            status=status,
            fingerprint=fingerprint,
        )
        with self._tx(write=True) as session:
            job_id = self._job_id_for_uid(session, job_uid)
            if job_id is None:
                return
            session.execute(self._upsert_checkpoint(job_id, int(checkpoint_id), values))
            threshold = session.scalar(
                select(Checkpoint.checkpoint_id)
                .where(Checkpoint.job_id == job_id)
                .order_by(Checkpoint.checkpoint_id.desc())
                .offset(retained - 1)
                .limit(1)
            )
            if threshold is not None:
                session.execute(
                    delete(Checkpoint).where(
                        Checkpoint.job_id == job_id, Checkpoint.checkpoint_id < threshold
                    )
                )

    def _upsert_checkpoint(self, job_id: int, checkpoint_id: int, values: dict[str, Any]) -> Any:
        if self._backend == "postgresql":
            from sqlalchemy.dialects.postgresql import insert as dialect_insert
        elif self._backend == "sqlite":
            from sqlalchemy.dialects.sqlite import insert as dialect_insert
        else:  # pragma: no cover - only SQLite and PostgreSQL are supported
            raise CatalogError(f"catalog {self._masked}: unsupported database {self._backend}")
        stmt = dialect_insert(Checkpoint).values(job_id=job_id, checkpoint_id=checkpoint_id, **values)
        return stmt.on_conflict_do_update(
            index_elements=[Checkpoint.job_id, Checkpoint.checkpoint_id],
            set_={k: stmt.excluded[k] for k in values},
        )

    def truncate_checkpoints(self, job_uid: str, after: int) -> int:
        """Delete the job's checkpoint records with id > ``after`` (``after=-1``: all);
        returns how many. For ``START ... FROM CHECKPOINT n`` and for starting fresh.
        Ignored (0) if no job has this uid."""
        with self._tx(write=True) as session:
            job_id = self._job_id_for_uid(session, job_uid)
            if job_id is None:
                return 0
            result = session.execute(
                delete(Checkpoint).where(Checkpoint.job_id == job_id, Checkpoint.checkpoint_id > after)
            )
            return int(result.rowcount or 0)

    def list_checkpoints(self, job_uid: str) -> list[CheckpointInfo]:
        """The retained checkpoints of the job with this uid, ascending by id."""
        with self._tx() as session:
            rows = session.scalars(
                select(Checkpoint)
                .join(Job, Job.id == Checkpoint.job_id)
                .where(Job.uid == job_uid)
                .order_by(Checkpoint.checkpoint_id)
            )
            return [self._checkpoint_info(job_uid, r) for r in rows]

    def latest_checkpoint(self, job_uid: str) -> CheckpointInfo | None:
        """The job's checkpoint with the highest id, or None."""
        with self._tx() as session:
            row = session.scalars(
                select(Checkpoint)
                .join(Job, Job.id == Checkpoint.job_id)
                .where(Job.uid == job_uid)
                .order_by(Checkpoint.checkpoint_id.desc())
                .limit(1)
            ).first()
            return self._checkpoint_info(job_uid, row) if row is not None else None

    @staticmethod
    def _checkpoint_info(job_uid: str, row: Checkpoint) -> CheckpointInfo:
        return CheckpointInfo(
            job_uid=job_uid,
            checkpoint_id=row.checkpoint_id,
            started_at=row.started_at,
            ended_at=row.ended_at,
            duration_ms=row.duration_ms,
            source_offsets=row.source_offsets,
            input_rows=row.input_rows,
            state_rows=row.state_rows,
            status=row.status,
            fingerprint=row.fingerprint,
        )
