"""Statement + catalog -> plan: what a job reads, writes and guarantees.

:func:`plan_job` needs only the catalog: it resolves the job's query, its sources, static
tables and sink, and picks Spark's output mode (DESIGN §7). It runs at CREATE STREAMJOB
(so a job that cannot run is refused before it is registered) and again at each start.
The plan holds no Spark object; :mod:`streamjob.spark.query` builds and starts the
query from it (each stream a temporary view over its source, the select's columns
mapped by position onto the sink table's declared columns, Hive's INSERT semantics).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..catalog import Catalog
from ..catalog.records import StreamInfo, TableInfo
from ..connectors import spec as cspec
from ..connectors.sources import StreamSource, stream_source
from ..exceptions import ValidationError
from ..grammar.statements import Position
from ..home import Home
from .. import properties as jp
from ..properties import JobProperties
from ..policy.checked import CheckedSQL
from .derived import check_window_stream_readers, expand_streams
from .lookup import Lookup
from .query import AnalyzedQuery, analyze

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Source:
    """A source stream read by the job (directly or beneath a derived stream): its
    catalog record, temp view name and connector spec; ``proctime`` when a STREAMWINDOW
    windows it on processing time (its view then gets the ``__proctime`` column)."""

    stream: StreamInfo
    view: str
    spec: Any
    proctime: bool = False
    group_id: str | None = None  # Kafka: the consumer group offsets are committed to
    dead_letter: Any = None  # Kafka: DeadLetterTarget of "malformed.policy"=dead-letter
    dead_letter_table: TableInfo | None = None

    @property
    def source(self) -> StreamSource:
        """The stream's source contract (:func:`~streamjob.connectors.sources.stream_source`)."""
        return stream_source(self.spec)

    @property
    def tolerant(self) -> bool:
        """Malformed records are set aside (skip/dead-letter) rather than failing."""
        return self.source.tolerant


@dataclass(frozen=True)
class Derived:
    """A derived stream read by the job: its record, temp view name, its select as Spark
    SQL over the views of its inputs, and ``proctime`` as in :class:`Source`."""

    stream: StreamInfo
    view: str
    select_sql: CheckedSQL
    proctime: bool = False


@dataclass(frozen=True)
class Static:
    """A table read as static data in a stream-static join; ``as_of`` the version of a
    lakehouse table a preview reads (time travel), None: its latest at each read."""

    table: TableInfo
    view: str
    spec: Any
    as_of: int | None = None


@dataclass(frozen=True)
class JobPlan:
    """Everything needed to run one job (no Spark objects; safe to keep and compare).

    ``props`` are the effective typed job properties; ``output_mode`` is ``append`` or
    ``update``; ``guarantee`` exactly-once, at-least-once or none (DESIGN §6).
    ``sources`` are the source streams beneath everything the job reads; ``derived``
    the derived streams it reads, in dependency order (inputs first)."""

    database: str
    name: str
    query: AnalyzedQuery
    sources: tuple[Source, ...]
    statics: tuple[Static, ...]
    sink: TableInfo
    sink_spec: Any
    output_mode: str
    props: JobProperties
    guarantee: str
    derived: tuple[Derived, ...] = ()
    #: the user functions it calls, in its query and the derived streams beneath it
    #: (FunctionInfo, by name; docs/functions.md)
    functions: tuple = ()

    @property
    def qualified_name(self) -> str:
        return f"{self.database}.{self.name}"

    @property
    def data_sources(self) -> set[str]:
        """The names of streamjob's Python data sources the job's query reads, which its
        Spark session registers (:func:`streamjob.spark.session.job_session`): those its
        sources name (:attr:`~streamjob.connectors.sources.StreamSource.data_sources`:
        ``streamjob_kafka`` for a Kafka stream), and the static readers
        (``streamjob_sql``, ``streamjob_files``) if it joins a static table,
        ``streamjob_delta`` if it joins a Delta table
        (:func:`streamjob.connectors.static.data_sources`)."""
        names = {name for src in self.sources for name in src.source.data_sources}
        if self.statics:
            # pyarrow and pyspark's types under it: loaded when a job starts, not at planning
            from ..connectors import static

            names |= static.data_sources([s.spec for s in self.statics])
        return names

    @property
    def dependencies(self) -> list[tuple[str, str, str, str]]:
        """``(kind, database, name, role)`` rows for the catalog: every stream beneath
        the job, derived or not, is a ``source`` (so none can be dropped under it); every
        user function it calls a ``call``."""
        deps = [("stream", s.stream.database, s.stream.name, "source") for s in self.sources]
        deps += [("stream", d.stream.database, d.stream.name, "source") for d in self.derived]
        deps += [("table", s.table.database, s.table.name, "static") for s in self.statics]
        deps += [("table", s.dead_letter_table.database, s.dead_letter_table.name, "dead-letter")
                 for s in self.sources if s.dead_letter_table is not None]
        deps.append(("table", self.sink.database, self.sink.name, "sink"))
        deps += [("function", f.database, f.name, "call") for f in self.functions]
        return deps


