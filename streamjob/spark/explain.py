"""Spark's physical plan of a job's query, for ``EXPLAIN EXTENDED`` (issue 18).

The query is planned as Spark's analysis of :mod:`.analysis` plans it: in a session
clone, over *empty* inputs (each source a stream of Parquet files from an empty directory,
each static table an empty DataFrame, with the declared columns and watermarks:
:func:`.query.result_frame`), so nothing is read, no source or sink is contacted and no
secret (Kafka security settings) reaches the plan. The operators above the sources,
stateful ones included (``StateStoreRestore``/``StateStoreSave``,
``StreamingSymmetricHashJoin``, ``EventTimeWatermark``), are those the job runs; the
sources show as file scans. Spark's own ``EXPLAIN`` prints the same
(``Dataset.explain``).
"""

from __future__ import annotations

import tempfile

from ..exceptions import ValidationError

__all__ = ["physical_plan"]


def physical_plan(session, plan) -> str:
    """Spark's physical plan of ``plan`` (a job's :class:`~streamjob.planner.bind.BoundQuery`,
    bound without readers) as
    text (Spark's ``simple`` explain mode), secrets masked.

    Raises:
        ValidationError: Spark cannot plan the query (its reason, without a stack trace).
    """
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    from ..sensitive import mask_text
    from .analysis import spark_reason
    from .query import result_frame
    from .session import SAFE_SQL_CONF

    clone = session.newSession()
    for key, value in SAFE_SQL_CONF.items():
        clone.conf.set(key, value)
    with tempfile.TemporaryDirectory(prefix="streamjob-explain-") as empty:
        try:
            df = result_frame(clone, plan, empty_dir=empty)
            jvm = clone.sparkContext._jvm
            text = jvm.PythonSQLUtils.explainString(df._jdf.queryExecution(), "simple")
        except (PySparkException, Py4JJavaError) as exc:
            raise ValidationError(f"Spark cannot plan this query: {spark_reason(exc)}") from None
    return mask_text(str(text).replace(empty, "<empty input>")).strip()
