"""Query upgrades of running jobs (issue 30; docs/upgrades.md): the session's Spark and
Kafka broker, SQLite sinks, the job running in this process's job manager.

- A stateless job's query gains a filter and a column while it reads (its SQL table
  gains the column, nullable): the switch is at a checkpoint boundary, and every record
  is processed exactly once, by the old query before it and by the new one after it
  (compared with pandas).
- An aggregation gains an output column over the same keys: its state is kept, so the
  counts continue and equal pandas' counts over the whole input; a change of its
  grouping keys is refused naming the operator and the column, and changes nothing;
  with FROM EARLIEST it is taken, and a new checkpoint epoch counts by the new keys.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from types import SimpleNamespace

import pandas as pd
import pytest

from streamjob.catalog import Catalog
from streamjob.exceptions import JobError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob_tools.dev.broker import create_topic
from streamjob_tools.dev.flights import replay

from .conftest import wait_for

#: Seconds this module takes on a fast host: make test hands the longest modules out first
#: (tests/conftest.py), so the run does not end on one of them while the other worker idles.
EXPECTED_S = 21

PER_BATCH = 20


@pytest.fixture(scope="module")
def world(broker, tmp_path_factory):
    """A home, its SQLite catalog, an in-process job manager (the session's Spark) and an
    executor with a principal."""
    from streamjob.manager import JobManager

    base = tmp_path_factory.mktemp("upgrades")
    (base / "home").mkdir()
    (base / "home" / "streamjob.conf").write_text(
        "spark.master=local[2]\nspark.sql.shuffle.partitions=2\n")
    home = Home.open(base / "home")
    catalog = Catalog(home.catalog_url)
    manager = JobManager(catalog, home)
    ex = Executor(catalog, home, manager, principal="local:upgrader")
    yield SimpleNamespace(home=home, catalog=catalog, manager=manager, ex=ex,
                          bootstrap=broker.bootstrap, sink=base / "sink.db")
    # the jobs only: the process's Spark stays for the worker's next module, as the
    # modules' worlds leave it (manager.shutdown() would make that module start a JVM)
    manager.stop_all(graceful=True)
    catalog.close()


def run(ex, sql: str):
    return ex.execute(parse_script(sql)[0])


def stream(world, name: str) -> str:
    """Stream ``name`` (id INT, name STRING) over a fresh 2-partition topic."""
    topic = f"{name}_{uuid.uuid4().hex[:6]}"
    create_topic(world.bootstrap, topic, 2)
    run(world.ex, f'CREATE STREAM {name} (id INT, name STRING) TBLPROPERTIES("topic"="{topic}", '
                  f'"kafka.broker.list"="{world.bootstrap}", "format"="json");')
    return topic


def records(ids) -> list[bytes]:
    return [json.dumps({"id": i, "name": f"n{i % 7}"}).encode() for i in ids]


def jobprops(per_batch: int = PER_BATCH, trigger_ms: int = 500) -> str:
    """The jobs' properties: ``per_batch`` records a micro-batch and a micro-batch at
    most every ``trigger_ms`` (small batches at the default cadence where a test must
    switch mid-stream; larger, quicker ones where only the result counts: fewer batches
    to wait for, less idle time between them)."""
    return (f'JOBPROPERTIES ("morphling.job.max.records.per.batch"="{per_batch}", '
            '"morphling.checkpoint.retained"="100", "morphling.job.checkpoint.interval"="0", '
            f'"streamjob.trigger.interval"="{trigger_ms}")')


JOBPROPS = jobprops()


@pytest.mark.spark
def test_a_stateless_query_changed_mid_stream_processes_every_record_once(world):
    ex, catalog = world.ex, world.catalog
    topic = stream(world, "clicks")
    for sql in parse_script(f"""
        CREATE TABLE tagged (id INT, name STRING)
          TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{world.sink}");
        CREATE STREAMJOB copying AS ("insert into tagged select id, name from clicks")
          {JOBPROPS};"""):
        ex.execute(sql)
    job = catalog.get_job("default", "copying")
    ids = range(0, 400)
    replay(world.bootstrap, topic, records(ids), 2)  # id i: partition i % 2, offset i // 2
    run(ex, "START STREAMJOB copying;")
    wait_for(lambda: (catalog.latest_checkpoint(job.uid) or SimpleNamespace(
        checkpoint_id=-1)).checkpoint_id >= 1, 300, "two micro-batches")

    # a new filter and a new column (the SQL table gains it, nullable), while it reads
    out = run(ex, "ALTER STREAMJOB copying AS ('insert into tagged select id, name, "
                  "cast(upper(name) as string) as tag from clicks where id % 3 <> 0');")
    assert ("altered to version 2: stateless change: the offsets are kept; table "
            "default.tagged gains the nullable column(s) tag string") in out.message
    assert "\nit stopped at checkpoint " in out.message and out.message.endswith("started")
    world.manager.wait_until_idle(timeout=300)
    run(ex, "STOP STREAMJOB copying;")
    after = catalog.get_job("default", "copying")
    assert after.uid == job.uid and "upper(name)" in after.query

    with sqlite3.connect(world.sink) as db:
        sink = pd.read_sql("SELECT id, name, tag FROM tagged", db)
    assert not sink["id"].duplicated().any()  # nothing written twice
    # the old query's rows are a prefix of each partition: where it stopped is where the
    # new query began (a checkpoint boundary)
    source = pd.DataFrame({"id": list(ids)})
    source["name"] = "n" + (source["id"] % 7).astype(str)
    source["partition"], source["offset"] = source["id"] % 2, source["id"] // 2
    old_ids = set(sink.loc[sink["tag"].isna(), "id"])
    boundary = {p: int(source[(source["partition"] == p) & source["id"].isin(old_ids)]
                       ["offset"].max()) + 1 for p in (0, 1)}
    assert 0 < sum(boundary.values()) < len(ids)  # the switch happened mid-stream
    offsets = [c.source_offsets[topic] for c in catalog.list_checkpoints(job.uid)]
    assert {str(p): o for p, o in boundary.items()} in offsets  # a checkpoint's end offsets
    before = source["offset"] < source["partition"].map(boundary)
    old = source[before][["id", "name"]].assign(tag=None)
    new = source[~before & (source["id"] % 3 != 0)][["id", "name"]]
    new = new.assign(tag=new["name"].str.upper())
    expected = pd.concat([old, new]).sort_values("id").reset_index(drop=True)
    got = sink.sort_values("id").reset_index(drop=True)
    got["tag"] = got["tag"].where(got["tag"].notna(), None)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)

    versions = run(ex, "DESCRIBE STREAMJOB copying;").data["versions"]
    assert [(v["version"], v["principal"], v["change"]) for v in versions] == [
        (1, "local:upgrader", None), (2, "local:upgrader", "stateless")]
    run(ex, "DROP STREAMJOB copying;")


@pytest.mark.spark
def test_an_aggregation_gains_a_column_and_keeps_its_counts(world):
    ex, catalog = world.ex, world.catalog
    topic = stream(world, "visits")
    for sql in parse_script(f"""
        CREATE TABLE visit_counts (name STRING, n BIGINT, label STRING) TBLPROPERTIES (
          "connector"="sql", "url"="sqlite:///{world.sink}", "primary.key"="name");
        CREATE STREAMJOB counting AS ("insert into visit_counts (name, n)
          select name, count(*) from visits group by name") {jobprops(100, 100)};"""):
        ex.execute(sql)
    job = catalog.get_job("default", "counting")
    replay(world.bootstrap, topic, records(range(0, 150)), 2)
    run(ex, "START STREAMJOB counting;")
    world.manager.wait_until_idle(timeout=300)

    # grouping keys changed: refused before anything changes, naming operator and column
    with pytest.raises(JobError) as info:
        run(ex, "ALTER STREAMJOB counting AS ('insert into visit_counts (name, n) "
                "select cast(id % 5 as string), count(*) from visits group by id % 5');")
    assert ("incompatible change: streaming aggregation: its grouping keys change (name "
            "removed; id % 5 added)") in info.value.message
    assert "choose a new checkpoint epoch: FROM EARLIEST or FROM TIMESTAMP" in info.value.message
    still = catalog.get_job("default", "counting")
    assert "group by name" in still.query and still.desired_state == "RUNNING"
    assert job.uid in world.manager.runners  # it kept running

    out = run(ex, "ALTER STREAMJOB counting AS ('insert into visit_counts "
                  "select name, count(*), upper(name) from visits group by name');")
    assert "altered to version 2: stateful change with compatible state" in out.message
    assert out.data["change"]["keeps_state"] is True
    replay(world.bootstrap, topic, records(range(150, 300)), 2)
    world.manager.wait_until_idle(timeout=300)
    run(ex, "STOP STREAMJOB counting;")

    whole = pd.DataFrame({"id": range(0, 300)})
    whole["name"] = "n" + (whole["id"] % 7).astype(str)
    expected = whole.groupby("name").size().rename("n").reset_index()
    expected["label"] = expected["name"].str.upper()
    with sqlite3.connect(world.sink) as db:
        got = pd.read_sql("SELECT name, n, label FROM visit_counts ORDER BY name", db)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    assert catalog.get_job("default", "counting").uid == job.uid

    # the grouping keys change after all, with a new checkpoint epoch from the earliest
    # offsets, while it runs: the new keys count the whole input from empty state
    run(ex, "START STREAMJOB counting;")
    out = run(ex, "ALTER STREAMJOB counting AS ('insert into visit_counts (name, n) "
                  "select cast(id % 5 as string), count(*) from visits group by id % 5') "
                  "FROM EARLIEST;")
    assert "altered to version 3: incompatible change" in out.message
    assert "started over from earliest (checkpoint epoch " in out.message
    world.manager.wait_until_idle(timeout=300)
    run(ex, "STOP STREAMJOB counting;")
    by_five = (whole["id"] % 5).astype(str).value_counts().sort_index()
    with sqlite3.connect(world.sink) as db:
        got = dict(db.execute("SELECT name, n FROM visit_counts WHERE name NOT LIKE 'n%'"))
    assert got == by_five.to_dict()
    changes = [v["change"] for v in run(ex, "DESCRIBE STREAMJOB counting;").data["versions"]]
    assert changes == [None, "compatible", "incompatible"]
    run(ex, "DROP STREAMJOB counting;")


@pytest.mark.spark
def test_a_job_another_client_stopped_stays_stopped_through_alter(world):
    """STOP from another client ends the runner here, which stays in the manager's map
    until it is next started; ALTER of that stopped job must not take it for running
    (it once stopped it again "for the upgrade" and then started it: the job ran after
    ALTER, and a later PROMOTE through a process without the runner waited 60 s)."""
    from streamjob.catalog.records import DesiredState, JobStatus

    ex, catalog = world.ex, world.catalog
    stream(world, "pokes")
    for sql in parse_script(f"""
        CREATE TABLE poked (id INT, name STRING)
          TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{world.sink}");
        CREATE STREAMJOB poking AS ("insert into poked select id, name from pokes")
          {JOBPROPS};"""):
        ex.execute(sql)
    run(ex, "START STREAMJOB poking;")
    job = catalog.get_job("default", "poking")
    wait_for(lambda: job.uid in world.manager.runners
             and catalog.get_job("default", "poking").status == JobStatus.RUNNING, 300, "running")
    catalog.update_job("default", "poking", desired_state=DesiredState.STOPPED, uid=job.uid)
    # as a job host's watcher does (manager/liveness.py): asked, and left registered
    world.manager.runners[job.uid].request_stop(graceful=True)
    wait_for(lambda: catalog.get_job("default", "poking").status == JobStatus.STOPPED
             and not world.manager.runners[job.uid].is_alive(), 120, "stopped by the watcher")
    out = run(ex, "ALTER STREAMJOB poking AS ('insert into poked select id, upper(name) "
                  "from pokes');")
    assert "started" not in out.message, out.message
    after = catalog.get_job("default", "poking")
    assert after.desired_state == DesiredState.STOPPED and "upper(name)" in after.query
    assert not any(r.job.uid == job.uid for r in world.manager.running())
    run(ex, "DROP STREAMJOB poking;")
