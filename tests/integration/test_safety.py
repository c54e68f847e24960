"""Issue 13, point 8, with real Spark: job sessions never substitute ``${env:X}``,
``${system:x}`` or ``${spark.x}`` in SQL (Spark's default handed a job's sink the job
manager's environment); a SET of ``spark.sql.variable.substitute`` cannot turn it back
on. On the main of 2026-11-23 the sink received the secret."""

from __future__ import annotations

import pytest

from streamjob.connectors.file_table import read_table

from .world import SparkWorld

pytestmark = pytest.mark.integration


@pytest.fixture
def world(tmp_path):
    w = SparkWorld(tmp_path)
    yield w
    w.close()


def test_a_job_writes_dollar_brace_text_as_written_never_the_environment(world, monkeypatch):
    monkeypatch.setenv("SJ_TEST_SECRET", "s3cr3t-value")
    directory = world.root / "in"
    directory.mkdir()
    out = world.root / "out"
    world.run(f"""
    CREATE STREAM s (id BIGINT) TBLPROPERTIES ("source"="files", "path"="{directory}", "format"="json");
    CREATE TABLE t (id BIGINT, a STRING, b STRING) STORED AS PARQUET LOCATION '{out}';
    """)
    _, query = world.start(
        "leak", "insert into t select id, '${env:SJ_TEST_SECRET}', '${system:user.name}' from s",
        {"spark.sql.variable.substitute": "true"})
    try:
        world.write(directory, [{"id": 1}])
        query.processAllAvailable()
    finally:
        query.stop()
    rows = read_table(str(out)).to_pylist()
    assert rows == [{"id": 1, "a": "${env:SJ_TEST_SECRET}", "b": "${system:user.name}"}]


def test_job_sessions_keep_substitution_off_whatever_sql_conf_says(world):
    from streamjob.engine import job_session, spark_session

    session = job_session(spark_session(world.home), {"spark.sql.variable.substitute": "true"})
    assert session.conf.get("spark.sql.variable.substitute") == "false"
    assert session.sql("select '${env:HOME}' v").collect()[0].v == "${env:HOME}"
