"""Window streams (issue 18): ``CREATE STREAM w AS SELECT ... FROM s STREAMWINDOW ...
GROUP BY ...``, a derived stream appending one final row per window, and the jobs that
read it: planned over a real SQLite catalog, no Spark. Spark's side (each window once,
when it closes) is tests/integration/test_windows_and_derived.py."""

import pytest

from streamjob.exceptions import StreamJobError, ValidationError
from streamjob.grammar import parse_script
from streamjob.planner.derived import derive_stream, stream_references
from streamjob.planner.lookup import Lookup
from streamjob.planner.plan import plan_job
from streamjob.planner.window import PROCTIME_COLUMN, WINDOW_TYPE

from . import planning

pytestmark = pytest.mark.unit

SETUP = """
CREATE STREAM clicks (user_id STRING, url STRING, ts TIMESTAMP)
  TBLPROPERTIES("topic"="clicks", "kafka.broker.list"="127.0.0.1:1",
                "watermark.column"="ts", "watermark.delay"="10 seconds");
CREATE STREAM pings (host STRING, latency_ms INT)
  TBLPROPERTIES("topic"="pings", "kafka.broker.list"="127.0.0.1:1");
CREATE TABLE per_user (user_id STRING, n BIGINT) STORED AS PARQUET;
CREATE TABLE keyed (user_id STRING, n BIGINT)
  TBLPROPERTIES("connector"="sql", "url"="sqlite:////tmp/x.db", "primary.key"="user_id");
CREATE STREAM w AS SELECT user_id, count(*) AS n, window AS win FROM clicks
  STREAMWINDOW sw AS (LENGTH '10' SECOND SLIDE '10' SECOND) GROUP BY user_id;
CREATE STREAM pw AS SELECT host AS user_id, count(*) AS n FROM pings
  STREAMWINDOW sw AS (LENGTH '1' MINUTE) GROUP BY host;
"""


@pytest.fixture
def ex(tmp_path):
    yield from planning.executor(tmp_path, SETUP)


def run(ex, sql):
    return [ex.execute(s) for s in parse_script(sql)]


def derive(ex, select: str, name: str = "d"):
    """derive_stream for ``CREATE STREAM name AS <select>`` starting on line 2, column 20."""
    [stmt] = parse_script(f"\nCREATE STREAM {name} AS {select};")
    return derive_stream(ex.catalog, "default", name, stmt.as_select, stmt.as_select_position)


def job(ex, query: str):
    return plan_job(ex.catalog, ex.home, "default", "j", query, {})


def test_window_stream_columns_event_time_and_references(ex):
    w = ex.catalog.get_stream("default", "w")
    assert [dict(c) for c in w.columns] == [
        {"name": "user_id", "type": "string"}, {"name": "n", "type": "bigint"},
        {"name": "win", "type": WINDOW_TYPE}]
    lookup = Lookup(ex.catalog)
    # the window struct carries Spark's watermark: event time; without it, none
    assert lookup.event_time("default", "w") == ("win", "0 seconds")
    assert lookup.event_time("default", "pw") is None
    assert stream_references(ex.catalog, w) == {("default", "clicks")}
    with pytest.raises(StreamJobError, match="default.w"):
        run(ex, "DROP STREAM clicks")


def test_job_reading_a_window_stream_appends_its_windowed_select(ex):
    p = job(ex, "insert into per_user select user_id, n from w where n > 1")
    assert p.output_mode == "append"
    assert [(d.view, d.select_sql, d.proctime) for d in p.derived] == [(
        "sj__default__w",
        "SELECT user_id, COUNT(*) AS n, window AS win FROM sj__default__clicks AS clicks "
        "GROUP BY user_id, `WINDOW`(clicks.ts, '10 seconds', '10 seconds')", False)]
    assert [(s.view, s.proctime) for s in p.sources] == [("sj__default__clicks", False)]
    assert ("stream", "default", "w", "source") in p.dependencies


def test_processing_time_window_stream_gives_its_source_the_proctime_column(ex):
    p = job(ex, "insert into per_user select user_id, n from pw")
    assert [(s.view, s.proctime) for s in p.sources] == [("sj__default__pings", True)]
    assert f"`WINDOW`(pings.{PROCTIME_COLUMN}, '1 minute')" in p.derived[0].select_sql
    assert p.output_mode == "append"


