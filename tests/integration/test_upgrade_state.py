"""Stateful upgrades judged by Spark (issue 30 points 1 and 2; docs/upgrades.md): the
session's Spark and Kafka broker, a SQLite sink, one keyed aggregation job running in
this process's job manager, shared by the tests of this module (they run in order,
each from where the last left the job).

- A change the planner calls compatible whose state Spark cannot read (a sum's input
  becomes a double in a subquery: the same text, another buffer type) is refused by
  Spark's state schema check, run on a throwaway copy, naming the operator and the
  aggregate; nothing changes, the live checkpoint is not touched. A compatible change
  passes the same check and keeps the counts.
- A savepoint restores into a changed query when the change keeps the state.
- The grouping keys change WITH STATE RESET: a new checkpoint epoch from the last
  committed offsets with empty state; no record before the switch point is read again
  and every later one is counted once (pandas over the post-switch input). A savepoint
  of the old keys is then refused at START ... FROM SAVEPOINT, with the reason and the
  ways out.
"""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
from pathlib import Path
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

PER_BATCH = 30
V1 = ("insert into totals (name, n, total) select name, count(*), sum(v) "
      "from (select name, id as v from events) group by name")


def run(ex, sql: str):
    return ex.execute(parse_script(sql)[0])


@pytest.fixture(scope="module")
def world(broker, tmp_path_factory):
    """A home, its SQLite catalog, an in-process job manager (the session's Spark), an
    executor, stream ``events`` over a fresh 2-partition topic and job ``tally``
    (counts and sums per name) running over its first 100 records."""
    from streamjob.manager import JobManager

    base = tmp_path_factory.mktemp("upgrade_state")
    (base / "home").mkdir()
    (base / "home" / "streamjob.conf").write_text(
        "spark.master=local[2]\nspark.sql.shuffle.partitions=2\n")
    home = Home.open(base / "home")
    catalog = Catalog(home.catalog_url)
    manager = JobManager(catalog, home)
    ex = Executor(catalog, home, manager, principal="local:upgrader")
    topic = f"events_{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic, 2)
    sink = base / "sink.db"
    for sql in parse_script(f"""
        CREATE STREAM events (id INT, name STRING) TBLPROPERTIES ("topic"="{topic}",
          "kafka.broker.list"="{broker.bootstrap}", "format"="json");
        CREATE TABLE totals (name STRING, n BIGINT, total BIGINT, label STRING)
          TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{sink}", "primary.key"="name");
        CREATE STREAMJOB tally AS ("{V1}") JOBPROPERTIES (
          "morphling.job.max.records.per.batch"="{PER_BATCH}",
          "morphling.checkpoint.retained"="50", "morphling.job.checkpoint.interval"="0",
          "streamjob.trigger.interval"="100");"""):
        ex.execute(sql)
    w = SimpleNamespace(home=home, catalog=catalog, manager=manager, ex=ex, topic=topic,
                        bootstrap=broker.bootstrap, sink=sink,
                        job=catalog.get_job("default", "tally"),
                        ckdir=Path(home.checkpoint_dir("default", "tally")), sent=0)
    produce(w, 100)
    run(ex, "START STREAMJOB tally;")
    manager.wait_until_idle(timeout=300)
    yield w
    # the jobs only: the process's Spark stays for the worker's next module, as the
    # modules' worlds leave it (manager.shutdown() would make that module start a JVM)
    manager.stop_all(graceful=True)
    catalog.close()


def produce(w, count: int) -> None:
    """Records ``w.sent .. w.sent + count - 1``; id i at offset i // 2 of partition i % 2."""
    ids = range(w.sent, w.sent + count)
    replay(w.bootstrap, w.topic, [json.dumps({"id": i, "name": f"n{i % 7}"}).encode()
                                  for i in ids], 2)
    w.sent += count


def sink(w) -> pd.DataFrame:
    with sqlite3.connect(w.sink) as db:
        return pd.read_sql("SELECT name, n, total, label FROM totals ORDER BY name", db)


def expected_totals(ids) -> pd.DataFrame:
    df = pd.DataFrame({"id": list(ids)})
    df["name"] = "n" + (df["id"] % 7).astype(str)
    return (df.groupby("name").agg(n=("id", "size"), total=("id", "sum")).reset_index())


def listing(ckdir: Path) -> dict[str, float]:
    return {str(p.relative_to(ckdir)): p.stat().st_mtime for p in ckdir.rglob("*") if p.is_file()}


