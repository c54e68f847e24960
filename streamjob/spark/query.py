"""A job's streaming query built in a job's own Spark session clone (DESIGN §7) from its
plan bound to its connectors (:class:`streamjob.planner.bind.BoundQuery`): each source
stream becomes a temp view (:func:`stream_frame`), each static table a batch view read
again at every micro-batch (:func:`table_frame`), each derived stream a view over those,
then the job's select over them, typed and named as the sink (:func:`result_frame`),
attached to the job's table sink and started (:func:`start_query`).

Every reader comes described in full (:class:`streamjob.connectors.source_base.Reader`:
Spark data source, schema, options with secrets resolved at job start, load path and the
steps after reading), and the sink comes built and prepared by the job manager: this
module applies them with pyspark and the Spark room's own helpers (JSON keys, observed
metrics, user functions, CEP, session windows) and imports no connector, planner or
security module.
"""

from __future__ import annotations

from ..exceptions import ValidationError
from .guard import run_sql
from .json_keys import TEXT_COLUMN, json_columns
from .observe import observe_source
from .udf import register


def read_frame(session, read, how):
    """The DataFrame that ``how`` (a :class:`~streamjob.connectors.source_base.Reader`)
    describes, read through ``read`` (``session.read`` for a batch, ``session.readStream``
    for a stream): its format, schema (with JSON text: Spark's text column first) and
    options, the session's default parallelism as its ``parallelism`` option, loaded from
    its path; then JSON keys matched to its ``json_columns`` (the other columns read kept
    beside them) and its ``columns`` selected in declared order."""
    schema = how.schema
    if how.json_columns is not None and schema:
        schema = f"`{TEXT_COLUMN}` STRING, {schema}"
    reader = read.format(how.format)
    if schema is not None:
        reader = reader.schema(schema)
    reader = reader.options(**how.options)
    if how.parallelism:
        reader = reader.option(how.parallelism,
                               str(max(1, session.sparkContext.defaultParallelism)))
    df = reader.load() if how.path is None else reader.load(how.path)
    if how.json_columns is not None:
        # keys matched as a Kafka stream matches them (exact, else ignoring case), per record
        df = json_columns(df, how.json_columns, how.json_schema,
                          keep=[c for c in df.columns if c != TEXT_COLUMN])
    if how.columns is not None:  # Spark puts partition columns last: the declared order
        df = df.select(*[f"`{n}`" for n in how.columns])
    return df


def stream_frame(session, s, empty_dir: str | None = None):
    """The streaming DataFrame of one source stream (a
    :class:`~streamjob.planner.bind.StreamRead`) read as its reader describes; with
    ``empty_dir`` (an empty directory) a stream of Parquet files from it with the
    declared columns instead. Its malformed records counted and dropped and its declared
    columns counted (:mod:`.observe`), watermarked if it declares event time, with the
    processing-time column if it has one."""
    if empty_dir is None:
        df = read_frame(session, session.readStream, s.reader)
    else:  # Spark's Parquet source with the declared schema: nothing is read
        df = session.readStream.format("parquet").schema(s.declared).load(empty_dir)
    malformed = s.reader.malformed if empty_dir is None else None
    df = observe_source(df, s.stream, malformed, s.counted)
    if s.watermark is not None:
        df = df.withWatermark(*s.watermark)
    return with_proctime(df, s.proctime) if s.proctime else df


def with_proctime(df, column: str):
    """``df`` with the processing-time column of a STREAMWINDOW without event time:
    ``column`` = ``current_timestamp()`` (the micro-batch's time), watermarked with no
    delay so that a window is final once a later batch has passed its end."""
    from pyspark.sql import functions as F

    return df.withColumn(column, F.current_timestamp()).withWatermark(column, "0 seconds")


def table_frame(session, t, empty: bool = False):
    """A batch DataFrame of a static table (a :class:`~streamjob.planner.bind.TableRead`)
    with its columns in declared order, read in full at each micro-batch of a streaming
    query that joins it (DESIGN §7) as its reader describes
    (:func:`streamjob.connectors.static.table_reader`); ``empty``: an empty DataFrame of
    its declared columns."""
    if empty:
        return session.createDataFrame([], t.declared)
    return read_frame(session, session.read, t.reader)


