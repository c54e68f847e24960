"""Shadow runs of jobs writing Kafka, file and Delta tables (issue 30 point 4): real Spark
(the session's), the session's broker. Each sink kind gets scratch copies of its own kind
(topics ``<topic>__shadow_<job>[__old]``, sibling directories and sibling Delta tables
``<dir>__shadow_<job>[__old]``) that the comparison reads back; it equals a pandas diff
of the two queries over the input range the shadow read. DISCARD and PROMOTE delete the
topics, directories and tables; the live topic, directory and Delta table are untouched."""

from __future__ import annotations

import uuid

import pytest
from kafka import KafkaAdminClient

from streamjob.executor.shadow_diff import compare
from streamjob.grammar import parse_script
from streamjob_tools.dev.broker import create_topic

from .conftest import wait_for
from .test_shadow import (PER_BATCH, QUICK, produce, range_of, run, topic_records,  # noqa: F401
                          world)

pytestmark = pytest.mark.spark
#: Seconds this module takes on a fast host: make test hands the longest modules out first
#: (tests/conftest.py), so the run does not end on one of them while the other worker idles.
EXPECTED_S = 22

OLD = "select id, name from events"
NEW = "select id, upper(name) from events where id % 3 <> 0"


def _topics(bootstrap: str) -> set[str]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return set(admin.list_topics())
    finally:
        admin.close()


def _expected(report: dict, upto: int):
    """The old and new queries' rows over the shadow's range, by pandas."""
    start, end = range_of(report["from"]), range_of(report["to"])
    records = topic_records(upto)
    window = records[records.apply(lambda r: start.get(r.partition, 0) <= r.offset
                                   < end.get(r.partition, 0), axis=1)]
    old = window[["id", "name"]]
    new = window[window.id % 3 != 0].assign(name=lambda d: d.name.str.upper())[["id", "name"]]
    return old, new


def _check(report: dict, upto: int) -> None:
    assert report["status"] == "compared" and report["batches"], (report["run"], report["checkpoint"])
    old, new = _expected(report, upto)
    assert len(old) > 0
    got = report["comparison"]
    assert (got["old_rows"], got["new_rows"]) == (len(old), len(new))
    both = old.merge(new, how="outer", indicator=True)  # a pandas multiset diff
    assert got["only_old"]["count"] == int((both._merge == "left_only").sum())
    assert got["only_new"]["count"] == int((both._merge == "right_only").sum())
    expected = compare(old.to_dict("records"), new.to_dict("records"))
    for key in ("only_old", "only_new", "changed"):
        assert got[key] == expected[key], key


def _delta_rows(path) -> list[tuple]:
    """The (id, name) rows of the Delta table at ``path`` (its latest snapshot), by
    delta-rs, independently of streamjob's reader."""
    from deltalake import DeltaTable

    return sorted(map(tuple, DeltaTable(str(path)).to_pandas()[["id", "name"]].values.tolist()))


