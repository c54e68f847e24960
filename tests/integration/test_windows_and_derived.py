"""STREAMWINDOW and derived streams through real local Spark: file streams of JSON in a
temporary directory, Parquet file tables, plan_job + start_query in one session clone.

Waits are event-driven: each step writes a file, then ``processAllAvailable()``. A
window is final once the watermark has passed its end; the watermark a batch uses is
the one computed by the batch before, so two later "sentinel" records push every real
window out. Their own windows may or may not be final when the test reads, so they are
left out of the comparison (not filtered in the query: Spark pushes a filter below the
watermark, and filtered records would not move it)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest

from streamjob.connectors.files.table import read_table

from .world import SparkWorld

pytestmark = pytest.mark.spark
#: Seconds this module takes on a fast host: make test hands the longest modules out first
#: (tests/conftest.py), so the run does not end on one of them while the other worker idles.
EXPECTED_S = 25

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
# (user, seconds after T0): three users over four 10-second windows
CLICKS = [("ann", 1), ("bob", 2), ("ann", 4), ("ann", 9), ("bob", 11), ("cid", 13), ("ann", 17),
          ("bob", 19), ("bob", 20), ("cid", 24), ("cid", 27), ("ann", 31), ("bob", 38)]
SENTINEL = "__sentinel"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = SparkWorld(tmp_path_factory.mktemp("windows"))
    yield w
    w.close()


def ts(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def clicks_stream(world, name: str, watermark: bool = True):
    directory = world.root / name
    directory.mkdir()
    props = ', "watermark.column"="ts", "watermark.delay"="0 seconds"' if watermark else ""
    world.run(f"""CREATE STREAM {name} (user_id STRING, ts TIMESTAMP)
      TBLPROPERTIES("source"="files", "path"="{directory}", "format"="json"{props});""")
    return directory


def feed_with_sentinels(world, query, directory) -> None:
    world.write(directory, [{"user_id": u, "ts": ts(s)} for u, s in CLICKS])
    query.processAllAvailable()
    for hours in (1, 2):  # each pushes the watermark past every earlier window
        world.write(directory, [{"user_id": SENTINEL, "ts": ts(3600 * hours)}])
        query.processAllAvailable()


def window_rows(location: str) -> Counter:
    rows = read_table(location).to_pylist()
    return Counter({(r["user_id"], int(r["start"].timestamp() - T0.timestamp())): r["n"]
                    for r in rows if r["user_id"] != SENTINEL})


def test_tumbling_event_time_window_counts_match_python(world):
    directory = clicks_stream(world, "clicks_a")
    out = world.root / "out_a"
    world.run(f"CREATE TABLE counts_a (user_id STRING, start TIMESTAMP, n BIGINT) "
              f"STORED AS PARQUET LOCATION '{out}';")
    plan, query = world.start("tumbling", """insert into counts_a
        select user_id, window.start, count(*) from clicks_a
        STREAMWINDOW w AS (LENGTH '10' SECOND)
        group by user_id""")
    assert plan.output_mode == "append"
    try:
        feed_with_sentinels(world, query, directory)
        assert query.exception() is None
    finally:
        query.stop()
    expected = Counter((u, s // 10 * 10) for u, s in CLICKS)
    got = window_rows(str(out))
    assert got == expected
    assert sum(got.values()) == len(CLICKS)


def test_sliding_event_time_window_counts_match_python(world):
    directory = clicks_stream(world, "clicks_b")
    out = world.root / "out_b"
    world.run(f"CREATE TABLE counts_b (user_id STRING, start TIMESTAMP, n BIGINT) "
              f"STORED AS PARQUET LOCATION '{out}';")
    _, query = world.start("sliding", """insert into counts_b
        select user_id, window.start, count(*) from clicks_b
        streamwindow w as (length '10' second slide '5' second)
        group by user_id""")
    try:
        feed_with_sentinels(world, query, directory)
        assert query.exception() is None
    finally:
        query.stop()
    expected = Counter()
    for u, s in CLICKS:
        for start in (s // 5 * 5, s // 5 * 5 - 5):  # the two 10 s windows holding s
            expected[(u, start)] += 1
    assert window_rows(str(out)) == expected


def test_processing_time_window_runs(world):
    directory = clicks_stream(world, "clicks_p", watermark=False)
    out = world.root / "out_p"
    world.run(f"CREATE TABLE counts_p (user_id STRING, n BIGINT) STORED AS PARQUET "
              f"LOCATION '{out}';")
    plan, query = world.start("proctime", """insert into counts_p
        select user_id, count(*) from clicks_p STREAMWINDOW w AS (LENGTH 1 MINUTE SLIDE 30 SECONDS)
        group by user_id""")
    assert plan.output_mode == "append" and plan.sources[0].proctime
    try:
        world.write(directory, [{"user_id": u, "ts": ts(s)} for u, s in CLICKS])
        query.processAllAvailable()
        assert query.exception() is None
        assert sum(p["numInputRows"] for p in query.recentProgress) == len(CLICKS)
    finally:
        query.stop()


def test_job_over_derived_stream_writes_exactly_the_filtered_rows(world):
    directory = world.root / "payments"
    directory.mkdir()
    out = world.root / "out_c"
    world.run(f"""
    CREATE STREAM payments (id BIGINT, account STRING, amount DOUBLE, currency STRING)
      TBLPROPERTIES("source"="files", "path"="{directory}", "format"="json");
    CREATE STREAM euro AS SELECT id, upper(account) AS account, amount * 100 AS cents
      FROM payments WHERE currency = 'EUR';
    CREATE STREAM big_euro AS SELECT id, account, cents FROM euro WHERE cents >= 1000;
    CREATE TABLE big (id BIGINT, account STRING, cents BIGINT) STORED AS PARQUET LOCATION '{out}';
    """)
    plan, query = world.start("derived", "insert into big select * from big_euro")
    assert [d.stream.name for d in plan.derived] == ["euro", "big_euro"]
    assert ("stream", "default", "payments", "source") in plan.dependencies
    payments = [{"id": i, "account": f"acc{i % 3}", "amount": float(i % 25),
                 "currency": "EUR" if i % 4 else "USD"} for i in range(200)]
    try:
        world.write(directory, payments[:120])
        query.processAllAvailable()
        world.write(directory, payments[120:])
        query.processAllAvailable()
        assert query.exception() is None
    finally:
        query.stop()
    expected = sorted((p["id"], p["account"].upper(), int(p["amount"] * 100)) for p in payments
                      if p["currency"] == "EUR" and p["amount"] * 100 >= 1000)
    got = sorted((r["id"], r["account"], r["cents"]) for r in read_table(str(out)).to_pylist())
    assert got == expected and len(got) > 50



def test_insert_maps_select_columns_by_position_even_with_one_name_twice(world):
    """``select s.name, r.name`` (Nexmark's ``b.dateTime, a.dateTime``): two output
    columns of one name go to the table's columns by position (INSERT's rule in Hive,
    Slipstream and Flink). On the main of 2026-11-25 the job failed at start with Spark's
    AMBIGUOUS_REFERENCE."""
    directory = world.root / "dup"
    directory.mkdir()
    names = world.root / "dup_names"
    names.mkdir()
    (names / "part-0.json").write_text("".join(
        json.dumps({"id": i, "name": f"r{i}"}) + "\n" for i in range(4)))
    out = world.root / "out_dup"
    world.run(f"""
    CREATE STREAM dup_s (id BIGINT, name STRING)
      TBLPROPERTIES("source"="files", "path"="{directory}", "format"="json");
    CREATE TABLE dup_r (id BIGINT, name STRING) STORED AS JSON LOCATION '{names}';
    CREATE TABLE dup_t (first BIGINT, again DOUBLE, name STRING, other STRING)
      STORED AS PARQUET LOCATION '{out}';
    """)
    _, query = world.start("dup", "insert into dup_t select s.id, r.id, s.name, r.name "
                                  "from dup_s s join dup_r r on s.id = r.id")
    try:
        world.write(directory, [{"id": i, "name": f"s{i}"} for i in range(4)])
        query.processAllAvailable()
        assert query.exception() is None
    finally:
        query.stop()
    got = sorted(tuple(r.values()) for r in read_table(str(out)).to_pylist())
    assert got == [(i, float(i), f"s{i}", f"r{i}") for i in range(4)]


def test_window_stream_feeds_a_job_each_window_once_when_it_closes(world):
    """A window stream (issue 18) read by a job: the table gets each window's final row
    once, exactly the windows the watermark has passed, as pandas computes them in batch;
    the last window is closed only by a later event's watermark."""
    import pandas as pd

    directory = clicks_stream(world, "clicks_w")
    out = world.root / "out_w"
    world.run(f"""
    CREATE STREAM clicks_10s AS SELECT user_id, count(*) AS n, window AS win
      FROM clicks_w STREAMWINDOW sw AS (LENGTH '10' SECOND SLIDE '10' SECOND) GROUP BY user_id;
    CREATE TABLE counts_w (user_id STRING, start TIMESTAMP, n BIGINT)
      STORED AS PARQUET LOCATION '{out}';""")
    plan, query = world.start("window_stream", "insert into counts_w "
                              "select user_id, win.start, n from clicks_10s where n >= 1")
    assert plan.output_mode == "append" and [d.stream.name for d in plan.derived] == ["clicks_10s"]

    def expected(events, watermark: int) -> list:
        df = pd.DataFrame(events, columns=["user_id", "s"])
        df["start"] = df["s"] // 10 * 10
        n = df.groupby(["user_id", "start"]).size().reset_index(name="n")
        return sorted((r.user_id, int(r.start), int(r.n)) for r in n.itertuples()
                      if r.start + 10 <= watermark)  # closed: the watermark passed its end

    def got() -> list:
        return sorted((r["user_id"], int(r["start"].timestamp() - T0.timestamp()), r["n"])
                      for r in read_table(str(out)).to_pylist())

    try:
        world.write(directory, [{"user_id": u, "ts": ts(s)} for u, s in CLICKS])
        query.processAllAvailable()
        first = got()  # watermark 38 s: [30, 40) still open
        world.write(directory, [{"user_id": "dan", "ts": ts(45)}])
        query.processAllAvailable()
        assert query.exception() is None
        second = got()  # watermark 45 s: [30, 40) closed by dan's event, dan's own still open
    finally:
        query.stop()
    assert first == expected(CLICKS, 38) and len(first) == 7
    assert second == expected(CLICKS + [("dan", 45)], 45)
    assert [r for r in second if r not in first] == [("ann", 30, 1), ("bob", 30, 1)]


