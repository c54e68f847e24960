"""PATTERN (...) WITHIN (...) planned on a real SQLite catalog (issue 18): the clause read
from a job's query, conditions compiled, the key derived from equalities between
variables, the select rewritten over the matches; errors at their line and column;
EXPLAIN's state and ``check --compat``'s verdict."""

from __future__ import annotations

import pytest

from streamjob.client.compat import compat_report
from streamjob.planner.cep import MATCH_VIEW
from streamjob.planner.explain import state

from .planning import error, executor, plan, where

pytestmark = pytest.mark.unit

SETUP = """
CREATE STREAM s (id INT, cnt INT, ts TIMESTAMP) TBLPROPERTIES ("topic"="s",
  "kafka.broker.list"="127.0.0.1:9092", "watermark.column"="ts", "watermark.delay"="5 seconds");
CREATE STREAM p (id INT, cnt INT) TBLPROPERTIES ("topic"="p", "kafka.broker.list"="127.0.0.1:9092");
CREATE TABLE t (id INT, cnt INT) STORED AS PARQUET;
"""
HEAD = 'CREATE STREAMJOB j AS ("'
EXAMPLE = ("INSERT INTO t SELECT e1.id, e1.cnt FROM PATTERN(e1=s[e1.cnt>0] FOLLOWEDBY "
           "e2=s[e2.id=e1.id and e2.cnt-e1.cnt>2][TIMES(2)]) WITHIN ('10' minute)")


@pytest.fixture(scope="module")
def ex(tmp_path_factory):
    yield from executor(tmp_path_factory.mktemp("cep"), SETUP)


def test_the_slipstream_example_plans(ex):
    p = plan(ex, HEAD, EXAMPLE)
    cep = p.query.pattern
    assert p.output_mode == "append" and [s.stream.name for s in p.sources] == ["s"]
    assert cep.key == ("id",) and cep.time_column == "ts" and cep.pattern.within_ms == 600_000
    assert [(s.var, s.link, s.min, s.max) for s in cep.pattern.stages] == [
        ("e1", "start", 1, 1), ("e2", "followedby", 2, 2)]
    assert cep.pattern.stages[0].condition == ("gt", ("col", "e1", "cnt"), ("lit", 0))
    assert MATCH_VIEW in p.query.select_sql and "`e1__id`" in p.query.select_sql
    assert p.query.output_columns == ("id", "cnt")
    assert ("e2__cnt", "int") in cep.outputs


def test_every_operator_and_quantifier_parses(ex):
    q = ("insert into t select e1.id, e3.cnt from pattern (e1=s[e1.cnt > 0][ONEORMORE] "
         "next e2=s[e2.id = e1.id] notnext x=s[x.id = e1.id and x.cnt < 0] "
         "followedby e3=s[e3.id = e2.id and e3.cnt between 1 and 9] "
         "notfollowedby y=s[y.id = e1.id and y.cnt is null] "
         "followedby e4=s[e4.id = e1.id and e4.cnt in (1, 2)][times(3)]) within (30 second)")
    cep = plan(ex, HEAD, q).query.pattern
    assert [s.link for s in cep.pattern.stages] == [
        "start", "next", "notnext", "followedby", "notfollowedby", "followedby"]
    assert cep.key == ("id",) and cep.pattern.within_ms == 30_000
    assert cep.variables == ("e1", "e2", "e3", "e4")  # NOT variables have no columns


def test_without_an_equality_between_variables_the_pattern_runs_on_one_key(ex):
    q = "insert into t select e1.id, e2.cnt from pattern(e1=s[e1.cnt>0] next e2=s[e2.cnt<0]) within ('1' hour)"
    assert plan(ex, HEAD, q).query.pattern.key == ()
    # a NOT variable not tied to the key makes any key wrong: one key
    q = ("insert into t select e1.id, e2.cnt from pattern(e1=s[e1.cnt>0] notfollowedby "
         "x=s[x.cnt<0] followedby e2=s[e2.id=e1.id]) within ('1' hour)")
    assert plan(ex, HEAD, q).query.pattern.key == ()


def test_a_stream_without_event_time_runs_on_processing_time(ex):
    q = "insert into t select e1.id, e2.cnt from pattern(e1=p[e1.cnt>0] followedby e2=p[e2.id=e1.id]) within ('1' minute)"
    cep = plan(ex, HEAD, q).query.pattern
    assert cep.proctime and cep.time_column is None