def test_kafka_and_file_sinks_shadow_into_copies_of_their_own_kind(world, tmp_path):
    """Kafka, file and Delta sinks. The live jobs each commit a checkpoint over the
    first records and stop: a shadow starts from the job's last checkpoint whether or
    not it runs, so no live query reads beside the shadows, and all three shadows read
    the same input after it."""
    ex = world.ex
    live_topic = f"kout_{uuid.uuid4().hex[:6]}"
    create_topic(world.bootstrap, live_topic, 2)
    files, delta = tmp_path / "fout", tmp_path / "dout"
    props = (f'JOBPROPERTIES ("morphling.job.max.records.per.batch"="{PER_BATCH}", '
             f'"morphling.job.checkpoint.interval"="0", {QUICK})')
    props_f = props.replace(f'per.batch"="{PER_BATCH}"', 'per.batch"="6"')
    assert props_f != props
    for sql in parse_script(f"""
        CREATE TABLE kout (id INT, name STRING) TBLPROPERTIES ("topic"="{live_topic}",
          "kafka.broker.list"="{world.bootstrap}", "format"="json");
        CREATE TABLE fout (id INT, name STRING) STORED AS PARQUET LOCATION '{files}';
        CREATE TABLE dout (id INT, name STRING) STORED AS DELTA LOCATION '{delta}';
        CREATE STREAMJOB k AS ("insert into kout {OLD}") {props};
        CREATE STREAMJOB f AS ("insert into fout {OLD}") {props_f};
        CREATE STREAMJOB d AS ("insert into dout {OLD}") {props};"""):
        ex.execute(sql)
    produce(world, range(0, 40))
    for job in "kfd":
        run(ex, f"START STREAMJOB {job};")
    world.manager.wait_until_idle(timeout=300)
    for job in "kfd":
        run(ex, f"STOP STREAMJOB {job};")
    live_delta = _delta_rows(delta)
    assert live_delta == [(i, f"n{i}") for i in range(40)]
    # the shadows' input: two micro-batches of PER_BATCH each and a spare
    produce(world, range(40, 100))

    # Kafka: two scratch topics, read back read_committed and decoded as JSON
    kafka = run(ex, f"""ALTER STREAMJOB k AS ("insert into kout {NEW}") WITH SHADOW
                        JOBPROPERTIES('shadow.batches'='2', 'shadow.timeout'='120s');""").data
    _check(kafka, 100)
    scratch = {f"{live_topic}__shadow_k", f"{live_topic}__shadow_k__old"}
    assert kafka["new_table"] == f"topic {live_topic}__shadow_k"
    assert scratch <= _topics(world.bootstrap)

    # files: two sibling directories, read back through their manifests. The live job
    # committed batches 0-6 (3 records of each partition each), so the shadow's three
    # batches, 7 to 9, cross
    # Spark's manifest compaction batch (9: every 10th), which reads every earlier
    # batch's manifest entry and failed on a scratch folder that has none
    filed = run(ex, f"""ALTER STREAMJOB f AS ("insert into fout {NEW}") WITH SHADOW
                        JOBPROPERTIES('shadow.batches'='3', 'shadow.timeout'='120s');""").data
    _check(filed, 100)
    dirs = [tmp_path / "fout__shadow_f", tmp_path / "fout__shadow_f__old"]
    assert all((d / "_spark_metadata").is_dir() for d in dirs)
    written = sorted(int(p.name) for p in (dirs[0] / "_spark_metadata").iterdir()
                     if p.name.isdigit())
    assert any((b + 1) % 10 == 0 for b in written), written  # a compaction batch's place

    # Delta: two sibling Delta tables, never the live one; read back by their logs
    deltas = [tmp_path / "dout__shadow_d", tmp_path / "dout__shadow_d__old"]
    dshadow = run(ex, f"""ALTER STREAMJOB d AS ("insert into dout {NEW}") WITH SHADOW
                          JOBPROPERTIES('shadow.batches'='2', 'shadow.timeout'='120s');""").data
    _check(dshadow, 100)
    assert dshadow["new_table"] == f"Delta table {deltas[0]}"
    assert dshadow["old_table"] == f"Delta table {deltas[1]}"
    old, new = _expected(dshadow, 100)
    assert _delta_rows(deltas[1]) == sorted(map(tuple, old.values.tolist()))
    assert _delta_rows(deltas[0]) == sorted(map(tuple, new.values.tolist()))
    assert _delta_rows(delta) == live_delta  # the live table untouched

    # DISCARD: the copies go, the live sinks stay
    gone = run(ex, "DISCARD SHADOW FOR STREAMJOB k;").message
    assert f"topic {live_topic}__shadow_k" in gone
    wait_for(lambda: not scratch & _topics(world.bootstrap), 60, "the scratch topics deleted")
    assert live_topic in _topics(world.bootstrap)
    run(ex, "DISCARD SHADOW FOR STREAMJOB f;")
    assert not any(d.exists() for d in dirs) and (files / "_spark_metadata").is_dir()
    # PROMOTE (of the stopped job: it stays stopped) drops the Delta copies as well
    promoted = run(ex, "PROMOTE SHADOW FOR STREAMJOB d;").message
    assert f"Delta table {deltas[0]}" in promoted, promoted
    assert world.catalog.get_job("default", "d").query == f"insert into dout {NEW}"
    assert not any(d.exists() for d in deltas)
    assert _delta_rows(delta) == live_delta
