"""Shadow runs (issue 30 point 4): the statements' grammar, the shadow properties, and the
comparison of two outputs (executor/shadow_diff.py)."""

from __future__ import annotations

import decimal

import pytest

from streamjob.exceptions import ParseError, PropertyError
from streamjob.security.policy import PolicyError
from streamjob.executor.shadow_diff import compare
from streamjob.executor.shadow_run import limits
from streamjob.grammar import parse_script
from streamjob.grammar import statements as st

pytestmark = pytest.mark.unit


def test_the_shadow_statements_parse():
    a, p, d, s = parse_script(
        "ALTER STREAMJOB db.j AS (\"insert into out select id from events where id > 1\") "
        "WITH SHADOW JOBPROPERTIES('shadow.batches'='3');\n"
        "promote shadow for streamjob j; DISCARD SHADOW FOR STREAMJOB `j`;"
        "Show Shadow For Streamjob j")
    assert isinstance(a, st.AlterShadow) and a.name == st.QualifiedName("j", "db")
    assert a.query == "insert into out select id from events where id > 1"
    assert a.properties == (("shadow.batches", "3"),)
    assert (a.query_position.line, a.query_position.column) == (1, 27)
    assert isinstance(p, st.PromoteShadow) and isinstance(d, st.DiscardShadow)
    assert isinstance(s, st.ShowShadow) and s.name == st.QualifiedName("j")
    (bare,) = parse_script("alter streamjob j as 'insert into out select 1' with shadow")
    assert isinstance(bare, st.AlterShadow) and bare.properties == ()
    # the other ALTER still parses
    (alter,) = parse_script("ALTER STREAMJOB j SET JOBPROPERTIES('streamjob.trigger.interval'='1s')")
    assert isinstance(alter, st.AlterStreamJob)


def test_shadow_statement_errors_name_line_and_column():
    with pytest.raises(ParseError) as err:
        parse_script("PROMOTE SHADOW FOR j")
    assert (err.value.line, err.value.column) == (1, 20)
    with pytest.raises(ParseError, match="did you mean SHADOW"):
        parse_script("ALTER STREAMJOB j AS ('insert into out select 1') WITH SHADOWS")
    with pytest.raises(ParseError, match="empty"):
        parse_script("ALTER STREAMJOB j AS ('  ') WITH SHADOW")


def test_shadow_limits_from_the_registry():
    assert limits({}).batches == 5 and limits({}).duration_ms is None
    only_time = limits({"shadow.duration": "30s"})
    assert only_time.batches is None and only_time.bound_ms == 30_000
    both = limits({"shadow.batches": "2", "shadow.duration": "1 min"})
    assert both.batches == 2 and both.bound_ms == 60_000
    with pytest.raises(PropertyError, match="did you mean 'shadow.batches'"):
        limits({"shadow.batch": "2"})
    with pytest.raises(PropertyError):
        limits({"shadow.batches": "0"})


def test_scratch_copies_of_each_sink_kind_are_never_the_live_one():
    from streamjob.connectors import spec as cspec
    from streamjob.connectors.scratch import scratch_copies
    from streamjob.exceptions import JobError

    sql = cspec.SqlTableSpec(url="sqlite:////tmp/x.db", table="out", primary_key=("id",))
    kafka = cspec.KafkaTableSpec(topic="out", bootstrap="h:9092")
    files = cspec.FileTableSpec(format="parquet", location="/data/out/", header=False)
    delta = cspec.DeltaTableSpec(location="/data/t")
    names = {kind: [c.name for c in scratch_copies(spec, "j")]
             for kind, spec in (("sql", sql), ("kafka", kafka), ("files", files),
                                ("delta", delta))}
    assert names == {"sql": ["table out__shadow_j", "table out__shadow_j__old"],
                     "kafka": ["topic out__shadow_j", "topic out__shadow_j__old"],
                     "files": ["directory /data/out__shadow_j", "directory /data/out__shadow_j__old"],
                     "delta": ["Delta table /data/t__shadow_j", "Delta table /data/t__shadow_j__old"]}
    assert [c.key for c in scratch_copies(sql, "j")] == [("id",), ("id",)]
    with pytest.raises(JobError, match="console"):
        scratch_copies(cspec.ConsoleTableSpec(), "j")
    with pytest.raises(JobError, match="only local"):
        scratch_copies(cspec.FileTableSpec(format="parquet", location="hdfs://nn/out",
                                           header=False), "j")


