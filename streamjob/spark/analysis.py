"""Asking Spark itself whether it can run a job's query as a stream (issue 13 point 5).

The hand-written rules of :mod:`.streaming` refuse the forms users write most often, at
their line and column, without Spark. Everything else Spark's streaming analysis refuses
(a stream-stream join without an equality, EXCEPT against a stream, several streaming
aggregations in update mode, ...) would still fail only at START. So where a Spark
session is at hand, ``check`` and CREATE/ALTER STREAMJOB plan the query over *empty*
inputs (each source a stream of Parquet files from an empty directory, each static table an
empty DataFrame, with the declared columns and watermarks: :func:`.query.result_frame`)
and run the two checks Spark's ``StreamingQueryManager.createQuery`` runs at start:
the analyzer (``QueryExecution.assertAnalyzed``) and
``UnsupportedOperationChecker.checkForStreaming`` with the job's output mode. No query
starts, nothing is read, no sink or source is contacted; on a warm session it takes tens
of milliseconds.
"""

from __future__ import annotations

import re
import tempfile

from ..exceptions import ValidationError

__all__ = ["refuse_what_spark_refuses"]


def refuse_what_spark_refuses(session, plan) -> None:
    """Raise ValidationError when Spark would refuse ``plan`` (a job's
    :class:`~streamjob.planner.bind.BoundQuery`, bound without readers) at START.

    ``session`` is the process's SparkSession; the check runs in a session clone with its
    own temp views. streamjob's Python data sources are not registered there (Spark 4
    refuses a second registration of a name in some sessions, DATA_SOURCE_ALREADY_EXISTS,
    and nothing is read here: sources are empty file streams).

    Raises:
        ValidationError: "Spark cannot run this query as a stream: <Spark's reason>",
            located at the job's select (Spark's positions are those of the planned SQL,
            not of the script).
    """
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from .session import SAFE_SQL_CONF
    from .query import result_frame

    clone = session.newSession()  # own temp views; no streamjob data source is read here
    for key, value in SAFE_SQL_CONF.items():
        clone.conf.set(key, value)
    with tempfile.TemporaryDirectory(prefix="streamjob-analyze-") as empty:
        try:
            df = result_frame(clone, plan, empty_dir=empty)
            jvm = clone.sparkContext._jvm
            mode = getattr(jvm.org.apache.spark.sql.streaming.OutputMode,
                           plan.output_mode.capitalize())()
            execution = df._jdf.queryExecution()
            execution.assertAnalyzed()
            # Spark's checker reads the active session's SQL conf: the clone's, which may
            # turn a check off (a predicate SESSIONWINDOW, streamjob.spark.sessions)
            spark_session = jvm.org.apache.spark.sql.SparkSession
            previous = spark_session.getActiveSession()
            spark_session.setActiveSession(clone._jsparkSession)
            try:
                jvm.org.apache.spark.sql.catalyst.analysis.UnsupportedOperationChecker \
                    .checkForStreaming(execution.analyzed(), mode)
            finally:
                if previous.isDefined():
                    spark_session.setActiveSession(previous.get())
                else:
                    spark_session.clearActiveSession()
        except (PySparkException, Py4JJavaError) as exc:
            span = plan.select_span
            message = f"Spark cannot run this query as a stream: {spark_reason(exc)}"
            if span is None:
                raise ValidationError(message) from None
            raise ValidationError(message, line=span.line, column=span.column,
                                  text=span.text) from None


def spark_reason(exc: Exception) -> str:
    """Spark's sentence without its error class, SQLSTATE and the plan it appends."""
    from py4j.protocol import Py4JJavaError

    if isinstance(exc, Py4JJavaError):
        text = str(exc.java_exception.getMessage() or exc.java_exception.toString())
    else:
        text = getattr(exc, "getMessage", lambda: str(exc))() or str(exc)
    text = text.split(";\n", 1)[0].split("\n", 1)[0].strip()
    if text.startswith("[") and "] " in text:  # [ERROR_CLASS] sentence
        text = text.split("] ", 1)[1]
    return re.sub(r"\s*SQLSTATE: \w+\.?", "", text).rstrip(";. ")
