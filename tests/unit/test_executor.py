"""Statements through the executor against a real SQLite catalog (no Spark)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from streamjob.catalog import Catalog
from streamjob.checkpoint import identity
from streamjob.exceptions import JobError, ObjectInUseError, PropertyError, StreamJobError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home

pytestmark = pytest.mark.unit

SETUP = """
CREATE STREAM s (k STRING, v DOUBLE) TBLPROPERTIES ("topic"="t", "kafka.broker.list"="h:9092");
CREATE TABLE totals (k STRING, total DOUBLE)
  TBLPROPERTIES ("connector"="sql", "url"="postgresql://app:s3cret@db/x", "primary.key"="k");
"""


@pytest.fixture
def ex(tmp_path):
    home = Home.open(tmp_path / "home")
    executor = Executor(Catalog(f"sqlite:///{tmp_path}/catalog.db"), home)
    run(executor, SETUP)
    return executor


def run(executor: Executor, script: str):
    results = [executor.execute(stmt) for stmt in parse_script(script)]
    return results[-1] if results else None


def section(result, title):
    return next(s for s in result.sections if s.title.startswith(title))


def test_describe_streamjob_shows_effective_properties_and_their_origin(ex):
    run(ex, """SET morphling.checkpoint.retained = 7;
               SET morphling.job.checkpoint.interval = 2 s;
               CREATE STREAMJOB j AS ("insert into totals select k, sum(v) from s group by k")
               JOBPROPERTIES ("morphling.job.checkpoint.interval"="500");
               RESET;""")
    out = run(ex, "DESCRIBE STREAMJOB j")
    props = {r[0]: (r[1], r[2]) for r in section(out, "properties").rows}
    assert props["morphling.checkpoint.retained"] == (7, "SET")  # captured at CREATE
    assert props["morphling.job.checkpoint.interval"] == (500, "JOBPROPERTIES")
    assert props["morphling.result.auto.flush"] == ("false", "default")
    fields = dict(section(out, "streamjob").rows)
    assert fields["guarantee"] == "exactly-once"
    assert fields["output mode"] == "update"
    assert fields["status"] == "CREATED"
    deps = section(out, "dependencies").rows
    assert ("stream", "default.s", "source") in deps and ("table", "default.totals", "sink") in deps
    assert out.to_json()["properties"][0]["property"].startswith("morphling.")


def test_alter_changes_properties_for_the_next_start(ex):
    run(ex, 'CREATE STREAMJOB j AS ("insert into totals select k, sum(v) from s group by k")')
    msg = run(ex, 'ALTER STREAMJOB j SET JOBPROPERTIES ("morphling.result.auto.flush"="TRUE")').message
    assert "guarantee at-least-once" in msg
    job = ex.catalog.get_job("default", "j")
    assert job.properties == {"morphling.result.auto.flush": "TRUE"}
    with pytest.raises(PropertyError) as info:
        run(ex, 'ALTER STREAMJOB j SET JOBPROPERTIES (\n "morphling.checkpoint.retaned"="3")')
    assert (info.value.line, info.value.column) == (2, 2)
    assert "did you mean 'morphling.checkpoint.retained'" in info.value.message


def test_describe_stream_and_table_mask_secrets(ex):
    out = run(ex, "DESCRIBE totals")
    props = dict(section(out, "properties").rows)
    assert props["url"] == "postgresql://app:***@db/x"
    assert section(out, "columns").rows == [("k", "string"), ("total", "double")]
    run(ex, 'CREATE STREAMJOB j AS ("insert into totals select k, sum(v) from s group by k")')
    fields = dict(section(run(ex, "DESC STREAM s"), "stream").rows)
    assert fields["source"] == "kafka" and fields["used by"] == "default.j"
    with pytest.raises(StreamJobError, match="stream default.totals does not exist"):
        run(ex, "DESCRIBE STREAM totals")


def test_drop_of_a_used_object_names_the_job(ex):
    run(ex, 'CREATE STREAMJOB j AS ("insert into totals select k, sum(v) from s group by k")')
    with pytest.raises(ObjectInUseError, match="used by job default.j") as info:
        run(ex, "\n\nDROP TABLE   totals")
    assert (info.value.line, info.value.column) == (3, 14)


def test_set_and_reset_spark_sql_settings(ex):
    assert run(ex, "SET spark.sql.shuffle.partitions = 3").message == (
        "spark.sql.shuffle.partitions=3 (for streamjobs created later in this session and its "
        "SELECT previews; existing streamjobs keep theirs)")
    rows = {r[0]: r[1:] for r in run(ex, "SET").rows}
    assert rows["spark.sql.shuffle.partitions"] == ("3", "SET")
    run(ex, "RESET spark.sql.shuffle.partitions")
    assert "spark.sql.shuffle.partitions" not in {r[0] for r in run(ex, "SET").rows}
    with pytest.raises(PropertyError, match="must be true or false, got 'maybe'") as info:
        run(ex, "SET morphling.result.auto.flush = maybe")
    assert info.value.column == 35


def _fake_checkpoints(ex, job, ids):
    ckdir = Path(ex.home.checkpoint_dir(job.database, job.name))
    for log in ("offsets", "commits"):
        (ckdir / log).mkdir(parents=True, exist_ok=True)
        for i in ids:
            (ckdir / log / str(i)).write_text("v1")
    now = datetime.now(timezone.utc)
    for i in ids:
        ex.catalog.record_checkpoint(job.uid, i, started_at=now, ended_at=now, duration_ms=1,
                                     source_offsets={}, input_rows=1, retained=5)
    return ckdir


def test_start_from_a_retained_checkpoint_removes_the_later_logs(ex):
    run(ex, 'CREATE STREAMJOB j AS ("insert into totals select k, sum(v) from s group by k")')
    job = ex.catalog.get_job("default", "j")
    ckdir = _fake_checkpoints(ex, job, [3, 4, 5, 6])
    with pytest.raises(JobError, match="checkpoint 9 of streamjob default.j is not retained; "
                                       "retained: 3, 4, 5, 6") as info:
        run(ex, "START STREAMJOB j FROM CHECKPOINT 9")
    assert info.value.column == 35
    msg = run(ex, "START STREAMJOB j FROM CHECKPOINT 4").message
    assert "from checkpoint 4 (checkpoints 5, 6 removed); checkpoint epoch " in msg
    # what restoring 4 needs, as a savepoint holds it, under a new epoch (the directory
    # had no identity: adopted with the empty epoch, as START adopts it)
    assert sorted(p.name for p in (ckdir / "offsets").iterdir()) == ["3", "4"]
    assert sorted(p.name for p in (ckdir / "commits").iterdir()) == ["4"]
    assert identity.read(str(ckdir)).epoch not in ("", None)
    assert msg.endswith(f"checkpoint epoch {identity.read(str(ckdir)).epoch}")
    assert [c.checkpoint_id for c in ex.catalog.list_checkpoints(job.uid)] == [3, 4]
    assert ex.catalog.get_job("default", "j").desired_state == "RUNNING"


def test_start_from_checkpoint_completes_a_rewind_killed_between_its_renames(ex):
    """A rewind killed after moving the directory aside (<dir>.replaced) and before moving
    the new one in (<dir>.restoring, partial here) is completed by running it again: the
    checkpoint's files are taken from the directory moved aside."""
    run(ex, 'CREATE STREAMJOB j AS ("insert into totals select k, sum(v) from s group by k")')
    job = ex.catalog.get_job("default", "j")
    ckdir = _fake_checkpoints(ex, job, [3, 4, 5])
    first = identity.prepare(str(ckdir), job, None)
    ckdir.rename(str(ckdir) + ".replaced")
    (Path(str(ckdir) + ".restoring") / "offsets").mkdir(parents=True)
    msg = run(ex, "START STREAMJOB j FROM CHECKPOINT 4").message
    assert "from checkpoint 4 (checkpoints 5 removed); checkpoint epoch " in msg
    assert sorted(p.name for p in (ckdir / "commits").iterdir()) == ["4"]
    assert identity.read(str(ckdir)).epoch not in ("", first.epoch)
    assert not Path(str(ckdir) + ".replaced").exists()
    assert not Path(str(ckdir) + ".restoring").exists()


