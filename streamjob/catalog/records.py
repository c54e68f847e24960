"""Plain, immutable records the :class:`~streamjob.catalog.api.Catalog` returns.

Callers never hold ORM objects or sessions: every catalog method copies what it read
into one of these frozen dataclasses before its transaction ends. Timestamps are
timezone-aware UTC :class:`~datetime.datetime` values.

The allowed values of the status-like columns are defined here too, so that other
modules can import them without importing SQLAlchemy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

class DesiredState(StrEnum):
    """A job's desired state, set by START / STOP STREAMJOB and read by the manager."""

    STOPPED = "STOPPED"
    RUNNING = "RUNNING"


class JobStatus(StrEnum):
    """A job's observed status, written by the job manager running it (DESIGN §5)."""

    CREATED = "CREATED"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    RECOVERING = "RECOVERING"
    STOPPING = "STOPPING"
    STOPPED = "STOPPED"
    FAILED = "FAILED"
    FINISHED = "FINISHED"


class RunStatus(StrEnum):
    """Status of one run (one start of a job's Spark query until it ends)."""

    RUNNING = "RUNNING"
    STOPPED = "STOPPED"
    FAILED = "FAILED"
    FINISHED = "FINISHED"


class CheckpointStatus(StrEnum):
    """Status of a recorded checkpoint (DESIGN §4: expiry and late completion)."""

    COMPLETED = "COMPLETED"
    LATE = "LATE"
    EXPIRED = "EXPIRED"


#: The values of each (stored as text; a StrEnum member equals its value).
DESIRED_STATES: tuple[str, ...] = tuple(DesiredState)
JOB_STATUSES: tuple[str, ...] = tuple(JobStatus)
RUN_STATUSES: tuple[str, ...] = tuple(RunStatus)
CHECKPOINT_STATUSES: tuple[str, ...] = tuple(CheckpointStatus)

#: Statuses in which some job manager may be running the job's query.
ACTIVE_STATUSES: tuple[str, ...] = (JobStatus.STARTING, JobStatus.RUNNING,
                                    JobStatus.RECOVERING, JobStatus.STOPPING)

#: Kinds of catalog objects a job can depend on, and the role it plays for the job.
DEPENDENCY_KINDS: tuple[str, ...] = ("stream", "table", "function")
DEPENDENCY_ROLES: tuple[str, ...] = ("source", "sink", "static", "dead-letter", "call")

#: One dependency of a job: (kind, database, name, role).
Dependency = tuple[str, str, str, str]


#: The ``kind`` of a table function's record (Spark's Python UDTF, called in FROM and
#: LATERAL; docs/functions.md "Table functions"); its ``return_type`` is
#: ``struct<col:type,...>``, the columns of its rows.
TABLE_FUNCTION_KIND = "python_table"


@dataclass(frozen=True)
class FunctionInfo:
    """A registered user function (docs/functions.md): ``source`` ``module:callable``,
    ``kind`` ``python``, ``hive`` or ``python_table`` (:data:`TABLE_FUNCTION_KIND`), ``location`` its module file's real path or ``dist==version``,
    ``return_type`` the RETURNS type (or the one the callable declares), ``code_hash`` the
    SHA-256 hex of its code, ``owner`` the principal that registered it."""

    database: str
    name: str
    kind: str
    source: str
    location: str
    return_type: str | None
    code_hash: str
    owner: str | None
    temporary: bool
    created_at: datetime | None = None
    #: The callable's parameter names; None: it takes any number (``*args``).
    parameters: tuple[str, ...] | None = None

    @property
    def qualified_name(self) -> str:
        """``database.name``."""
        return f"{self.database}.{self.name}"

    @property
    def is_table(self) -> bool:
        """True for a table function (:data:`TABLE_FUNCTION_KIND`)."""
        return self.kind == TABLE_FUNCTION_KIND


@dataclass(frozen=True)
class StreamInfo:
    """A registered stream: a source, or a derived stream (``CREATE STREAM s AS SELECT``).

    ``columns`` is a tuple of ``{"name": ..., "type": ...}`` dicts in declaration order;
    ``properties`` the TBLPROPERTIES as given; ``row_format`` the ROW FORMAT clause as a
    dict (e.g. ``{"delimited": True, "fields_terminated_by": ","}``) or None; ``query``
    the defining SELECT of a derived stream, else None.
    """

    database: str
    name: str
    columns: tuple[dict[str, Any], ...]
    properties: dict[str, Any]
    row_format: dict[str, Any] | None
    query: str | None
    created_at: datetime

    kind = "stream"

    @property
    def qualified_name(self) -> str:
        """``database.name``."""
        return f"{self.database}.{self.name}"

    @property
    def is_derived(self) -> bool:
        """True for a stream defined by a query over other streams."""
        return self.query is not None


