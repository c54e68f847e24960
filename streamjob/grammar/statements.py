"""Frozen dataclasses for parsed StreamSQL statements (docs/design.md §2).

The parser (:mod:`streamjob.grammar.parser`) produces these; the executor consumes them.
Names are kept as written except that unquoted identifiers are lower-cased, as Hive and
Slipstream treat them case-insensitively. Property keys are lower-cased (connector and
job property names are case-insensitive, DESIGN §7); values are kept as written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEFAULT_DATABASE = "default"


@dataclass(frozen=True)
class Position:
    """A 1-based line and column in the script text."""

    line: int
    column: int


@dataclass(frozen=True)
class QualifiedName:
    """``[database.]name``; ``database`` is None when the script did not qualify it."""

    name: str
    database: str | None = None

    def resolve(self, default: str = DEFAULT_DATABASE) -> tuple[str, str]:
        """Return ``(database, name)`` with the default database filled in."""
        return (self.database or default, self.name)

    def __str__(self) -> str:
        return f"{self.database}.{self.name}" if self.database else self.name


@dataclass(frozen=True)
class Column:
    """A declared column: name and Hive/Spark type text, lower-cased (``decimal(10,2)``)."""

    name: str
    type: str


@dataclass(frozen=True)
class Statement:
    """Base of every statement. ``position`` is where its first keyword starts; ``text``
    is its source text without the terminating ``;``; ``locations`` where its parts
    start (see :meth:`where`), so that errors can point at the offending text."""

    position: Position = field(default=Position(1, 1), compare=False, kw_only=True)
    text: str = field(default="", compare=False, kw_only=True)
    locations: dict[str, Position] = field(default_factory=dict, compare=False, kw_only=True,
                                           repr=False)

    def where(self, key: str) -> Position:
        """Where a part of the statement starts: ``"name"`` (its object name),
        ``"key:<property>"`` / ``"value:<property>"`` (a TBLPROPERTIES/JOBPROPERTIES
        entry), ``"column:<name>"``, ``"partition:<name>"`` and ``"partitioned_by"`` (a
        PARTITIONED BY entry and the clause), ``"checkpoint"``, ``"savepoint"``,
        ``"timestamp"``; the statement's start if
        unknown. Names in keys are lower-cased."""
        return self.locations.get(key, self.position)


Properties = tuple[tuple[str, str], ...]
"""Ordered ``(key, value)`` pairs from TBLPROPERTIES / JOBPROPERTIES; keys lower-cased."""


def props(pairs: Properties) -> dict[str, str]:
    """The pairs as a dict (the parser refuses a key given twice, at the second one)."""
    return dict(pairs)


@dataclass(frozen=True)
class RowFormat:
    """``ROW FORMAT DELIMITED [FIELDS TERMINATED BY x] [LINES TERMINATED BY y]``;
    escapes such as ``'\\001'`` and ``'\\t'`` already decoded to the character.

    ``ROW FORMAT SERDE 'class' [WITH SERDEPROPERTIES (...)]`` (Hive, Slipstream) sets
    ``serde`` (the class as written) and ``serde_properties`` (keys lower-cased); the
    executor maps the class to a format (:func:`streamjob.connectors.hive_forms.row_format_record`)."""

    fields_terminated_by: str | None = None
    lines_terminated_by: str | None = None
    serde: str | None = None
    serde_properties: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CreateStream(Statement):
    """``CREATE STREAM [IF NOT EXISTS] s (cols) [ROW FORMAT ...] [STORED AS DELTA
    LOCATION 'dir'] [TBLPROPERTIES(...)]`` or ``CREATE STREAM s AS SELECT ...`` (then
    ``columns`` is empty and ``as_select`` holds the query text, ``as_select_position``
    where it starts). ``stored_as`` is lower-cased (the executor takes ``delta`` only:
    a Delta table read as a stream, ``"source"="delta"`` with ``"path"`` its LOCATION);
    where the clauses are: ``where("stored_as")``, ``where("location")``."""

    name: QualifiedName
    columns: tuple[Column, ...] = ()
    if_not_exists: bool = False
    row_format: RowFormat | None = None
    properties: Properties = ()
    stored_as: str | None = None
    location: str | None = None
    as_select: str | None = None
    as_select_position: Position | None = None


@dataclass(frozen=True)
class CreateTable(Statement):
    """``CREATE TABLE [IF NOT EXISTS] t (cols) [PARTITIONED BY (...)] [ROW FORMAT ...]
    [STORED AS fmt] [LOCATION 'uri'] [TBLPROPERTIES(...)]``; ``stored_as`` lower-cased.
    ``stored_by`` is the handler class of Hive's ``STORED BY 'class'`` (HBase, Hyperdrive),
    which the executor refuses naming the replacement.

    ``columns`` are the table's columns in order: those of the column list, then those
    that ``PARTITIONED BY`` declares with a type (Hive: ``PARTITIONED BY (dt STRING)``;
    partition columns come last). ``partitioned_by`` names the partition columns in
    clause order, as written (a bare name, Spark's ``PARTITIONED BY (dt)``, refers to a
    column of the list). The parser checks that each names exactly one column; where
    each entry starts is ``where("partition:<name>")``, the clause ``where("partitioned_by")``.
    """

    name: QualifiedName
    columns: tuple[Column, ...] = ()
    if_not_exists: bool = False
    row_format: RowFormat | None = None
    stored_as: str | None = None
    location: str | None = None
    properties: Properties = ()
    partitioned_by: tuple[str, ...] = ()
    stored_by: str | None = None


@dataclass(frozen=True)
class CreateStreamJob(Statement):
    """``CREATE STREAMJOB [IF NOT EXISTS] j AS ("insert into ...") [JOBPROPERTIES(...)]``.

    ``query`` is the string literal's content, unescaped; ``query_position`` is the line
    and column of its first character in the script, so errors inside the query can be
    reported at their true place."""

    name: QualifiedName
    query: str
    query_position: Position
    if_not_exists: bool = False
    properties: Properties = ()


@dataclass(frozen=True)
class StartStreamJob(Statement):
    """``START STREAMJOB j [FROM CHECKPOINT n | FROM CHECKPOINT AT 'ts' | FROM SAVEPOINT sp
    | FROM EARLIEST | FROM LATEST | FROM TIMESTAMP t]``: ``start_from`` is ``earliest``, ``latest`` or ms since the epoch (text)
    for the last three (a new checkpoint epoch, DESIGN §4)."""

    name: QualifiedName
    from_checkpoint: int | None = None
    start_from: str | None = None
    #: ``FROM SAVEPOINT sp`` (issue 30): the savepoint's name
    from_savepoint: str | None = None
    #: ``FROM SAVEPOINT sp WITH STATE RESET``: a new checkpoint epoch from the
    #: savepoint's offsets, without its state
    state_reset: bool = False
    #: ``FROM CHECKPOINT AT 'yyyy-MM-dd HH:mm:ss'`` (UTC; issue 30): ms since the epoch
    checkpoint_at: int | None = None


@dataclass(frozen=True)
class StopStreamJob(Statement):
    """``STOP STREAMJOB j [WITH SAVEPOINT sp]``: ``savepoint`` names the savepoint its
    final checkpoint becomes (issue 30), or None."""

    name: QualifiedName
    savepoint: str | None = None


@dataclass(frozen=True)
class DropStreamJob(Statement):
    """``DROP STREAMJOB [IF EXISTS] j``."""

    name: QualifiedName
    if_exists: bool = False


@dataclass(frozen=True)
class AlterStreamJob(Statement):
    """``ALTER STREAMJOB j SET JOBPROPERTIES(...)``."""

    name: QualifiedName
    properties: Properties = ()


@dataclass(frozen=True)
class ReplaceStreamJobQuery(Statement):
    """``ALTER STREAMJOB j AS ("insert ...") [FROM EARLIEST | FROM TIMESTAMP t | WITH STATE
    RESET]`` and ``CREATE OR REPLACE STREAMJOB j AS (...) [JOBPROPERTIES(...)] [FROM ... |
    WITH STATE RESET]`` (issue 30, docs/upgrades.md): replace the query of a job, stopped
    or running.

    ``query`` and ``query_position`` as in :class:`CreateStreamJob`; ``or_replace`` True
    for CREATE OR REPLACE (which creates a missing job, and whose ``properties`` replace
    the job's); ``start_from`` the new checkpoint epoch chosen for an incompatible change
    (``earliest`` or ms since the epoch as text, as in :class:`StartStreamJob`), or None;
    ``state_reset`` True for WITH STATE RESET (a new checkpoint epoch that starts at the
    latest checkpoint's committed offsets with empty state)."""

    name: QualifiedName
    query: str
    query_position: Position
    properties: Properties = ()
    or_replace: bool = False
    start_from: str | None = None
    state_reset: bool = False


@dataclass(frozen=True)
class ShowStreamJobs(Statement):
    """``LIST STREAMJOBS`` or ``SHOW STREAMJOBS``."""


@dataclass(frozen=True)
class DescribeStreamJob(Statement):
    """``DESCRIBE STREAMJOB j``."""

    name: QualifiedName


@dataclass(frozen=True)
class ShowCheckpoints(Statement):
    """``SHOW CHECKPOINTS FOR STREAMJOB j``."""

    name: QualifiedName


@dataclass(frozen=True)
class ShowStreams(Statement):
    """``SHOW STREAMS``."""


@dataclass(frozen=True)
class ShowTables(Statement):
    """``SHOW TABLES``."""


@dataclass(frozen=True)
class Describe(Statement):
    """``DESCRIBE [STREAM|TABLE] name`` (``kind`` is ``"stream"``, ``"table"`` or None)."""

    name: QualifiedName
    kind: str | None = None


@dataclass(frozen=True)
class DropStream(Statement):
    """``DROP STREAM [IF EXISTS] s``."""

    name: QualifiedName
    if_exists: bool = False


@dataclass(frozen=True)
class DropTable(Statement):
    """``DROP TABLE [IF EXISTS] t``."""

    name: QualifiedName
    if_exists: bool = False


@dataclass(frozen=True)
class SetProperty(Statement):
    """``SET k=v`` (both set), ``SET`` (both None: list the session values)."""

    key: str | None = None
    value: str | None = None


@dataclass(frozen=True)
class ResetProperty(Statement):
    """``RESET`` (key None: all) or ``RESET k``."""

    key: str | None = None


# ---- SHOW CREATE, databases, topics (issue 16) ---------------------------------------


@dataclass(frozen=True)
class ShowCreate(Statement):
    """``SHOW CREATE STREAM|TABLE|STREAMJOB|FUNCTION name``: ``kind`` is ``"stream"``,
    ``"table"``, ``"streamjob"`` or ``"function"``."""

    name: QualifiedName
    kind: str


@dataclass(frozen=True)
class CreateDatabase(Statement):
    """``CREATE DATABASE [IF NOT EXISTS] db``."""

    database: str
    if_not_exists: bool = False


@dataclass(frozen=True)
class UseDatabase(Statement):
    """``USE db``: the current database for the rest of the session or script."""

    database: str


@dataclass(frozen=True)
class ShowDatabases(Statement):
    """``SHOW DATABASES``."""


@dataclass(frozen=True)
class DropDatabase(Statement):
    """``DROP DATABASE [IF EXISTS] db [CASCADE]`` (``cascade``: drop its streams and
    tables too; never its stream jobs)."""

    database: str
    if_exists: bool = False
    cascade: bool = False


@dataclass(frozen=True)
class ShowTopics(Statement):
    """``SHOW TOPICS [FROM 'host:port' | FROM name]``: ``broker`` the address given,
    ``source`` the stream or table whose broker to ask (both None: every broker of the
    declared Kafka streams and tables)."""

    broker: str | None = None
    source: QualifiedName | None = None


@dataclass(frozen=True)
class PrintTopic(Statement):
    """``PRINT name | 'topic' [FROM 'host:port'] [FROM BEGINNING] [LIMIT n]`` (ksqlDB):
    ``name`` a Kafka stream or table (or, when no such object exists, a topic name),
    ``topic`` a topic given as a string; ``limit`` None means until interrupted."""

    name: QualifiedName | None = None
    topic: str | None = None
    broker: str | None = None
    from_beginning: bool = False
    limit: int | None = None
@dataclass(frozen=True)
class InsertInto(Statement):
    """A bare ``INSERT INTO [TABLE] t [(cols)] SELECT ...`` outside CREATE STREAMJOB
    (older Slipstream): it creates and starts an implicit job. ``query`` is the whole
    statement's text (what CREATE STREAMJOB would hold in its string), ``target`` the
    table written; the executor derives the job's id from both
    (:func:`streamjob.executor.insert.implicit_job_name`)."""

    target: QualifiedName
    query: str


# ---- EXPLAIN (issue 18) ----------------------------------------------------------------


@dataclass(frozen=True)
class Explain(Statement):
    """``EXPLAIN [EXTENDED] [STREAMJOB] j`` (``name`` set: an existing job) or ``EXPLAIN
    [EXTENDED] INSERT INTO t SELECT ...`` (``query`` the INSERT's text, ``target`` its
    table, ``query_position`` where the INSERT starts: a query not yet a job).
    ``extended`` asks for Spark's physical plan too (Spark's ``EXPLAIN EXTENDED``)."""

    name: QualifiedName | None = None
    query: str | None = None
    target: QualifiedName | None = None
    query_position: Position | None = None
    extended: bool = False
    change: "ReplaceStreamJobQuery | None" = None
    """``EXPLAIN ALTER STREAMJOB j AS (...)`` / ``EXPLAIN CREATE OR REPLACE STREAMJOB``
    (issue 30): the upgrade whose change class is explained; nothing is changed."""


# ---- user functions (issue 31) ---------------------------------------------------------


@dataclass(frozen=True)
class CreateFunction(Statement):
    """``CREATE [TEMPORARY] FUNCTION [IF NOT EXISTS] [db.]name AS 'package.module:callable'
    [RETURNS type] [LANGUAGE PYTHON]``, or a Hive UDF class: ``AS 'com.x.Udf' [USING JAR
    'x.jar', ...] [LANGUAGE JAVA]`` (Hive's and Flink's forms). ``source`` the quoted
    reference or class as written, ``returns`` the Hive/Spark type text (lower-cased) or
    None, ``language`` lower-cased (``python``, the default, or ``java`` for a class),
    ``jars`` the USING JAR paths as written, ``table`` the columns of ``RETURNS TABLE
    (...)`` (a table function; ``returns`` is None then). ``temporary`` is Slipstream's and Hive's
    word; a job outlives its session, so the catalog keeps the function either way
    (docs/functions.md)."""

    name: QualifiedName
    source: str
    returns: str | None = None
    language: str = "python"
    temporary: bool = False
    if_not_exists: bool = False
    jars: tuple[str, ...] = ()
    #: ``RETURNS TABLE (col type, ...)``: a table function (Spark's Python UDTF, called
    #: in FROM and LATERAL): its columns as ``(name, type text)``; empty for a scalar one.
    table: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class AddJar(Statement):
    """``ADD JAR 'x.jar'`` / ``ADD JAR /dir/x.jar`` / ``ADD JARS a.jar b.jar`` (Hive,
    Slipstream): ``paths`` as written. The jars join the session's, where a later
    ``CREATE FUNCTION f AS 'com.x.Udf'`` without USING JAR finds its class
    (docs/functions.md)."""

    paths: tuple[str, ...]


@dataclass(frozen=True)
class DropFunction(Statement):
    """``DROP [TEMPORARY] FUNCTION [IF EXISTS] [db.]name``."""

    name: QualifiedName
    if_exists: bool = False


@dataclass(frozen=True)
class ShowFunctions(Statement):
    """``SHOW [USER] FUNCTIONS``: the registered functions of the current database."""


@dataclass(frozen=True)
class DescribeFunction(Statement):
    """``DESCRIBE FUNCTION [db.]name``: its signature, source, code hash and the jobs
    calling it."""

    name: QualifiedName


# ---- savepoints (issue 30) -------------------------------------------------------------


@dataclass(frozen=True)
class CreateSavepoint(Statement):
    """``CREATE SAVEPOINT sp FOR STREAMJOB j``: ``savepoint`` the name (lower-cased
    unless quoted), ``name`` the job; where the savepoint's name starts is
    ``where("savepoint")``."""

    name: QualifiedName
    savepoint: str


@dataclass(frozen=True)
class ShowSavepoints(Statement):
    """``SHOW SAVEPOINTS [FOR [STREAMJOB] j]``: ``name`` None lists every job's."""

    name: QualifiedName | None = None


@dataclass(frozen=True)
class DropSavepoint(Statement):
    """``DROP SAVEPOINT sp FOR STREAMJOB j``."""

    name: QualifiedName
    savepoint: str


# ---- shadow runs (issue 30 point 4; docs/upgrades.md "Shadow runs")


@dataclass(frozen=True)
class AlterShadow(Statement):
    """``ALTER STREAMJOB j AS ("insert ...") WITH SHADOW [JOBPROPERTIES(...)]``: run
    ``query`` beside the live job into scratch sinks and compare; ``properties`` are the
    shadow's (``shadow.batches``, ``shadow.duration``: :data:`streamjob.properties.SHADOW`).
    ``query_position`` as in :class:`CreateStreamJob`."""

    name: QualifiedName
    query: str
    query_position: Position
    properties: Properties = ()


@dataclass(frozen=True)
class PromoteShadow(Statement):
    """``PROMOTE SHADOW FOR STREAMJOB j``: the live job switches to its shadow's query at
    a checkpoint boundary; the scratch sinks are dropped."""

    name: QualifiedName


@dataclass(frozen=True)
class DiscardShadow(Statement):
    """``DISCARD SHADOW FOR STREAMJOB j``: the shadow and its scratch sinks are dropped."""

    name: QualifiedName


@dataclass(frozen=True)
class ShowShadow(Statement):
    """``SHOW SHADOW FOR STREAMJOB j``: the shadow's comparison report."""

    name: QualifiedName


# ---- Delta table maintenance (issue 32; docs/connectors.md "Delta Lake")


@dataclass(frozen=True)
class OptimizeTable(Statement):
    """``OPTIMIZE [TABLE] t [ZORDER BY (c1, ...)]`` (Delta Lake's SQL): compacts the
    Delta table's small files, or rewrites them clustered on ``zorder_by`` (lower-cased
    column names, in order; ``()`` plain compaction). Positions: ``where("name")``, each
    column's ``where("column:<name>")``."""

    name: QualifiedName
    zorder_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class VacuumTable(Statement):
    """``VACUUM [TABLE] t [RETAIN n HOURS] [DRY RUN]`` (Delta Lake's SQL): deletes the
    files the Delta table no longer references that are older than the retention
    (``retain_hours``; None: Delta's default, 168 hours); ``dry_run`` lists them
    without deleting. Positions: ``where("name")``, ``where("retain")``."""

    name: QualifiedName
    retain_hours: int | None = None
    dry_run: bool = False
