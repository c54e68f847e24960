"""Issue 13 point 5, the rest: ``check`` and CREATE/ALTER STREAMJOB ask Spark's own
streaming analysis (over empty inputs) where a Spark session is at hand, so a query Spark
refuses at START is refused before, at the job's select, with Spark's reason. On the
main of 2026-11-23 ``check`` said OK for these and START failed. Real local Spark."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from streamjob.cli import main
from streamjob.exceptions import ValidationError

from .world import SparkWorld

pytestmark = pytest.mark.spark

SETUP = """
CREATE STREAM a (id INT, v DOUBLE, ts TIMESTAMP)
  TBLPROPERTIES("source"="files", "path"="{d}", "format"="json");
CREATE STREAM b (id INT, v DOUBLE, ts TIMESTAMP)
  TBLPROPERTIES("source"="files", "path"="{d}", "format"="json");
CREATE TABLE t (id INT, v DOUBLE) STORED AS PARQUET LOCATION '{out}';
CREATE TABLE counts (id INT, n BIGINT) TBLPROPERTIES("connector"="console");
"""
# what streamjob's own rules pass and Spark refuses, with a word of Spark's reason
REFUSED = {
    "insert into t select id, v from a except select id, v from b": "Except on a streaming",
    "insert into counts select id, count(*) from (select id, count(*) c from b group by id) x "
    "group by id": "global watermark",
}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("spark_check")
    w = SparkWorld(root)
    (root / "in").mkdir()
    w.run(SETUP.format(d=root / "in", out=root / "t"))
    w.ex.spark = lambda: w.session  # a process with Spark at hand (as run and the shell)
    yield w
    w.close()


@pytest.mark.parametrize("query", sorted(REFUSED))
def test_create_streamjob_refuses_what_spark_refuses_at_the_select(world, query):
    with pytest.raises(ValidationError) as info:
        world.run(f'CREATE STREAMJOB j AS ("{query}");')
    err = info.value
    assert "Spark cannot run this query as a stream" in err.message
    assert REFUSED[query] in err.message
    start = len('CREATE STREAMJOB j AS ("') + 1  # the query's first column
    assert err.line == 1 and start + query.index("select") <= err.column < start + len(query)
    assert "\n" not in err.message and "+-" not in err.message  # no plan dump, no trace
    assert world.catalog.get_job("default", "j") is None


def test_a_query_spark_accepts_is_created(world):
    [res] = world.run('CREATE STREAMJOB ok_job AS ("insert into counts select id, count(*) '
                      'from b group by id");')
    assert "created" in res.message


def test_a_predicate_session_job_passes_sparks_analysis(world):
    # its session clone turns off Spark's check against chained stateful operators
    # (streamjob.spark.sessions); the analysis must read the clone's conf (it failed with
    # "global watermark" when the checker read the process's session)
    world.run(f"CREATE TABLE sess (id INT, n BIGINT) STORED AS PARQUET "
              f"LOCATION '{world.root / 'sess'}';")
    [res] = world.run('CREATE STREAMJOB sess_job AS ("insert into sess select id, count(*) '
                      'from a SESSIONWINDOW(INIT[v > 1] END[v < 0] KEYEDBY(id)) group by id");')
    assert "created" in res.message


def test_check_asks_spark_and_offline_does_not(tmp_path):
    (tmp_path / "in").mkdir()
    script = tmp_path / "job.sql"
    query = sorted(REFUSED)[1]  # the EXCEPT
    script.write_text(SETUP.format(d=tmp_path / "in", out=tmp_path / "t")
                      + f'CREATE STREAMJOB j AS ("{query}");\n')
    home = ["--home", str(tmp_path / "home"), "--conf", "spark.master=local[1]"]
    result = CliRunner().invoke(main, [*home, "check", str(script)])
    assert result.exit_code == 1, result.output
    line = SETUP.count("\n") + 1
    assert f"job.sql:{line}:" in result.output and "Except on a streaming" in result.output
    offline = CliRunner().invoke(main, [*home, "check", "--offline", str(script)])
    assert offline.exit_code == 0 and "OK (5 statements)" in offline.output


def test_explain_extended_shows_sparks_physical_plan_with_the_stateful_operator(world):
    """EXPLAIN EXTENDED (issue 18): Spark's physical plan, planned over empty inputs as the
    analysis above; the aggregation's state store operators are in it."""
    world.run('CREATE STREAMJOB explained AS ("insert into counts select id, count(*) '
              'from b group by id");')
    [res] = world.run("EXPLAIN EXTENDED explained;")
    text = res.to_json()["physical_plan"]
    assert "StateStoreSave" in text and "StateStoreRestore" in text
    assert res.sections[-1].title == "physical plan (Spark)" and res.sections[-1].text == text
    assert res.to_json()["state"][0]["keys"] == ["id"]
    [plain] = world.run("EXPLAIN explained;")
    assert plain.to_json()["physical_plan"] is None
