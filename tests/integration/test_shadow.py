"""Shadow runs (issue 30 point 4) of a real job: Spark (the session's), the session's
Kafka broker and SQLite sinks.

A stateless Kafka -> SQLite job runs; ALTER ... WITH SHADOW runs a changed query (a new
filter and a changed column) beside it for a few micro-batches; its comparison equals a
pandas diff of the two queries over the very input range the shadow read. PROMOTE then
switches the live job at a checkpoint boundary: every record is written once, by the
old query before the switch point and by the new one after it. DISCARD drops the
scratch tables and the shadow's folder.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from streamjob.catalog import Catalog
from streamjob.exceptions import AccessDeniedError, JobError
from streamjob.executor import Executor, shadow_run
from streamjob.executor.shadow_diff import compare
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob_tools.dev.broker import create_topic
from streamjob_tools.dev.flights import replay

#: Seconds this module takes on a fast host: make test hands the longest modules out first
#: (tests/conftest.py), so the run does not end on one of them while the other worker idles.
EXPECTED_S = 27

PER_BATCH = 20
#: A job property of the jobs whose point is their output, not a race with the live job:
#: micro-batches every 100 ms rather than every 500 (fewer idle waits between batches).
QUICK = '"streamjob.trigger.interval"="100"'
OLD = "insert into out select id, name from events"
NEW = "insert into out select id, upper(name) from events where id % 3 <> 0"


@pytest.fixture(scope="module")
def world(broker, tmp_path_factory):
    """A home, its SQLite catalog, an in-process job manager (the session's Spark) and an
    executor; stream ``events`` over a fresh 2-partition topic."""
    from streamjob.manager import JobManager

    base = tmp_path_factory.mktemp("shadow")
    (base / "home").mkdir()
    (base / "home" / "streamjob.conf").write_text(
        "spark.master=local[2]\nspark.sql.shuffle.partitions=2\n")
    home = Home.open(base / "home")
    catalog = Catalog(home.catalog_url)
    manager = JobManager(catalog, home)
    ex = Executor(catalog, home, manager, principal="local:test")
    topic = f"events_{uuid.uuid4().hex[:6]}"
    create_topic(world_bootstrap := broker.bootstrap, topic, 2)
    run(ex, f'CREATE STREAM events (id INT, name STRING) TBLPROPERTIES("topic"="{topic}", '
            f'"kafka.broker.list"="{world_bootstrap}", "format"="json");')
    yield SimpleNamespace(home=home, catalog=catalog, manager=manager, ex=ex, topic=topic,
                          bootstrap=broker.bootstrap, sink=base / "sink.db")
    # the jobs only: the process's Spark stays for the worker's next module, as the
    # modules' worlds leave it (manager.shutdown() would make that module start a JVM)
    manager.stop_all(graceful=True)
    catalog.close()


def run(ex, sql: str):
    return ex.execute(parse_script(sql)[0])


def produce(world, ids) -> None:
    """id i goes to partition i % 2 (replay's round robin over 2 partitions)."""
    replay(world.bootstrap, world.topic,
           [json.dumps({"id": i, "name": f"n{i}"}).encode() for i in ids], 2)


def tables(world) -> set[str]:
    with sqlite3.connect(world.sink) as db:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def rows(world, table: str) -> list[tuple]:
    with sqlite3.connect(world.sink) as db:
        return db.execute(f"SELECT id, name FROM {table}").fetchall()


def topic_records(upto: int) -> pd.DataFrame:
    """The records of ids 0 .. upto-1 with their partition and offset: each produce()
    call sends an even number of ids round-robin over 2 partitions, so id i is at
    partition i % 2, offset i // 2."""
    ids = range(upto)
    return pd.DataFrame({"id": list(ids), "name": [f"n{i}" for i in ids],
                         "partition": [i % 2 for i in ids], "offset": [i // 2 for i in ids]})


def range_of(offsets: dict) -> dict[int, int]:
    """``{partition: offset}`` of one source's offsets in a shadow report (the topic's
    partitions however the source's offset JSON nests them)."""
    (source,) = offsets.values()
    found = source
    while isinstance(found, dict) and len(found) == 1 and not next(iter(found)).isdigit():
        found = next(iter(found.values()))
    return {int(p): int(o) for p, o in found.items()}


@pytest.mark.spark
def test_shadow_compares_promotes_and_discards(world):
    ex, catalog = world.ex, world.catalog
    for sql in parse_script(f"""
        CREATE TABLE out (id INT, name STRING)
          TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{world.sink}");
        CREATE STREAMJOB j AS ("{OLD}")
          JOBPROPERTIES ("morphling.job.max.records.per.batch"="{PER_BATCH}",
                         "morphling.job.checkpoint.interval"="0");"""):
        ex.execute(sql)
    produce(world, range(0, 100))
    run(ex, "START STREAMJOB j;")
    world.manager.wait_until_idle(timeout=300)

    # a viewer may look, not shadow
    viewer = Executor(catalog, world.home, world.manager, role="viewer")
    with pytest.raises(AccessDeniedError, match="rights of ALTER STREAMJOB"):
        run(viewer, f'ALTER STREAMJOB j AS ("{NEW}") WITH SHADOW;')
    with pytest.raises(JobError, match="has no shadow"):
        run(ex, "SHOW SHADOW FOR STREAMJOB j;")

    # the shadow, beside the live job, over input produced meanwhile
    produce(world, range(100, 300))
    result = run(ex, f"""ALTER STREAMJOB j AS ("{NEW}") WITH SHADOW
                         JOBPROPERTIES('shadow.batches'='3');""")
    report = result.data
    assert report["status"] == "compared" and report["batches"], result.message
    assert {"out__shadow_j", "out__shadow_j__old"} <= tables(world)
    assert "out" in tables(world)

    # the comparison equals pandas over the same input range
    start, end = range_of(report["from"]), range_of(report["to"])
    records = topic_records(300)
    window = records[records.apply(lambda r: start.get(r.partition, 0) <= r.offset
                                   < end.get(r.partition, 0), axis=1)]
    assert len(window) > 0
    old = window[["id", "name"]]
    new = window[window.id % 3 != 0].assign(name=lambda d: d.name.str.upper())[["id", "name"]]
    expected = compare(old.to_dict("records"), new.to_dict("records"))
    got = report["comparison"]
    assert got["old_rows"] == len(old) and got["new_rows"] == len(new)
    for key in ("only_old", "only_new", "changed"):
        assert got[key] == expected[key], key
    # a pandas multiset difference, computed independently of compare()
    both = old.merge(new, how="outer", indicator=True)
    assert got["only_old"]["count"] == int((both._merge == "left_only").sum())
    assert got["only_new"]["count"] == int((both._merge == "right_only").sum())
    assert len(got["only_old"]["samples"]) == min(20, got["only_old"]["count"])
    # what the scratch tables hold is exactly that range's output
    assert sorted(rows(world, "out__shadow_j__old")) == sorted(map(tuple, old.values.tolist()))
    assert sorted(rows(world, "out__shadow_j")) == sorted(map(tuple, new.values.tolist()))

    shown = run(viewer, "SHOW SHADOW FOR STREAMJOB j;")
    assert shown.rows[0][1] == got["only_old"]["count"] and shown.data == report
    with pytest.raises(JobError, match="has a shadow already"):
        run(ex, f'ALTER STREAMJOB j AS ("{NEW}") WITH SHADOW;')

    # PROMOTE: the live job switches at a checkpoint boundary; nothing lost or doubled
    world.manager.wait_until_idle(timeout=300)
    promoted = run(ex, "PROMOTE SHADOW FOR STREAMJOB j;")
    switch = range_of(promoted.data["source_offsets"])
    assert catalog.get_job("default", "j").query == NEW
    assert not {"out__shadow_j", "out__shadow_j__old"} & tables(world)
    produce(world, range(300, 400))
    world.manager.wait_until_idle(timeout=300)
    records = topic_records(400)
    before = records[records.apply(lambda r: r.offset < switch[r.partition], axis=1)]
    after = records[records.apply(lambda r: r.offset >= switch[r.partition], axis=1)]
    expected_out = sorted([(int(i), n) for i, n in before[["id", "name"]].values] + [
        (int(i), n.upper()) for i, n in after[["id", "name"]].values if i % 3 != 0])
    assert sorted(rows(world, "out")) == expected_out
    assert len(after) >= 100  # the switch point is before the records produced after it

    # the same through the HTTP API (operators run, viewers look) and the CLI;
    # DISCARD drops the scratch tables and the shadow's folder
    import httpx
    from click.testing import CliRunner

    from streamjob.api import create_app
    from streamjob.api.auth import new_token
    from streamjob.api.serve import HttpService
    from streamjob.cli import main

    operator, viewer_token = new_token(), new_token()
    catalog.create_token("op", "operator", operator)
    catalog.create_token("look", "viewer", viewer_token)
    service = HttpService(create_app(catalog, world.home, spark=world.manager.spark),
                          "127.0.0.1:0")
    url = service.start()
    try:
        with httpx.Client(base_url=url, timeout=600) as http:
            auth = {"Authorization": f"Bearer {operator}"}
            look = {"Authorization": f"Bearer {viewer_token}"}
            denied = http.post("/v1/jobs/j/shadow", json={"query": OLD}, headers=look)
            assert denied.status_code == 403
            r = http.post("/v1/jobs/j/shadow", json={"query": OLD, "duration": "3s"},
                          headers=auth)
            assert r.status_code == 200, r.text
            timed = r.json()["results"][0]["data"]
            assert timed["status"] == "compared" and timed["run"]["stopped"] == "duration"
            # no input came: its last trigger ends without a micro-batch, and the stop
            # does not wait for a progress report that never comes (it waited 30 s)
            assert timed["run"]["seconds"] < 3 + shadow_run.STOP_WAIT_S, timed["run"]
            shown = http.get("/v1/jobs/j/shadow", headers=look)
            assert shown.status_code == 200 and shown.json()["query"] == OLD
            folder = Path(world.home.checkpoint_dir("default", "j") + ".shadow")
            assert folder.exists() and "out__shadow_j" in tables(world)
            cli = CliRunner().invoke(main, ["shadow", "show", "j", "--json"],
                                     env={"STREAMJOB_HOME": str(world.home.root)},
                                     catch_exceptions=False)
            assert cli.exit_code == 0, cli.stderr
            assert json.loads(cli.stdout)["query"] == OLD
            assert http.delete("/v1/jobs/j/shadow", headers=look).status_code == 403
            gone = http.delete("/v1/jobs/j/shadow", headers=auth)
            assert gone.status_code == 200, gone.text
            assert "discarded" in gone.json()["results"][0]["message"]
    finally:
        service.stop()
    assert not {"out__shadow_j", "out__shadow_j__old"} & tables(world)
    assert not folder.exists()
    with pytest.raises(JobError, match="has no shadow"):
        run(ex, "DISCARD SHADOW FOR STREAMJOB j;")
    run(ex, "STOP STREAMJOB j;")


@pytest.mark.spark
def test_a_stateful_shadow_keeps_the_state_and_compares_key_by_key(world):
    """An aggregation's shadow starts from the live job's state: over its range, the old
    query's counts and the new query's (the same keys, another output expression) are
    both counts over the whole input up to the range's end, compared by primary key."""
    ex = world.ex
    topic = f"agg_{uuid.uuid4().hex[:6]}"
    create_topic(world.bootstrap, topic, 2)
    sink = world.sink.with_name("agg.db")
    for sql in parse_script(f"""
        CREATE STREAM agg_events (id INT, name STRING) TBLPROPERTIES("topic"="{topic}",
          "kafka.broker.list"="{world.bootstrap}", "format"="json");
        CREATE TABLE counts (name STRING, n BIGINT) TBLPROPERTIES ("connector"="sql",
          "url"="sqlite:///{sink}", "primary.key"="name");
        CREATE STREAMJOB agg AS ("insert into counts select name, count(*) from agg_events
                                  group by name")
          JOBPROPERTIES ("morphling.job.max.records.per.batch"="{PER_BATCH}",
                         "morphling.job.checkpoint.interval"="0", {QUICK});"""):
        ex.execute(sql)

    def send(ids) -> None:
        replay(world.bootstrap, topic,
               [json.dumps({"id": i, "name": f"k{i % 5}"}).encode() for i in ids], 2)

    send(range(0, 40))  # the live job's state before the shadow: two micro-batches
    run(ex, "START STREAMJOB agg;")
    world.manager.wait_until_idle(timeout=300)
    # the shadow starts from the job's last checkpoint and state, running or not: the
    # live job stopped, no second query reads beside it, and the input after that
    # checkpoint is exactly what the shadow reads (3 batches of PER_BATCH and a spare)
    run(ex, "STOP STREAMJOB agg;")
    send(range(40, 120))
    report = run(ex, """ALTER STREAMJOB agg AS ("insert into counts select name, count(*) * 10
                        from agg_events group by name") WITH SHADOW
                        JOBPROPERTIES('shadow.batches'='3');""").data
    assert report["status"] == "compared" and report["batches"]
    assert report["run"]["old_replay_starts"] == report["batches"][1] - report["batches"][0] + 1
    start, end = range_of(report["from"]), range_of(report["to"])
    records = topic_records(120).assign(name=lambda d: "k" + (d.id % 5).astype(str))
    upto = records[records.apply(lambda r: r.offset < end[r.partition], axis=1)]
    window = records[records.apply(lambda r: start[r.partition] <= r.offset < end[r.partition],
                                   axis=1)]
    counts = upto.groupby("name").size()
    touched = sorted(set(window.name))
    old = [{"name": k, "n": int(counts[k])} for k in touched]
    new = [{"name": k, "n": int(counts[k]) * 10} for k in touched]
    got = report["comparison"]
    assert got["keyed"] and got["key"] == ["name"]
    assert got == compare(old, new, ["name"])
    assert got["changed"]["count"] == len(touched) > 0
    run(ex, "DISCARD SHADOW FOR STREAMJOB agg;")