def pandas_sessions(gap: int):
    """Gap sessions of CLICKS computed in batch with pandas: {(user, start s): (end s, n)}."""
    import pandas as pd

    df = pd.DataFrame(CLICKS, columns=["user_id", "t"]).sort_values(["user_id", "t"])
    df["sid"] = df.groupby("user_id")["t"].diff().ge(gap).groupby(df["user_id"]).cumsum()
    g = df.groupby(["user_id", "sid"])["t"].agg(["min", "max", "count"]).reset_index()
    return {(r.user_id, int(r["min"])): (int(r["max"]) + gap, int(r["count"]))
            for _, r in g.iterrows()}


def test_event_time_session_windows_match_pandas(world):
    directory = clicks_stream(world, "clicks_s")
    out = world.root / "out_s"
    world.run(f"CREATE TABLE sessions_s (user_id STRING, started TIMESTAMP, ended TIMESTAMP, "
              f"n BIGINT) STORED AS PARQUET LOCATION '{out}';")
    plan, query = world.start("sessions", """insert into sessions_s
        select user_id, session_window.start, session_window.end, count(*)
        from clicks_s SESSIONWINDOW w AS (GAP '6' SECOND)
        group by user_id""")
    assert plan.output_mode == "append"

    def rows():
        return {(r["user_id"], int(r["started"].timestamp() - T0.timestamp())):
                (int(r["ended"].timestamp() - T0.timestamp()), r["n"])
                for r in read_table(str(out)).to_pylist() if r["user_id"] != SENTINEL}

    try:
        world.write(directory, [{"user_id": u, "ts": ts(s)} for u, s in CLICKS])
        query.processAllAvailable()
        # the watermark is at most the latest event (38 s): bob's last session [38, 44)
        # is still open, and is closed only by a later event's watermark
        assert ("bob", 38) not in rows()
        for hours in (1, 2):
            world.write(directory, [{"user_id": SENTINEL, "ts": ts(3600 * hours)}])
            query.processAllAvailable()
        assert query.exception() is None
    finally:
        query.stop()
    expected = pandas_sessions(6)
    assert expected[("bob", 38)] == (44, 1) and len(expected) == 9
    assert rows() == expected
