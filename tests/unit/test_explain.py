"""EXPLAIN (issue 18) without Spark: over jobs of the script corpus (a stateless Kafka
job, windowed aggregations with a watermark, a stream-static join, an upsert into a SQL
table, an at-least-once job with auto flush) and over an INSERT not yet a job, on a real
SQLite catalog. The plain form must not ask for Spark: the executor is given a Spark
factory that records being called."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamjob.catalog import Catalog
from streamjob.cli import main
from streamjob.exceptions import ObjectNotFoundError, ParseError, ValidationError
from streamjob.executor import Executor
from streamjob.grammar import parse_script, parse_statement
from streamjob.grammar import statements as st
from streamjob.home import Home
from streamjob.shell.completion import Names, suggest

pytestmark = pytest.mark.unit

CORPUS = Path(__file__).parent.parent / "corpus" / "valid"
#: Statements of the corpus scripts not replayed here (they start, stop or drop jobs).
SKIPPED = (st.StartStreamJob, st.StopStreamJob, st.DropStreamJob, st.DropTable, st.DropStream)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """An executor over a catalog holding the objects of five corpus scripts, and the
    calls made to its Spark factory."""
    root = tmp_path_factory.mktemp("explain")
    home = Home.open(root / "home")
    catalog = Catalog(home.catalog_url)
    asked: list[int] = []
    ex = Executor(catalog, home, spark=lambda: asked.append(1))
    for name in ("slipstream_delimited", "windows", "files_rate_and_statics",
                 "derived_and_sql_sinks", "ctrl_a_and_odd_spelling"):
        for s in parse_script((CORPUS / f"{name}.sql").read_text()):
            if not isinstance(s, SKIPPED):
                ex.execute(s)
    asked.clear()  # CREATE STREAMJOB asks Spark's analysis when it has a session
    yield ex, asked
    catalog.close()


def explain(ex, text: str):
    result = ex.execute(parse_statement(text))
    return result, result.to_json()


def test_grammar_forms():
    assert parse_statement("EXPLAIN j") == st.Explain(name=st.QualifiedName("j"))
    assert parse_statement("explain extended streamjob db.j;") == st.Explain(
        name=st.QualifiedName("j", "db"), extended=True)
    s = parse_statement("EXPLAIN EXTENDED\n  INSERT INTO db.t SELECT a FROM s WHERE x = ';'")
    assert (s.target, s.extended, s.name) == (st.QualifiedName("t", "db"), True, None)
    assert s.query == "INSERT INTO db.t SELECT a FROM s WHERE x = ';'"
    assert (s.query_position.line, s.query_position.column) == (2, 3)
    with pytest.raises(ParseError) as info:
        parse_statement("EXPLAIN STREAMJOB")
    assert (info.value.line, info.value.column) == (1, 18)
    # a missing ';' before EXPLAIN inside an INSERT's raw tail is reported as such
    with pytest.raises(ParseError, match="missing ';'"):
        parse_script("insert into t select a from s\nEXPLAIN STREAMJOB j")


def test_stateless_kafka_job_reads_from_its_reset_strategy_then_its_checkpoint(world):
    ex, asked = world
    _, data = explain(ex, "EXPLAIN STREAMJOB sales.copy_orders")
    assert data["exists"] and data["status"] == "CREATED" and data["state"] == []
    assert (data["output_mode"], data["guarantee"]) == ("append", "exactly-once")
    [src] = data["sources"]
    assert (src["connector"], src["reset"]) == ("kafka", "latest")
    assert src["consumer_group"] == "orders-reader"  # transwarp.consumer.group.id
    assert src["starting_offsets"] is None and "no checkpoint yet" in src["starts_from"]
    job = ex.catalog.get_job("sales", "copy_orders")
    topic = src["location"].split()[1]
    now = datetime.now(timezone.utc)
    ex.catalog.record_checkpoint(job.uid, 7, started_at=now, ended_at=now, duration_ms=5,
                                 source_offsets={topic: {"1": 40, "0": 12}}, input_rows=52,
                                 retained=5)
    _, data = explain(ex, "EXPLAIN sales.copy_orders")
    [src] = data["sources"]
    assert src["starting_offsets"] == {"0": 12, "1": 40} and src["partitions"] == [0, 1]
    assert "checkpoint 7" in src["starts_from"]
    assert asked == []


def test_windowed_aggregations_keep_state_until_the_watermark_passes(world):
    ex, asked = world
    result, data = explain(ex, "EXPLAIN clicks_job")
    assert data["output_mode"] == "append"
    [op] = data["state"]
    assert op["operator"] == "streaming aggregation"
    assert op["keys"] == ["user_id", "window(clicks.ts, '1 minute')"]
    assert op["watermark"] == ["default.clicks: ts - 10 seconds"]
    assert "until the watermark" in op["retention"]
    assert data["sources"][0]["watermark_delay"] == "10 seconds"
    assert [s.title for s in result.sections] == ["streamjob", "source default.clicks", "sink",
                                                  "state", "cadence"]
    _, data = explain(ex, "EXPLAIN latency_job")  # processing time
    [op] = data["state"]
    assert op["keys"][1] == "window(pings.__proctime, '10 seconds', '5 seconds')"
    assert "processing time" in op["retention"]
    assert asked == []


def test_stream_static_join_keeps_no_state(world):
    ex, asked = world
    result, data = explain(ex, "EXPLAIN room_job")
    assert data["state"] == []
    assert data["static_tables"] == [{"table": "default.sensors", "connector": "files (csv)",
                                      "read": "in full at each micro-batch (a stream-static "
                                              "join keeps no state)"}]
    assert data["sources"][0]["connector"] == "files"
    assert "static tables" in [s.title for s in result.sections]
    _, data = explain(ex, "EXPLAIN tick_job")  # without checkpoints: guarantee none
    assert data["guarantee"] == "none"
    assert data["guarantee_reason"].startswith("morphling.job.enable.checkpoint=false "
                                               "(JOBPROPERTIES)")
    assert data["checkpoint_interval_ms"] is None
    assert asked == []


def test_upsert_into_a_sql_table_masks_its_password(world):
    ex, asked = world
    result, data = explain(ex, "EXPLAIN balances_job")
    assert data["output_mode"] == "update"
    assert data["sink"]["write"] == "upsert on primary key (account)"
    assert data["sink"]["location"] == "table euro_balances at postgresql://app:***@db:5432/bank"
    assert data["guarantee"] == "exactly-once"
    assert "morphling.result.auto.flush=false (SET)" in data["guarantee_reason"]
    assert "one transaction" in data["guarantee_reason"]
    [op] = data["state"]
    assert op["keys"] == ["account"] and "without bound" in op["retention"]
    assert data["derived_streams"][0]["stream"] == "default.euro_payments"
    assert data["sources"][0]["stream"] == "default.payments"  # beneath the derived one
    assert (data["checkpoint_interval_ms"], data["checkpoints_retained"]) == (1000, 10)
    shown = json.dumps(data) + repr([s.rows for s in result.sections])
    assert "s3cret" not in shown
    assert asked == []


def test_at_least_once_with_auto_flush_says_why(world):
    ex, asked = world
    _, data = explain(ex, "EXPLAIN demo_job")
    assert data["guarantee"] == data["sink"]["guarantee"] == "at-least-once"
    assert data["guarantee_reason"].startswith(
        "morphling.job.enable.checkpoint=true (JOBPROPERTIES), "
        "morphling.result.auto.flush=true (JOBPROPERTIES)")
    assert "may write its rows again" in data["guarantee_reason"]
    assert data["checkpoint_interval_ms"] == 2000 and data["state"] == []
    assert asked == []


def test_an_insert_not_yet_a_job_is_planned_as_its_implicit_job_and_registers_nothing(world):
    ex, asked = world
    before = [j.name for j in ex.catalog.list_jobs()]
    ex.session_props["morphling.result.auto.flush"] = "true"
    try:
        _, data = explain(ex, "EXPLAIN INSERT INTO demo_table SELECT * FROM demo_stream")
    finally:
        ex.session_props.clear()
    assert data["job"].startswith("default.insert_") and data["exists"] is False
    assert data["status"] is None and data["guarantee"] == "at-least-once"  # the SET value
    assert "(SET)" in data["guarantee_reason"]
    assert [j.name for j in ex.catalog.list_jobs()] == before
    with pytest.raises(ValidationError) as info:  # its query is checked as CREATE would
        explain(ex, "EXPLAIN INSERT INTO demo_table SELECT nope FROM demo_stream")
    assert "nope" in str(info.value)
    with pytest.raises(ObjectNotFoundError):
        explain(ex, "EXPLAIN no_such_job")
    assert asked == []


def test_cli_prints_the_sections_and_json(tmp_path):
    env = {"STREAMJOB_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    setup = (CORPUS / "derived_and_sql_sinks.sql").read_text().split("START STREAMJOB")[0]
    run = lambda *a: CliRunner().invoke(main, list(a), env=env)  # noqa: E731
    assert run("-e", setup).exit_code == 0
    out = run("-e", "EXPLAIN balances_job")
    assert out.exit_code == 0, out.output
    for title in ("streamjob", "source default.payments", "derived streams", "sink", "state",
                  "cadence"):
        assert f"\n{title}" in "\n" + out.stdout
    assert "upsert on primary key (account)" in out.stdout and "s3cret" not in out.stdout
    out = run("--json", "-e", "EXPLAIN streamjob balances_job")
    assert json.loads(out.stdout)["sink"]["connector"] == "sql"


def test_shell_completes_explain():
    names = Names(streams=["clicks"], tables=["agg"], jobs=["j1", "jobtwo"])
    assert "EXPLAIN" in [s.text for s in suggest("", names)]
    assert [s.text for s in suggest("EXPLAIN ", names)] == [
        "ALTER", "CREATE", "EXTENDED", "INSERT", "STREAMJOB", "j1", "jobtwo"]
    assert [s.text for s in suggest("explain extended streamjob jo", names)] == ["jobtwo"]


def test_a_join_of_two_streams_beneath_a_derived_stream_keeps_state(tmp_path):
    home = Home.open(tmp_path / "home")
    catalog = Catalog(home.catalog_url)
    ex = Executor(catalog, home)
    kafka = '("topic"="{0}", "kafka.broker.list"="h:9092", "watermark.column"="ts", ' \
            '"watermark.delay"="5 seconds")'
    for s in parse_script(f"""
        CREATE STREAM a (id BIGINT, ts TIMESTAMP) TBLPROPERTIES {kafka.format('a')};
        CREATE STREAM b (id BIGINT, v DOUBLE, ts TIMESTAMP) TBLPROPERTIES {kafka.format('b')};
        CREATE STREAM ab AS SELECT a.id, b.v FROM a JOIN b ON a.id = b.id
          AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 1 MINUTE;
        CREATE TABLE out (id BIGINT, v DOUBLE) STORED AS PARQUET;
        CREATE STREAMJOB j AS ("insert into out select id, v from ab");"""):
        ex.execute(s)
    _, data = explain(ex, "EXPLAIN j")
    [op] = data["state"]
    assert op["operator"] == "stream-stream join" and op["keys"] == ["a.id = b.id"]
    assert op["watermark"] == ["default.a: ts - 5 seconds", "default.b: ts - 5 seconds"]
    assert [s["stream"] for s in data["sources"]] == ["default.a", "default.b"]
    catalog.close()


def test_extended_in_a_dry_run_asks_no_spark(tmp_path):
    """``streamjob check`` (a dry run) of a script holding EXPLAIN EXTENDED plans it but
    runs no Spark, not even with --offline's absence of a session."""
    home = Home.open(tmp_path / "home")
    catalog = Catalog(home.catalog_url)
    asked: list[int] = []
    ex = Executor(catalog, home, dry_run=True, spark=lambda: asked.append(1))
    setup = (CORPUS / "slipstream_delimited.sql").read_text().split("START STREAMJOB")[0]
    for s in parse_script(setup):
        ex.execute(s)
    asked.clear()
    _, data = explain(ex, "EXPLAIN EXTENDED demo_job")
    assert data["physical_plan"] is None and data["guarantee"] == "at-least-once"
    assert asked == []
    catalog.close()


def test_an_aggregation_over_a_static_table_alone_keeps_no_state(world):
    ex, _ = world  # the subquery is a batch query over the static table, read each batch
    _, data = explain(ex, "EXPLAIN INSERT INTO balances SELECT p.account, p.amount, s.n "
                          "FROM payments p JOIN (SELECT room, count(*) AS n FROM sensors "
                          "GROUP BY room) s ON p.account = s.room")
    assert data["state"] == [] and data["static_tables"][0]["table"] == "default.sensors"
