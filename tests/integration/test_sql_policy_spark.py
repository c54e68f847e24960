"""Issue 28, point 1, with real Spark: a script transform never spawns a process.

On the main of 2026-11-27 ``insert into t select transform(a) using 'touch pwned; cat'
as (x) from s`` passed ``check`` and ``streamjob run --until-idle`` ran the command (the
file appeared): Spark runs script transforms without Hive. Here the same Spark session
is shown to run such a command when handed the text directly (the control), and then
the text never reaches it: CREATE STREAMJOB refuses it, START refuses a job whose stored
query holds it (a catalog row written before the policy), and the gate
(:mod:`streamjob.spark.guard`) refuses text that did not pass the policy. A SESSIONWINDOW
condition reaches Spark only as the policy's CheckedSQL and runs."""

from __future__ import annotations

import pytest

from streamjob.exceptions import StreamJobError, ValidationError
from streamjob.spark import guard

from .world import SparkWorld


@pytest.fixture
def world(tmp_path):
    w = SparkWorld(tmp_path)
    yield w
    w.close()


def transform(marker) -> str:
    return f"select transform(id) using 'touch {marker}; cat' as (id) from s"


@pytest.mark.spark
def test_a_script_transform_never_reaches_spark(world):
    directory = world.root / "in"
    directory.mkdir()
    world.run(f"""
    CREATE STREAM s (id BIGINT) TBLPROPERTIES ("source"="files", "path"="{directory}", "format"="json");
    CREATE TABLE t (id STRING) STORED AS PARQUET LOCATION '{world.root / "out"}';
    """)
    # the control: handed the text, this very Spark runs the command
    control = world.root / "control"
    world.session.range(1).createOrReplaceTempView("ctl")
    world.session.sql(f"select transform(id) using 'touch {control}; cat' as (id) from ctl").collect()
    assert control.exists()

    pwned = world.root / "pwned"
    with pytest.raises(ValidationError, match="script transform") as info:
        world.run(f'CREATE STREAMJOB j AS ("insert into t {transform(pwned)}");')
    assert info.value.line == 1 and info.value.column is not None

    # a job stored before the policy existed: START plans it again and refuses it
    world.catalog.create_job("default", "old", f"insert into t {transform(pwned)}", {}, [],
                             check_dependencies=False)
    with pytest.raises(ValidationError, match="script transform"):
        world.run("START STREAMJOB old;")

    # text that did not pass the policy is refused at the gate, before Spark parses it
    with pytest.raises(StreamJobError, match="did not pass the SQL policy"):
        guard.run_sql(world.session, transform(pwned).replace(" from s", " from ctl"))
    assert not pwned.exists()

    # and the gate's second look, with Spark's own parser, would refuse it too
    parser = world.session._jsparkSession.sessionState().sqlParser()
    for text, what in ((transform(pwned), "ScriptTransformation"),
                       ("select java_method('java.lang.System', 'exit', 1) from s", "java_method()"),
                       ("select * from range(10)", "UnresolvedTableValuedFunction")):
        with pytest.raises(StreamJobError, match=what):
            guard.spark_parse_check(parser.parsePlan(text).toJSON())
    with pytest.raises(StreamJobError, match="reflect"):
        guard.spark_parse_check(parser.parseExpression("reflect('a', 'b') is null").toJSON())
    guard.spark_parse_check(parser.parsePlan(
        "select upper(k), count(*) from s lateral view explode(array(1)) e as n "
        "group by window(ts, '1 minute'), k").toJSON())
    assert not pwned.exists()


@pytest.mark.spark
def test_session_conditions_reach_spark_as_checked_sql_and_run(world):
    from streamjob.connectors.files.table import read_table
    from streamjob.policy import CheckedSQL

    directory = world.root / "in"
    directory.mkdir()
    out = world.root / "out"
    world.run(f"""
    CREATE STREAM s (k STRING, op STRING, ts TIMESTAMP)
      TBLPROPERTIES ("source"="files", "path"="{directory}", "format"="json",
                     "watermark.column"="ts", "watermark.delay"="0 seconds");
    CREATE TABLE t (k STRING, n BIGINT) STORED AS PARQUET LOCATION '{out}';
    """)
    plan, query = world.start(
        "sessions", "insert into t select k, count(*) from s SESSIONWINDOW(INIT[upper(op) = "
                    "'LOGIN'] END[op = 'logout'] KEYEDBY(k)) group by k")
    spec = plan.query.windows[0].predicate
    assert isinstance(spec.init, CheckedSQL) and isinstance(spec.end, CheckedSQL)
    try:
        world.write(directory, [
            {"k": "a", "op": "login", "ts": "2026-01-01T00:00:01"},
            {"k": "a", "op": "view", "ts": "2026-01-01T00:00:02"},
            {"k": "a", "op": "logout", "ts": "2026-01-01T00:00:03"},
        ])
        query.processAllAvailable()
        world.write(directory, [{"k": "b", "op": "view", "ts": "2026-01-01T00:10:00"}])
        query.processAllAvailable()
    finally:
        query.stop()
    assert read_table(str(out)).to_pylist() == [{"k": "a", "n": 3}]
