"""Slipstream's STREAMWINDOW -> Spark's window(...) grouping (no Spark): the emitted SQL,
event time vs processing time, the output mode, and each error at its true place."""

import pytest

from streamjob.exceptions import ValidationError
from streamjob.grammar import parse_script

from . import planning
from streamjob.planner.window import PROCTIME_COLUMN

pytestmark = pytest.mark.unit

SETUP = """
CREATE STREAM clicks (user_id STRING, url STRING, ts TIMESTAMP)
  TBLPROPERTIES("topic"="clicks", "kafka.broker.list"="127.0.0.1:1",
                "watermark.column"="ts", "watermark.delay"="10 seconds");
CREATE STREAM pings (host STRING, latency_ms INT)
  TBLPROPERTIES("topic"="pings", "kafka.broker.list"="127.0.0.1:1");
CREATE TABLE hosts (host STRING, dc STRING) STORED AS CSV LOCATION '/tmp/x';
CREATE TABLE per_user (user_id STRING, n BIGINT) STORED AS PARQUET;
CREATE TABLE latency (host STRING, avg_latency DOUBLE) STORED AS PARQUET;
CREATE TABLE totals (n BIGINT) STORED AS PARQUET;
"""

# The job starts on line 2 of its script; its query at column 25 of that line.
HEAD = "\nCREATE STREAMJOB j AS (\""


@pytest.fixture
def ex(tmp_path):
    yield from planning.executor(tmp_path, SETUP)


def plan(ex, query: str):
    return planning.plan(ex, HEAD, query)


def error(ex, query: str) -> ValidationError:
    return planning.error(ex, HEAD, query)


where = planning.where


def test_tumbling_event_time_window_is_added_to_group_by_and_appends(ex):
    p = plan(ex, "INSERT INTO per_user\n  SELECT user_id, count(*) FROM clicks "
                 "STREAMWINDOW w AS (LENGTH '1' MINUTE)\n  GROUP BY user_id")
    assert p.query.select_sql == ("SELECT user_id, COUNT(*) FROM sj__default__clicks AS clicks "
                                  "GROUP BY user_id, `WINDOW`(clicks.ts, '1 minute')")
    assert p.output_mode == "append" and p.query.windowed
    [w] = p.query.windows
    assert (w.stream, w.time_column, w.proctime, w.length, w.slide) == (
        "clicks", "ts", False, "1 minute", None)
    assert not p.sources[0].proctime


def test_sliding_processing_time_window_adds_the_proctime_column(ex):
    p = plan(ex, "insert into latency\n  select host, avg(latency_ms)\n"
                 "  from pings p streamwindow w as(length 10 seconds slide '5' second)\n"
                 "  group by host")
    assert p.query.select_sql == (
        "SELECT host, AVG(latency_ms) FROM sj__default__pings AS p GROUP BY host, "
        f"`WINDOW`(p.{PROCTIME_COLUMN}, '10 seconds', '5 seconds')")
    assert p.output_mode == "append"
    assert p.sources[0].proctime and p.query.windows[0].proctime


def test_aggregate_without_group_by_gets_one(ex):
    p = plan(ex, "insert into totals select count(*) from pings STREAMWINDOW w AS "
                 "(LENGTH 500 MILLISECONDS) where latency_ms > 10")
    assert p.query.select_sql.endswith(
        f"WHERE latency_ms > 10 GROUP BY `WINDOW`(pings.{PROCTIME_COLUMN}, '500 milliseconds')")


def test_window_struct_is_a_known_column_in_a_windowed_query(ex):
    ex.execute(parse_script("CREATE TABLE ws (start TIMESTAMP, n BIGINT) STORED AS PARQUET;")[0])
    p = plan(ex, "insert into ws select window.start, count(*) from clicks "
                 "STREAMWINDOW w AS (LENGTH '10' SECOND)")
    assert p.query.output_columns == ("start", None)


def test_window_on_a_joined_stream_uses_its_alias(ex):
    p = plan(ex, "insert into latency select h.dc, avg(p.latency_ms) from hosts h "
                 "join pings p STREAMWINDOW w AS (LENGTH '1' HOUR) on p.host = h.host group by h.dc")
    assert f"GROUP BY h.dc, `WINDOW`(p.{PROCTIME_COLUMN}, '1 hour')" in p.query.select_sql
    assert "ON p.host = h.host" in p.query.select_sql


