"""Issue 13 point 1, the rest: a declared column that no record of a micro-batch carries
is counted (DESCRIBE STREAMJOB, "columns no record carried"), and with
``"missing.columns"="fail"`` fails the job naming topic, partition, offsets and column
before any row reaches the sink. On the main of 2026-11-23 a misspelt key (``item_name``
for a declared ``itemName``) wrote NULL without a word. Real broker, Spark and SQLite."""

from __future__ import annotations

import json
import uuid

import pytest
import sqlalchemy as sa

from streamjob_tools.dev import flights as nyc
from streamjob_tools.dev.broker import create_topic

from .test_kafka_source_jobs import World

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def world(tmp_path_factory, broker):
    w = World(tmp_path_factory.mktemp("missing"), broker.bootstrap)
    yield w
    w.close()


@pytest.fixture(scope="module")
def topic(world):
    """Five bids whose item key is spelt ``item_name`` (the stream declares ``itemName``)."""
    name = f"bids_{uuid.uuid4().hex[:6]}"
    create_topic(world.bootstrap, name, 1)
    nyc.replay(world.bootstrap, name, [json.dumps({"auction": i, "item_name": f"x{i}"}).encode()
                                       for i in range(5)], 1)
    return name


def _job(world, topic: str, name: str, extra: str = "") -> str:
    url = f"sqlite:///{world.root / (name + '.db')}"
    world.run(f"""
    CREATE STREAM {name}_s (auction BIGINT, `itemName` STRING)
      TBLPROPERTIES("topic"="{topic}", "kafka.broker.list"="{world.bootstrap}",
                    "format"="json"{extra});
    CREATE TABLE {name}_t (auction BIGINT, item STRING)
      TBLPROPERTIES("connector"="sql", "url"="{url}", "table"="{name}_t");
    CREATE STREAMJOB {name} AS ("insert into {name}_t select auction, itemName from {name}_s")
      JOBPROPERTIES("morphling.job.checkpoint.interval"="0", "morphling.task.max.failures"="0");
    """)
    return url


def test_a_column_no_record_carries_is_counted_and_described(world, topic):
    url = _job(world, topic, "counted")
    world.run_job("counted")
    with sa.create_engine(url).connect() as conn:
        rows = conn.execute(sa.text("select auction, item from counted_t")).all()
    assert sorted(rows) == [(i, None) for i in range(5)]  # the policy is count: rows flow
    job = world.catalog.require_job("default", "counted")
    assert job.missing_columns == {"default.counted_s": {"itemName": 1}}  # not auction
    section = world.describe("counted")["missing_columns"]
    assert [list(r.values()) for r in section] == [["default.counted_s", "itemName", 1]]


def test_missing_columns_fail_stops_the_job_before_the_sink(world, topic):
    url = _job(world, topic, "strict", ', "missing.columns"="fail"')
    runner = world.manager.start(world.catalog.require_job("default", "strict"))
    runner.join(180)
    world.manager.stop(runner.job.uid)
    job = world.catalog.require_job("default", "strict")
    assert job.status == "FAILED"
    assert f"topic '{topic}' partition 0 offsets 0..4" in job.last_error
    assert "`itemName`" in job.last_error and "auction" not in job.last_error
    with sa.create_engine(url).connect() as conn:
        exists = sa.inspect(conn).has_table("strict_t")
        assert not exists or conn.scalar(sa.text("select count(*) from strict_t")) == 0


def test_file_streams_count_missing_columns_too(world):
    directory = world.root / "bid_files"
    directory.mkdir()
    (directory / "part-0.json").write_text(
        "".join(json.dumps({"auction": i, "item_name": f"x{i}"}) + "\n" for i in range(3)))
    out = world.root / "bid_files_out"
    world.run(f"""
    CREATE STREAM files_s (auction BIGINT, `itemName` STRING)
      TBLPROPERTIES("source"="files", "path"="{directory}", "format"="json");
    CREATE TABLE files_t (auction BIGINT, item STRING) STORED AS PARQUET LOCATION '{out}';
    CREATE STREAMJOB files_job AS ("insert into files_t select auction, itemName from files_s")
      JOBPROPERTIES("morphling.job.checkpoint.interval"="0");
    """)
    world.run_job("files_job")
    job = world.catalog.require_job("default", "files_job")
    assert job.missing_columns == {"default.files_s": {"itemName": 1}}
    with pytest.raises(Exception, match="missing.columns"):  # fail is a Kafka read rule
        world.run("""CREATE STREAM files_strict (a INT) TBLPROPERTIES("source"="files",
                     "path"="/tmp", "format"="json", "missing.columns"="fail");""")

