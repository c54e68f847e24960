"""Slipstream's forms (issue 18) on real Spark and the real broker: ORC and TEXTFILE
file tables (Hive's delimited text, a multi-character delimiter from MultiDelimitSerDe)
written by Spark's file sink and read back, and a bare INSERT that starts its implicit
job in an in-process job manager, reading and writing '|+|'-delimited Kafka records."""

from __future__ import annotations

import json
import uuid

import pyarrow.orc as po
import pytest

from streamjob import columntypes as sjtypes
from streamjob.connectors.files.table import committed_files
from streamjob.connectors.kafka.formats import RecordSlice, decode
from streamjob.executor.insert import implicit_job_name
from streamjob.planner.plan import Static
from streamjob.planner.bind import bind_static
from streamjob.spark.query import table_frame

from .world import SparkWorld

pytestmark = pytest.mark.spark

MULTI = "org.apache.hadoop.hive.contrib.serde2.MultiDelimitSerDe"
ROWS = [{"id": 1, "name": "plain", "x": 1.5}, {"id": 2, "name": "a,b|+|c", "x": None},
        {"id": 3, "name": "", "x": -2.0}, {"id": 4, "name": None, "x": 0.25}]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = SparkWorld(tmp_path_factory.mktemp("slipforms"))
    yield w
    w.close()


def by_id(rows):
    return sorted(rows, key=lambda r: r["id"])


def test_orc_and_textfile_tables_written_by_spark_and_read_back(world):
    src = world.root / "in"
    src.mkdir()
    out = {n: world.root / "out" / n for n in ("t_orc", "t_multi", "t_comma")}
    world.run(f"""
    CREATE STREAM rows (id BIGINT, name STRING, x DOUBLE)
      TBLPROPERTIES ("source"="files", "path"="{src}", "format"="json");
    CREATE TABLE t_orc (id BIGINT, name STRING, x DOUBLE) STORED AS ORC LOCATION '{out["t_orc"]}';
    CREATE TABLE t_multi (id BIGINT, name STRING, x DOUBLE)
      ROW FORMAT SERDE '{MULTI}' WITH SERDEPROPERTIES ('input.delimited'='|+|')
      STORED AS TEXTFILE LOCATION '{out["t_multi"]}';
    CREATE TABLE t_comma (id BIGINT, name STRING, x DOUBLE)
      ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' LOCATION '{out["t_comma"]}';
    """)
    world.write(src, ROWS)
    plans = {}
    for name in out:
        plan, query = world.start(f"to_{name}", f"insert into {name} select * from rows")
        try:
            query.processAllAvailable()
            assert query.exception() is None
        finally:
            query.stop()
        plans[name] = plan
    assert [plans[n].sink_spec.format for n in out] == ["orc", "textfile", "textfile"]

    orc = [r for f in committed_files(str(out["t_orc"])) for r in po.read_table(str(f)).to_pylist()]
    assert by_id(orc) == ROWS

    def lines(name):
        return sorted(line for f in committed_files(str(out[name]))
                      for line in f.read_text().splitlines())

    # Hive's text: the delimiter, \N for NULL, an empty string bare; a value holding the
    # delimiter quoted, so that it reads back unchanged
    multi = lines("t_multi")
    assert multi[0] == "1|+|plain|+|1.5" and "3|+||+|-2.0" in multi and "4|+|\\N|+|0.25" in multi
    assert '2|+|"a,b|+|c"|+|\\N' in multi
    assert '2,"a,b|+|c",\\N' in lines("t_comma")

    for name in out:  # as static data: the local reader streamjob joins with
        table = world.catalog.get_table("default", name)
        df = table_frame(world.session, bind_static(Static(table, f"{name}_view", plans[name].sink_spec)))
        assert by_id([r.asDict() for r in df.collect()]) == ROWS, name
    # and Spark's own reader with the table's options (how non-local locations are read)
    from streamjob.connectors.hive_forms import text_options

    got = world.session.read.format("csv").schema("id BIGINT, name STRING, x DOUBLE").options(
        **text_options("textfile", "|+|")).load(str(out["t_multi"])).collect()
    # (Spark's CSV reader takes the bare empty string for NULL: docs/connectors.md)
    assert by_id([r.asDict() for r in got]) == [{**r, "name": r["name"] or None} for r in ROWS]


