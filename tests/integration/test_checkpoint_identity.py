"""Issue 13, point 2 (and 3): a lost checkpoint directory never makes a sink skip new
records. On the main of 2026-11-23, after `rm -r checkpoints/<db>/<job>` the job started
afresh at batch 0 and the SQL sink skipped its batches as replays of its stored marker:
the new rows were never written. Now START refuses with the ways out, and START ... FROM
EARLIEST begins a new checkpoint epoch whose batches no old marker can hide."""

from __future__ import annotations

import json
import shutil
import uuid

import pytest
import sqlalchemy as sa

from streamjob_tools.dev import flights as nyc
from streamjob_tools.dev.broker import create_topic
from streamjob.exceptions import CheckpointError, StreamJobError
from streamjob.manager import JobManager

from .world import World

pytestmark = pytest.mark.spark


def produce(bootstrap: str, topic: str, ids) -> None:
    nyc.replay(bootstrap, topic, [json.dumps({"id": i}).encode() for i in ids], 1)


def rows(db) -> list[int]:
    engine = sa.create_engine(f"sqlite:///{db}")
    try:
        with engine.connect() as conn:
            return sorted(r[0] for r in conn.execute(sa.text("select id from t")))
    finally:
        engine.dispose()


@pytest.fixture
def world(tmp_path, broker):
    w = World(tmp_path)
    w.manager = JobManager(w.catalog, w.home)
    w.ex.manager = w.manager
    topic = f"ids_{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic, 1)
    w.topic, w.bootstrap, w.db = topic, broker.bootstrap, tmp_path / "sink.db"
    w.run(f"""
    CREATE STREAM s (id BIGINT) TBLPROPERTIES ("topic"="{topic}", "kafka.broker.list"="{broker.bootstrap}", "format"="json");
    CREATE TABLE t (id BIGINT) TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{w.db}");
    CREATE STREAMJOB j AS ("insert into t select id from s")
      JOBPROPERTIES ("morphling.job.checkpoint.interval"="0");
    """)
    yield w
    for uid in list(w.manager.runners):
        w.manager.stop(uid)
    w.close()


def test_a_lost_checkpoint_directory_is_refused_and_a_new_epoch_skips_nothing(world):
    produce(world.bootstrap, world.topic, range(10))
    world.run("START STREAMJOB j;")
    world.manager.wait_until_idle(timeout=300)
    assert rows(world.db) == list(range(10))
    job = world.catalog.require_job("default", "j")
    world.manager.stop(job.uid)
    ckdir = world.home.checkpoint_dir("default", "j")
    shutil.rmtree(ckdir)  # a disk swap, a mistaken rm
    produce(world.bootstrap, world.topic, range(10, 15))

    with pytest.raises(CheckpointError) as e:
        world.run("START STREAMJOB j;")
    message = str(e.value)
    assert str(ckdir) in message and "holds none" in message
    assert "START STREAMJOB j FROM EARLIEST | LATEST | TIMESTAMP" in message
    assert rows(world.db) == list(range(10))

    [result] = world.run("START STREAMJOB j FROM EARLIEST;")
    assert "over from earliest" in str(result)
    world.manager.wait_until_idle(timeout=300)
    got = rows(world.db)
    # every new record written exactly once; the old ones again, as FROM EARLIEST asked
    assert [i for i in got if i >= 10] == list(range(10, 15))
    assert sorted(set(got)) == list(range(15)) and len(got) == 25


def test_drop_keeps_a_directory_that_another_job_owns(world):
    produce(world.bootstrap, world.topic, range(3))
    world.run("START STREAMJOB j;")
    world.manager.wait_until_idle(timeout=300)
    job = world.catalog.require_job("default", "j")
    world.manager.stop(job.uid)
    ckdir = world.home.checkpoint_dir("default", "j")
    # Another catalog on the same home created its own j: its identity owns the directory.
    identity_file = __import__("pathlib").Path(ckdir) / "streamjob.json"
    data = json.loads(identity_file.read_text())
    data["job_uid"] = "another-catalogs-job"
    identity_file.write_text(json.dumps(data))
    [result] = world.run("DROP STREAMJOB j;")
    assert "belongs to another job and was kept" in str(result)
    assert (__import__("pathlib").Path(ckdir) / "commits").is_dir()
    with pytest.raises(StreamJobError):
        world.catalog.require_job("default", "j")
