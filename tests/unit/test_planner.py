"""The inner query and the job plan, against a real SQLite catalog (no Spark)."""

import pytest

from streamjob.catalog import Catalog
from streamjob.exceptions import ValidationError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home

pytestmark = pytest.mark.unit

SETUP = """
CREATE STREAM flights (carrier STRING, month INT, dep_delay DOUBLE, arr_delay DOUBLE)
  TBLPROPERTIES("topic"="flights", "kafka.broker.list"="127.0.0.1:1");
CREATE STREAM ticks (ts TIMESTAMP, v INT)
  TBLPROPERTIES("topic"="ticks", "kafka.broker.list"="127.0.0.1:1",
                "watermark.column"="ts", "watermark.delay"="10 seconds");
CREATE TABLE airlines (carrier STRING, name STRING) STORED AS CSV LOCATION '/tmp/x';
CREATE TABLE delays (carrier STRING, month INT, n BIGINT)
  TBLPROPERTIES("connector"="sql", "url"="sqlite:////tmp/x.db", "primary.key"="carrier,month");
CREATE TABLE late (carrier STRING, arr_delay DOUBLE) STORED AS PARQUET;
"""


@pytest.fixture
def ex(tmp_path):
    home = Home.open(tmp_path / "home")
    catalog = Catalog(home.catalog_url)
    ex = Executor(catalog, home)
    for s in parse_script(SETUP):
        ex.execute(s)
    yield ex
    catalog.close()


def run(ex, sql):
    return [ex.execute(s) for s in parse_script(sql)]


def test_aggregation_into_keyed_sql_table_is_update_mode_exactly_once(ex):
    [r] = run(ex, """CREATE STREAMJOB j AS ("insert into delays
        select f.carrier, f.month, count(*) from flights f join airlines a
        on f.carrier = a.carrier group by f.carrier, f.month")""")
    assert "exactly-once, output mode update" in r.message
    job = ex.catalog.get_job("default", "j")
    assert set(job.dependencies) == {
        ("stream", "default", "flights", "source"), ("table", "default", "airlines", "static"),
        ("table", "default", "delays", "sink")}


def test_projection_appends_and_selects_over_views(ex):
    from streamjob.planner.plan import plan_job

    plan = plan_job(ex.catalog, ex.home, "default", "p",
                    "insert into late select carrier, arr_delay from default.flights where arr_delay > 60",
                    {"morphling.result.auto.flush": "true"})
    assert plan.output_mode == "append" and plan.guarantee == "at-least-once"
    assert "sj__default__flights" in plan.query.select_sql
    assert plan.sources[0].spec.topic == "flights"


def test_aggregation_into_file_table_is_refused_with_what_to_change(ex):
    with pytest.raises(ValidationError, match="give table default.late a primary key"):
        run(ex, 'CREATE STREAMJOB j AS ("insert into late select carrier, max(arr_delay) from flights group by carrier")')


def test_windowed_aggregation_with_watermark_appends(ex):
    run(ex, "CREATE TABLE w (start TIMESTAMP, n BIGINT) STORED AS PARQUET;")
    [r] = run(ex, """CREATE STREAMJOB j AS ("insert into w select window.start, count(*)
        from ticks group by window(ts, '10 seconds')")""")
    assert "output mode append" in r.message


def test_unknown_stream_is_named_at_its_line_and_column(ex):
    script = 'CREATE STREAMJOB j AS ("insert into delays\n  select carrier, month, count(*)\n  from flihgts group by carrier, month");'
    with pytest.raises(ValidationError) as e:
        run(ex, script)
    assert "unknown stream or table 'default.flihgts'" in str(e.value)
    assert (e.value.line, e.value.column) == (3, 8)


def test_query_must_be_insert_and_columns_must_fit(ex):
    with pytest.raises(ValidationError, match="must be one 'insert into <table> select"):
        run(ex, 'CREATE STREAMJOB j AS ("select * from flights")')
    with pytest.raises(ValidationError, match="the select gives 1 columns but table default.late has 2"):
        run(ex, 'CREATE STREAMJOB j AS ("insert into late select carrier from flights")')
    with pytest.raises(ValidationError, match="table default.flights is a stream"):
        run(ex, 'CREATE STREAMJOB j AS ("insert into flights select * from flights")')
    with pytest.raises(ValidationError, match=r"unexpected end of the job's query, expected '\)'"):
        run(ex, 'CREATE STREAMJOB j AS ("insert into late select carrier from flights where (x")')


def test_bad_job_property_refused_and_nothing_registered(ex):
    with pytest.raises(ValidationError, match="did you mean 'morphling.checkpoint.retained'"):
        run(ex, 'CREATE STREAMJOB j AS ("insert into late select carrier, arr_delay from flights") '
                'JOBPROPERTIES("morphling.checkpoint.retain"="3")')
    assert ex.catalog.get_job("default", "j") is None