def test_start_from_checkpoint_is_refused_while_running(ex):
    run(ex, 'CREATE STREAMJOB j AS ("insert into totals select k, sum(v) from s group by k")')
    job = ex.catalog.get_job("default", "j")
    _fake_checkpoints(ex, job, [1])
    ex.catalog.update_job("default", "j", status="RUNNING", desired_state="RUNNING")
    with pytest.raises(JobError, match="is running; STOP it before"):
        run(ex, "START STREAMJOB j FROM CHECKPOINT 1")


def test_dry_run_drop_keeps_checkpoint_files(ex):
    run(ex, 'CREATE STREAMJOB j AS ("insert into totals select k, sum(v) from s group by k")')
    ckdir = _fake_checkpoints(ex, ex.catalog.get_job("default", "j"), [1])
    dry = Executor(ex.catalog, ex.home, dry_run=True)
    assert run(dry, "DROP STREAMJOB j").message == "streamjob default.j can be dropped"
    assert (ckdir / "commits" / "1").exists()


def test_check_runs_against_a_scratch_copy_of_the_catalog(ex):
    from streamjob.client.check import check_script, scratch_catalog

    run(ex, 'CREATE STREAMJOB j AS ("insert into totals select k, sum(v) from s group by k")')
    job = ex.catalog.get_job("default", "j")
    _fake_checkpoints(ex, job, [2, 3])
    script = "START STREAMJOB j FROM CHECKPOINT 2;\nDROP STREAMJOB j;\nDROP TABLE totals;"
    report = check_script(script, "x.sql", scratch_catalog(ex.catalog), ex.home)
    assert report.statements == 3
    with pytest.raises(JobError, match="retained: 2, 3") as info:
        check_script("\nSTART STREAMJOB j FROM CHECKPOINT 9;", "x.sql",
                     scratch_catalog(ex.catalog), ex.home)
    assert (info.value.source, info.value.line, info.value.column) == ("x.sql", 2, 35)
    # the real catalog and checkpoints are untouched
    after = ex.catalog.get_job("default", "j")
    assert after.desired_state == "STOPPED" and after.uid == job.uid
    assert [c.checkpoint_id for c in ex.catalog.list_checkpoints(job.uid)] == [2, 3]
    assert ex.catalog.get_table("default", "totals") is not None