def test_bare_insert_starts_one_implicit_job_over_multi_delimited_kafka(world, broker):
    from streamjob_tools.dev.broker import create_topic
    from streamjob_tools.dev.flights import replay
    from streamjob.executor import Executor
    from streamjob.grammar import parse_script
    from streamjob.manager import JobManager

    source, target = (f"slip-{uuid.uuid4().hex[:8]}" for _ in range(2))
    for topic in (source, target):
        create_topic(broker.bootstrap, topic, 1)
    replay(broker.bootstrap, source,
           [f"{i}|+|n{i}|+|{i / 4}".encode() if i % 5 else f"{i}|+|\\N|+|".encode()
            for i in range(200)], 1)
    manager = JobManager(world.catalog, world.home)
    ex = Executor(world.catalog, world.home, manager, {"morphling.job.checkpoint.interval": "0"})
    insert = "INSERT INTO kout SELECT id, upper(name), x FROM kin"
    script = f"""
    CREATE STREAM kin (id BIGINT, name STRING, x DOUBLE)
      ROW FORMAT SERDE '{MULTI}' WITH SERDEPROPERTIES ('input.delimited'='|+|')
      TBLPROPERTIES ("topic"="{source}", "kafka.broker.list"="{broker.bootstrap}");
    CREATE TABLE kout (id BIGINT, name STRING, x DOUBLE)
      ROW FORMAT SERDE 'org.apache.hadoop.hive.serde2.MultiDelimitSerDe'
      WITH SERDEPROPERTIES ('field.delim'='|+|')
      TBLPROPERTIES ("topic"="{target}", "kafka.broker.list"="{broker.bootstrap}");
    {insert};
    """
    name = implicit_job_name("default", "kout", insert)
    try:
        results = [ex.execute(stmt) for stmt in parse_script(script)]
        assert results[-1].object == f"default.{name}" and "started" in results[-1].message
        job = world.catalog.get_job("default", name)
        assert job.query == insert and list(manager.runners) == [job.uid]
        manager.wait_until_idle(timeout=120)
        again = ex.execute(parse_script(insert.lower())[0])  # the script submitted again
        assert again.detail == "exists" and list(manager.runners) == [job.uid]
        listed = ex.execute(parse_script("SHOW STREAMJOBS")[0])
        assert [(r[0], r[-1]) for r in listed.rows] == [(f"default.{name}", insert)]
        stopped = ex.execute(parse_script(f"STOP STREAMJOB {name}")[0])
        assert "stopped" in stopped.message
        assert world.catalog.get_job("default", name).status == "STOPPED"
    finally:
        for uid in list(manager.runners):
            manager.stop(uid)
    from .test_kafka_sink import read_topic

    values = [v for _, _, v in read_topic(broker.bootstrap, target)]
    cols = [{"name": "id", "type": "bigint"}, {"name": "name", "type": "string"},
            {"name": "x", "type": "double"}]
    back = decode(RecordSlice(target, 0, list(range(len(values))), values, [None] * len(values),
                              [0] * len(values)), sjtypes.arrow_schema(cols), "delimited", "|+|")
    assert by_id(back.to_pylist()) == [
        {"id": i, "name": f"N{i}", "x": i / 4} if i % 5 else {"id": i, "name": None, "x": None}
        for i in range(200)]
    assert json.dumps(values[0].decode())  # text, '|+|'-delimited
    assert all(v.count(b"|+|") == 2 for v in values)
