"""Our permanent failure kinds seen across Spark's Python worker boundary (issue 29 item
3): raised in a Python UDF of a real streaming query, they reach the driver as Spark's
``StreamingQueryException`` whose text holds the worker's traceback; failover
(:func:`streamjob.manager.failures.permanent_failure`) still tells each kind by its
class's marker, and a property refused in a worker by its class's traceback line."""

from __future__ import annotations

import pytest

from streamjob.exceptions import (ChangedLogic, DataLoss, InvalidConfiguration, PropertyError,
                                  SchemaMismatch)
from streamjob.home import Home
from streamjob.manager.failures import (CHANGED_LOGIC, DATA_LOSS, INVALID_CONFIG, SINK_SCHEMA,
                                        permanent_failure)

pytestmark = pytest.mark.spark

KINDS = [(DataLoss, DATA_LOSS), (ChangedLogic, CHANGED_LOGIC), (SchemaMismatch, SINK_SCHEMA),
         (InvalidConfiguration, INVALID_CONFIG), (PropertyError, INVALID_CONFIG)]


@pytest.mark.parametrize("cls,note", KINDS, ids=[c.__name__ for c, _ in KINDS])
def test_a_kind_raised_in_a_python_worker_is_told_by_class(tmp_path, cls, note):
    from pyspark.sql.functions import col, udf

    from streamjob.spark.session import spark_session

    # local[2], as the worlds: the worker's next modules get the Spark this may start
    spark = spark_session(Home.open(tmp_path / "home", {"spark.master": "local[2]"}))
    name = cls.__name__

    def fail(value):  # pickled by value: runs in Spark's Python worker
        import streamjob.exceptions as errors

        raise getattr(errors, name)(f"worker failed on row {value}")

    frame = (spark.readStream.format("rate").option("rowsPerSecond", 10).load()
             .select(udf(fail, "string")(col("value")).alias("x")))
    query = frame.writeStream.format("noop").queryName(f"markers_{name}").start()
    try:
        assert query.awaitTermination(180), "the query did not fail within 180 s"
    except Exception:  # noqa: BLE001 - the failure is what we came for
        pass
    finally:
        query.stop()
    exc = query.exception()
    assert exc is not None
    assert not isinstance(exc, cls)  # only Spark's text crossed the boundary
    assert f"streamjob.exceptions.{name}: " in str(exc)
    if hasattr(cls, "marker"):
        assert f"streamjob.exceptions.{name}: {cls.marker} worker failed" in str(exc)
    assert permanent_failure(exc, "j") == note.format(job="j")
