"""Slipstream's job properties take effect on real Spark (issue 18): the reduce tasks are
the job's shuffle partitions, the maximum disorder is its watermark delay, the HDFS flush
interval is a file-table job's trigger. One file stream, one windowed count into a
Parquet table, one query in the job's own session clone (as the job manager builds it)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from streamjob import properties as jp

from .world import SparkWorld

pytestmark = pytest.mark.spark

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def ts(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = SparkWorld(tmp_path_factory.mktemp("slipstream"))
    yield w
    w.close()


def test_reduce_tasks_and_max_disorder_take_effect_in_the_running_query(world):
    from streamjob.spark.query import start_query
    from streamjob.spark.session import job_session, spark_session

    directory = world.root / "clicks"
    directory.mkdir()
    out = world.root / "out"
    world.run(f"""CREATE STREAM clicks (user_id STRING, ts TIMESTAMP)
      TBLPROPERTIES("source"="files", "path"="{directory}", "format"="json",
                    "watermark.column"="ts", "watermark.delay"="1 hour");
      CREATE TABLE counts (user_id STRING, start TIMESTAMP, n BIGINT)
      STORED AS PARQUET LOCATION '{out}';""")
    plan = world.plan("slip", """insert into counts select user_id, window.start, count(*)
        from clicks STREAMWINDOW w AS (LENGTH '10' SECOND) group by user_id""",
                      {"mapred.reduce.tasks": "3", "morphling.maxlag.on.disorder": "5000",
                       "morphling.hdfs.flush.interval.ms": "250", "morphling.metrics.enabled": "true"})
    assert plan.props.trigger_ms == 250  # a file table: flushed at most every 250 ms
    assert jp.spark_settings(plan.props) == {"spark.sql.shuffle.partitions": "3"}
    # the engine's (and World's session) default is 2 partitions: 3 comes from the job
    session = job_session(spark_session(world.home), jp.spark_settings(plan.props))
    query = start_query(session, plan, str(world.root / "checkpoints" / "slip"))
    try:
        world.write(directory, [{"user_id": "ann", "ts": ts(s)} for s in (1, 30, 60)])
        query.processAllAvailable()
        world.write(directory, [{"user_id": "bob", "ts": ts(61)}])
        query.processAllAvailable()
        assert query.exception() is None
        progress = query.lastProgress
        assert progress["stateOperators"][0]["numShufflePartitions"] == 3
        # watermark = latest event time of earlier batches - 5 s (not - 1 hour)
        assert progress["eventTime"]["watermark"] in (ts(55).replace("Z", ".000Z"),
                                                      ts(56).replace("Z", ".000Z"))
    finally:
        query.stop()