def test_start_refuses_a_sink_table_whose_schema_does_not_match(ex, tmp_path):
    """An existing SQL sink table is checked at START STREAMJOB (DESIGN §7): a mismatch is
    an error before the job starts, naming the column, and the job is not started."""
    import sqlalchemy as sa

    from streamjob.exceptions import SchemaMismatch

    url = f"sqlite:///{tmp_path}/sink.db"
    with sa.create_engine(url).begin() as conn:
        conn.execute(sa.text("CREATE TABLE agg (k TEXT PRIMARY KEY, total BLOB)"))
    run(ex, f"""CREATE TABLE agg (k STRING, total DOUBLE)
      TBLPROPERTIES ("connector"="sql", "url"="{url}", "primary.key"="k");
    CREATE STREAMJOB j AS ("insert into agg select k, sum(v) from s group by k");""")
    with pytest.raises(SchemaMismatch, match="total") as err:
        run(ex, "START STREAMJOB j;")
    assert "DOUBLE" in str(err.value).upper()
    assert ex.catalog.require_job("default", "j").desired_state != "RUNNING"


def test_every_statement_type_has_exactly_one_handler():
    """The explicit table from statement type to handler (issue 14) covers every
    statement class of the grammar, and nothing else."""
    import inspect

    from streamjob.executor import HANDLERS
    from streamjob.grammar import statements as st

    kinds = {c for _, c in inspect.getmembers(st, inspect.isclass)
             if issubclass(c, st.Statement) and c is not st.Statement}
    assert set(HANDLERS) == kinds