def create_views(session, q, empty_dir: str | None = None) -> None:
    """Register ``q``'s user functions and create its views in dependency order (a
    :class:`~streamjob.planner.bind.BoundQuery`): source streams, static tables, each
    derived stream (its select over the views before it), a CEP query's matches, then
    each stream read with a predicate SESSIONWINDOW replaced by its sessionized stream
    (:func:`streamjob.spark.sessions.sessionize`). ``empty_dir`` as in
    :func:`result_frame`."""
    register(session, q.functions)
    for s in q.sources:
        stream_frame(session, s, empty_dir).createOrReplaceTempView(s.view)
    for t in q.statics:
        table_frame(session, t, empty_dir is not None).createOrReplaceTempView(t.view)
    for d in q.derived:
        df = run_sql(session, d.select_sql)
        (with_proctime(df, d.proctime) if d.proctime else df).createOrReplaceTempView(d.view)
    if q.pattern is not None:  # CEP: the matches of the pattern, as a view
        from .cep import match_frame

        match_frame(session, q.pattern, q.match_schema).createOrReplaceTempView(q.match_view)
    for w in q.windows:
        if w.kind == "predicate":
            from .sessions import sessionize

            sessionize(session, session.table(w.view), w).createOrReplaceTempView(w.view)


def result_frame(session, q, empty_dir: str | None = None):
    """The job's result (``q`` a :class:`~streamjob.planner.bind.BoundQuery`): the select
    over its views (:func:`create_views`), columns named and typed as the sink.

    With ``empty_dir`` (an empty directory) every source is read as a stream of Parquet
    files from it and every static table is an empty DataFrame, each with its declared
    columns and watermark: the same query over empty inputs, for Spark's analysis
    (:mod:`.analysis`); nothing is read or connected to.

    Raises:
        ValidationError: the select gives another number of columns than are inserted.
    """
    from pyspark.sql import functions as F

    create_views(session, q, empty_dir)
    df = run_sql(session, q.select_sql)
    if len(df.columns) != len(q.sink):
        raise ValidationError(
            f"the select gives {len(df.columns)} columns but {len(q.sink)} are inserted into "
            f"{q.sink_name} ({', '.join(q.targets)})")
    # INSERT maps the select's columns to the table's by position: renamed by position
    # first, so two select columns of one name (`select x, x`) are two columns, not an
    # ambiguous reference
    slots = [f"_{i}" for i in range(len(q.sink))]
    return df.toDF(*slots).select(*[F.col(f"`{c}`").cast(typ).alias(name)
                                    for c, (name, typ) in zip(slots, q.sink)])


def start_query(session, q, checkpoint_dir: str, sink):
    """Start the job's streaming query in ``session``; returns the StreamingQuery.

    ``q`` is the job's :class:`~streamjob.planner.bind.BoundQuery`, ``sink`` its table
    sink (:class:`~streamjob.connectors.sinks.TableSink`), built and prepared by the job
    manager, to which the query's writer is attached."""
    df = result_frame(session, q)
    # the trigger is the output cadence, not the checkpoint interval (DESIGN §4): a batch
    # starts at most every trigger_ms, as soon as a source has data; the checkpoint
    # recorder picks the micro-batch that completes after each checkpoint interval
    writer = (df.writeStream.queryName(q.name)
              .outputMode(q.output_mode)
              .option("checkpointLocation", checkpoint_dir)
              .trigger(processingTime=f"{q.trigger_ms} milliseconds"))
    return sink.attach(writer).start()


def preview_frame(session, q):
    """The streaming DataFrame of a shell preview (``q`` a
    :class:`~streamjob.planner.bind.BoundQuery` of a
    :class:`streamjob.planner.preview.PreviewPlan`) in ``session`` (a session clone): its
    views (:func:`create_views`), then the select."""
    create_views(session, q)
    return run_sql(session, q.select_sql)
