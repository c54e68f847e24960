"""Savepoints (issue 30) of a real job: Spark (the session's), the session's Kafka broker
and a SQLite sink, with a small retention so that checkpoints roll off quickly.

One stateless Kafka -> SQLite job is stopped WITH SAVEPOINT, runs on past more than ten
later checkpoints (a second savepoint is taken while it runs), and is started FROM
SAVEPOINT: every record from the savepoint on reaches the sink exactly once. Then
FROM CHECKPOINT AT picks the right checkpoint, and before the oldest names it.

Each test's jobs read a topic of their own (a job starts at the earliest offset: on a
shared topic it would first run through the other tests' records, batch by batch).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from streamjob.catalog import Catalog
from streamjob.checkpoint import savepoint
from streamjob.exceptions import JobError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob_tools.dev.broker import create_topic
from streamjob_tools.dev.flights import replay

#: Seconds this module takes on a fast host: make test hands the longest modules out first
#: (tests/conftest.py), so the run does not end on one of them while the other worker idles.
EXPECTED_S = 45

PER_BATCH = 20
RETAINED = 2
#: Records before the savepoint (2 batches) and in all (10 batches more)
FIRST, TOTAL = 40, 240
#: Micro-batches every 100 ms, not the default 500: the jobs' points are their batches'
#: outcomes (checkpoints, savepoints, the sink), not their cadence.
QUICK = '"streamjob.trigger.interval"="100"'


@pytest.fixture(scope="module")
def world(broker, tmp_path_factory):
    """A home, its SQLite catalog, an in-process job manager (the session's Spark) and an
    executor; stream ``events`` over a fresh 2-partition topic."""
    from streamjob.manager import JobManager

    base = tmp_path_factory.mktemp("savepoints")
    (base / "home").mkdir()
    (base / "home" / "streamjob.conf").write_text(
        "spark.master=local[2]\nspark.sql.shuffle.partitions=2\n")
    home = Home.open(base / "home")
    catalog = Catalog(home.catalog_url)
    manager = JobManager(catalog, home)
    ex = Executor(catalog, home, manager, principal="local:test")
    topic = f"events_{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic, 2)
    run(ex, f'CREATE STREAM events (id INT, name STRING) TBLPROPERTIES("topic"="{topic}", '
            f'"kafka.broker.list"="{broker.bootstrap}", "format"="json");')
    yield SimpleNamespace(home=home, catalog=catalog, manager=manager, ex=ex, topic=topic,
                          bootstrap=broker.bootstrap, sink=base / "sink.db")
    # the jobs only: the process's Spark stays for the worker's next module, as the
    # modules' worlds leave it (manager.shutdown() would make that module start a JVM)
    manager.stop_all(graceful=True)
    catalog.close()


def run(ex, sql: str) -> str:
    return ex.execute(parse_script(sql)[0]).message


def new_stream(world, name: str) -> str:
    """Stream ``name`` (id INT, name STRING) over a fresh 2-partition topic; its topic."""
    topic = f"{name}_{uuid.uuid4().hex[:6]}"
    create_topic(world.bootstrap, topic, 2)
    run(world.ex, f'CREATE STREAM {name} (id INT, name STRING) TBLPROPERTIES("topic"="{topic}", '
                  f'"kafka.broker.list"="{world.bootstrap}", "format"="json");')
    return topic


def produce(world, ids, topic: str | None = None) -> None:
    replay(world.bootstrap, topic or world.topic,
           [json.dumps({"id": i, "name": f"n{i}"}).encode() for i in ids], 2)


def sink_counts(world) -> dict[int, int]:
    with sqlite3.connect(world.sink) as db:
        return dict(db.execute("SELECT id, count(*) FROM out GROUP BY id").fetchall())


@pytest.mark.spark
def test_a_savepoint_outlives_later_checkpoints_and_restores_exactly_once(world):
    ex, catalog = world.ex, world.catalog
    for sql in parse_script(f"""
        CREATE TABLE out (id INT, name STRING)
          TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{world.sink}");
        CREATE STREAMJOB j AS ("insert into out select id, name from events")
          JOBPROPERTIES ("morphling.job.max.records.per.batch"="{PER_BATCH}",
                         "morphling.checkpoint.retained"="{RETAINED}",
                         "morphling.job.checkpoint.interval"="0", {QUICK});"""):
        ex.execute(sql)
    job = catalog.get_job("default", "j")
    ckdir = Path(world.home.checkpoint_dir("default", "j"))

    produce(world, range(0, FIRST))
    run(ex, "START STREAMJOB j;")
    world.manager.wait_until_idle(timeout=300)
    assert "stopped with savepoint before_upgrade (checkpoint " in run(
        ex, "STOP STREAMJOB j WITH SAVEPOINT before_upgrade;")
    sp = catalog.get_savepoint(job.uid, "before_upgrade")
    assert sp.source_offsets == {world.topic: {"0": FIRST // 2, "1": FIRST // 2}}
    assert sp.job_uid == job.uid and sp.fingerprint and sp.epoch and sp.owner == "local:test"
    folder = Path(sp.location)
    n = sp.checkpoint_id
    kept = sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and not p.name.endswith(".crc"))
    assert kept == sorted(["commits/" + str(n), "metadata", f"offsets/{n - 1}", f"offsets/{n}",
                           "savepoint.json", "streamjob.fingerprint"])

    # it runs on: a savepoint taken while it runs, then more than ten later checkpoints
    produce(world, range(FIRST, TOTAL))
    run(ex, "START STREAMJOB j;")
    assert "savepoint while_running of streamjob default.j taken: checkpoint " in run(
        ex, "CREATE SAVEPOINT while_running FOR STREAMJOB j;")
    world.manager.wait_until_idle(timeout=300)
    run(ex, "STOP STREAMJOB j;")
    retained = [c.checkpoint_id for c in catalog.list_checkpoints(job.uid)]
    assert len(retained) == RETAINED and retained[-1] - n >= 10  # ten checkpoints later
    assert not (ckdir / "commits" / str(n)).exists()  # trimmed from the checkpoint
    assert savepoint.missing(sp.location) == []  # and whole in the savepoint
    mid = catalog.get_savepoint(job.uid, "while_running")
    assert mid.checkpoint_id >= n and savepoint.missing(mid.location) == []
    assert sink_counts(world) == {i: 1 for i in range(TOTAL)}

    # the sink is rolled back to the savepoint (an upgrade redoing its output): from the
    # savepoint on, every record is written once more, none skipped as a replay
    with sqlite3.connect(world.sink) as db:
        db.execute("DELETE FROM out WHERE id >= ?", (FIRST,))
    msg = run(ex, "START STREAMJOB j FROM SAVEPOINT before_upgrade;")
    assert f"from savepoint before_upgrade (checkpoint {n}); checkpoint epoch" in msg
    world.manager.wait_until_idle(timeout=300)
    run(ex, "STOP STREAMJOB j;")
    assert sink_counts(world) == {i: 1 for i in range(TOTAL)}

    # FROM CHECKPOINT AT: the newest retained checkpoint or savepoint at or before a time
    older, newer = catalog.list_checkpoints(job.uid)
    at = older.ended_at.strftime("%Y-%m-%d %H:%M:%S.%f")
    # a new checkpoint epoch: the batches after it are written again, so the sink is
    # rolled back to its input first (id i is at offset i // 2 of partition i % 2)
    ends = older.source_offsets[world.topic]
    with sqlite3.connect(world.sink) as db:
        db.executemany("DELETE FROM out WHERE id = ?", [
            (i,) for i in range(TOTAL) if i // 2 >= int(ends[str(i % 2)])])
    msg = run(ex, f"START STREAMJOB j FROM CHECKPOINT AT '{at}';")
    assert f"from checkpoint {older.checkpoint_id} (checkpoints {newer.checkpoint_id} removed" in msg
    assert "; checkpoint epoch " in msg
    world.manager.wait_until_idle(timeout=300)
    run(ex, "STOP STREAMJOB j;")
    assert sink_counts(world) == {i: 1 for i in range(TOTAL)}
    with pytest.raises(JobError, match=f"is at or before 2000-01-01 00:00:00 UTC: the oldest is "
                                       f"savepoint before_upgrade \\(checkpoint {n}\\) of "):
        run(ex, "START STREAMJOB j FROM CHECKPOINT AT '2000-01-01 00:00:00';")

    shown = ex.execute(parse_script("SHOW SAVEPOINTS FOR j;")[0])
    assert [r[1] for r in shown.rows] == ["before_upgrade", "while_running"]
    assert "dropped" in run(ex, "DROP SAVEPOINT while_running FOR STREAMJOB j;")
    assert not Path(mid.location).exists()
    assert "and its 1 savepoint were purged" in run(ex, "DROP STREAMJOB j;")
    assert not folder.exists() and catalog.list_savepoints() == []


@pytest.mark.spark
def test_a_savepoint_of_an_aggregation_restores_its_state(world):
    """Counts per key (state in Spark's state store) continue from the savepoint's state:
    after the restore, each key's count equals a count over all the input."""
    ex, catalog = world.ex, world.catalog
    keys = [f"k{i % 3}" for i in range(300, 360)]
    topic = new_stream(world, "keyed")
    for sql in parse_script(f"""
        CREATE TABLE counts (name STRING, n BIGINT) TBLPROPERTIES ("connector"="sql",
          "url"="sqlite:///{world.sink}", "primary.key"="name");
        CREATE STREAMJOB counting AS ("insert into counts select name, count(*) from keyed
          group by name")
          JOBPROPERTIES ("morphling.job.max.records.per.batch"="{PER_BATCH}",
                         "morphling.checkpoint.retained"="{RETAINED}",
                         "morphling.job.checkpoint.interval"="0", {QUICK});"""):
        ex.execute(sql)
    job = catalog.get_job("default", "counting")

    def produce_keys(ids):
        replay(world.bootstrap, topic,
               [json.dumps({"id": i, "name": keys[i - 300]}).encode() for i in ids], 2)

    def counts():
        with sqlite3.connect(world.sink) as db:
            return dict(db.execute("SELECT name, n FROM counts").fetchall())

    produce_keys(range(300, 330))
    run(ex, "START STREAMJOB counting;")
    world.manager.wait_until_idle(timeout=300)
    run(ex, "STOP STREAMJOB counting WITH SAVEPOINT half;")
    sp = catalog.get_savepoint(job.uid, "half")
    # a state version is a delta file or, once Spark's maintenance compacted them, a
    # snapshot (which may replace the deltas below it)
    versions = {int(p.name.split(".")[0]) for p in Path(sp.location, "state").rglob("*")
                if p.suffix in (".delta", ".snapshot")}
    assert versions and max(versions) == sp.checkpoint_id + 1  # the state of its batch, no later
    expected = {k: sum(1 for i in range(300, 360) if keys[i - 300] == k) for k in set(keys)}

    produce_keys(range(330, 360))
    run(ex, "START STREAMJOB counting;")
    world.manager.wait_until_idle(timeout=300)
    run(ex, "STOP STREAMJOB counting;")
    assert counts() == expected
    with sqlite3.connect(world.sink) as db:
        db.execute("DELETE FROM counts")
    run(ex, "START STREAMJOB counting FROM SAVEPOINT half;")
    world.manager.wait_until_idle(timeout=300)
    run(ex, "STOP STREAMJOB counting;")
    assert counts() == expected  # the state up to the savepoint, then the rest once
    run(ex, "DROP STREAMJOB counting;")


@pytest.mark.spark
def test_a_file_table_refuses_going_back_before_batches_its_manifest_lists(world):
    """Spark's file sink skips every batch id its manifest lists: a job taken back to an
    earlier checkpoint would re-plan those batches over other input and have them
    skipped, so START ... FROM CHECKPOINT n is refused before anything changes."""
    ex, catalog = world.ex, world.catalog
    location = world.sink.parent / "files_out"
    topic = new_stream(world, "filed")
    for sql in parse_script(f"""
        CREATE TABLE fout (id INT, name STRING) STORED AS JSON LOCATION '{location}';
        CREATE STREAMJOB fj AS ("insert into fout select id, name from filed")
          JOBPROPERTIES ("morphling.job.max.records.per.batch"="{PER_BATCH}",
                         "morphling.checkpoint.retained"="3",
                         "morphling.job.checkpoint.interval"="0", {QUICK});"""):
        ex.execute(sql)
    produce(world, range(300, 360), topic)
    run(ex, "START STREAMJOB fj;")
    world.manager.wait_until_idle(timeout=300)
    run(ex, "STOP STREAMJOB fj;")
    job = catalog.get_job("default", "fj")
    retained = [c.checkpoint_id for c in catalog.list_checkpoints(job.uid)]
    ckdir = Path(world.home.checkpoint_dir("default", "fj"))
    offsets = sorted(p.name for p in (ckdir / "offsets").iterdir())
    assert len(retained) == 3
    with pytest.raises(JobError, match=f"lists micro-batches up to {retained[-1]} in its "
                                       f"file-sink manifest; after going back to batch "
                                       f"{retained[0]}, Spark's file sink would skip"):
        run(ex, f"START STREAMJOB fj FROM CHECKPOINT {retained[0]};")
    # nothing changed: the same retained checkpoints and logs
    assert [c.checkpoint_id for c in catalog.list_checkpoints(job.uid)] == retained
    assert sorted(p.name for p in (ckdir / "offsets").iterdir()) == offsets
    # the last checkpoint is no step back: it starts
    assert "started" in run(ex, f"START STREAMJOB fj FROM CHECKPOINT {retained[-1]};")
    world.manager.wait_until_idle(timeout=300)
    run(ex, "STOP STREAMJOB fj;")


@pytest.mark.spark
def test_from_checkpoint_rewrites_every_batch_after_it_under_a_new_epoch(world):
    """START ... FROM CHECKPOINT n takes the job back under a new checkpoint epoch, as a
    savepoint restore does: the batches re-planned after n are not skipped as replays of
    the first run (whose sink markers are of the old epoch), so once the sink is rolled
    back to n's input and more input arrived, every record is in the sink exactly once."""
    ex, catalog = world.ex, world.catalog
    topic = f"rewind_{uuid.uuid4().hex[:6]}"
    create_topic(world.bootstrap, topic, 2)
    sink = world.sink.parent / "rewind.db"
    for sql in parse_script(f"""
        CREATE STREAM rewind_in (id INT, name STRING) TBLPROPERTIES("topic"="{topic}",
          "kafka.broker.list"="{world.bootstrap}", "format"="json");
        CREATE TABLE rout (id INT, name STRING)
          TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{sink}");
        CREATE STREAMJOB rj AS ("insert into rout select id, name from rewind_in")
          JOBPROPERTIES ("morphling.job.max.records.per.batch"="{PER_BATCH}",
                         "morphling.checkpoint.retained"="20",
                         "morphling.job.checkpoint.interval"="0", {QUICK});"""):
        ex.execute(sql)
    job = catalog.get_job("default", "rj")

    def send(ids):  # round-robin over 2 partitions: id i of a call at offset i // 2
        replay(world.bootstrap, topic,
               [json.dumps({"id": i, "name": f"n{i}"}).encode() for i in ids], 2)

    def counts():
        with sqlite3.connect(sink) as db:
            return dict(db.execute("SELECT id, count(*) FROM rout GROUP BY id").fetchall())

    send(range(0, 80))
    run(ex, "START STREAMJOB rj;")
    world.manager.wait_until_idle(timeout=300)
    run(ex, "STOP STREAMJOB rj;")
    assert counts() == {i: 1 for i in range(80)}
    checkpoints = catalog.list_checkpoints(job.uid)
    assert len(checkpoints) >= 4  # 80 records, at most 20 a batch
    point = checkpoints[1]
    ends = point.source_offsets[topic]
    read = [i for i in range(80) if i // 2 < int(ends[str(i % 2)])]
    assert 0 < len(read) < 80
    with sqlite3.connect(sink) as db:  # the sink rolled back to checkpoint n's input
        db.executemany("DELETE FROM rout WHERE id = ?",
                       [(i,) for i in range(80) if i not in read])
    send(range(80, 120))  # more input arrived meanwhile
    msg = run(ex, f"START STREAMJOB rj FROM CHECKPOINT {point.checkpoint_id};")
    world.manager.wait_until_idle(timeout=300)
    run(ex, "STOP STREAMJOB rj;")
    assert counts() == {i: 1 for i in range(120)}
    assert f"from checkpoint {point.checkpoint_id} (checkpoints " in msg
    assert "; checkpoint epoch " in msg
