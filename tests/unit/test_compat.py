"""``streamjob check --compat`` on old Slipstream scripts (issue 18), and the notices of
Slipstream properties without effect in ``check``: click's CliRunner in-process, no Spark."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from streamjob.cli import main
from streamjob.cli.execute import SET_ENDS

pytestmark = pytest.mark.component

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "slipstream" / "clicks.sql"


def invoke(tmp_path, *args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False,
                              env={"STREAMJOB_HOME": str(tmp_path / "home"), "COLUMNS": "200"})


def test_compat_lists_every_clause_and_property_of_the_slipstream_example(tmp_path):
    res = invoke(tmp_path, "check", "--compat", str(EXAMPLE), "--var", "ZK_QUORUM=zk1:2181/kafka")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    f = str(EXAMPLE)
    expected = [
        f"{f}:9: SET morphling.metrics.enabled=true: ignored: metrics are always collected",
        f"{f}:10: SET mapred.reduce.tasks=4: mapped: spark.sql.shuffle.partitions=4",
        f"{f}:14: CREATE STREAM clicks: runs",
        f"{f}:14:   ROW FORMAT DELIMITED: runs: format delimited, fields split at ','",
        f'{f}:18:   "kafka.zookeeper"="zk1:2181/kafka": ignored: "kafka.broker.list" is given',
        f'{f}:19:   "kafka.broker.list"="127.0.0.1:9092": runs',
        f"{f}:26: CREATE TABLE clicks_per_minute: runs",
        f"{f}:26:   STORED AS PARQUET: runs",
        f"{f}:31: CREATE STREAMJOB clicks_per_minute_job: runs",
        f"{f}:34:   STREAMWINDOW: mapped: Spark's window(",
        f"{f}:40:   morphling.maxlag.on.disorder=5000: mapped: the watermark delay",
        f"{f}:41:   morphling.hdfs.flush.interval.ms=60000: mapped: the trigger interval",
        f"{f}:42:   morphling.hdfs.flush.size=100000: ignored: ",
        f"{f}:43:   morphling.job.enable.wal.sink=true: ignored: sinks are exactly-once",
        f"{f}:47: START STREAMJOB clicks_per_minute_job: runs",
    ]
    for want in expected:
        assert any(line.startswith(want) for line in lines), (want, res.output)
    assert lines[-1] == "7 statements: 14 runs, 4 mapped, 6 ignored, 0 refused"


def test_compat_reports_both_session_window_kinds(tmp_path):
    script = tmp_path / "sessions.sql"
    script.write_text(
        "CREATE STREAM s (id STRING, op STRING) TBLPROPERTIES(\"topic\"=\"t\",\n"
        "  \"kafka.broker.list\"=\"b:9092\");\n"
        "CREATE TABLE t (id STRING, n BIGINT) STORED AS PARQUET;\n"
        "CREATE STREAMJOB j AS (\"insert into t select id, count(*) from s\n"
        "  SESSIONWINDOW(INIT[op='in'] END[op='out' EXCLUDE] KEYEDBY(id)) group by id\");\n"
        "INSERT INTO t SELECT id, count(*) FROM s SESSIONWINDOW w AS (GAP '1' MINUTE) "
        "GROUP BY id;\n")
    res = invoke(tmp_path, "check", "--compat", str(script))
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert f"{script}:5:   SESSIONWINDOW(INIT[...] END[...] KEYEDBY(...)): runs: predicate " \
           f"sessions per KEYEDBY key" in res.output
    assert any(line.startswith(f"{script}:6:   SESSIONWINDOW ... (GAP ...): mapped: Spark's "
                               f"session_window") for line in lines), res.output


def test_compat_refuses_with_the_rewrite_and_goes_on(tmp_path):
    script = tmp_path / "old.sql"
    script.write_text(
        "-- 旧脚本\n"
        "SET morphling.job.checkpoint.intervall=1000;\n"
        "CREATE APPLICATION clicks_app;\n"
        "CREATE STREAM s (a STRING) TBLPROPERTIES(\"topic\"=\"t\",\n"
        "  \"kafka.broker.list\"=\"b:9092\", \"kafka.zookeeper\"=\"z:2181\", \"toppic\"=\"x\");\n"
        "CREATE STREAM s2 (a STRING) TBLPROPERTIES(\"topic\"=\"t\", \"kafka.zookeeper\"=\"z:2181/kafka\");\n")
    res = invoke(tmp_path, "check", "--compat", str(script))
    assert res.exit_code == 1
    out = res.output
    assert (f"{script}:2: SET morphling.job.checkpoint.intervall=1000: refused: unknown job "
            f"property 'morphling.job.checkpoint.intervall'; did you mean "
            f"'morphling.job.checkpoint.interval'?") in out
    assert f"{script}:3: CREATE APPLICATION CLICKS_APP: refused: unexpected" in out
    assert "rewrite: streamjob has no applications: drop the statement" in out
    assert f"{script}:4: CREATE STREAM s: refused: a clause of it is refused (below)" in out
    assert (f'{script}:5:   "kafka.zookeeper"="z:2181": ignored: "kafka.broker.list" is given'
            in out)
    assert f"{script}:5:   \"toppic\"=\"x\": refused: unknown property of a kafka stream; " \
           f"did you mean 'topic'?" in out
    assert (f'{script}:6:   "kafka.zookeeper"="z:2181/kafka": mapped: the brokers Kafka registers '
            f'in this ZooKeeper (/brokers/ids)') in out
    assert out.splitlines()[-1] == "4 statements: 4 runs, 1 mapped, 1 ignored, 4 refused"


def test_check_shows_a_notice_for_a_slipstream_property_without_effect(tmp_path):
    """A known Slipstream property never stops a script: check says OK with its notice."""
    script = tmp_path / "set.sql"
    script.write_text("SET morphling.metrics.enabled=true;\nSET stream.number.receivers=3;\n"
                      "SET morphling.maxlag.on.disorder=-1;\n")
    res = invoke(tmp_path, "check", "--offline", str(script))
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == [
        f"{script}:1: note: morphling.metrics.enabled has no effect in streamjob: metrics are "
        "always collected (DESCRIBE STREAMJOB, the server's /metrics)",
        f"{script}:2: note: stream.number.receivers has no effect in streamjob: Spark's Kafka "
        "source reads each partition in its own task; there are no receivers",
        "OK (3 statements)"]


def test_submit_shows_the_notice_and_goes_on(tmp_path):
    script = tmp_path / "set.sql"
    script.write_text("SET morphling.job.enable.wal.sink=true;\nSET mapred.reduce.tasks=3;\n")
    res = invoke(tmp_path, "submit", str(script))
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == [
        f"morphling.job.enable.wal.sink=true {LATER}",
        "note: morphling.job.enable.wal.sink has no effect in streamjob: sinks are exactly-once "
        "through their commit markers whenever morphling.result.auto.flush is false (the "
        "default); no write-ahead log is needed",
        f"mapred.reduce.tasks=3 {LATER}; {SET_ENDS}"]


LATER = "(for streamjobs created later in this session; existing streamjobs keep theirs)"


def test_compat_knows_serdes_hbase_storage_and_a_bare_insert(tmp_path):
    """The Slipstream forms CREATE applies (connectors/hive_forms.py) are reported as
    CREATE applies them: a MultiDelimitSerDe's delimiter, a JSON SerDe, an unknown SerDe
    and a Hyperdrive table refused with the replacement, a bare INSERT as its job."""
    script = tmp_path / "forms.sql"
    script.write_text(
        "CREATE STREAM s (id INT, v STRING) ROW FORMAT SERDE\n"
        "  'org.apache.hadoop.hive.contrib.serde2.MultiDelimitSerDe'\n"
        "  WITH SERDEPROPERTIES ('input.delimited'='|+|') TBLPROPERTIES(\"topic\"=\"t\",\n"
        "  \"kafka.broker.list\"=\"b:9092\");\n"
        "CREATE STREAM j (id INT) ROW FORMAT SERDE 'org.openx.data.jsonserde.JsonSerDe'\n"
        "  TBLPROPERTIES(\"topic\"=\"j\", \"kafka.broker.list\"=\"b:9092\");\n"
        "CREATE STREAM x (id INT) ROW FORMAT SERDE 'com.example.MySerDe'\n"
        "  TBLPROPERTIES(\"topic\"=\"x\", \"kafka.broker.list\"=\"b:9092\");\n"
        "CREATE TABLE h (id INT, v STRING) STORED AS HYPERDRIVE;\n"
        "INSERT INTO h SELECT id, v FROM s;\n")
    res = invoke(tmp_path, "check", "--compat", str(script))
    assert res.exit_code == 1, res.output
    lines, f = res.output.splitlines(), str(script)
    assert f"{f}:1:   ROW FORMAT SERDE 'org.apache.hadoop.hive.contrib.serde2.MultiDelimitSerDe':" \
           " mapped: format delimited, fields split at '|+|'" in lines, res.output
    assert f"{f}:5:   ROW FORMAT SERDE 'org.openx.data.jsonserde.JsonSerDe': mapped: format json" \
        in lines, res.output
    assert any(line.startswith(f"{f}:7:   ROW FORMAT SERDE 'com.example.MySerDe': refused: SerDe "
                               "'com.example.MySerDe' is not supported") for line in lines)
    assert f"{f}:7: CREATE STREAM x: refused: a clause of it is refused (below)" in lines
    assert any(line.startswith(f"{f}:9:   STORED AS HYPERDRIVE: refused: table 'h': STORED AS "
                               "HYPERDRIVE (a Hyperdrive table)") and "primary.key" in line
               for line in lines), res.output
    assert any(line.startswith(f"{f}:10: INSERT INTO h: runs: an implicit job") for line in lines)
    assert lines[-1] == "5 statements: 9 runs, 2 mapped, 0 ignored, 4 refused", lines[-1]


def test_compat_names_a_database_statement_by_its_database(tmp_path):
    script = tmp_path / "db.sql"
    script.write_text("CREATE DATABASE IF NOT EXISTS shop;\nUSE shop;\n")
    res = invoke(tmp_path, "check", "--compat", str(script))
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[:2] == [f"{script}:1: CREATE DATABASE shop: runs",
                                           f"{script}:2: USE shop: runs"]


def test_compat_reports_hive_udf_jars_and_python_functions_running(tmp_path):
    script = tmp_path / "udfs.sql"
    script.write_text("add jar /opt/udfs/normalize.jar;\n"
                      "create temporary function normalize as 'com.example.Normalize';\n"
                      "create function shout as 'text_udfs:shout' returns string;\n"
                      "create function n2 as 'com.example.Normalize' language python;\n")
    res = invoke(tmp_path, "check", "--compat", str(script))
    assert res.exit_code == 1  # the last line only
    lines = res.output.splitlines()
    assert lines[0] == (f"{script}:1: ADD JAR: runs: the jar must lie in a jar directory of "
                        "the admin (streamjob.security.functions.jars, default functions/ of "
                        "the home); a path elsewhere is refused")
    assert lines[1].startswith(f"{script}:2: CREATE TEMPORARY FUNCTION normalize: runs: a Hive "
                               "UDF class, run by Spark's Hive support")
    assert lines[2] == f"{script}:3: CREATE FUNCTION shout: runs"
    assert lines[3].startswith(f"{script}:4: CREATE FUNCTION N2: refused: LANGUAGE PYTHON names "
                               "'package.module:callable'")