def test_aggregating_again_over_a_window_stream_needs_a_streamwindow(ex):
    p = job(ex, "insert into per_user select user_id, sum(n) from w "
                "STREAMWINDOW m AS (LENGTH '1' MINUTE) group by user_id")
    assert p.output_mode == "append"  # chained in append mode, on the window's event time
    assert "GROUP BY user_id, `WINDOW`(w.win, '1 minute')" in p.query.select_sql
    p = job(ex, "insert into per_user select user_id, sum(n) from pw "
                "STREAMWINDOW m AS (LENGTH '1' MINUTE) group by user_id")
    assert [d.proctime for d in p.derived] == [True]  # no window column: processing time
    for query in ("insert into keyed select user_id, sum(n) from w group by user_id",
                  "insert into per_user select user_id, sum(n) from w "
                  "group by user_id, window(win, '1 minute')"):
        with pytest.raises(ValidationError, match="aggregates over window stream default.w") as e:
            job(ex, query)
        assert "over a STREAMWINDOW (FROM w STREAMWINDOW w AS (LENGTH '1' MINUTE))" in e.value.message
    # also through a projection of the window stream
    run(ex, "CREATE STREAM big AS SELECT user_id, n FROM w WHERE n > 10;")
    with pytest.raises(ValidationError, match="aggregates over window stream default.w"):
        job(ex, "insert into keyed select user_id, count(*) from big group by user_id")


def test_window_stream_over_a_window_stream(ex):
    d = derive(ex, "select user_id, sum(n) as n, window as hour from w "
                   "STREAMWINDOW h AS (LENGTH '1' HOUR) group by user_id")
    assert [c["name"] for c in d.columns] == ["user_id", "n", "hour"]
    assert d.references == (("default", "w"), ("default", "clicks"))
    assert "GROUP BY user_id, `WINDOW`(w.win, '1 hour')" in d.select_sql


@pytest.mark.parametrize("select, message, at", [
    ("select user_id, count(*) n from clicks group by user_id",
     "a derived stream cannot aggregate without a STREAMWINDOW", (2, 36, "count(*)")),
    ("select distinct user_id from clicks STREAMWINDOW s AS (LENGTH '1' SECOND)",
     "STREAMWINDOW needs an aggregation", (2, 56, "STREAMWINDOW")),
    ("select distinct user_id, count(*) n from clicks STREAMWINDOW s AS (LENGTH '1' SECOND) "
     "group by user_id", "a derived stream cannot aggregate with DISTINCT", (2, 27, "distinct")),
    ("select user_id, count(*) n from clicks group by user_id, window(ts, '1 minute')",
     "write FROM s STREAMWINDOW w AS (LENGTH '10' SECOND [SLIDE '5' SECOND]) instead of "
     "window(...) in GROUP BY", (2, 77, "window(ts, '1 minute')")),
    ("select user_id, sum(n) total from (select user_id, count(*) n from clicks "
     "STREAMWINDOW s AS (LENGTH '1' SECOND) group by user_id) group by user_id",
     "a window stream aggregates once, in the select its STREAMWINDOW windows", (2, 36, "sum(n)")),
    ("select user_id, count(*) from clicks STREAMWINDOW s AS (LENGTH '1' SECOND) group by user_id",
     "column 2 of derived stream default.d needs a name", (2, 36, "count(*)")),
])
def test_refused_window_streams_say_what_to_write(ex, select, message, at):
    with pytest.raises(ValidationError) as e:
        derive(ex, select)
    assert message in e.value.message
    assert planning.where(e.value) == at


def test_rewindowing_a_stream_with_a_column_named_window_refuses_reading_it(ex):
    """Spark resolves ``window.start`` to the window stream's own ``window`` column, not
    the new window (MISSING_AGGREGATION at START); refused at its place instead."""
    run(ex, "CREATE STREAM raw AS SELECT user_id, count(*) AS n, window FROM clicks "
            "STREAMWINDOW sw AS (LENGTH '10' SECOND) GROUP BY user_id;"
            "CREATE TABLE starts (start TIMESTAMP, n BIGINT) STORED AS PARQUET;")
    assert Lookup(ex.catalog).event_time("default", "raw") == ("window", "0 seconds")
    err = planning.error(ex, "\nCREATE STREAMJOB j AS (\"", "insert into starts select "
                         "window.start, sum(n) from raw STREAMWINDOW m AS (LENGTH '1' MINUTE)")
    assert err.message.startswith("stream default.raw has a column named window")
    assert "(window AS win)" in err.message
    assert planning.where(err) == (2, 51, "window.start")
    # grouping alone is fine, and so is reading it without a new window
    job(ex, "insert into per_user select 'all', sum(n) from raw STREAMWINDOW m AS (LENGTH '1' MINUTE)")
    job(ex, "insert into starts select window.start, n from raw")