@pytest.mark.spark
def test_spark_refuses_a_state_type_change_the_planner_calls_compatible(world):
    w = world
    before = listing(w.ckdir)
    query_id = (w.ckdir / "metadata").read_text()
    # the same text (sum(v)), but v is a double now: the sum's buffer changes type.
    # EXPLAIN puts it to Spark's check as the statement does, and changes nothing
    explained = run(w.ex, "EXPLAIN ALTER STREAMJOB tally AS ('insert into totals (name, n, "
                          "total) select name, count(*), sum(v) from (select name, "
                          "cast(id as double) as v from events) group by name');")
    assert explained.data["change"]["class"] == "incompatible", explained.data
    assert "sum(v) was bigint, is now double" in " ".join(explained.data["change"]["reasons"])
    assert explained.data["accepted"] is False
    # and `streamjob check` of a script holding the ALTER (a dry run on a scratch catalog)
    from streamjob.client.check import check_script, scratch_catalog

    with pytest.raises(JobError, match=r"state schema check refuses its state value "
                                       r"\(sum\(v\) was bigint, is now double\)"):
        check_script("ALTER STREAMJOB tally AS ('insert into totals (name, n, total) select "
                     "name, count(*), sum(v) from (select name, cast(id as double) as v "
                     "from events) group by name');", "alter.sql", scratch_catalog(w.catalog),
                     w.home, w.manager.spark)
    with pytest.raises(JobError) as info:
        run(w.ex, "ALTER STREAMJOB tally AS ('insert into totals (name, n, total) select "
                  "name, count(*), sum(v) from (select name, cast(id as double) as v "
                  "from events) group by name');")
    message = info.value.message
    assert ("incompatible change: streaming aggregation: Spark's state schema check refuses "
            "its state value (sum(v) was bigint, is now double)") in message
    assert ("choose a new checkpoint epoch: FROM EARLIEST or FROM TIMESTAMP 'yyyy-MM-dd "
            "HH:mm:ss', or keep the offsets and rebuild the state: WITH STATE RESET") in message
    # nothing changed: the query, the wish to run, the live checkpoint's files
    job = w.catalog.get_job("default", "tally")
    assert job.query == V1 and job.desired_state == "RUNNING" and w.job.uid in w.manager.runners
    assert len(w.catalog.list_job_versions(w.job.uid)) == 1
    after = listing(w.ckdir)
    assert {k: v for k, v in after.items() if k in before} == before  # none rewritten
    assert (w.ckdir / "metadata").read_text() == query_id
    assert not (w.ckdir / "streamjob.fingerprint.next").exists()
    assert not Path(str(w.ckdir) + ".trial").exists()  # the copy is gone

    # a compatible change passes the same check, and the counts continue
    out = run(w.ex, "ALTER STREAMJOB tally AS ('insert into totals select name, count(*), "
                    "sum(v), upper(name) from (select name, id as v from events) "
                    "group by name');")
    assert ("altered to version 2: stateful change with compatible state (same stateful "
            "operators, keys and aggregates): the offsets and the state are kept; Spark's "
            "state schema check agrees") in out.message
    assert out.data["change"]["judge"] == "spark"
    produce(w, 60)
    w.manager.wait_until_idle(timeout=300)
    expected = expected_totals(range(w.sent))
    expected["label"] = expected["name"].str.upper()
    pd.testing.assert_frame_equal(sink(w), expected, check_dtype=False)


V3 = ("insert into totals select name, count(*), sum(v), concat(name, '!') "
      "from (select name, id as v from events) group by name")


@pytest.mark.spark
def test_a_savepoint_restores_into_a_changed_query_that_keeps_the_state(world):
    w = world
    run(w.ex, "STOP STREAMJOB tally WITH SAVEPOINT counted;")
    assert "stateful change with compatible state" in run(
        w.ex, f'ALTER STREAMJOB tally AS ("{V3}");').message
    produce(w, 40)
    msg = run(w.ex, "START STREAMJOB tally FROM SAVEPOINT counted;").message
    assert ("from savepoint counted (checkpoint " in msg
            and "(taken by query version 2: stateful change with compatible state" in msg)
    w.manager.wait_until_idle(timeout=300)
    expected = expected_totals(range(w.sent))
    expected["label"] = expected["name"] + "!"
    pd.testing.assert_frame_equal(sink(w), expected, check_dtype=False)


KEYED = ("insert into totals (name, n) select concat('k', cast(id % 3 as string)), count(*) "
         "from events group by concat('k', cast(id % 3 as string))")


@pytest.mark.spark
def test_new_grouping_keys_with_the_state_rebuilt_count_only_what_follows_the_switch(world):
    w = world
    with pytest.raises(JobError) as info:
        run(w.ex, f"ALTER STREAMJOB tally AS (\"{KEYED}\");")
    assert "its grouping keys change" in info.value.message
    assert "or keep the offsets and rebuild the state: WITH STATE RESET" in info.value.message

    read_before = w.sent  # the job has read everything so far (idle)
    out = run(w.ex, f"ALTER STREAMJOB tally AS (\"{KEYED}\") WITH STATE RESET;")
    assert "altered to version 4: the state is rebuilt (streaming aggregation: its " \
           "grouping keys change" in out.message
    boundary = json.loads(re.search(r"over from the offsets (\{.*?\}\}) \(checkpoint epoch",
                                    out.message).group(1))[w.topic]
    # the switch point is where the old query stopped: nothing before it is read again
    assert boundary == {"0": read_before // 2, "1": read_before // 2}
    produce(w, 90)
    w.manager.wait_until_idle(timeout=300)
    run(w.ex, "STOP STREAMJOB tally;")

    source = pd.DataFrame({"id": range(w.sent)})
    source["partition"], source["offset"] = source["id"] % 2, source["id"] // 2
    after = source[source["offset"] >= source["partition"].astype(str).map(boundary)]
    expected = ("k" + (after["id"] % 3).astype(str)).value_counts().sort_index()
    with sqlite3.connect(w.sink) as db:
        got = dict(db.execute("SELECT name, n FROM totals WHERE name LIKE 'k%'").fetchall())
    assert got == expected.to_dict()
    assert sum(got.values()) == 90  # every later record counted once

    # the savepoint of the old keys cannot restore into the new query: the reason and
    # the ways out
    with pytest.raises(JobError) as info:
        run(w.ex, "START STREAMJOB tally FROM SAVEPOINT counted;")
    message = info.value.message
    assert ("savepoint counted of streamjob default.tally was taken by query version 2, "
            "and the change to its query since is incompatible: ") in message
    assert "grouping keys change" in message and "FROM SAVEPOINT counted WITH STATE RESET" in message
    assert w.catalog.get_job("default", "tally").desired_state == "STOPPED"
