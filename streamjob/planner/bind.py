"""A plan bound to its connectors: :class:`BoundQuery`, everything the Spark room needs to
build a job's streaming query (or a shell preview's), answered before the Spark room is
entered, so that ``spark/query.py`` only applies it with pyspark and its own helpers and
asks nothing back of the planner, the connectors or the security room.

Each source stream and each static table is given its connector's complete reader
description (:class:`~streamjob.connectors.source_base.Reader`: Spark data source,
schema, options, load path and the steps after reading) and what the Spark room adds to
it (watermark, processing-time column, observed metrics); each derived stream its view
and select; the job's select its views, CEP pattern, session windows and the sink's
columns as the select's columns are cast and named.

:func:`bind_job` runs where the job starts (the job manager's attempt, DESIGN §7): it
resolves the sources' secret references and checks SQL static tables then, as the readers
do. With ``read=False`` (Spark's analysis of a job at CREATE, EXPLAIN) nothing is
resolved or connected to: the readers are left out and the Spark room reads empty inputs
of the declared columns instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..columntypes import ddl, spark_type
from ..connectors.source_base import Reader
from .cep import MATCH_VIEW
from .window import PROCTIME_COLUMN


@dataclass(frozen=True)
class StreamRead:
    """One source stream as the Spark room reads it into view ``view``.

    ``stream`` is its qualified name (the observed metrics' key, ``spark/observe.py``);
    ``declared`` its declared columns as Spark DDL; ``reader`` its connector's reader
    (None: not bound, empty input of ``declared``); ``watermark`` ``(column, delay)``
    (a Spark interval) of an event-time stream, else None; ``proctime`` the
    processing-time column added to it (a STREAMWINDOW without event time), else None;
    ``counted`` the declared columns whose presence is counted per micro-batch."""

    view: str
    stream: str
    declared: str
    reader: Reader | None
    watermark: tuple[str, str] | None = None
    proctime: str | None = None
    counted: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableRead:
    """One static table as the Spark room reads it into view ``view`` at each micro-batch:
    ``declared`` its declared columns as Spark DDL, ``reader`` its connector's reader
    (None: not bound, an empty table of ``declared``)."""

    view: str
    declared: str
    reader: Reader | None


@dataclass(frozen=True)
class DerivedView:
    """A derived stream's view: its select (Spark SQL over the views before it), and the
    processing-time column added to it, or None."""

    view: str
    select_sql: Any
    proctime: str | None = None


@dataclass(frozen=True)
class BoundQuery:
    """A job's (or a preview's) query bound to its connectors (module docstring).

    * ``name``: the streaming query's name (``db.job``; a preview's: None);
    * ``functions``: the user functions it calls (FunctionInfo), each with its RETURNS
      type as a Spark type (None: its callable's own), registered first;
    * ``sources``, ``statics``, ``derived``: the views, in dependency order;
    * ``pattern``: a CEP query's :class:`~streamjob.planner.cep.CepPlan`, whose matches
      (of Spark DDL ``match_schema``) become view ``match_view``; None: none;
    * ``windows``: the select's stream windows (predicate SESSIONWINDOWs sessionize
      their view);
    * ``select_sql``: the select over the views;
    * ``sink``: ``(column as declared, Spark type)`` per inserted column, in the
      select's order, and ``sink_name``, ``targets`` (the inserted columns as written)
      for the error when the counts differ; a preview's: None;
    * ``output_mode``, ``trigger_ms``: the streaming query's output mode and trigger
      interval (ms); ``select_span``: where the select stands in the user's text.
    """

    name: str | None
    functions: tuple
    sources: tuple[StreamRead, ...]
    statics: tuple[TableRead, ...]
    derived: tuple[DerivedView, ...]
    windows: tuple
    select_sql: Any
    output_mode: str
    pattern: Any = None
    match_view: str = MATCH_VIEW
    match_schema: str | None = None
    sink: tuple[tuple[str, str], ...] | None = None
    sink_name: str | None = None
    targets: tuple[str, ...] = ()
    trigger_ms: int = 0
    select_span: Any = None


def bind_job(plan, *, read: bool = True) -> BoundQuery:
    """The query of ``plan`` (a :class:`~streamjob.planner.plan.JobPlan`) bound to its
    connectors. ``read=False``: without readers (nothing resolved or contacted).

    Raises:
        ConnectorError: a secret reference that cannot be resolved; a SQL static table
            that cannot be reached, does not exist or whose columns do not match.
        PolicyError: a secret reference outside the admin's rules.
    """
    q = plan.query
    declared = {c["name"].lower(): c["type"] for c in plan.sink.columns}
    spelled = {c["name"].lower(): c["name"] for c in plan.sink.columns}  # as declared
    targets = tuple(q.target_columns or [c["name"].lower() for c in plan.sink.columns])
    # INSERT maps the select's columns to the table's by position (Hive, Slipstream, Flink)
    sink = tuple((spelled.get(t.lower(), t), spark_type(declared[t.lower()])) for t in targets)
    return BoundQuery(
        name=plan.qualified_name, functions=_functions(plan.functions),
        sources=tuple(_stream(src, plan.props, read, _positions(plan.functions))
                      for src in plan.sources),
        statics=tuple(bind_static(st, read) for st in plan.statics),
        derived=_derived(plan.derived), windows=q.windows, select_sql=q.select_sql,
        output_mode=plan.output_mode, pattern=q.pattern, sink=sink,
        match_schema=_match_schema(q.pattern), sink_name=plan.sink.qualified_name, targets=targets,
        trigger_ms=plan.props.trigger_ms, select_span=q.select_span)


def bind_preview(plan) -> BoundQuery:
    """The query of a shell preview (a :class:`~streamjob.planner.preview.PreviewPlan`)
    bound to its connectors, as :func:`bind_job` (its readers resolved now; a CEP
    query's pattern and match schema as a job's, so that
    :func:`streamjob.spark.query.create_views` builds its match view)."""
    return BoundQuery(
        name=None, functions=_functions(plan.functions),
        sources=tuple(_stream(src, plan.props, True, _positions(plan.functions))
                      for src in plan.sources),
        statics=tuple(bind_static(st) for st in plan.statics),
        derived=_derived(plan.derived), windows=plan.select.windows,
        select_sql=plan.select.select_sql, output_mode=plan.output_mode,
        pattern=plan.select.pattern, match_schema=_match_schema(plan.select.pattern))


def _match_schema(pattern) -> str | None:
    """The Spark DDL of the matches of ``pattern`` (a
    :class:`~streamjob.planner.cep.CepPlan`; None: no pattern, None)."""
    return None if pattern is None else ddl({"name": c, "type": t} for c, t in pattern.outputs)


def _positions(functions) -> bool:
    """Whether a plan calling ``functions`` reads its Kafka sources with each record's
    position as hidden columns (:mod:`streamjob.udf.positions`): when it calls a scalar
    Python function, whose calls over such a source the planner gives them
    (:mod:`.positions`)."""
    return any(f.kind == "python" for f in functions)


def _stream(src, props, read: bool, positions: bool = False) -> StreamRead:
    """A source stream (:class:`~streamjob.planner.plan.Source`) as read: its source's
    reader (secrets resolved) and the job's watermark (its ``"watermark.delay"``, or
    the job's ``morphling.maxlag.on.disorder``). Unread, it is an empty stream of files:
    nothing malformed, every declared column counted. With ``positions`` and a source
    that has them (``position_topic``), the hidden position columns come last."""
    from ..udf.positions import position_ddl

    st = src.stream
    reader = None
    positions = positions and src.source.position_topic is not None
    extra = {"positions": True} if positions else {}
    if read:
        reader = src.source.reader(st.columns, start=props.start_position,
                                   max_records=props.max_records_per_batch,
                                   group_id=src.group_id, dead_letter=src.dead_letter, **extra)
    p = {k.lower(): v for k, v in st.properties.items()}
    watermark = None
    if p.get("watermark.column") and p.get("watermark.delay"):  # the job's maxlag wins
        watermark = (p["watermark.column"], props.watermark_delay(p["watermark.delay"]))
    counted = ()
    if st.columns and (not read or src.source.observes_columns):
        counted = tuple(c["name"] for c in st.columns)
    declared = ddl(st.columns) + (f", {position_ddl()}" if positions else "")
    return StreamRead(src.view, st.qualified_name, declared, reader, watermark,
                      PROCTIME_COLUMN if src.proctime else None, counted)


def bind_static(st, read: bool = True) -> TableRead:
    """A static table (:class:`~streamjob.planner.plan.Static`) as read
    (:func:`~streamjob.connectors.static.table_reader`, imported only when reading)."""
    columns = st.table.columns
    reader = None
    if read:
        from ..connectors.static import table_reader

        reader = table_reader(st.spec, columns, st.table.qualified_name, st.as_of)
    return TableRead(st.view, ddl(columns), reader)


def _functions(functions) -> tuple:
    return tuple((f, spark_type(f.return_type) if f.return_type else None) for f in functions)


def _derived(derived) -> tuple[DerivedView, ...]:
    return tuple(DerivedView(d.view, d.select_sql, PROCTIME_COLUMN if d.proctime else None)
                 for d in derived)
