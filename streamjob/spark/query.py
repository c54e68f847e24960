"""A job's streaming query built from its plan, in a job's own Spark session clone
(DESIGN §7): each source stream becomes a temp view (:func:`source_frame`), each static
table a batch view read again at every micro-batch (:func:`static_frame`), each derived
stream a view over those, then the job's select over them, typed and named as the sink
(:func:`result_frame`), attached to the job's table sink and started
(:func:`start_query`)."""

from __future__ import annotations

from dataclasses import replace

from ..connectors import spec as cspec
from ..exceptions import ValidationError
from ..planner.plan import JobPlan, Source, Static
from ..planner.window import PROCTIME_COLUMN
from ..properties import JobProperties
from .guard import run_sql
from .json_keys import TEXT_COLUMN, json_columns
from .observe import observe_source


def source_frame(session, src: Source, props: JobProperties):
    """The streaming DataFrame of one stream, read as its source describes
    (:meth:`~streamjob.connectors.sources.StreamSource.reader`), watermarked if it
    declares event time (its ``"watermark.delay"``, or the job's
    ``morphling.maxlag.on.disorder``)."""
    from .. import columntypes as sjtypes

    st = src.stream
    how = src.source.reader(sjtypes.ddl(st.columns), start=props.start_position,
                            max_records=props.max_records_per_batch, group_id=src.group_id,
                            dead_letter=src.dead_letter)  # secrets resolved: job start
    reader = session.readStream.format(how.format)
    if how.schema is not None:
        reader = reader.schema(how.schema)
    df = reader.options(**how.options).load()
    if how.json_text:
        # keys matched as a Kafka stream matches them (exact, else ignoring case), per record
        df = json_columns(df, st.columns)
    df = observe_source(df, src)  # malformed rows and missing columns counted
    p = {k.lower(): v for k, v in st.properties.items()}
    if p.get("watermark.column") and p.get("watermark.delay"):  # the job's maxlag wins
        df = df.withWatermark(p["watermark.column"], props.watermark_delay(p["watermark.delay"]))
    return with_proctime(df) if src.proctime else df


def with_proctime(df):
    """``df`` with the processing-time column of a STREAMWINDOW without event time:
    ``__proctime`` = ``current_timestamp()`` (the micro-batch's time), watermarked with
    no delay so that a window is final once a later batch has passed its end."""
    from pyspark.sql import functions as F

    return df.withColumn(PROCTIME_COLUMN, F.current_timestamp()).withWatermark(
        PROCTIME_COLUMN, "0 seconds")


def static_frame(session, st: Static):
    """A batch DataFrame of a static table, with the table's columns in declared order,
    read in full at each micro-batch of a streaming query that joins it (DESIGN §7).

    A SQL table, and a file table on a local or ``file:`` location, go through streamjob's
    Python data sources (``streamjob_sql``, ``streamjob_files``,
    :mod:`streamjob.connectors.static`), whose reads run again at every micro-batch:
    rows inserted and files added between batches are joined by the next batch. A SQL
    table's ``"table"`` may be ``schema.table`` (a PostgreSQL schema, an attached SQLite
    database); its columns are matched by name, case-insensitively (by position when a
    name is missing and the counts agree). A partitioned file table is read from its
    ``col=value`` directories (the declared schema gives the partition columns their
    types). A file table on another URI scheme (hdfs:, s3a: ...) goes through Spark's
    reader, which lists its files once, when the job starts.

    Raises:
        ConnectorError: the SQL table cannot be reached, does not exist or its columns
            do not match (checked here, at job start).
    """
    from .. import columntypes as sjtypes
    from ..connectors import static

    sp = st.spec
    names = [c["name"] for c in st.table.columns]
    ddl = sjtypes.ddl(st.table.columns)
    if sp.on_files and static.is_local(sp.location):
        return (session.read.format(static.FILE_SOURCE_NAME).schema(ddl)
                .option("location", static.absolute(sp.location))
                .option("format", sp.format)
                .option("delimiter", sp.delimiter or "")
                .option("header", str(sp.header).lower())
                .option("partitionedBy", ",".join(sp.partitioned_by))
                .option("partitions", str(max(1, session.sparkContext.defaultParallelism)))
                .load())
    if sp.on_files:  # listed once, at job start (Spark's index)
        return spark_file_frame(session, sp, st.table.columns)
    from ..security.resolve import resolve_url

    static.check_sql_table(sp.url, sp.table, names)
    # resolved here, in the job manager that holds the admin's key and secret files (as
    # Kafka's security options): Spark's Python workers need neither; Spark redacts
    # "url" options in plans (spark.sql.redaction.options.regex)
    url = resolve_url(sp.url, f"table {st.table.qualified_name}'s \"url\"")
    return (session.read.format(static.SQL_SOURCE_NAME).schema(ddl)
            .option("url", url).option("table", sp.table).load())