def test_keyed_comparison_by_primary_key():
    old = [{"id": 1, "n": 10}, {"id": 2, "n": 20}, {"id": 3, "n": 30}]
    new = [{"id": 2, "n": 21}, {"id": 3, "n": 30}, {"id": 4, "n": 40}]
    out = compare(old, new, ["id"])
    assert out["keyed"] and out["same"] == 1
    assert out["only_old"] == {"count": 1, "samples": [{"id": 1, "n": 10}]}
    assert out["only_new"] == {"count": 1, "samples": [{"id": 4, "n": 40}]}
    assert out["changed"] == {"count": 1, "samples": [
        {"key": {"id": 2}, "old": {"id": 2, "n": 20}, "new": {"id": 2, "n": 21},
         "columns": ["n"]}]}


def test_multiset_comparison_counts_duplicates():
    old = [{"a": 1}, {"a": 1}, {"a": 2}]
    new = [{"a": 1}, {"a": 3}, {"a": 3}]
    out = compare(old, new)
    assert not out["keyed"] and out["same"] == 1
    assert out["only_old"]["count"] == 2 and out["only_old"]["samples"] == [{"a": 1}, {"a": 2}]
    assert out["only_new"]["count"] == 2 and out["only_new"]["samples"] == [{"a": 3}, {"a": 3}]
    assert out["changed"] == {"count": 0, "samples": []}


def test_a_new_column_is_compared_as_missing_on_the_old_side():
    out = compare([{"id": 1}], [{"id": 1, "extra": "x"}], ["id"])
    assert out["columns"] == ["id", "extra"]
    assert out["changed"]["samples"][0]["columns"] == ["extra"]


def test_samples_are_capped_at_twenty_and_values_normalised():
    old = [{"id": i, "v": decimal.Decimal("1.5")} for i in range(50)]
    out = compare(old, [{"id": i, "v": 1.5} for i in range(10)], ["id"])
    assert out["same"] == 10 and out["only_old"]["count"] == 40
    assert len(out["only_old"]["samples"]) == 20
    assert out["only_old"]["samples"][0]["v"] == 1.5


def test_only_show_shadow_is_a_viewers_statement():
    from streamjob.api.auth import READ_ONLY

    assert issubclass(st.ShowShadow, READ_ONLY)
    for cls in (st.AlterShadow, st.PromoteShadow, st.DiscardShadow):
        assert not issubclass(cls, READ_ONLY)


@pytest.fixture
def executor(tmp_path):
    """An executor on a fresh SQLite catalog (no Spark, no job manager) with a SQL sink
    job ``j`` and a file sink job ``f``."""
    from streamjob.catalog import Catalog
    from streamjob.executor import Executor
    from streamjob.home import Home

    catalog = Catalog(f"sqlite:///{tmp_path}/catalog.db")
    ex = Executor(catalog, Home.open(tmp_path / "home"))
    for s in parse_script(f"""
        CREATE STREAM ev (id INT, name STRING) TBLPROPERTIES ("topic"="ev", "kafka.broker.list"="h:9092");
        CREATE STREAM other (id INT, name STRING) TBLPROPERTIES ("topic"="o", "kafka.broker.list"="h:9092");
        CREATE TABLE out (id INT, name STRING) TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{tmp_path}/s.db");
        CREATE TABLE files (id INT, name STRING) STORED AS PARQUET;
        CREATE STREAMJOB j AS ("insert into out select id, name from ev");
        CREATE STREAMJOB f AS ("insert into files select id, name from ev");"""):
        ex.execute(s)
    yield ex
    catalog.close()


def one(ex, sql: str):
    return ex.execute(parse_script(sql)[0])