@dataclass(frozen=True)
class TableInfo:
    """A registered table: a sink, or static data for stream-static joins.

    ``stored_as`` is the STORED AS format (``PARQUET``, ``JSON``, ``CSV``) or None;
    ``location`` the LOCATION uri or None; ``partitioned_by`` the names of the partition
    columns (``PARTITIONED BY``; each one of ``columns``), ``()`` if not partitioned.
    Other fields as in :class:`StreamInfo`.
    """

    database: str
    name: str
    columns: tuple[dict[str, Any], ...]
    properties: dict[str, Any]
    row_format: dict[str, Any] | None
    stored_as: str | None
    location: str | None
    created_at: datetime
    partitioned_by: tuple[str, ...] = ()

    kind = "table"

    @property
    def qualified_name(self) -> str:
        """``database.name``."""
        return f"{self.database}.{self.name}"


@dataclass(frozen=True)
class JobInfo:
    """A registered stream job.

    ``uid`` identifies this incarnation of the job (a dropped and recreated job gets a
    new one); the manager addresses runs and checkpoints by it. ``query`` is the inner
    ``insert into ... select ...`` text; ``properties`` the JOBPROPERTIES as stored;
    ``attempts`` counts failures since the last good checkpoint; ``dependencies`` is a
    tuple of ``(kind, database, name, role)`` in the order they were registered;
    ``session_properties`` the session's ``SET`` values captured when CREATE STREAMJOB
    ran (the job keeps the defaults of the session that created it; ``{}`` if none, and
    for jobs created before the catalog recorded them); ``expired_checkpoints`` how many
    of its checkpoints expired; ``malformed_counts`` how many malformed source records
    it skipped, per stream name (``{}`` if none); ``missing_columns`` per stream name and
    declared column, how many micro-batches held records none of which carried a value
    for that column (``{}`` if none).

    ``owner`` is the server id (:class:`ServerInfo`) of the job manager running the job,
    None when none does. ``progress`` is the latest progress the job's current run
    reported (``{}`` when a run starts; :mod:`streamjob.manager.progress`): ``batch_id``
    (int, None before the run's first batch), ``input_rows_per_s`` and
    ``processed_rows_per_s`` (float, rows per second; None while unknown), ``lag_records``
    (int: records the Kafka sources hold that the job has not committed, None while
    unknown or without a Kafka source), ``lag_by_partition`` (the same per ``topic:partition``),
    ``last_checkpoint_at`` (ISO-8601 UTC text or None), ``updated_at`` (ISO-8601 UTC).
    """

    uid: str
    database: str
    name: str
    query: str
    properties: dict[str, Any]
    desired_state: str
    status: str
    attempts: int
    last_error: str | None
    created_at: datetime
    updated_at: datetime
    dependencies: tuple[Dependency, ...] = ()
    session_properties: dict[str, Any] = field(default_factory=dict)
    expired_checkpoints: int = 0
    malformed_counts: dict[str, int] = field(default_factory=dict)
    owner: str | None = None
    progress: dict[str, Any] = field(default_factory=dict)
    missing_columns: dict[str, dict[str, int]] = field(default_factory=dict)
    #: a query switch in progress (``Catalog.begin_switch``, docs/upgrades.md): ``{"version",
    #: "host", "pid", "owner", "at"}``, or None.
    pending_switch: dict[str, Any] | None = None

    @property
    def qualified_name(self) -> str:
        """``database.name``."""
        return f"{self.database}.{self.name}"


@dataclass(frozen=True)
class ServerInfo:
    """A registered job manager (``streamjob server``).

    ``server_id`` is ``f"{host}:{pid}:{8 hex digits}"``; ``spark_master`` the master its
    SparkSession uses (``local[*]``, ``spark://...``); ``started_at`` when it registered;
    ``heartbeat_at`` its latest heartbeat (renewed about once a second while it lives);
    ``heartbeat_age_ms`` how old that heartbeat was when read, measured on the database's
    clock (PostgreSQL), so hosts with skewed clocks agree on which managers are alive.
    """

    server_id: str
    host: str
    pid: int
    spark_master: str
    started_at: datetime
    heartbeat_at: datetime
    heartbeat_age_ms: int = 0


@dataclass(frozen=True)
class ShareServer:
    """A live sharing server (``streamjob server --share``, issue 33) as placement sees
    it: its id, the most jobs it runs (``max_jobs``, None: no limit), its ``labels``, the
    uids of the jobs whose live lease it holds (``jobs``), its heartbeat's age (ms, the
    database's clock), the cores and memory (MiB) it declared for its drivers
    (``cores``, ``memory_mb``; None: not declared, no limit) and its Spark master."""

    server_id: str
    max_jobs: int | None
    labels: frozenset[str]
    jobs: tuple[str, ...] = ()
    heartbeat_age_ms: int = 0
    cores: int | None = None
    memory_mb: int | None = None
    spark_master: str | None = None

    @property
    def room(self) -> float:
        """Jobs it may still take: ``max_jobs - len(jobs)`` (infinite without a limit)."""
        return float("inf") if self.max_jobs is None else self.max_jobs - len(self.jobs)


