"""Slipstream 5.1's predicate sessions, ``SESSIONWINDOW(INIT[...] END[... EXCLUDE]
KEYEDBY(...) [TIMEOUT ...])`` (no Spark): the clause read and resolved, the plan it
gives, each refusal at its place, and the session rules of
:class:`streamjob.planner.sessions.SessionMachine` (docs/streamsql.md)."""

import pytest

from streamjob.planner.sessions import Closed, Event, Open, SessionMachine

from . import planning
from streamjob.planner.window import PROCTIME_COLUMN

pytestmark = pytest.mark.unit

SETUP = """
CREATE STREAM logins (id STRING, op STRING, ts TIMESTAMP)
  TBLPROPERTIES("topic"="logins", "kafka.broker.list"="127.0.0.1:1",
                "watermark.column"="ts", "watermark.delay"="10 seconds");
CREATE STREAM ops (id STRING, op STRING)
  TBLPROPERTIES("topic"="ops", "kafka.broker.list"="127.0.0.1:1");
CREATE TABLE sess (id STRING, s TIMESTAMP, e TIMESTAMP, n BIGINT) STORED AS PARQUET;
CREATE TABLE per_id (id STRING, n BIGINT) STORED AS PARQUET;
"""
HEAD = "\nCREATE STREAMJOB j AS (\""


@pytest.fixture
def ex(tmp_path):
    yield from planning.executor(tmp_path, SETUP)


def plan(ex, query: str):
    return planning.plan(ex, HEAD, query)


def error(ex, query: str):
    return planning.error(ex, HEAD, query)


def test_the_slipstream_form_plans_an_append_job_grouped_by_the_session(ex):
    p = plan(ex, "insert into sess select id, session_window.start, session_window.end, "
                 "count(*) from logins SESSIONWINDOW(INIT[op=\\\"login\\\"] "
                 "END[op=\\\"logout\\\" EXCLUDE] KEYEDBY(id)) group by id")
    assert p.output_mode == "append"
    assert p.query.select_sql.endswith(
        "FROM sj__default__logins AS logins GROUP BY id, logins.session_window, "
        "logins.__sj_close")
    [w] = p.query.windows
    assert (w.kind, w.time_column, w.proctime) == ("predicate", "ts", False)
    spec = w.predicate
    assert (spec.init, spec.end, spec.exclude_end, spec.keys, spec.timeout_ms) == (
        "`op` = 'login'", "`op` = 'logout'", True, ("id",), None)


def test_parts_in_any_order_with_a_name_alias_and_timeout(ex):
    p = plan(ex, "insert into per_id select id, count(*) from logins l SESSIONWINDOW s AS "
                 "(KEYEDBY(ID), TIMEOUT '2' MINUTES, INIT[l.op = 'a' or l.op = 'b']) group by id")
    spec = p.query.windows[0].predicate
    assert (spec.init, spec.end, spec.keys, spec.timeout_ms) == (
        "`op` = 'a' OR `op` = 'b'", None, ("id",), 120_000)


def test_without_event_time_the_stream_gets_processing_time(ex):
    p = plan(ex, "insert into per_id select id, count(*) from ops "
                 "SESSIONWINDOW(INIT[op='in'] END[op='out'] KEYEDBY(id)) group by id")
    [w] = p.query.windows
    assert w.proctime and w.time_column == PROCTIME_COLUMN and p.sources[0].proctime
    assert p.output_mode == "append"


@pytest.mark.parametrize("clause, message, at", [
    ("SESSIONWINDOW(INIT[op='a'] END[op='b'] KEYEDBY(nope))",
     "KEYEDBY column 'nope' is not a column of the stream", (4, 49, "nope")),
    ("SESSIONWINDOW(INIT[opx='a'] END[op='b'] KEYEDBY(id))",
     "unknown column 'opx' in SESSIONWINDOW condition", (4, 21, "opx")),
    ("SESSIONWINDOW(INIT[x.op='a'] END[op='b'] KEYEDBY(id))",
     "reads only the stream it follows, not 'x'", (4, 23, "op")),
    ("SESSIONWINDOW(INIT[op='a'] KEYEDBY(id))",
     "SESSIONWINDOW needs END[<condition>] or TIMEOUT", (4, 2, "SESSIONWINDOW")),
    ("SESSIONWINDOW(INIT[op='a'] END[op='b'])",
     "SESSIONWINDOW needs KEYEDBY(<column>, ...)", (4, 2, "SESSIONWINDOW")),
    ("SESSIONWINDOW(INIT[op='a'] INIT[op='b'] KEYEDBY(id))",
     "SESSIONWINDOW has INIT twice", (4, 29, "INIT")),
    ("SESSIONWINDOW(INIT[] END[op='b'] KEYEDBY(id))",
     "SESSIONWINDOW INIT[...] needs a condition", (4, 20, "[")),
    ("SESSIONWINDOW(INIT[op='a'] END[op='b'] KEYEDBY(id) TIMEOUT '0' SECOND)",
     "SESSIONWINDOW TIMEOUT must be a positive whole number", (4, 61, "'0'")),
    ("SESSIONWINDOW(INIT[op='a'] END[op='b'] KEYEDBY(id) GAP '1' SECOND)",
     "expected INIT, END, KEYEDBY, TIMEOUT or ')' but found 'GAP'", (4, 53, "GAP")),
])
def test_bad_clauses_are_refused_at_their_token(ex, clause, message, at):
    err = error(ex, f"insert into per_id select id, count(*)\n  from logins\n {clause}\n"
                    "  group by id")
    assert message in err.message
    assert planning.where(err) == at