def test_drop_of_used_stream_names_the_job(ex):
    run(ex, 'CREATE STREAMJOB j AS ("insert into late select carrier, arr_delay from flights")')
    with pytest.raises(Exception, match="default.j"):
        run(ex, "DROP STREAM flights")


def test_job_names_that_could_escape_the_checkpoint_root_are_rejected(ex):
    from streamjob.home import validate_name

    with pytest.raises(ValidationError, match="invalid job name"):
        validate_name("../etc", "job name")
    with pytest.raises(ValidationError):
        ex.home.checkpoint_dir("default", "a/b")
    assert ex.home.checkpoint_dir("default", "ok_1").endswith("/checkpoints/default/ok_1")


def test_kafka_stream_needs_topic_and_broker(ex):
    with pytest.raises(ValidationError, match='needs TBLPROPERTIES\\("kafka.broker.list"=...\\)'):
        run(ex, 'CREATE STREAM s (a INT) TBLPROPERTIES("topic"="t")')


def test_start_and_stop_without_a_manager_set_the_desired_state(ex):
    run(ex, 'CREATE STREAMJOB j AS ("insert into late select carrier, arr_delay from flights")')
    job = ex.catalog.get_job("default", "j")
    assert (job.status, job.desired_state) == ("CREATED", "STOPPED")
    [r] = run(ex, "START STREAMJOB j")
    assert "will start when a job manager runs it" in r.message
    assert ex.catalog.get_job("default", "j").desired_state == "RUNNING"
    run(ex, "STOP STREAMJOB j")
    job = ex.catalog.get_job("default", "j")
    assert (job.status, job.desired_state) == ("STOPPED", "STOPPED")
    [r] = run(ex, "LIST STREAMJOBS")
    assert r.rows[0][:4] == ("default.j", "STOPPED", "STOPPED", "exactly-once")
    [r] = run(ex, "DROP STREAMJOB j")
    assert "purged" in r.message and ex.catalog.get_job("default", "j") is None
    [r] = run(ex, "DROP STREAMJOB IF EXISTS j")
    assert "does not exist" in r.message


# -- derived streams -----------------------------------------------------------------


def derive(ex, select: str, name: str = "d"):
    """derive_stream for ``CREATE STREAM name AS <select>`` starting on line 2, column 20."""
    from streamjob.planner.derived import derive_stream

    [stmt] = parse_script(f"\nCREATE STREAM {name} AS {select};")
    return derive_stream(ex.catalog, "default", name, stmt.as_select, stmt.as_select_position)


def test_derived_stream_columns_are_inferred_and_references_are_transitive(ex):
    d = derive(ex, "select carrier, arr_delay * 2 as doubled, cast(month as bigint) m,\n"
                   "  upper(carrier) as code, lower(carrier) as odd, ts from flights f join ticks t"
                   " on f.month = t.v")
    assert d.columns == (
        {"name": "carrier", "type": "string"}, {"name": "doubled", "type": "double"},
        {"name": "m", "type": "bigint"}, {"name": "code", "type": "string"},
        {"name": "odd", "type": "string"}, {"name": "ts", "type": "timestamp"})
    assert d.references == (("default", "flights"), ("default", "ticks"))
    run(ex, "CREATE STREAM d1 AS SELECT carrier, arr_delay FROM flights WHERE arr_delay > 60;"
            "CREATE STREAM d2 AS SELECT carrier AS c FROM d1;")
    d3 = derive(ex, "select * from d2", "d3")
    assert d3.columns == ({"name": "c", "type": "string"},)
    assert d3.references == (("default", "d2"), ("default", "d1"), ("default", "flights"))

    from streamjob.planner.derived import stream_references

    assert stream_references(ex.catalog, ex.catalog.get_stream("default", "d2")) == {
        ("default", "d1"), ("default", "flights")}
    assert stream_references(ex.catalog, ex.catalog.get_stream("default", "flights")) == set()


@pytest.mark.parametrize("select, message, at", [
    ("select carrier, count(*) n from flights group by carrier",
     "a derived stream cannot aggregate without a STREAMWINDOW: an aggregation's results change "
     "as data arrives", (2, 36, "count(*)")),
    ("select distinct carrier from flights", "a derived stream cannot aggregate with DISTINCT",
     (2, 27, "distinct")),
    ("select carrier, upper(carrier) from flights",
     "column 2 of derived stream default.d needs a name: write <expression> AS <name>",
     (2, 36, "upper(carrier)")),
    ("select carrier, month carrier from flights",
     "column 'carrier' appears twice in derived stream default.d; rename one with AS",
     (2, 36, "month carrier")),
    ("select carrier from airlines", "a derived stream reads only streams, and default.airlines "
     "is a table", (2, 40, "airlines")),
    ("select carrier, arrdelay from flights", "unknown column 'arrdelay' in stream default.flights",
     (2, 36, "arrdelay")),
])
def test_derived_stream_errors_at_their_place(ex, select, message, at):
    with pytest.raises(ValidationError) as e:
        derive(ex, select)
    assert message in e.value.message
    assert (e.value.line, e.value.column, e.value.text) == at


