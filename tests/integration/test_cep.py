"""CEP on real Spark and the real broker (issue 18): a job reading ``FROM PATTERN (...)
WITHIN (...)`` over a Kafka stream with event time writes exactly the matches a batch
computation in plain Python finds over the same events (:mod:`.cep_events`), fed in
several micro-batches; and a processing-time pattern over one micro-batch. The
SIGKILL-and-restart run is in the slow tier (test_cep_restart.py)."""

from __future__ import annotations

import pytest

from streamjob_tools.dev.broker import create_topic
from streamjob_tools.dev.flights import replay

from .cep_events import QUERY, batch_matches, encode, events, sentinels, table_matches
from .world import SparkWorld

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # minutes under load: many micro-batches


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = SparkWorld(tmp_path_factory.mktemp("cep"))
    yield w
    w.close()


def _stream(world, broker, name: str, watermark: bool = True) -> None:
    create_topic(broker.bootstrap, name, 1)
    mark = ', "watermark.column"="ts", "watermark.delay"="0 seconds"' if watermark else ""
    world.run(f"""CREATE STREAM {name} (id INT, cnt INT, ts TIMESTAMP)
      TBLPROPERTIES("topic"="{name}", "kafka.broker.list"="{broker.bootstrap}",
                    "format"="json"{mark});""")


def test_event_time_pattern_matches_equal_the_batch_computation(world, broker):
    _stream(world, broker, "cep_ev")
    out = world.root / "cep_out"
    world.run(f"CREATE TABLE cep_t (id INT, cnt INT, ts TIMESTAMP, last_cnt INT) "
              f"STORED AS PARQUET LOCATION '{out}';")
    evs = events(240, seed=18)
    replay(broker.bootstrap, "cep_ev", encode(evs[:120]))
    plan, query = world.start("cep_job", QUERY.format(table="cep_t", stream="cep_ev"),
                              {"morphling.job.max.records.per.batch": "80"})
    assert plan.query.pattern.key == ("id",)
    try:
        query.processAllAvailable()
        replay(broker.bootstrap, "cep_ev", encode(evs[120:]))
        query.processAllAvailable()
        for s in sentinels(evs[-1]["ts"]):
            replay(broker.bootstrap, "cep_ev", encode([s]))
            query.processAllAvailable()
        assert query.exception() is None
    finally:
        query.stop()
    expected = batch_matches(evs)
    assert sum(expected.values()) >= 10, "the events should hold matches"
    assert table_matches(str(out)) == expected


def test_processing_time_pattern_with_notfollowedby(world, broker):
    """No event time: events are matched in arrival order (one partition: offset order),
    timed by their micro-batch; NOTFOLLOWEDBY forbids a reset (cnt 0) in between."""
    _stream(world, broker, "cep_pt", watermark=False)
    out = world.root / "cep_pt_out"
    world.run(f"CREATE TABLE cep_pt_t (id INT, a INT, b INT) STORED AS PARQUET LOCATION '{out}';")
    evs = events(200, seed=7)
    replay(broker.bootstrap, "cep_pt", encode(evs))
    _, query = world.start("cep_pt_job", """insert into cep_pt_t select e1.id, e1.cnt, e2.cnt
        from pattern(e1=cep_pt[e1.cnt > 6] notfollowedby r=cep_pt[r.id = e1.id and r.cnt = 0]
                     followedby e2=cep_pt[e2.id = e1.id and e2.cnt < e1.cnt]) within ('1' hour)""")
    try:
        query.processAllAvailable()
        # the events are matched once the watermark passes their micro-batch's time: the
        # next micro-batch, here one reading an event that matches nothing
        replay(broker.bootstrap, "cep_pt", encode(sentinels(evs[-1]["ts"])[:1]))
        query.processAllAvailable()
        assert query.exception() is None
    finally:
        query.stop()
    from collections import Counter

    from streamjob.connectors.files.table import read_table

    expected = Counter()
    for i, e1 in enumerate(evs):
        if e1["cnt"] > 6:
            for e in evs[i + 1:]:
                if e["id"] != e1["id"]:
                    continue
                if e["cnt"] == 0:
                    break
                if e["cnt"] < e1["cnt"]:
                    expected[(e1["id"], e1["cnt"], e["cnt"])] += 1
                    break
    got = Counter((r["id"], r["a"], r["b"]) for r in read_table(str(out)).to_pylist())
    assert sum(expected.values()) >= 10
    assert got == expected


def test_preview_of_a_pattern_shows_the_matches_of_a_job(world):
    """A shell/-e preview (``plan_preview`` -> ``bind_preview`` -> ``preview_frame``, as
    :mod:`streamjob.client.preview` runs it) of a bare SELECT over the PATTERN of the job
    above builds the same match view as a job: its rows are the matches the batch
    computation finds over the same events (a file stream: event time, several
    micro-batches, then the sentinels that move the watermark past every event)."""
    from collections import Counter

    from streamjob.planner.bind import bind_preview
    from streamjob.planner.preview import plan_preview
    from streamjob.spark.query import preview_frame

    directory = world.root / "cep_preview_in"
    directory.mkdir()
    world.run(f"""CREATE STREAM cep_pv (id INT, cnt INT, ts TIMESTAMP)
      TBLPROPERTIES("source"="files", "path"="{directory}", "format"="json",
                    "watermark.column"="ts", "watermark.delay"="0 seconds");""")
    select = QUERY.format(table="x", stream="cep_pv").split(" select ", 1)[1]
    plan = plan_preview(world.catalog, world.home, f"select {select} limit 1000")
    assert plan.limit == 1000 and plan.output_mode == "append"
    df = preview_frame(world.session, bind_preview(plan))
    query = (df.writeStream.format("memory").queryName("cep_preview_rows")
             .option("checkpointLocation", str(world.root / "checkpoints" / "cep_preview"))
             .outputMode(plan.output_mode).start())
    evs = events(160, seed=29)
    try:
        for part in (evs[:80], evs[80:], *([s] for s in sentinels(evs[-1]["ts"]))):
            world.write(directory, [{**e, "ts": e["ts"].strftime("%Y-%m-%dT%H:%M:%SZ")}
                                    for e in part])
            query.processAllAvailable()
        assert query.exception() is None
        rows = world.session.table("cep_preview_rows").collect()
    finally:
        query.stop()
    expected = Counter((i, c, last) for i, c, _, last in batch_matches(evs).elements())
    assert sum(expected.values()) >= 10, "the events should hold matches"
    assert Counter((r[0], r[1], r[3]) for r in rows) == expected
