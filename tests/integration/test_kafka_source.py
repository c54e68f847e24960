"""The Kafka source against the real broker: the executor-side reader alone, then a
delimited stream through Spark in this process (shared session, in-process manager)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from streamjob.catalog import Catalog
from streamjob.connectors.kafka.source import KafkaRange, end_offsets, read_range
from streamjob_tools.dev.broker import create_topic
from streamjob_tools.dev.flights import replay
from streamjob.exceptions import ConnectorError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home


N = 3000


@pytest.fixture(scope="module")
def ctrl_a_topic(broker):
    """Topic ``ctrl_a`` with N records ``id\\001name\\001score`` over 3 partitions."""
    create_topic(broker.bootstrap, "ctrl_a", 3)
    records = [f"{i}\x01name{i}\x01{i / 2}".encode() if i % 10 else f"{i}\x01\\N\x01".encode()
               for i in range(N)]
    replay(broker.bootstrap, "ctrl_a", records, 3)
    return "ctrl_a"


@pytest.mark.component
def test_end_offsets_and_read_range_yield_arrow_batches(broker, ctrl_a_topic):
    from pyspark.sql.types import DoubleType, IntegerType, StringType, StructField, StructType

    ends = end_offsets(broker.bootstrap, ctrl_a_topic)
    assert ends == {ctrl_a_topic: {"0": N // 3, "1": N // 3, "2": N // 3}}
    schema = StructType([StructField("id", IntegerType()), StructField("name", StringType()),
                         StructField("score", DoubleType())])
    batches = list(read_range(KafkaRange(ctrl_a_topic, 1, 10, 700), broker.bootstrap, schema,
                              "delimited", "\x01", batch_rows=256))
    assert [b.num_rows for b in batches] == [256, 256, 178]
    rows = [r for b in batches for r in b.to_pylist()]
    # partition 1 holds ids 1, 4, 7, ...; offsets 10..699
    assert [r["id"] for r in rows] == [1 + 3 * o for o in range(10, 700)]
    assert rows[0] == {"id": 31, "name": "name31", "score": 15.5}
    assert all(r["name"] is None and r["score"] is None for r in rows if r["id"] % 10 == 0)


@pytest.mark.component
def test_unreachable_broker_names_the_address():
    with pytest.raises(ConnectorError, match="cannot reach Kafka broker at 127.0.0.1:1"):
        end_offsets("127.0.0.1:1", "t", request_timeout_ms=1000)


@pytest.mark.spark
def test_delimited_stream_through_spark_into_sql_table(tmp_path, broker, ctrl_a_topic):
    from streamjob.manager import JobManager

    home = Home.open(tmp_path / "home", {"spark.master": "local[2]"})
    catalog = Catalog(home.catalog_url)
    manager = JobManager(catalog, home)
    ex = Executor(catalog, home, manager)
    db_url = f"sqlite:///{tmp_path / 'out.db'}"
    script = f"""
    CREATE STREAM scores (id INT, name STRING, score DOUBLE)
      ROW FORMAT DELIMITED FIELDS TERMINATED BY '\\001'
      TBLPROPERTIES("topic"="{ctrl_a_topic}", "kafka.broker.list"="{broker.bootstrap}");
    CREATE TABLE named (id INT, name STRING, score DOUBLE)
      TBLPROPERTIES("connector"="sql", "url"="{db_url}");
    CREATE STREAMJOB copy AS ("insert into named select id, upper(name), score * 2 from scores where name is not null")
      JOBPROPERTIES("morphling.job.checkpoint.interval"="0", "morphling.job.max.records.per.batch"="1000");
    START STREAMJOB copy;
    """
    try:
        for stmt in parse_script(script):
            ex.execute(stmt)
        manager.wait_until_idle(timeout=300)
        job = catalog.get_job("default", "copy")
        cps = catalog.list_checkpoints(job.uid)
        assert cps[-1].source_offsets == {ctrl_a_topic: {"0": 1000, "1": 1000, "2": 1000}}
        assert len(cps) >= 3 and all(c.input_rows <= 1000 for c in cps)  # the cap held
    finally:
        manager.stop_all(graceful=True)  # the jobs only: Spark stays for the next test
        catalog.close()
    eng = sa.create_engine(db_url)
    with eng.connect() as c:
        got = sorted(tuple(r) for r in c.execute(sa.text("select id, name, score from named")))
    expected = sorted((i, f"NAME{i}", float(i)) for i in range(N) if i % 10)
    assert got == expected