def spark_file_frame(session, sp, columns):
    """A file table (:class:`~streamjob.connectors.spec.FileTableSpec`) read by Spark's
    own reader (a location that :mod:`streamjob.connectors.files.static` cannot list),
    with ``columns`` (the declared ``[{"name", "type"}]``) in declared order. JSON keys
    match the columns as a Kafka stream's do (:mod:`.json_keys`); partition columns come
    from the ``col=value`` directories, typed as declared."""
    from pyspark.sql import functions as F

    from .. import columntypes as sjtypes

    names = [c["name"] for c in columns]
    if sp.format == "json":
        parts = {p.lower() for p in sp.partitioned_by}
        part_cols = [c for c in columns if c["name"].lower() in parts]
        # partition columns in the schema: typed as declared, not inferred from the values
        text = (session.read.format("text")
                .schema(", ".join([f"`{TEXT_COLUMN}` STRING", *filter(None, [sjtypes.ddl(part_cols)])]))
                .load(sp.location))
        data = [c for c in columns if c["name"].lower() not in parts]
        df = json_columns(text, data, keep=[c["name"] for c in part_cols])
        return df.select(*[F.col(f"`{n}`") for n in names])
    from ..connectors import hive_forms

    reader = (session.read.format(hive_forms.spark_format(sp.format)).schema(sjtypes.ddl(columns))
              .options(**hive_forms.text_options(sp.format, sp.delimiter)))
    if sp.format in ("csv", "textfile"):
        reader = reader.option("header", str(sp.header).lower())
    df = reader.load(sp.location)
    # Spark puts partition columns after the data columns: restore the declared order
    return df.select(*[f"`{n}`" for n in names]) if sp.partitioned_by else df


