"""SESSIONWINDOW w AS (GAP ...) -> Spark's session_window(...) grouping (no Spark): the
emitted SQL, event vs processing time, the output mode, and each refusal at its place
(derived streams, a written session_window without event
time, malformed clauses)."""

import pytest

from streamjob.exceptions import ValidationError

from . import planning
from streamjob.planner.window import PROCTIME_COLUMN

pytestmark = pytest.mark.unit

SETUP = """
CREATE STREAM clicks (user_id STRING, url STRING, ts TIMESTAMP)
  TBLPROPERTIES("topic"="clicks", "kafka.broker.list"="127.0.0.1:1",
                "watermark.column"="ts", "watermark.delay"="10 seconds");
CREATE STREAM pings (host STRING, latency_ms INT, ts TIMESTAMP)
  TBLPROPERTIES("topic"="pings", "kafka.broker.list"="127.0.0.1:1");
CREATE TABLE sessions (user_id STRING, s TIMESTAMP, e TIMESTAMP, n BIGINT) STORED AS PARQUET;
CREATE TABLE per_host (host STRING, n BIGINT) STORED AS PARQUET;
CREATE TABLE keyed (host STRING, n BIGINT) TBLPROPERTIES("connector"="sql",
  "url"="sqlite:////tmp/x.db", "primary.key"="host");
"""

HEAD = "\nCREATE STREAMJOB j AS (\""


@pytest.fixture
def ex(tmp_path):
    yield from planning.executor(tmp_path, SETUP)


def plan(ex, query: str):
    return planning.plan(ex, HEAD, query)


def error(ex, query: str) -> ValidationError:
    return planning.error(ex, HEAD, query)


where = planning.where


def test_event_time_sessions_group_by_session_window_and_append(ex):
    p = plan(ex, "INSERT INTO sessions\n  SELECT user_id, session_window.start, "
                 "session_window.end, count(*)\n  FROM clicks c SESSIONWINDOW w AS (GAP '30' "
                 "SECOND)\n  GROUP BY user_id")
    assert p.query.select_sql == (
        "SELECT user_id, session_window.start, session_window.end, COUNT(*) FROM "
        "sj__default__clicks AS c GROUP BY user_id, `SESSION_WINDOW`(c.ts, '30 seconds')")
    assert p.output_mode == "append" and p.query.windowed and p.query.sessions
    [w] = p.query.windows
    assert (w.kind, w.function, w.time_column, w.proctime, w.length) == (
        "session", "session_window", "ts", False, "30 seconds")
    assert not p.sources[0].proctime


def test_processing_time_sessions_use_the_proctime_column(ex):
    p = plan(ex, "insert into per_host select host, count(*) from pings "
                 "sessionwindow w as (gap 2 minutes) group by host")
    assert p.query.select_sql.endswith(
        f"GROUP BY host, `SESSION_WINDOW`(pings.{PROCTIME_COLUMN}, '2 minutes')")
    assert p.output_mode == "append" and p.sources[0].proctime


def test_a_keyed_sink_still_gets_append_for_sessions(ex):
    # Spark refuses update mode for session window aggregations
    p = plan(ex, "insert into keyed select host, count(*) from pings "
                 "SESSIONWINDOW w AS (GAP '5' SECOND) group by host")
    assert p.output_mode == "append"


def test_written_session_window_without_event_time_is_refused(ex):
    err = error(ex, "insert into keyed select host, count(*) from pings "
                    "group by host, session_window(ts, '5 seconds')")
    assert "cannot update sessions in place" in err.message
    assert "SESSIONWINDOW w AS (GAP '30' SECOND)" in err.message


def test_written_session_window_with_event_time_appends(ex):
    p = plan(ex, "insert into sessions select user_id, session_window.start, "
                 "session_window.end, count(*) from clicks "
                 "group by user_id, session_window(ts, '5 seconds')")
    assert p.output_mode == "append" and p.query.sessions and not p.query.windows


@pytest.mark.parametrize("clause, message, at", [
    # Slipstream 5.1's predicate form (tests/unit/test_predicate_sessions.py has the rest)
    ("SESSIONWINDOW(INIT[latency_ms > 5 EXCLUDE] END[latency_ms < 1] KEYEDBY(host))",
     "EXCLUDE applies to END only", (4, 36, "EXCLUDE")),
    ("SESSIONWINDOW w AS (KEYEDBY(host) END[latency_ms < 1])",
     "SESSIONWINDOW needs INIT[<condition>]", (4, 2, "SESSIONWINDOW")),
    ("SESSIONWINDOW w AS (GAP '0' SECOND)",
     "SESSIONWINDOW GAP must be a positive whole number, not '0'", (4, 26, "'0'")),
    ("SESSIONWINDOW w AS (GAP '5' FORTNIGHT)",
     "unknown time unit 'FORTNIGHT' in SESSIONWINDOW", (4, 30, "FORTNIGHT")),
    ("SESSIONWINDOW w AS (LENGTH '5' SECOND)",
     "malformed SESSIONWINDOW clause: expected GAP but found 'LENGTH'; the form is "
     "SESSIONWINDOW w AS (GAP '30' SECOND)", (4, 22, "LENGTH")),
    ("SESSIONWINDOW w AS (GAP '5' SECOND SLIDE '1' SECOND)",
     "malformed SESSIONWINDOW clause: expected ')' but found 'SLIDE'", (4, 37, "SLIDE")),
])
def test_bad_clauses_are_refused_at_their_token(ex, clause, message, at):
    # the clause starts on line 4 at column 2
    err = error(ex, f"insert into per_host select host, count(*)\n  from pings\n {clause}\n"
                    "  group by host")
    assert message in err.message
    assert where(err) == at


def test_stream_and_session_windows_together_are_refused(ex):
    err = error(ex, "insert into per_host select p.host, count(*) from pings p "
                    "STREAMWINDOW a AS (LENGTH '1' SECOND)\njoin clicks c SESSIONWINDOW b AS "
                    "(GAP '1' SECOND) on p.host = c.url group by p.host")
    assert err.message == "a query has one window clause, and this one already has a STREAMWINDOW"
    assert where(err) == (3, 15, "SESSIONWINDOW")


def test_without_aggregation_is_refused_at_the_keyword(ex):
    err = error(ex, "insert into per_host select host, latency_ms from pings "
                    "SESSIONWINDOW w AS (GAP '1' SECOND)")
    assert err.message == ("SESSIONWINDOW needs an aggregation: add GROUP BY or an aggregate "
                           "function")


def test_a_derived_stream_cannot_use_sessionwindow_yet(ex):
    from streamjob.grammar import parse_script
    [stmt] = parse_script("CREATE STREAM s AS SELECT host, count(*) n FROM pings\n"
                          "  SESSIONWINDOW w AS (GAP '1' SECOND) GROUP BY host;")
    with pytest.raises(ValidationError) as info:
        ex.execute(stmt)
    assert "cannot use SESSIONWINDOW yet" in info.value.message
    assert (info.value.line, info.value.column) == (2, 3)


def test_explain_keeps_each_session_until_the_watermark(ex):
    from streamjob.planner.explain import state
    p = plan(ex, "insert into per_host select url, count(*) from clicks "
                 "SESSIONWINDOW w AS (GAP '5' SECOND) group by url")
    [op] = state(p)
    assert op["keys"] == ["url", "session_window(clicks.ts, '5 seconds')"]
    assert op["retention"].startswith("each session until the watermark")
