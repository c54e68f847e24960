"""What a stream or table declaration means as a connector (DESIGN §7).

Turns a catalog record's TBLPROPERTIES (names case-insensitive) into a typed spec the
planner can run, and rejects what cannot work before any job starts.

Each table spec answers the questions asked of its kind (``label``, ``on_files``,
``static_readable``, ``updates_in_place``, ``check_columns``, ``reach``,
``kafka_topic``); writing goes through :mod:`.sinks`, a stream's reading through
:mod:`.sources`.

Sources (streams): Kafka (``"topic"`` + ``"kafka.broker.list"``), files
(``"source"="files"``), rate (``"source"="rate"``). Sinks (tables): files
(``STORED AS`` / ``LOCATION``, the default), SQL (``"connector"="sql"``), Kafka
(``"topic"``), console (``"connector"="console"``), Delta Lake (``STORED AS DELTA``,
:mod:`.delta`), Apache Iceberg (``STORED AS ICEBERG``, :mod:`.iceberg`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import ClassVar, Mapping

from .. import properties as registry
from ..exceptions import ValidationError
from . import hive_forms
from .delta import spec as delta
from .delta.spec import DeltaSourceSpec, DeltaTableSpec  # noqa: F401  (the specs of every kind, importable here)
from .iceberg import spec as iceberg
from .iceberg.spec import IcebergSourceSpec, IcebergTableSpec  # noqa: F401
from .kafka import FORMATS
from .kafka.security import KafkaSecurity
from .keys import check_primary_key
from .reach import KafkaTopic, Reach

log = logging.getLogger(__name__)

FILE_FORMATS = ("parquet", "json", "csv")
"""Formats of file streams (Spark's file source)."""
FILE_TABLE_FORMATS = ("parquet", "orc", "json", "csv", "textfile")
"""Formats of file tables (``STORED AS``); TEXTFILE is Hive's delimited text
(:mod:`.hive_forms`)."""


@dataclass(frozen=True)
class KafkaSourceSpec:
    """A Kafka stream: topic, bootstrap servers, record format, delimiter, reset strategy
    (``earliest``, ``latest``, ``committed`` or a timestamp in ms as text), consumer group
    (None: the job's default ``streamjob.<db>.<job>``), what lost offsets do, and the
    malformed-record policy (``fail``, ``skip``, ``dead-letter`` into table
    ``dead_letter``, a name as written, resolved by the planner), and what a declared
    column no record carries does (``missing_columns``: ``count`` or ``fail``), and the
    bound on each driver-side broker request (``request_timeout_ms``, ms)."""

    topic: str
    bootstrap: str
    format: str
    delimiter: str
    reset: str
    group_id: str | None = None
    fail_on_data_loss: bool = True
    malformed: str = "fail"
    dead_letter: str | None = None
    isolation: str = "read_uncommitted"
    missing_columns: str = "count"
    security: KafkaSecurity = KafkaSecurity()
    request_timeout_ms: int = 30_000


@dataclass(frozen=True)
class FileSourceSpec:
    """A directory of files read as a stream (Spark's file source)."""

    path: str
    format: str


@dataclass(frozen=True)
class RateSourceSpec:
    """Spark's rate source: ``rows_per_second`` rows of (timestamp, value)."""

    rows_per_second: int


@dataclass(frozen=True)
class FileTableSpec:
    """A file table: Parquet, ORC, JSON, CSV or TEXTFILE files under ``location``
    (exactly-once through Spark's file-sink manifest). ``header`` for CSV files read as
    static data; ``partitioned_by`` the partition columns (``PARTITIONED BY``): rows go to
    Hive-style ``col=value`` directories, in this order; ``delimiter`` the field
    separator of CSV and TEXTFILE (ROW FORMAT; None: ``,`` resp. ``'\\001'``), any
    length."""

    format: str
    location: str
    header: bool
    partitioned_by: tuple[str, ...] = ()
    delimiter: str | None = None

    label: ClassVar[str] = "a file"
    on_files: ClassVar[bool] = True
    static_readable: ClassVar[bool] = True
    updates_in_place: ClassVar[bool] = False

    def check_columns(self, columns, table: str) -> None:
        """Nothing to check beyond the parser's (partition columns are checked there)."""

    def reach(self) -> Reach:
        return Reach(paths=((self.location, "LOCATION", "location"),))

    def kafka_topic(self) -> KafkaTopic | None:
        return None


@dataclass(frozen=True)
class SqlTableSpec:
    """A table in a SQL database reached through SQLAlchemy; upsert on ``primary_key``."""

    url: str
    table: str
    primary_key: tuple[str, ...]

    label: ClassVar[str] = "a SQL"
    on_files: ClassVar[bool] = False
    static_readable: ClassVar[bool] = True

    @property
    def updates_in_place(self) -> bool:
        """Update mode upserts on the primary key."""
        return bool(self.primary_key)

    def check_columns(self, columns, table: str) -> None:
        """The primary-key columns must be declared ``columns`` of ``table``.

        Raises:
            ValidationError: ``key`` ``"primary.key"``.
        """
        check_primary_key(self.primary_key, columns, table)

    def reach(self) -> Reach:
        return Reach(urls=((self.url, '"url"'),))

    def kafka_topic(self) -> KafkaTopic | None:
        return None


@dataclass(frozen=True)
class ConsoleTableSpec:
    """Rows printed to the console (for the shell and debugging)."""

    label: ClassVar[str] = "a console"
    on_files: ClassVar[bool] = False
    static_readable: ClassVar[bool] = False
    updates_in_place: ClassVar[bool] = True  # each micro-batch's changed rows printed

    def check_columns(self, columns, table: str) -> None:
        """Nothing to check."""

    def reach(self) -> Reach:
        return Reach()

    def kafka_topic(self) -> KafkaTopic | None:
        return None


KAFKA_TABLE_FORMATS = ("json", "delimited")


@dataclass(frozen=True)
class KafkaTableSpec:
    """A Kafka table (a sink): rows become records of ``topic`` on ``bootstrap``
    (``"kafka.broker.list"``), values encoded as ``format`` (``json``, the default:
    one object per record by column name; ``delimited``: fields joined with
    ``delimiter``, Hive style) so that a Kafka stream with the same columns and format
    reads them back. ``key`` is the declared column whose value, as UTF-8 text, becomes
    the record key (None: records without a key). ``primary_key`` (``"primary.key"``,
    lower-cased, in the order given) makes the table an upsert table: each record's key
    is the primary-key columns in the table's format (or, with ``key`` naming its only
    column, that column's raw text), aggregations write in update mode, and a compacted
    topic keeps the latest row per key (:mod:`streamjob.connectors.kafka.encode`). See
    :mod:`streamjob.connectors.kafka.sink` for the delivery guarantees."""

    topic: str
    bootstrap: str
    format: str = "json"
    delimiter: str = ","
    key: str | None = None
    security: KafkaSecurity = KafkaSecurity()
    primary_key: tuple[str, ...] = ()

    label: ClassVar[str] = "a Kafka"
    on_files: ClassVar[bool] = False
    static_readable: ClassVar[bool] = False

    @property
    def updates_in_place(self) -> bool:
        """Update mode writes records keyed by the primary key (an upsert table)."""
        return bool(self.primary_key)

    def check_columns(self, columns, table: str) -> None:
        """:func:`check_kafka_key`."""
        check_kafka_key(self, columns, table)

    def reach(self) -> Reach:
        return Reach(broker=(self.bootstrap, self.security))

    def kafka_topic(self) -> KafkaTopic | None:
        return KafkaTopic(self.topic, self.bootstrap, self.security)


def check_kafka_key(spec: KafkaTableSpec, columns, table: str) -> None:
    """The ``"key"`` and the ``"primary.key"`` columns of a Kafka table must be among its
    declared ``columns`` (``[{"name", "type"}, ...]``; names compared
    case-insensitively), and ``"key"`` together with ``"primary.key"`` must name the
    primary key's only column (its raw text is then the record key, as ksqlDB's KAFKA
    key format; a composite key is encoded in the table's format instead).

    Raises:
        ValidationError: a name that is not a column (names the declared columns), or a
            ``"key"`` that contradicts the primary key; ``err.key`` is the property.
    """
    names = [c["name"] for c in columns]
    lower = {n.lower() for n in names}

    def fail(message: str, prop: str, text: str) -> None:
        raise ValidationError(f"Kafka table {table}: {message}", text=text, key=prop,
                              bad_value=True)

    if spec.key is not None and spec.key.lower() not in lower:
        fail(f"\"key\" '{spec.key}' is not a column ({', '.join(names)})", "key", spec.key)
    for k in spec.primary_key:
        if k.lower() not in lower:
            fail(f"primary key column '{k}' is not a column ({', '.join(names)})",
                 "primary.key", k)
    if spec.key is not None and spec.primary_key \
            and [spec.key.lower()] != [k.lower() for k in spec.primary_key]:
        fail(f"\"key\" '{spec.key}' with \"primary.key\" '{','.join(spec.primary_key)}': "
             "\"key\" may only name the primary key's single column (its text is then the "
             "record key); drop \"key\" to have the primary-key columns encoded in the "
             f"table's format ({spec.format}) as the record key", "key", spec.key)


_LABELS = {"kafka stream": "Kafka stream", "file stream": "file stream",
           "rate stream": "rate stream", "delta stream": "Delta stream",
           "iceberg stream": "Iceberg stream",
           "file table": "file table", "sql table": "SQL table",
           "console table": "console table", "kafka table": "Kafka table"}


def _lower(props: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in props.items()}


#: ``"source"`` of a stream -> its connector scope (:mod:`streamjob.properties`).
STREAM_SCOPES = {"kafka": "kafka stream", "files": "file stream", "rate": "rate stream",
                 "delta": delta.STREAM_SCOPE, "iceberg": iceberg.STREAM_SCOPE}
#: ``"connector"`` of a table (other than Kafka) -> its connector scope.
TABLE_SCOPES = {"sql": "sql table", "console": "console table", "": "file table",
                "files": "file table", "file": "file table"}


def stream_source_name(properties: Mapping[str, str]) -> str:
    """A stream's ``"source"`` (names case-insensitive), lower-cased; ``kafka`` when
    absent. Not checked: :func:`stream_scope` is None for an unknown one."""
    return _lower(properties).get("source", "kafka").strip().lower()


def stream_scope(properties: Mapping[str, str]) -> str | None:
    """The connector scope of a stream with TBLPROPERTIES ``properties`` (``kafka
    stream``, ``file stream``, ``rate stream``), None for an unknown ``"source"``."""
    return STREAM_SCOPES.get(stream_source_name(properties))


def table_connector(properties: Mapping[str, str]) -> str:
    """A table's connector from its TBLPROPERTIES: ``"connector"`` lower-cased, or
    ``kafka`` for a table with ``"topic"`` and no ``"connector"`` (``""``: files)."""
    p = _lower(properties)
    connector = p.get("connector", "").strip().lower()
    return "kafka" if not connector and "topic" in p else connector


def table_scope(properties: Mapping[str, str], stored_as: str | None = None) -> str | None:
    """The connector scope of a table (``kafka table``, ``sql table``, ``file table``,
    ``console table``, ``delta table`` for ``STORED AS DELTA``, ``iceberg table`` for
    ``STORED AS ICEBERG``), None for an unknown ``"connector"``."""
    if (stored_as or "").strip().lower() == delta.STORED_AS:
        return delta.SCOPE
    if (stored_as or "").strip().lower() == iceberg.STORED_AS:
        return iceberg.SCOPE
    connector = table_connector(properties)
    return "kafka table" if connector == "kafka" else TABLE_SCOPES.get(connector)


def source_spec(name: str, properties: Mapping[str, str], row_format: Mapping | None):
    """The source spec of stream ``name``.

    Raises:
        ValidationError: missing or contradictory properties (names what to add).
    """
    p = _lower(properties)
    source = stream_source_name(p)
    scope = stream_scope(p)
    if scope is None:
        raise ValidationError(f"stream '{name}': unknown source '{source}' (kafka, files, "
                              "rate, delta or iceberg)", text=source)
    typed = registry.validate_connector(scope, p, f"{_LABELS[scope]} '{name}'")
    if ("watermark.column" in p) != ("watermark.delay" in p):
        raise ValidationError(  # located at the one given (issue 28 point 5)
            f"stream '{name}': \"watermark.column\" and \"watermark.delay\" go together "
            "(the event-time column and how late events may be)",
            key="watermark.column" if "watermark.column" in p else "watermark.delay")
    if source == "delta":
        return delta.delta_source_spec(name, p)
    if source == "iceberg":
        return iceberg.iceberg_source_spec(name, p)
    if source == "rate":
        return RateSourceSpec(typed.get("rows.per.second", 1))
    if source == "files":
        fmt = p.get("format", "csv").lower()
        if "path" not in p:
            raise ValidationError(f"file stream '{name}' needs TBLPROPERTIES(\"path\"=...)")
        if fmt not in FILE_FORMATS:
            raise ValidationError(f"file stream '{name}': format must be one of {', '.join(FILE_FORMATS)}")
        if "\x00" in p["path"]:
            raise ValidationError(f"file stream '{name}': \"path\" holds a NUL character, which "
                                  "no file system accepts", key="path", bad_value=True)
        return FileSourceSpec(p["path"], fmt)
    security = KafkaSecurity.from_properties(p, f"Kafka stream '{name}'")
    bootstrap = _bootstrap(p, f"Kafka stream '{name}'", security.protocol,
                           typed.get("kafka.request.timeout.ms", 30_000) / 1000)
    delimiter = hive_forms.delimiter_of(row_format) or p.get("delimiter") or ","
    fmt = p.get("format", hive_forms.row_format_default(row_format) or "json").lower()
    if fmt not in FORMATS:
        raise ValidationError(f"stream '{name}': format must be one of {', '.join(FORMATS)}, got '{fmt}'")
    malformed = typed.get("malformed.policy", "fail")
    dead_letter = typed.get("malformed.dead.letter.table")
    if (malformed == "dead-letter") != (dead_letter is not None):
        raise ValidationError(
            f"stream '{name}': \"malformed.policy\"=\"dead-letter\" and "
            f"\"malformed.dead.letter.table\" go together (the policy and the SQL table "
            f"receiving the malformed records)",
            key="malformed.policy" if dead_letter is None else "malformed.dead.letter.table")
    return KafkaSourceSpec(
        p["topic"], bootstrap, fmt, delimiter,
        typed.get("transwarp.consumer.reset.offset.strategy", "earliest"),
        group_id=typed.get("transwarp.consumer.group.id"),
        fail_on_data_loss=typed.get("fail.on.data.loss", True),
        malformed=malformed, dead_letter=dead_letter,
        isolation=typed.get("kafka.isolation.level", "read_uncommitted"),
        missing_columns=typed.get("missing.columns", "count"),
        security=security,
        request_timeout_ms=typed.get("kafka.request.timeout.ms", 30_000))


def _kafka_table_spec(name: str, p: dict[str, str], row_format: Mapping | None) -> KafkaTableSpec:
    """The spec of Kafka table ``name`` from its lower-cased TBLPROPERTIES ``p``; ROW
    FORMAT DELIMITED makes ``delimited`` the default format and gives the delimiter, as
    for Kafka streams."""
    registry.validate_connector("kafka table", p, f"{_LABELS['kafka table']} '{name}'")
    security = KafkaSecurity.from_properties(p, f"Kafka table '{name}'")
    bootstrap = _bootstrap(p, f"Kafka table '{name}'", security.protocol)
    fmt = p.get("format", hive_forms.row_format_default(row_format) or "json").strip().lower()
    if fmt not in KAFKA_TABLE_FORMATS:
        raise ValidationError(f"Kafka table '{name}': format must be one of "
                              f"{', '.join(KAFKA_TABLE_FORMATS)}, got '{fmt}'", text=fmt)
    delimiter = hive_forms.delimiter_of(row_format) or p.get("delimiter") or ","
    key = p.get("key", "").strip() or None
    return KafkaTableSpec(p["topic"], bootstrap, fmt, delimiter, key, security,
                          _primary_key(p))


def _primary_key(p: dict[str, str]) -> tuple[str, ...]:
    """``"primary.key"`` of lower-cased TBLPROPERTIES ``p``: its columns, lower-cased,
    in the order given, each once."""
    cols = (c.strip().lower() for c in p.get("primary.key", "").split(","))
    return tuple(dict.fromkeys(c for c in cols if c))


def _bootstrap(p: dict[str, str], what: str, protocol: str, timeout_s: float = 10.0) -> str:
    """The bootstrap servers of a Kafka stream or table (lower-cased TBLPROPERTIES
    ``p``): ``"kafka.broker.list"``; without it, the brokers registered in the ZooKeeper
    of ``"kafka.zookeeper"`` (old Slipstream scripts; looked up each time the spec is
    built, so a job start finds the brokers live then), waiting at most the smaller of
    ``timeout_s`` and 10 s for ZooKeeper.

    Raises:
        ValidationError: no ``"topic"``; neither property; or ZooKeeper unreachable or
            listing no broker (names its address).
    """
    from .kafka.zookeeper import CONNECT_TIMEOUT_S, brokers_from_zookeeper

    if not p.get("topic"):
        need = ['"topic"=...'] + ([] if p.get("kafka.broker.list") else ['"kafka.broker.list"=...'])
        raise ValidationError(f"{what} needs TBLPROPERTIES({', '.join(need)})")
    if p.get("kafka.broker.list"):
        return p["kafka.broker.list"]
    if not p.get("kafka.zookeeper", "").strip():
        raise ValidationError(f"{what} needs TBLPROPERTIES(\"kafka.broker.list\"=...): the "
                              "Kafka brokers as host:port,... (or \"kafka.zookeeper\" where "
                              "Kafka registers its brokers)")
    return brokers_from_zookeeper(p["kafka.zookeeper"].strip(), protocol, what,
                                  min(timeout_s, CONNECT_TIMEOUT_S))


def table_spec(name: str, properties: Mapping[str, str], stored_as: str | None,
               location: str | None, default_location: str, partitioned_by=(),
               row_format: Mapping | None = None, stored_by: str | None = None,
               database: str = ""):
    """The sink/static spec of table ``name`` of StreamSQL database ``database`` (an
    Iceberg table's default namespace); ``partitioned_by`` (the table's partition
    columns) goes into a :class:`FileTableSpec` or a Delta or Iceberg table's spec
    (other kinds of table are not partitioned: the executor refuses PARTITIONED BY for
    them).

    Raises:
        ValidationError: missing or contradictory properties; HBase, Hyperdrive and
            Holodesk storage (:func:`.hive_forms.check_storage`).
    """
    hive_forms.check_storage(name, stored_as, stored_by)
    p = _lower(properties)
    if table_scope(p, stored_as) == delta.SCOPE:
        if "connector" in p:
            raise ValidationError(f"table '{name}': STORED AS DELTA makes it a Delta table; "
                                  "drop \"connector\"", key="connector", bad_value=True)
        return delta.delta_table_spec(name, p, location, default_location, partitioned_by)
    if table_scope(p, stored_as) == iceberg.SCOPE:
        if "connector" in p:
            raise ValidationError(f"table '{name}': STORED AS ICEBERG makes it an Iceberg "
                                  "table; drop \"connector\"", key="connector", bad_value=True)
        return iceberg.iceberg_table_spec(name, p, location, default_location,
                                          partitioned_by, database)
    connector = table_connector(p)
    if connector == "kafka":
        return _kafka_table_spec(name, p, row_format)
    scope = table_scope(p)
    if scope is None:
        raise ValidationError(f"table '{name}': unknown connector '{connector}' "
                              "(sql, console or files)", text=connector)
    registry.validate_connector(scope, p, f"{_LABELS[scope]} '{name}'")
    if connector == "sql":
        if not p.get("url"):
            raise ValidationError(f"SQL table '{name}' needs TBLPROPERTIES(\"url\"=<SQLAlchemy URL>)")
        return SqlTableSpec(p["url"], p.get("table", name), _primary_key(p))
    if connector == "console":
        return ConsoleTableSpec()
    fmt = hive_forms.file_format(stored_as, p, row_format)
    if fmt not in FILE_TABLE_FORMATS:
        raise ValidationError(f"table '{name}': STORED AS must be one of "
                              f"{', '.join(FILE_TABLE_FORMATS).upper()}, not {fmt.upper()}",
                              text=fmt)
    header = p.get("skip.header.line.count", "0").strip() not in ("", "0")
    delimiter = hive_forms.delimiter_of(row_format)
    return FileTableSpec(fmt, location or default_location, header,
                         tuple(c.lower() for c in partitioned_by),
                         delimiter if fmt in ("csv", "textfile") else None)


def spec_of_table(table, default_location: str = ""):
    """:func:`table_spec` of a catalog table record (``TableInfo``); ``default_location``
    is the warehouse directory used when a file table declares no LOCATION."""
    return table_spec(table.name, table.properties, table.stored_as, table.location,
                      default_location, partitioned_by=table.partitioned_by,
                      row_format=table.row_format, database=table.database)


def delta_table_location(spec) -> str | None:
    """The directory of a Delta table's spec (its LOCATION), None for a table of another
    kind: OPTIMIZE and VACUUM maintain Delta tables only (docs/connectors.md)."""
    return spec.location if isinstance(spec, DeltaTableSpec) else None


def iceberg_table_ref(spec):
    """The :class:`.iceberg.spec.IcebergTableRef` of an Iceberg table's spec, None for a
    table of another kind (OPTIMIZE and VACUUM of Iceberg tables)."""
    return spec.ref if isinstance(spec, IcebergTableSpec) else None


def iceberg_stream_ref(spec):
    """The :class:`.iceberg.spec.IcebergTableRef` an Iceberg stream's spec reads, None
    for a stream of another kind (VACUUM asks which jobs read a table as a stream)."""
    return spec.ref if isinstance(spec, IcebergSourceSpec) else None


def delta_stream_path(spec) -> str | None:
    """The table directory a Delta stream's spec reads, None for a stream of another
    kind (VACUUM asks which jobs read a table as a stream)."""
    return spec.path if isinstance(spec, DeltaSourceSpec) else None


def sql_table(spec) -> "SqlTableSpec | None":
    """``spec`` if it is a SQL table's, else None (a shadow run compares SQL tables
    only, docs/upgrades.md)."""
    return spec if isinstance(spec, SqlTableSpec) else None

