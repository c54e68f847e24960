"""SQLAlchemy 2.x models of the catalog database (portable: SQLite and PostgreSQL).

Tables: ``streams`` and ``tables`` (one name space per database, enforced by the
Catalog API), ``jobs`` with their ``job_dependencies``, ``runs``, ``checkpoints``
(the retained ones), ``catalog_meta`` holding ``schema_version``, and (revision 0005)
the job managers: ``servers`` (one row per running ``streamjob server``) and ``leases``
(the row ``manager`` names the one server that runs the jobs); (revision 0007) the HTTP
API's ``api_tokens`` (hashes only), the ``statement_log`` of who submitted what, and
``progress_samples`` (a job's progress over time, for the console's charts); (revision
0008) the ``databases`` declared by CREATE DATABASE.

The database schema is changed only by the alembic migrations of
:mod:`streamjob.catalog.migrations`: a change here needs a new revision there, and a test
checks that the migrations at head equal these models. An empty database is made from
these models at the head revision in one step (:mod:`streamjob.catalog.fresh`, alembic's
"create, then stamp" recipe), and a test checks that it equals the migrated one.

Only the :class:`~streamjob.catalog.api.Catalog` modules (``engine``, ``objects``,
``jobs``, ``checkpoints``, ``servers``) use these classes; everyone else gets the records of
:mod:`streamjob.catalog.records`. Constraint names follow a fixed naming convention
so that alembic migrations can refer to them.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Float,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator
from streamjob.catalog.records import CheckpointStatus, DesiredState, JobStatus

#: The schema revision these models describe: the alembic head revision (a test checks
#: it). The migrations mirror it into ``catalog_meta.schema_version`` ("1" at revision
#: 0001, the value streamjob wrote before it used alembic).
SCHEMA_VERSION = "0015"

NAME_LENGTH = 255
SERVER_ID_LENGTH = 64
#: The name of the lease row whose holder is the active job manager.
MANAGER_LEASE = "manager"

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp stored in UTC and always read back as an aware UTC datetime.

    SQLite has no time zones (values are stored naive, in UTC); PostgreSQL stores
    ``timestamp with time zone``. A naive datetime given on write is taken as UTC.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected a datetime, got {type(value).__name__}: {value!r}")
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        value = value.astimezone(timezone.utc)
        if dialect.name == "sqlite":
            value = value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


def _json() -> Any:
    # none_as_null: a Python None is stored as SQL NULL, not as the JSON text 'null'.
    return JSON(none_as_null=True)


def to_json_text(value: Any) -> str | None:
    """What a JSON text column (``tables.partitioned_by``, ``jobs.malformed_counts``)
    stores for ``value``: compact JSON with sorted keys, or NULL for an empty value."""
    if not value:
        return None
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def from_json_text(text_value: str | None, default: Any) -> Any:
    """The value of a JSON text column: ``default`` for NULL, and for text that is not
    JSON of ``default``'s kind (a damaged row never makes a catalog read fail)."""
    if text_value is None:
        return default
    try:
        value = json.loads(text_value)
    except (TypeError, ValueError):
        return default
    return value if isinstance(value, type(default)) else default


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class CatalogMeta(Base):
    """Key/value facts about the catalog itself (``schema_version``, for streamjob
    versions before alembic; the revision itself is in ``alembic_version``)."""

    __tablename__ = "catalog_meta"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class Database(Base):
    """A database declared by CREATE DATABASE (revision 0008). Objects name their
    database themselves; ``default`` and databases holding objects exist without a row."""

    __tablename__ = "databases"

    name: Mapped[str] = mapped_column(String(NAME_LENGTH), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Function(Base):
    """A user function (CREATE FUNCTION, revision 0009; docs/functions.md): its
    ``source`` reference (``module:callable``), ``kind`` (``python``), ``location`` (the
    real path of its module file, or ``dist==version`` of an installed package),
    ``return_type`` (RETURNS, or what the callable declares), ``parameters``, ``code_hash`` (SHA-256 hex
    of the module file's bytes or of the package version), ``owner`` the principal that
    registered it (``local:USER``, ``token:NAME``) and ``temporary`` as written."""

    __tablename__ = "functions"
    __table_args__ = (UniqueConstraint("database", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    database: Mapped[str] = mapped_column(String(NAME_LENGTH))
    name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    kind: Mapped[str] = mapped_column(String(16))
    source: Mapped[str] = mapped_column(Text)
    location: Mapped[str] = mapped_column(Text)
    return_type: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: JSON text of the callable's parameter names; NULL: it takes any number (``*args``).
    parameters: Mapped[str | None] = mapped_column(Text, nullable=True)
    code_hash: Mapped[str] = mapped_column(String(64))
    owner: Mapped[str | None] = mapped_column(String(NAME_LENGTH), nullable=True)
    temporary: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Stream(Base):
    """A source stream, or a derived stream (``query`` set)."""

    __tablename__ = "streams"
    __table_args__ = (UniqueConstraint("database", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    database: Mapped[str] = mapped_column(String(NAME_LENGTH))
    name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    columns: Mapped[list[dict[str, Any]]] = mapped_column(_json())
    properties: Mapped[dict[str, Any]] = mapped_column(_json())
    row_format: Mapped[dict[str, Any] | None] = mapped_column(_json(), nullable=True)
    query: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Table(Base):
    """A sink table, or a table read as static data."""

    __tablename__ = "tables"
    __table_args__ = (UniqueConstraint("database", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    database: Mapped[str] = mapped_column(String(NAME_LENGTH))
    name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    columns: Mapped[list[dict[str, Any]]] = mapped_column(_json())
    properties: Mapped[dict[str, Any]] = mapped_column(_json())
    row_format: Mapped[dict[str, Any] | None] = mapped_column(_json(), nullable=True)
    stored_as: Mapped[str | None] = mapped_column(String(32), nullable=True)
    location: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    #: JSON text of the partition column names (revision 0004); NULL = not partitioned.
    partitioned_by: Mapped[str | None] = mapped_column(Text, nullable=True)


class Job(Base):
    """A stream job; ``uid`` identifies this incarnation (new on every CREATE).

    ``session_properties`` are the session's ``SET`` values when CREATE STREAMJOB ran
    (revision 0002; NULL for jobs created before it, read as ``{}``);
    ``malformed_counts`` the malformed source records skipped per stream (revision 0004);
    ``owner`` the server id of the job manager running it, NULL when none does, and
    ``progress`` the JSON text of its latest progress (revision 0005);
    ``missing_columns`` per stream and declared column, the micro-batches in which no
    record carried the column (revision 0006).
    """

    __tablename__ = "jobs"
    __table_args__ = (UniqueConstraint("database", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    uid: Mapped[str] = mapped_column(String(32), unique=True)
    database: Mapped[str] = mapped_column(String(NAME_LENGTH))
    name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    query: Mapped[str] = mapped_column(Text)
    properties: Mapped[dict[str, Any]] = mapped_column(_json())
    desired_state: Mapped[str] = mapped_column(String(16), default=DesiredState.STOPPED)
    status: Mapped[str] = mapped_column(String(16), default=JobStatus.CREATED)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    session_properties: Mapped[dict[str, Any] | None] = mapped_column(_json(), nullable=True)
    expired_checkpoints: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: JSON text ``{stream: count}`` of malformed records skipped (revision 0004); NULL = none.
    malformed_counts: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: ``servers.server_id`` of the job manager running the job (revision 0005); NULL = none.
    owner: Mapped[str | None] = mapped_column(String(SERVER_ID_LENGTH), nullable=True)
    #: JSON text of the latest progress (revision 0005; see ``Catalog.update_progress``).
    progress: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: JSON text ``{stream: {column: batches}}`` (revision 0006); NULL = none counted.
    missing_columns: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: JSON text of a query switch in progress (revision 0013; ``Catalog.begin_switch``);
    #: NULL = none.
    pending_switch: Mapped[str | None] = mapped_column(Text, nullable=True)


class JobDependency(Base):
    """A stream or table a job reads (``source``, ``static``) or writes (``sink``)."""

    __tablename__ = "job_dependencies"
    __table_args__ = (Index(None, "kind", "database", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    database: Mapped[str] = mapped_column(String(NAME_LENGTH))
    name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    role: Mapped[str] = mapped_column(String(16))


class Run(Base):
    """One run of a job's query, from start to its end (stop, failure or completion)."""

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    status: Mapped[str] = mapped_column(String(16))
    cause: Mapped[str | None] = mapped_column(Text, nullable=True)


class Checkpoint(Base):
    """A retained checkpoint of a job (checkpoint_id = Spark batch id)."""

    __tablename__ = "checkpoints"
    __table_args__ = (UniqueConstraint("job_id", "checkpoint_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    checkpoint_id: Mapped[int] = mapped_column(BigInteger)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    duration_ms: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    source_offsets: Mapped[Any] = mapped_column(_json(), nullable=True)
    input_rows: Mapped[int] = mapped_column(BigInteger, default=0)
    state_rows: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    status: Mapped[str] = mapped_column(String(16), default=CheckpointStatus.COMPLETED)
    fingerprint: Mapped[str | None] = mapped_column(String(255), nullable=True)
    #: bytes of state after it (revision 0007); NULL for stateless jobs and older rows.
    #: Last, as the migration added it (a fresh catalog's columns are in the same order:
    #: fresh.py).
    state_bytes: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class Savepoint(Base):
    """A savepoint of a job (revision 0010; docs/checkpoints.md): a checkpoint the user
    keeps, outside retention. ``name`` is unique per job; ``job_uid`` and ``epoch`` name
    the incarnation and checkpoint epoch it was taken in, ``checkpoint_id`` the batch,
    ``fingerprint`` the query version (checkpoint/fingerprint.py), ``source_offsets`` the
    sources' end offsets, ``location`` the folder holding its files, ``taken_at`` when its
    batch completed, ``created_at`` and ``owner`` (the principal) when and by whom."""

    __tablename__ = "savepoints"
    __table_args__ = (UniqueConstraint("job_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(NAME_LENGTH))
    job_uid: Mapped[str] = mapped_column(String(64))
    epoch: Mapped[str] = mapped_column(String(64))
    checkpoint_id: Mapped[int] = mapped_column(BigInteger)
    fingerprint: Mapped[str | None] = mapped_column(String(255), nullable=True)
    source_offsets: Mapped[Any] = mapped_column(_json(), nullable=True)
    location: Mapped[str] = mapped_column(Text)
    taken_at: Mapped[datetime] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    owner: Mapped[str | None] = mapped_column(String(NAME_LENGTH), nullable=True)


class JobVersion(Base):
    """A version of a job's query (revision 0011; docs/upgrades.md): version 1 is the
    query CREATE STREAMJOB registered, each ALTER STREAMJOB ... AS or CREATE OR REPLACE
    STREAMJOB adds the next. ``query`` the ``insert into ... select ...`` text,
    ``properties`` the JOBPROPERTIES as stored with it, ``created_at`` and ``principal``
    (the statement log's) when and by whom, ``change`` the upgrade class it was applied
    under (``stateless``, ``compatible``, ``incompatible``; NULL for version 1)."""

    __tablename__ = "job_versions"
    __table_args__ = (UniqueConstraint("job_id", "version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    version: Mapped[int] = mapped_column(Integer)
    query: Mapped[str] = mapped_column(Text)
    properties: Mapped[dict[str, Any] | None] = mapped_column(_json(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    principal: Mapped[str | None] = mapped_column(String(NAME_LENGTH), nullable=True)
    change: Mapped[str | None] = mapped_column(String(32), nullable=True)


class Server(Base):
    """A running job manager (``streamjob server``), registered at its start and removed
    at a clean exit; ``heartbeat_at`` is renewed about once a second while it lives
    (revision 0005). ``server_id`` is ``host:pid:random``."""

    __tablename__ = "servers"

    server_id: Mapped[str] = mapped_column(String(SERVER_ID_LENGTH), primary_key=True)
    host: Mapped[str] = mapped_column(String(NAME_LENGTH))
    pid: Mapped[int] = mapped_column(Integer)
    spark_master: Mapped[str] = mapped_column(Text)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    heartbeat_at: Mapped[datetime] = mapped_column(UTCDateTime())
    #: Runs a share of the jobs under job leases (``--share``; revision 0012).
    shares: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    #: The most jobs it runs at once (``--max-jobs``); NULL: no limit (revision 0012).
    max_jobs: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: Its labels, comma-separated (``--labels``); NULL: none (revision 0012).
    labels: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: Cores for its drivers (``--cores``); NULL: not declared, no limit (revision 0015).
    cores: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: Memory for its drivers in MiB (``--memory``); NULL: no limit (revision 0015).
    memory_mb: Mapped[int | None] = mapped_column(Integer, nullable=True)


class Lease(Base):
    """A named lease (revision 0005): ``holder`` holds it until ``expires_at`` unless it
    renews it. The row ``manager`` (made by the migration) elects the active job manager."""

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    holder: Mapped[str | None] = mapped_column(String(SERVER_ID_LENGTH), nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class JobLease(Base):
    """A job's lease (revision 0012, issue 33): the sharing server ``holder`` runs job
    ``job_uid`` until ``expires_at`` unless it renews; ``epoch`` grows by one each time
    another server takes it (the fencing epoch every renewal compares and sets).
    ``holder`` NULL: released (``epoch`` kept). ``reason``: why it was last taken
    (``new``, ``orphaned``, ``released``); ``refusals``: the servers that refused to take
    it, and why."""

    __tablename__ = "job_leases"

    job_uid: Mapped[str] = mapped_column(String(64), primary_key=True)
    holder: Mapped[str | None] = mapped_column(String(SERVER_ID_LENGTH), nullable=True,
                                               index=True)
    epoch: Mapped[int] = mapped_column(BigInteger, default=0)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    acquired_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    reason: Mapped[str | None] = mapped_column(String(32), nullable=True)
    #: JSON ``{server id: reason}`` of the sharing servers that refused to take the job
    #: (its checkpoint directory not reachable from them); NULL: none (revision 0013).
    refusals: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: Why no sharing server can take the job now; NULL: not waiting (revision 0015).
    waiting: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: Hand-overs at a checkpoint boundary (rebalancing; revision 0015).
    moves: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    #: Times its holder lost the lease and another server took it (revision 0015).
    losses: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class ApiToken(Base):
    """A bearer token of the HTTP API (revision 0007): its SHA-256 hash, never the token;
    ``role`` ``viewer`` or ``operator``; ``last_used_at`` the latest accepted request."""

    __tablename__ = "api_tokens"

    name: Mapped[str] = mapped_column(String(NAME_LENGTH), primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class StatementLog(Base):
    """One executed statement (revision 0007): when, who (``token:NAME`` through the
    HTTP API, ``local:USER`` on the catalog directly), its kind and object, and whether
    it succeeded (the error's message if not). The statement text is not kept: it may
    carry secrets."""

    __tablename__ = "statement_log"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), index=True)
    principal: Mapped[str] = mapped_column(String(NAME_LENGTH))
    kind: Mapped[str] = mapped_column(String(64))
    object: Mapped[str | None] = mapped_column(String(2 * NAME_LENGTH + 1), nullable=True)
    ok: Mapped[bool] = mapped_column(Boolean)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)


class ProgressSample(Base):
    """A job's progress at one moment (revision 0007), sampled by its job manager for
    the console's charts and pruned by age."""

    __tablename__ = "progress_samples"
    __table_args__ = (Index(None, "job_id", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    at: Mapped[datetime] = mapped_column(UTCDateTime())
    batch_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    input_rows_per_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    processed_rows_per_s: Mapped[float | None] = mapped_column(Float, nullable=True)
    lag_records: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