@pytest.mark.parametrize("clause, message, at", [
    ("STREAMWINDOW w AS (LENGTH '10' SECONDZ)",
     "unknown time unit 'SECONDZ' in STREAMWINDOW; use MILLISECOND, SECOND, MINUTE, HOUR or DAY",
     (4, 33, "SECONDZ")),
    ("STREAMWINDOW w AS (LENGTH '0' SECOND)",
     "STREAMWINDOW LENGTH must be a positive whole number, not '0'", (4, 28, "'0'")),
    ("STREAMWINDOW w AS (LENGTH -5 SECOND)",
     "STREAMWINDOW LENGTH must be a positive whole number, not '-5'", (4, 28, "-5")),
    ("STREAMWINDOW w AS (LENGTH '5' SECOND SLIDE '10' SECOND)",
     "STREAMWINDOW SLIDE (10 seconds) is longer than its LENGTH (5 seconds)", (4, 45, "'10'")),
    ("STREAMWINDOW w (LENGTH '5' SECOND)",
     "malformed STREAMWINDOW clause: expected AS but found '('; the form is STREAMWINDOW w AS "
     "(LENGTH '10' SECOND [SLIDE '5' SECOND])", (4, 17, "(")),
    ("STREAMWINDOW w AS (LENGTH '5' SECOND, SLIDE '1' SECOND)",
     "malformed STREAMWINDOW clause: expected SLIDE or ')' but found ','", (4, 38, ",")),
    ("STREAMWINDOW w AS (SIZE '5' SECOND)",
     "malformed STREAMWINDOW clause: expected LENGTH but found 'SIZE'", (4, 21, "SIZE")),
])
def test_malformed_clauses_say_what_is_expected(ex, clause, message, at):
    # the clause starts on line 4 at column 2
    err = error(ex, f"insert into latency select host, avg(latency_ms)\n  from pings\n {clause}\n"
                    "  group by host")
    assert message in err.message
    assert where(err) == at


def test_unterminated_clause(ex):
    err = error(ex, "insert into totals select count(*) from pings STREAMWINDOW w AS (LENGTH '5' SECOND")
    assert "expected SLIDE or ')' but found the end of the query" in err.message


def test_without_aggregation_is_refused_at_the_keyword(ex):
    err = error(ex, "insert into latency\n  select host, latency_ms from pings STREAMWINDOW w AS "
                    "(LENGTH '10' SECOND)")
    assert err.message == ("STREAMWINDOW needs an aggregation: add GROUP BY or an aggregate "
                           "function")
    assert where(err) == (3, 38, "STREAMWINDOW")


def test_on_a_static_table_is_refused(ex):
    err = error(ex, "insert into latency select h.host, avg(latency_ms) from pings p\n"
                    "join hosts h STREAMWINDOW w AS (LENGTH '10' SECOND) on p.host = h.host "
                    "group by h.host")
    assert err.message == ("STREAMWINDOW applies to a stream, and default.hosts is a static "
                           "table")
    assert where(err) == (3, 14, "STREAMWINDOW")


def test_two_windows_are_refused_at_the_second(ex):
    err = error(ex, "insert into latency select p.host, avg(p.latency_ms) from pings p "
                    "STREAMWINDOW a AS (LENGTH '1' SECOND)\njoin clicks c STREAMWINDOW b AS "
                    "(LENGTH '1' SECOND) on p.host = c.url group by p.host")
    assert err.message == "only one STREAMWINDOW per query is supported"
    assert where(err) == (3, 15, "STREAMWINDOW")


def test_window_and_written_window_grouping_together_are_refused(ex):
    err = error(ex, "insert into per_user select user_id, count(*) from clicks STREAMWINDOW w AS "
                    "(LENGTH '1' SECOND) group by user_id, window(ts, '1 minute')")
    assert "groups by window(...) and has a STREAMWINDOW" in err.message


def test_columns_after_the_blanked_clause_keep_their_positions(ex):
    err = error(ex, "insert into per_user select user_id, count(*) from clicks STREAMWINDOW w AS "
                    "(LENGTH '1' SECOND)\n  group by usr_id")
    assert "unknown column 'usr_id'" in err.message
    assert where(err) == (3, 12, "usr_id")