def result_frame(session, plan: JobPlan, empty_dir: str | None = None):
    """The job's result: the select over its views, columns named and typed as the sink.

    Views are created in dependency order: source streams, static tables, then each
    derived stream (its select over the views before it). With ``empty_dir`` (an empty
    directory) every source is read as a stream of Parquet files from it and every static
    table is an empty DataFrame, each with its declared columns and watermark: the same
    query over empty inputs, for Spark's analysis (:mod:`.analysis`); nothing is
    read or connected to."""
    from pyspark.sql import functions as F

    from ..columntypes import ddl
    from .udf import register

    register(session, plan.functions)
    for src in plan.sources:
        if empty_dir is not None:  # Spark's Parquet source with the declared schema: no
            # per-column key matching of JSON text to build, typed as declared
            src = replace(src, spec=cspec.FileSourceSpec(empty_dir, "parquet"))
        source_frame(session, src, plan.props).createOrReplaceTempView(src.view)
    for st in plan.statics:
        frame = (session.createDataFrame([], ddl(st.table.columns))
                 if empty_dir is not None else static_frame(session, st))
        frame.createOrReplaceTempView(st.view)
    for d in plan.derived:
        df = run_sql(session, d.select_sql)
        (with_proctime(df) if d.proctime else df).createOrReplaceTempView(d.view)
    if plan.query.pattern is not None:  # CEP: the matches of the pattern, as a view
        from ..planner.cep import MATCH_VIEW
        from .cep import match_frame

        match_frame(session, plan.query.pattern).createOrReplaceTempView(MATCH_VIEW)
    sessionize_views(session, plan.query.windows)
    df = run_sql(session, plan.query.select_sql)
    declared = {c["name"].lower(): c["type"] for c in plan.sink.columns}
    targets = list(plan.query.target_columns or [c["name"].lower() for c in plan.sink.columns])
    if len(df.columns) != len(targets):
        raise ValidationError(
            f"the select gives {len(df.columns)} columns but {len(targets)} are inserted into "
            f"{plan.sink.qualified_name} ({', '.join(targets)})")
    from ..columntypes import spark_type

    spelled = {c["name"].lower(): c["name"] for c in plan.sink.columns}  # as declared
    # INSERT maps the select's columns to the table's by position (Hive, Slipstream, Flink):
    # renamed by position first, so two select columns of one name (`select x, x`) are
    # two columns, not an ambiguous reference
    slots = [f"_{i}" for i in range(len(targets))]
    return df.toDF(*slots).select(*[
        F.col(f"`{c}`").cast(spark_type(declared[t.lower()])).alias(spelled.get(t.lower(), t))
        for c, t in zip(slots, targets)])


def start_query(session, plan: JobPlan, checkpoint_dir: str, sink=None):
    """Start the job's streaming query in ``session``; returns the StreamingQuery.

    ``sink`` is the job's :class:`~streamjob.connectors.sinks.TableSink`, prepared (the
    job manager builds it with the job's markers); None builds and prepares one here with
    the job's name as its marker key (tests, one-off queries)."""
    from ..connectors.sinks import table_sink

    if sink is None:
        sink = table_sink(plan.sink, plan.sink_spec, marker=plan.qualified_name,
                          job=plan.qualified_name, exactly_once=plan.guarantee == "exactly-once",
                          upsert=plan.output_mode == "update",
                          checkpointed=plan.props.checkpoint_enabled)
        sink.prepare()
    df = result_frame(session, plan)
    # the trigger is the output cadence, not the checkpoint interval (DESIGN §4): a batch
    # starts at most every trigger_ms, as soon as a source has data; the checkpoint
    # recorder picks the micro-batch that completes after each checkpoint interval
    writer = (df.writeStream.queryName(f"{plan.database}.{plan.name}")
              .outputMode(plan.output_mode)
              .option("checkpointLocation", checkpoint_dir)
              .trigger(processingTime=f"{plan.props.trigger_ms} milliseconds"))
    return sink.attach(writer).start()


def preview_frame(session, plan):
    """The streaming DataFrame of a shell preview (a
    :class:`streamjob.planner.preview.PreviewPlan`) in ``session`` (a session clone): a view per
    source stream, static table and derived stream, in dependency order, then the select."""
    from .udf import register

    register(session, plan.functions)
    for src in plan.sources:
        source_frame(session, src, plan.props).createOrReplaceTempView(src.view)
    for st in plan.statics:
        static_frame(session, st).createOrReplaceTempView(st.view)
    for d in plan.derived:
        df = run_sql(session, d.select_sql)
        (with_proctime(df) if d.proctime else df).createOrReplaceTempView(d.view)
    sessionize_views(session, plan.select.windows)
    return run_sql(session, plan.select.select_sql)


def sessionize_views(session, windows) -> None:
    """Replace the view of each stream read with a predicate SESSIONWINDOW by its
    sessionized stream (:func:`streamjob.spark.sessions.sessionize`)."""
    for w in windows:
        if w.kind == "predicate":
            from .sessions import sessionize

            sessionize(session, session.table(w.view), w).createOrReplaceTempView(w.view)