def plan_job(catalog: Catalog, home: Home, database: str, name: str, query: str,
             job_props: dict[str, str], session_props: dict[str, str] | None = None,
             position: Position | None = None) -> JobPlan:
    """Resolve and check a job without running it.

    The query is analyzed by :func:`.query.analyze` (objects, columns, STREAMWINDOW);
    derived streams it reads are planned recursively over their inputs' views
    (:func:`.derived.expand_streams`).

    Raises:
        ValidationError / PropertyError: unknown object, column or property, bad value, a
            bad STREAMWINDOW, insert columns that do not fit the sink, a derived stream that
            no longer resolves, an aggregation over a window stream without a
            STREAMWINDOW, an output mode that Spark cannot run for this query and
            sink (says what to change); positions are true script positions when
            ``position`` (where the query starts in the script) is given.
    """
    props = jp.values(job_props, session_props)
    lookup = Lookup(catalog)
    aq = analyze(query, lookup, position, database)
    proctime = {w.view for w in aq.windows if w.proctime}
    bases, derived_streams = expand_streams(lookup, aq.references, proctime)
    check_window_stream_readers(aq, (st for st, _, _ in derived_streams))
    sources = [_source(lookup, home, database, name, st, view, view in proctime)
               for st, view in bases]
    derived = tuple(Derived(st, view, sql, view in proctime) for st, view, sql in derived_streams)
    statics = static_tables(lookup, home, aq.references)
    sink = catalog.get_table(*aq.target)
    sink_spec = cspec.spec_of_table(sink, home.table_location(sink.database, sink.name))
    _check_columns(aq, sink)
    sink_spec.check_columns(sink.columns, sink.qualified_name)
    mode = _output_mode(aq, sources, sink, sink_spec)
    props = _flush_interval(props, sink_spec, {**(session_props or {}), **job_props})
    return JobPlan(database, name, aq, tuple(sources), tuple(statics), sink, sink_spec, mode,
                   props, jp.guarantee(props), derived,
                   tuple(lookup.called[k] for k in sorted(lookup.called)))


def _flush_interval(props: JobProperties, sink_spec, given: dict[str, str]) -> JobProperties:
    """``props`` with Slipstream's ``morphling.hdfs.flush.interval.ms`` as the trigger
    interval of a job writing a table on files (a file or Delta table: Slipstream's HDFS
    sinks flush at most that often), unless ``streamjob.trigger.interval`` is given; other
    sinks are unchanged."""
    from dataclasses import replace

    explicit = any(k.strip().lower() == "streamjob.trigger.interval" for k in given)
    if props.flush_interval_ms is None or explicit or not sink_spec.on_files:
        return props
    return replace(props, trigger_interval_ms=props.flush_interval_ms)


def static_tables(lookup: Lookup, home: Home, references) -> list[Static]:
    """The tables a query reads beside its streams, as static data (DESIGN §7).

    Raises:
        ValidationError: a table that cannot be read as static data (Kafka, console).
    """
    statics = []
    for ref in references:
        if ref.kind == "table":
            tb = lookup.table(ref.database, ref.name)
            sp = cspec.spec_of_table(tb, home.table_location(tb.database, tb.name))
            if not sp.static_readable:
                raise ValidationError(f"table {tb.qualified_name} cannot be read as static data")
            statics.append(Static(tb, ref.view, sp))
    return statics