def test_shadow_statements_refuse_before_anything_runs(executor):
    from streamjob.catalog.records import Role
    from streamjob.exceptions import AccessDeniedError, JobError, ValidationError

    executor.role = Role.VIEWER
    for sql in ("ALTER STREAMJOB j AS ('insert into out select id, name from ev') WITH SHADOW",
                "PROMOTE SHADOW FOR STREAMJOB j", "DISCARD SHADOW FOR STREAMJOB j"):
        with pytest.raises(AccessDeniedError, match="rights of ALTER STREAMJOB"):
            one(executor, sql)
    executor.role = Role.OPERATOR
    with pytest.raises(JobError, match="has no shadow"):
        one(executor, "SHOW SHADOW FOR STREAMJOB j")
    with pytest.raises(JobError, match="has no shadow"):
        one(executor, "DISCARD SHADOW FOR STREAMJOB j")
    with pytest.raises(JobError, match="its source streams change .*so a shadow cannot run from its checkpoint"):
        one(executor, "ALTER STREAMJOB j AS ('insert into out select id, name from other') "
                      "WITH SHADOW")
    # a scratch copy is where the admin lets an operator write: a file table's sibling
    # directory outside the file roots (here: the live table's directory alone) is refused
    from streamjob.home import Home

    live = str(executor.home.warehouse / "default" / "files")
    allowed = executor.home
    executor.home = Home.open(allowed.root, {"streamjob.security.file.roots": live})
    with pytest.raises(PolicyError, match="files__shadow_f"):
        one(executor, "ALTER STREAMJOB f AS ('insert into files select id, upper(name) from ev') "
                      "WITH SHADOW")
    executor.home = allowed
    with pytest.raises(ValidationError) as err:  # the new query is checked as CREATE's
        one(executor, "ALTER STREAMJOB j AS ('insert into out select id, nmae from ev') "
                      "WITH SHADOW")
    assert err.value.line == 1
    with pytest.raises(PropertyError, match="did you mean 'shadow.duration'"):
        one(executor, "ALTER STREAMJOB j AS ('insert into out select id, name from ev') "
                      "WITH SHADOW JOBPROPERTIES('shadow.durations'='3s')")
    # without Spark in this process, the shadow is not run here
    with pytest.raises(JobError, match="in a process with Spark"):
        one(executor, "ALTER STREAMJOB j AS ('insert into out select id, upper(name) from ev') "
                      "WITH SHADOW")
    executor.dry_run = True
    assert "can run" in one(executor, "ALTER STREAMJOB j AS ('insert into out select id, "
                                      "upper(name) from ev') WITH SHADOW").message


def test_discard_and_drop_streamjob_remove_a_shadows_scratch_tables_and_folder(executor, tmp_path):
    """A shadow's record names its scratch tables; DISCARD drops them (never the live
    table) and the folder, and so does DROP STREAMJOB."""
    import sqlite3
    from pathlib import Path

    from streamjob.executor import shadow_run

    def leave_a_shadow() -> Path:
        job = executor.catalog.get_job("default", "j")
        location = shadow_run.folder(executor.home, "default", "j")
        Path(location).mkdir(parents=True, exist_ok=True)
        shadow_run.write_record(location, {
            "job_uid": job.uid, "job": "default.j", "status": "compared",
            "query": job.query, "new_table": "out__shadow_j", "old_table": "out__shadow_j__old",
            "new_sink": "default.out", "old_sink": "default.out", "comparison": {}})
        with sqlite3.connect(tmp_path / "s.db") as db:
            for t in ("out", "out__shadow_j", "out__shadow_j__old"):
                db.execute(f"CREATE TABLE IF NOT EXISTS {t} (id INT, name TEXT)")
        return Path(location)

    def tables() -> set[str]:
        with sqlite3.connect(tmp_path / "s.db") as db:
            return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}

    folder = leave_a_shadow()
    shown = one(executor, "SHOW SHADOW FOR STREAMJOB j")
    assert shown.data["new_table"] == "out__shadow_j"
    msg = one(executor, "DISCARD SHADOW FOR STREAMJOB j").message
    assert msg == ("shadow of streamjob default.j discarded; scratch table out__shadow_j, "
                   "table out__shadow_j__old dropped")
    assert tables() == {"out"} and not folder.exists()
    folder = leave_a_shadow()
    one(executor, "DROP STREAMJOB j")
    assert tables() == {"out"} and not folder.exists()