@pytest.mark.parametrize("query, message, text", [
    ("insert into t select e1.id, e1.cnt from pattern(e1=s[e1.cnt>0] followedby e2=s[e2.idd=e1.id]) within ('1' minute)",
     "stream default.s has no column idd", "e2.idd"),
    ("insert into t select e1.id, e1.cnt from pattern(e1=s[e1.cnt>e2.cnt] followedby e2=s[e2.id=e1.id]) within ('1' minute)",
     "it comes later in the pattern", "e2.cnt"),
    ("insert into t select e1.id, e1.cnt from pattern(e1=s[e1.cnt>0] followedby e2=s[e2.id=e1.id])",
     "PATTERN needs WITHIN", None),
    ("insert into t select e1.id, e1.cnt from pattern(e1=s[e1.cnt>0] followedby e2=s[e2.id=e1.id][TIMES(0)]) within ('1' minute)",
     "TIMES takes a whole number of at least 1", "0"),
    ("insert into t select e1.id, e1.cnt from pattern(e1=s[e1.cnt>0] notnext e2=s[e2.id=e1.id]) within ('1' minute)",
     "cannot end with NOTNEXT/NOTFOLLOWEDBY", "e2"),
    ("insert into t select e1.id, e1.cnt from pattern(e1=s[upper(e1.cnt)='A'] next e2=s[e2.id=e1.id]) within ('1' minute)",
     "which a PATTERN condition cannot evaluate", None),
    ("insert into t select e1.id, x.cnt from pattern(e1=s[e1.cnt>0] notnext x=s[x.cnt<0] next e2=s[e2.id=e1.id]) within ('1' minute)",
     "x is a NOT variable", "x.cnt"),
    ("insert into t select e1.id, count(*) from pattern(e1=s[e1.cnt>0] next e2=s[e2.id=e1.id]) within ('1' minute) group by e1.id",
     "GROUP BY over matches is not supported", None),
    ("insert into t select e1.id, e1.cnt from pattern(e1=s[e1.cnt>0] next e2=p[e2.id=e1.id]) within ('1' minute)",
     "every variable of a PATTERN reads one stream", "p"),
    ("insert into t select e1.id, e1.cnt from pattern(e1=s[e1.cnt>0] soon e2=s[e2.id=e1.id]) within ('1' minute)",
     "expected NEXT, NOTNEXT, FOLLOWEDBY, NOTFOLLOWEDBY or ')'", "soon"),
    ("insert into t select e1.id, e1.cnt from pattern(e1=s[e1.cnt>0] next e2=s[e2.id=e1.id]) within ('1' fortnight)",
     "unknown time unit 'fortnight'", "fortnight"),
])
def test_a_bad_pattern_is_refused_at_its_place(ex, query, message, text):
    err = error(ex, HEAD, query)
    assert message in err.message
    line, column, found = where(err)
    assert line == 1 and column is not None
    if text is not None:
        assert found == text
        assert (HEAD + query)[column - 1:column - 1 + len(text)] == text


def test_the_error_column_is_true_on_a_later_line(ex):
    q = "insert into t select e1.id, e1.cnt\n  from pattern(e1=s[e1.cnt>0]\n    next e2=s[e2.nope=e1.id]) within ('1' minute)"
    err = error(ex, HEAD, q)
    assert where(err) == (3, 15, "e2.nope")


def test_explain_shows_the_pattern_state(ex):
    [op] = state(plan(ex, HEAD, EXAMPLE))
    assert op["operator"].startswith("CEP pattern") and op["keys"] == ["default.s.id"]
    assert op["watermark"] == ["default.s: ts - 5 seconds"]
    assert "WITHIN ('10' minute)" in op["retention"]
    q = "insert into t select e1.id, e2.cnt from pattern(e1=p[e1.cnt>0] next e2=p[e2.cnt<0]) within ('1' hour)"
    [op] = state(plan(ex, HEAD, q))
    assert op["keys"] == [] and "runs on one key" in op["retention"]
    assert "processing time" in op["retention"]


def test_compat_says_the_pattern_runs():
    script = SETUP + HEAD + EXAMPLE + '");\n'
    items = [i for i in compat_report(script) if i.clause.startswith("PATTERN")]
    assert [(i.verdict, i.clause) for i in items] == [
        ("runs", "PATTERN (FOLLOWEDBY) WITHIN ('10' minute)")]


def test_a_derived_stream_cannot_read_a_pattern(ex):
    from streamjob.exceptions import ValidationError
    from streamjob.grammar import parse_script

    [stmt] = parse_script("CREATE STREAM d AS SELECT e1.id FROM PATTERN(e1=s[e1.cnt>0]) "
                          "WITHIN ('1' minute);")
    with pytest.raises(ValidationError, match="cannot read a PATTERN"):
        ex.execute(stmt)