def test_job_over_derived_streams_plans_their_selects_in_dependency_order(ex):
    from streamjob.planner.plan import plan_job

    run(ex, "CREATE STREAM d1 AS SELECT carrier, arr_delay, month FROM flights WHERE arr_delay > 60;"
            "CREATE STREAM d2 AS SELECT carrier, arr_delay FROM d1 WHERE month > 6;")
    plan = plan_job(ex.catalog, ex.home, "default", "j",
                    "insert into late select d2.carrier, d2.arr_delay from d2", {})
    assert plan.output_mode == "append"
    assert [s.view for s in plan.sources] == ["sj__default__flights"]
    assert [(d.view, d.select_sql) for d in plan.derived] == [
        ("sj__default__d1", "SELECT carrier, arr_delay, month FROM sj__default__flights AS flights "
                            "WHERE arr_delay > 60"),
        ("sj__default__d2", "SELECT carrier, arr_delay FROM sj__default__d1 AS d1 WHERE month > 6")]
    assert plan.query.select_sql == "SELECT d2.carrier, d2.arr_delay FROM sj__default__d2 AS d2"
    assert set(plan.dependencies) == {
        ("stream", "default", "flights", "source"), ("stream", "default", "d1", "source"),
        ("stream", "default", "d2", "source"), ("table", "default", "late", "sink")}


def test_job_over_derived_stream_is_registered_with_its_base_streams(ex):
    run(ex, "CREATE STREAM d AS SELECT carrier, arr_delay FROM flights WHERE arr_delay > 60;"
            'CREATE STREAMJOB j AS ("insert into late select * from d")')
    job = ex.catalog.get_job("default", "j")
    assert ("stream", "default", "d", "source") in job.dependencies
    assert ("stream", "default", "flights", "source") in job.dependencies
    with pytest.raises(Exception, match="default.j"):
        run(ex, "DROP STREAM d")


def test_streamwindow_over_derived_stream_inherits_event_time_or_uses_processing_time(ex):
    from streamjob.planner.plan import plan_job

    run(ex, "CREATE TABLE n (n BIGINT) STORED AS PARQUET;"
            "CREATE STREAM dt AS SELECT ts, v FROM ticks WHERE v > 0;"
            "CREATE STREAM df AS SELECT carrier FROM flights;")
    plan = plan_job(ex.catalog, ex.home, "default", "j", "insert into n select count(*) from dt "
                    "STREAMWINDOW w AS (LENGTH '10' SECOND)", {})
    assert "GROUP BY `WINDOW`(dt.ts, '10 seconds')" in plan.query.select_sql
    assert not any(d.proctime for d in plan.derived) and plan.output_mode == "append"
    plan = plan_job(ex.catalog, ex.home, "default", "j", "insert into n select count(*) from df "
                    "STREAMWINDOW w AS (LENGTH '10' SECOND)", {})
    assert "GROUP BY `WINDOW`(df.__proctime, '10 seconds')" in plan.query.select_sql
    assert [d.proctime for d in plan.derived] == [True]
    assert not plan.sources[0].proctime


def test_derived_stream_query_must_be_a_select(ex):
    from streamjob.grammar.statements import Position
    from streamjob.planner.derived import derive_stream

    with pytest.raises(ValidationError, match="a derived stream is defined by one 'select ...'") as e:
        derive_stream(ex.catalog, "default", "d", "insert into late select carrier, arr_delay "
                      "from flights", Position(2, 20))
    assert (e.value.line, e.value.column) == (2, 20)
    with pytest.raises(ValidationError, match="cannot read itself"):
        derive_stream(ex.catalog, "default", "flights", "select * from flights")


def test_a_plan_names_the_python_data_sources_its_session_registers(ex):
    """Kafka streams read through ``streamjob_kafka``; a static table joined adds the
    static readers (``streamjob_sql``, ``streamjob_files``): what the job's session clone
    registers, and no more (issue 19)."""
    from streamjob.planner.plan import plan_job

    plain = plan_job(ex.catalog, ex.home, "default", "p",
                     "insert into late select carrier, arr_delay from default.flights", {})
    assert plain.data_sources == {"streamjob_kafka"}
    joined = plan_job(ex.catalog, ex.home, "default", "q",
                      "insert into delays select f.carrier, f.month, count(*) from flights f "
                      "join airlines a on f.carrier = a.carrier group by f.carrier, f.month", {})
    assert joined.data_sources == {"streamjob_kafka", "streamjob_sql", "streamjob_files"}