@dataclass(frozen=True)
class JobLeaseInfo:
    """A job's lease (issue 33): the server holding it (``holder``, None once
    released), its fencing ``epoch``, whether it is ``live`` (not expired by the
    database's clock), ms until it expires (``remaining_ms``, 0 when expired), when and
    why it was last taken (``acquired_at``, ``reason``: new, orphaned, released), and
    the sharing servers that refused to take it (``refusals``: ``{server id: reason}``,
    e.g. its checkpoint directory is not reachable from them), why no server can take it
    now (``waiting``, None when it is not waiting), and its counters: hand-overs at a
    checkpoint boundary (``moves``) and leases lost by a holder (``losses``)."""

    job_uid: str
    holder: str | None
    epoch: int
    live: bool
    remaining_ms: int
    acquired_at: datetime | None = None
    reason: str | None = None
    refusals: dict[str, str] = field(default_factory=dict)
    waiting: str | None = None
    moves: int = 0
    losses: int = 0


@dataclass(frozen=True)
class RunInfo:
    """One run of a job: from a start (or restart after failover) until it ended.

    ``ended_at`` is None and ``status`` is ``RUNNING`` while the run lasts; ``cause``
    is the error or reason the run ended, if any.
    """

    id: int
    job_uid: str
    attempt: int
    started_at: datetime
    ended_at: datetime | None
    status: str
    cause: str | None


@dataclass(frozen=True)
class CheckpointInfo:
    """One recorded checkpoint (= one committed micro-batch; ``checkpoint_id`` = batch id).

    ``source_offsets`` is the JSON the source reported (e.g. per-partition offsets);
    ``status`` is one of :data:`CHECKPOINT_STATUSES`; ``fingerprint`` identifies the
    job's query and schemas when the checkpoint was taken.
    """

    job_uid: str
    checkpoint_id: int
    started_at: datetime
    ended_at: datetime | None
    duration_ms: int | None
    source_offsets: Any
    input_rows: int
    state_rows: int | None
    status: str
    fingerprint: str | None
    #: bytes the state stores held after it (Spark's ``memoryUsedBytes``, summed over the
    #: stateful operators; revision 0007), or None (stateless, or recorded before)
    state_bytes: int | None = None


@dataclass(frozen=True)
class SavepointInfo:
    """A savepoint (revision 0010; docs/checkpoints.md): a checkpoint the user keeps,
    outside retention and expiry.

    ``job`` is ``db.job``; ``job_uid`` and ``epoch`` the incarnation and checkpoint epoch
    it was taken in; ``checkpoint_id`` the Spark batch id; ``fingerprint`` the query
    version (:meth:`streamjob.checkpoint.fingerprint.Fingerprint.encode`, or None);
    ``source_offsets`` the sources' end offsets (JSON, as in :class:`CheckpointInfo`);
    ``location`` the URI of the folder holding its files; ``taken_at`` when its batch
    completed and ``created_at`` when the savepoint was made (aware UTC); ``owner`` the
    principal that made it."""

    job: str
    name: str
    job_uid: str
    epoch: str
    checkpoint_id: int
    fingerprint: str | None
    source_offsets: Any
    location: str
    taken_at: datetime
    created_at: datetime
    owner: str | None = None


@dataclass(frozen=True)
class JobVersionInfo:
    """A version of a job's query (revision 0011; docs/upgrades.md): ``version`` counts
    from 1 (CREATE STREAMJOB); ``query`` and ``properties`` as stored with it;
    ``created_at`` (aware UTC) and ``principal`` when and by whom (None for versions from
    before revision 0011 or made without a principal); ``change`` the upgrade class it
    was applied under (``stateless``, ``compatible``, ``incompatible``; None for
    version 1)."""

    version: int
    query: str
    properties: dict[str, Any]
    created_at: datetime
    principal: str | None = None
    change: str | None = None


class Role(StrEnum):
    """A principal's role (DESIGN §9, docs/security.md): a viewer reads (jobs, status,
    metrics, read-only statements on declared objects); an operator also changes (any
    statement, start/stop/drop) within what the admin allowed; the admin holds the
    catalog and the home (local clients working on the catalog directly, and admin
    tokens of the HTTP API) and also manages tokens and server settings."""

    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"


@dataclass(frozen=True)
class TokenInfo:
    """A bearer token of the HTTP API (never the token itself, which only its creator
    saw): its ``name``, :class:`Role`, when it was created and last accepted."""

    name: str
    role: str
    created_at: datetime
    last_used_at: datetime | None = None


@dataclass(frozen=True)
class StatementLogEntry:
    """One executed statement: when, by whom (``token:NAME``, ``local:USER``), its kind
    (``CreateStreamJob``), the object it named, and its outcome (``error`` if it failed)."""

    at: datetime
    principal: str
    kind: str
    object: str | None
    ok: bool
    error: str | None = None


@dataclass(frozen=True)
class ProgressSampleInfo:
    """A job's progress at ``at``: its batch, rates (rows/s) and Kafka lag (records)."""

    at: datetime
    batch_id: int | None
    input_rows_per_s: float | None
    processed_rows_per_s: float | None
    lag_records: int | None