def test_a_second_stream_is_refused(ex):
    err = error(ex, "insert into per_id select l.id, count(*) from logins l "
                    "SESSIONWINDOW(INIT[op='a'] END[op='b'] KEYEDBY(id)) "
                    "join ops o on l.id = o.id group by l.id")
    assert "reads one stream, once" in err.message


def test_a_derived_stream_cannot_use_it(ex):
    from streamjob.exceptions import ValidationError
    from streamjob.grammar import parse_script

    with pytest.raises(ValidationError, match="cannot use SESSIONWINDOW"):
        for s in parse_script("CREATE STREAM d AS SELECT id, count(*) FROM logins "
                              "SESSIONWINDOW(INIT[op='a'] END[op='b'] KEYEDBY(id)) GROUP BY id;"):
            ex.execute(s)


# ------------------------------------------------------------------ the rules


def ev(t, init=False, end=False, row=None):
    return Event(t, init, end, row if row is not None else t)


def sessions(machine, events):
    return [(c.start, c.end, c.rows) for c in machine.batch(events)]


def test_init_opens_end_closes_and_events_outside_belong_to_none():
    m = SessionMachine()
    events = [ev(1), ev(2, init=True), ev(3), ev(4, end=True), ev(5), ev(6, init=True),
              ev(7, end=True)]
    assert sessions(m, events) == [(2, 4, (2, 3, 4)), (6, 7, (6, 7))]


def test_exclude_leaves_the_end_event_out_but_ends_the_session_at_it():
    m = SessionMachine(exclude_end=True)
    assert sessions(m, [ev(1, init=True), ev(2), ev(3, end=True)]) == [(1, 3, (1, 2))]


def test_an_init_inside_a_session_is_an_ordinary_event_and_the_opener_is_not_an_end():
    m = SessionMachine()
    events = [ev(1, init=True, end=True), ev(2, init=True), ev(3, end=True)]
    assert sessions(m, events) == [(1, 3, (1, 2, 3))]


def test_timeout_closes_at_last_event_plus_timeout_and_an_event_at_it_still_belongs():
    m = SessionMachine(timeout_ms=10)
    events = [ev(0, init=True), ev(5), ev(15), ev(26), ev(27, init=True), ev(30, end=True),
              ev(40, init=True)]
    # [0, 5, 15]: 15 is exactly 10 after 5, so it belongs; the session times out at 25;
    # 26 is outside; 27 opens, 30 ends; 40 opens and times out at 50 (end of the input)
    assert sessions(m, events) == [(0, 25, (0, 5, 15)), (27, 30, (27, 30)), (40, 50, (40,))]


def test_without_timeout_an_unended_session_is_never_closed():
    m = SessionMachine()
    open_, closed = m.feed(None, [ev(1, init=True), ev(2)])
    assert closed == [] and open_ == Open(1, 2, [1, 2])
    assert m.expire(open_, 10 ** 12) == (open_, [])
    assert m.batch([ev(1, init=True), ev(2)]) == []


def test_feeding_in_pieces_equals_feeding_at_once():
    m = SessionMachine(timeout_ms=4)
    events = [ev(t, init=t % 5 == 0, end=t % 7 == 6) for t in range(40)]
    whole = m.batch(events)
    open_, got = None, []
    for watermark in range(0, 45, 3):  # events before each watermark, then timeouts
        open_, closed = m.feed(open_, [e for e in events if watermark - 3 <= e.time < watermark])
        got += closed
        open_, closed = m.expire(open_, watermark)
        got += closed
    open_, closed = m.expire(open_, 10 ** 6)
    assert got + closed == whole
    assert whole and all(isinstance(c, Closed) for c in whole)


def test_explain_names_the_operator_and_what_it_keeps(ex):
    from streamjob.planner.explain import state

    p = plan(ex, "insert into per_id select id, count(*) from logins "
                 "SESSIONWINDOW(INIT[op='a'] END[op='b'] KEYEDBY(id)) group by id")
    first, agg = state(p)
    assert first["operator"].startswith("predicate sessions: SESSIONWINDOW(INIT[`op` = 'a']")
    assert "stay in state until its END" in first["retention"]
    assert "appended once" in agg["retention"]
