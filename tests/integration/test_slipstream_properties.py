"""Slipstream's job properties take effect on real Spark (issue 18): the reduce tasks are
the job's shuffle partitions, the maximum disorder is its watermark delay, the HDFS flush
interval is a file-table job's trigger. One file stream, one windowed count into a
Parquet table, one query in the job's own session clone (as the job manager builds it)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from streamjob import properties as jp

from .world import SparkWorld, start_planned

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
    query = start_planned(session, plan, str(world.root / "checkpoints" / "slip"))
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


@pytest.fixture
def kafka_chroot(zookeeper, broker):
    """A Kafka chroot in the session's ZooKeeper where the test broker is registered as
    broker 0, as Kafka registers itself (``/brokers/ids/0``, JSON with endpoints);
    yields the ``"kafka.zookeeper"`` value ``host:port/chroot``."""
    import json
    import uuid

    from kazoo.client import KazooClient

    chroot = f"/kafka-{uuid.uuid4().hex[:8]}"
    host, port = broker.bootstrap.rsplit(":", 1)
    zk = KazooClient(hosts=zookeeper)
    zk.start(timeout=10)
    zk.create(f"{chroot}/brokers/ids/0", json.dumps({
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "endpoints": [f"PLAINTEXT://{broker.bootstrap}"], "jmx_port": -1, "host": host,
        "port": int(port), "timestamp": "1700000000000", "version": 4}).encode(), makepath=True)
    zk.ensure_path(f"{chroot}-empty/brokers/ids")
    try:
        yield f"{zookeeper}{chroot}"
    finally:
        zk.delete(chroot, recursive=True)
        zk.delete(f"{chroot}-empty", recursive=True)
        zk.stop()
        zk.close()


def test_kafka_stream_with_only_kafka_zookeeper_reads_the_brokers_registered_there(
        world, broker, kafka_chroot):
    """Issue 18: an old script's Kafka stream with "kafka.zookeeper" and no broker list
    runs: its job reads the records of the broker Kafka registered in ZooKeeper."""
    from streamjob.connectors.files.table import read_table
    from streamjob_tools.dev.broker import create_topic
    from streamjob_tools.dev.flights import replay

    create_topic(broker.bootstrap, "zk_clicks")
    replay(broker.bootstrap, "zk_clicks", [b'{"user_id": "ann"}', b'{"user_id": "bob"}'])
    out = world.root / "zk_out"
    world.run(f"""CREATE STREAM zk_clicks (user_id STRING)
      TBLPROPERTIES("topic"="zk_clicks", "kafka.zookeeper"="{kafka_chroot}");
      CREATE TABLE zk_users (user_id STRING) STORED AS PARQUET LOCATION '{out}';""")
    plan, query = world.start("zk", "insert into zk_users select user_id from zk_clicks")
    try:
        assert plan.sources[0].spec.bootstrap == broker.bootstrap
        query.processAllAvailable()
        assert query.exception() is None
    finally:
        query.stop()
    assert sorted(r["user_id"] for r in read_table(str(out)).to_pylist()) == ["ann", "bob"]


def test_kafka_zookeeper_without_brokers_or_unreachable_is_a_clear_error(world, kafka_chroot):
    from streamjob.exceptions import ValidationError

    with pytest.raises(ValidationError, match=rf"ZooKeeper at {kafka_chroot}-empty lists no "
                       r"broker under /brokers/ids .*give the brokers as \"kafka.broker.list\""):
        world.run(f"""CREATE STREAM zk_none (a STRING)
          TBLPROPERTIES("topic"="t", "kafka.zookeeper"="{kafka_chroot}-empty")""")
    with pytest.raises(ValidationError, match=r"ZooKeeper at 127.0.0.1:1 cannot be reached "
                       r"\(no answer within 1 s\); give the brokers as \"kafka.broker.list\""):
        world.run("""CREATE STREAM zk_down (a STRING) TBLPROPERTIES("topic"="t",
          "kafka.zookeeper"="127.0.0.1:1", "kafka.request.timeout.ms"="1000")""")
    with pytest.raises(ValidationError, match=r"Kafka stream 'zk_bare' needs "
                       r"TBLPROPERTIES\(\"kafka.broker.list\"=...\)"):
        world.run("""CREATE STREAM zk_bare (a STRING) TBLPROPERTIES("topic"="t")""")
