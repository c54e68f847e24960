"""Hive UDF jars on real Spark and the real broker (issue 31, docs/functions.md "Hive UDF
jars"): a GenericUDF compiled in the setup with the JDK's javac against the Hive jars
PySpark ships, in the home's functions/ (the admin's jar directory), registered with
Slipstream's ``ADD JAR`` + ``CREATE TEMPORARY FUNCTION`` and with Hive's ``USING JAR``,
runs in a job over Kafka into SQLite; a jar outside the admin's directories is refused
at its path; the jar's hash is in the job's fingerprint and a changed jar is refused at
START."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa

from streamjob.catalog import Catalog
from streamjob.exceptions import ChangedLogic, JobError
from streamjob.security.policy import PolicyError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob.manager.job_manager import JobManager
from streamjob_tools.dev.broker import create_topic
from streamjob_tools.dev.flights import replay
from streamjob_tools.dev.hive_jar import build_jar

pytestmark = pytest.mark.spark

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "functions" / "Reverse.java"
#: A Hive (simple) UDF that throws on a name ending in "x6".
PICKY = """package com.example.udf;

public class Picky extends org.apache.hadoop.hive.ql.exec.UDF {
  public String evaluate(String s) {
    if (s != null && s.endsWith("x6")) throw new IllegalArgumentException("no sixes: " + s);
    return s;
  }
}
"""
ROWS = [{"id": i, "name": f"n{i}x{i % 7}"} for i in range(200)]


@pytest.fixture(scope="module")
def jar(tmp_path_factory):
    """The example GenericUDF (com.example.udf.Reverse) and :data:`PICKY`, compiled now."""
    base = tmp_path_factory.mktemp("jar")
    (base / "Picky.java").write_text(PICKY)
    return build_jar([EXAMPLE, base / "Picky.java"], base / "text_udfs.jar")


@pytest.fixture
def world(tmp_path, broker, jar):
    home = Home.open(tmp_path / "home", {"spark.master": "local[2]",
                                         "spark.sql.shuffle.partitions": "2"})
    functions = tmp_path / "home" / "functions"
    functions.mkdir()
    (functions / "text_udfs.jar").write_bytes(jar.read_bytes())
    catalog = Catalog(home.catalog_url)
    manager = JobManager(catalog, home)
    ex = Executor(catalog, home, manager, {"morphling.job.checkpoint.interval": "0"})
    yield ex, broker
    for uid in list(manager.runners):
        manager.stop(uid)
    catalog.close()


def _run(ex, script: str) -> list:
    return [ex.execute(stmt) for stmt in parse_script(script)]


def _objects(ex, broker, tmp_path) -> tuple[str, str]:
    topic = f"hive_{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    replay(broker.bootstrap, topic, [json.dumps(r).encode() for r in ROWS], 2)
    db = tmp_path / "out.db"
    _run(ex, f"""
    CREATE STREAM items (id BIGINT, name STRING)
      TBLPROPERTIES ("topic"="{topic}", "kafka.broker.list"="{broker.bootstrap}", "format"="json");
    CREATE TABLE reversed (id BIGINT, r STRING)
      TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{db}", "primary.key"="id");""")
    return topic, f"sqlite:///{db}"


def _want(rows) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    return pd.DataFrame({"id": frame["id"], "r": frame["name"].str[::-1].str.upper()})


def test_a_slipstream_add_jar_function_runs_in_a_job_over_kafka(world, tmp_path):
    ex, broker = world
    topic, url = _objects(ex, broker, tmp_path)
    jar = str(tmp_path / "home" / "functions" / "text_udfs.jar")
    _run(ex, f"""
    add jar {jar};
    create temporary function reverse_text as 'com.example.udf.Reverse';
    CREATE STREAMJOB j AS ("insert into reversed select id, upper(reverse_text(name)) from items");
    START STREAMJOB j;""")
    ex.manager.wait_until_idle(timeout=240)
    got = pd.read_sql("select id, r from reversed order by id", sa.create_engine(url))
    pd.testing.assert_frame_equal(got.reset_index(drop=True), _want(ROWS), check_dtype=False)
    desc = dict(ex.execute(parse_script("DESCRIBE FUNCTION reverse_text")[0]).rows)
    assert desc["kind"] == "hive" and desc["location"] == str(Path(jar).resolve())
    assert desc["jobs"] == "default.j"
    # the jar's bytes are the function's code: changed, the job is refused at START
    ex.execute(parse_script("STOP STREAMJOB j")[0])
    Path(jar).write_bytes(Path(jar).read_bytes() + b"\0")
    with pytest.raises(ChangedLogic, match="function default.reverse_text changed"):
        ex.execute(parse_script("START STREAMJOB j")[0])


def test_using_jar_names_the_jar_relative_to_the_admins_directory(world, tmp_path):
    ex, broker = world
    _, url = _objects(ex, broker, tmp_path)
    _run(ex, """
    CREATE FUNCTION rev AS 'com.example.udf.Reverse' USING JAR 'text_udfs.jar' RETURNS STRING;
    CREATE STREAMJOB j AS ("insert into reversed select id, upper(rev(name)) from items");
    START STREAMJOB j;""")
    ex.manager.wait_until_idle(timeout=240)
    got = pd.read_sql("select id, r from reversed order by id", sa.create_engine(url))
    pd.testing.assert_frame_equal(got.reset_index(drop=True), _want(ROWS), check_dtype=False)


def test_a_throwing_hive_udf_fails_the_job_naming_the_function(world, tmp_path):
    ex, broker = world
    _objects(ex, broker, tmp_path)
    _run(ex, """
    CREATE FUNCTION picky AS 'com.example.udf.Picky' USING JAR 'text_udfs.jar';
    CREATE STREAMJOB j AS ("insert into reversed select id, picky(name) from items")
      JOBPROPERTIES ("morphling.task.max.failures"="0");
    START STREAMJOB j;""")
    with pytest.raises(JobError):
        ex.manager.wait_until_idle(timeout=240)
    job = ex.catalog.get_job("default", "j")
    assert job.status == "FAILED"
    assert job.last_error.startswith("function default.picky raised HiveException: "), job.last_error
    assert re.search(r"no sixes: n\d+x6$", job.last_error), job.last_error
    assert "\tat " not in job.last_error and "\n" not in job.last_error


def test_a_jar_outside_the_admins_directories_is_refused_at_its_path(world, tmp_path, jar):
    ex, _ = world
    outside = tmp_path / "elsewhere" / "x.jar"
    outside.parent.mkdir()
    outside.write_bytes(jar.read_bytes())
    (tmp_path / "home" / "functions" / "link.jar").symlink_to(outside)
    for script, column in ((f"ADD JAR '{outside}'", 9),
                           ("ADD JARS text_udfs.jar ../../elsewhere/x.jar", 24),
                           ("add jar link.jar", 9),
                           ("CREATE FUNCTION r AS 'com.example.udf.Reverse'\n"
                            "  USING JAR '../elsewhere/x.jar'", 13)):
        with pytest.raises(PolicyError) as info:
            ex.execute(parse_script(script)[0])
        assert "not in the admin's jar directories" in info.value.message, script
        assert (info.value.line, info.value.column) == (1 if column != 13 else 2, column), script
    assert ex.catalog.list_functions("default") == []