def _source(lookup: Lookup, home: Home, database: str, job: str, st: StreamInfo, view: str,
            proctime: bool) -> Source:
    """A source stream of job ``database.job``: its connector spec, and for Kafka the
    consumer group (the stream's ``transwarp.consumer.group.id``, else
    ``streamjob.<db>.<job>``, DESIGN §7) and the resolved dead-letter table.

    Raises:
        ValidationError: the dead-letter table does not exist, is not a SQL table, or
            declares a column that is not a field of a malformed record.
    """
    from ..connectors.kafka.dead_letter import dead_letter_target
    from ..connectors.kafka.group import default_group_id

    sp = cspec.source_spec(st.name, st.properties, st.row_format)
    source = stream_source(sp)
    group_id = source.consumer_group(default_group_id(database, job))
    target = table = None
    if source.dead_letter:
        db, _, name = source.dead_letter.lower().rpartition(".")
        table = lookup.table(db or st.database, name)
        if table is None:
            raise ValidationError(
                f"stream {st.qualified_name}: dead-letter table '{source.dead_letter}' does "
                f"not exist; create a SQL table (\"connector\"=\"sql\") with columns among "
                f"stream, topic, partition, offset, key, value, timestamp, error")
        tsp = cspec.spec_of_table(table, home.table_location(table.database, table.name))
        target = dead_letter_target(tsp, table, st.qualified_name)
    return Source(st, view, sp, proctime, group_id, target, table)


def _check_columns(aq: AnalyzedQuery, sink: TableInfo) -> None:
    """The insert's columns against the sink's: names in the insert's column list, and
    the count the select gives (INSERT maps by position), at the list's / select's place."""
    declared = [c["name"].lower() for c in sink.columns]
    spans = aq.target_spans or ()
    if aq.target_columns is not None:
        for i, c in enumerate(aq.target_columns):
            if c not in declared:
                raise _error(f"table {sink.qualified_name} has no column {c} (columns: "
                             f"{', '.join(declared)})", spans[i] if i < len(spans) else None)
        if aq.arity_known and len(aq.target_columns) != len(aq.output_columns):
            raise _error(
                f"the insert names {len(aq.target_columns)} columns but the select gives "
                f"{len(aq.output_columns)}", aq.select_span or (spans[0] if spans else None))
    elif aq.arity_known and len(aq.output_columns) != len(declared):
        raise _error(
            f"the select gives {len(aq.output_columns)} columns but table {sink.qualified_name} "
            f"has {len(declared)} ({', '.join(declared)}); INSERT maps columns by position",
            aq.select_span)


def _error(message: str, span) -> ValidationError:
    if span is None:
        return ValidationError(message)
    return ValidationError(message, line=span.line, column=span.column, text=span.text)


def _output_mode(aq: AnalyzedQuery, sources, sink: TableInfo, sink_spec) -> str:
    """Spark's output mode for this query and sink (DESIGN §7).

    Append for projections, and for aggregations over time windows with a watermark: a
    STREAMWINDOW (event time with its watermark, or processing time with a zero-delay
    one), a SESSIONWINDOW likewise, or a written ``window(...)``/``session_window(...)``
    grouping when every source stream declares event time (Spark runs session window
    aggregations in append or complete mode only). Update for other aggregations into a
    table with a primary key (a SQL table, upserted; a Kafka table, records keyed by it:
    Flink's upsert-kafka) or the console; anything else is refused with what to change (an
    append-only sink would hold every intermediate result of a key with nothing saying
    which is current)."""
    if not aq.aggregate:
        return "append"
    watermarked = all(
        {k.lower() for k in s.stream.properties} >= {"watermark.column", "watermark.delay"}
        for s in sources
    )
    if aq.windows or (aq.windowed and watermarked):
        return "append"
    if aq.sessions:
        raise ValidationError(
            "the query groups by session_window(...) on a stream without \"watermark.column\" "
            "and \"watermark.delay\": Spark appends a session once the watermark passes its "
            "end and cannot update sessions in place; declare the stream's event time, or "
            "write FROM s SESSIONWINDOW w AS (GAP '30' SECOND) (processing time)")
    if sink_spec.updates_in_place:  # a primary key upserted, or the console
        return "update"
    raise ValidationError(
        f"the query aggregates, so its results change as data arrives: give table "
        f"{sink.qualified_name} a primary key (\"primary.key\" on a SQL table, upserted, "
        f"on a Delta table, merged, or on a Kafka table, records keyed by it), "
        f"or aggregate over a window of a stream with \"watermark.column\" and "
        f"\"watermark.delay\" so that finished windows can be appended")
