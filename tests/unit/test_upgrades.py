"""Query upgrades (issue 30; docs/upgrades.md) without Spark: the grammar of ALTER
STREAMJOB ... AS and CREATE OR REPLACE STREAMJOB, the classifier over real plans from a
SQLite catalog, the planned fingerprint on a real checkpoint directory, and the
executor's refusals, roles and query versions (a stopped job; the running switch is in
tests/integration/test_upgrades.py)."""

from __future__ import annotations

import pytest

from streamjob.catalog import Catalog
from streamjob.catalog.records import Role
from streamjob.checkpoint import fingerprint
from streamjob.exceptions import AccessDeniedError, ChangedLogic, JobError, ParseError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.grammar import statements as st
from streamjob.home import Home
from streamjob.planner.plan import plan_job
from streamjob.planner.upgrade import ChangeKind, classify

pytestmark = pytest.mark.unit

SETUP = """
CREATE STREAM events (id INT, name STRING, ts TIMESTAMP) TBLPROPERTIES ("topic"="t",
  "kafka.broker.list"="h:9092", "format"="json", "watermark.column"="ts",
  "watermark.delay"="1 second");
CREATE STREAM other (id INT, v STRING) TBLPROPERTIES ("topic"="t2", "kafka.broker.list"="h:9092");
CREATE TABLE counts (name STRING, n BIGINT, label STRING)
  TBLPROPERTIES ("connector"="sql", "url"="sqlite:////tmp/x.db", "primary.key"="name");
CREATE TABLE copy (id INT, name STRING, label STRING)
  TBLPROPERTIES ("connector"="sql", "url"="sqlite:////tmp/x.db");
"""

COUNT = "insert into counts (name, n) select name, count(*) from events group by name"
COPY = "insert into copy (id, name) select id, name from events"


@pytest.fixture
def ex(tmp_path):
    home = Home.open(tmp_path / "home")
    catalog = Catalog(home.catalog_url)
    ex = Executor(catalog, home, principal="local:alice")
    for stmt in parse_script(SETUP):
        ex.execute(stmt)
    yield ex
    catalog.close()


def run(ex, sql: str):
    return ex.execute(parse_script(sql)[0])


def plan(ex, query: str):
    return plan_job(ex.catalog, ex.home, "default", "j", query, {}, {})


# ---------------------------------------------------------------- grammar


def test_the_grammar_of_both_forms_and_the_chosen_epoch():
    [alter] = parse_script('ALTER STREAMJOB j AS ("insert into t select a from s");')
    assert alter == st.ReplaceStreamJobQuery(
        name=st.QualifiedName("j"), query="insert into t select a from s",
        query_position=st.Position(1, 24))
    [again] = parse_script("alter streamjob db.j as 'insert into t select a from s' "
                           "from timestamp '2026-01-01 00:00:00';")
    assert (again.name, again.start_from, again.or_replace) == (
        st.QualifiedName("j", "db"), "1767225600000", False)
    assert again.where("from") == st.Position(1, 57)
    [replace] = parse_script("CREATE OR REPLACE STREAMJOB j AS ('insert into t select a from s')\n"
                             "  JOBPROPERTIES ('morphling.checkpoint.retained'='3') FROM EARLIEST;")
    assert (replace.or_replace, replace.properties, replace.start_from) == (
        True, (("morphling.checkpoint.retained", "3"),), "earliest")
    # the SET form stays
    [props] = parse_script("ALTER STREAMJOB j SET JOBPROPERTIES ('a'='b');")
    assert props == st.AlterStreamJob(name=st.QualifiedName("j"), properties=(("a", "b"),))


def test_grammar_errors_name_their_place():
    with pytest.raises(ParseError, match="the query of a STREAMJOB is empty"):
        parse_script("ALTER STREAMJOB j AS ('  ');")
    with pytest.raises(ParseError) as info:
        parse_script("ALTER STREAMJOB j AS ('insert into t select 1') FROM LATEST;")
    assert info.value.line == 1 and "LATEST" in str(info.value)


# ---------------------------------------------------------------- classifier


def test_a_stateless_change_keeps_the_offsets(ex):
    change = classify(plan(ex, COPY), plan(ex, "insert into copy select id, name, "
                                               "upper(name) from events where id % 2 = 0"))
    assert change.kind is ChangeKind.STATELESS and change.keeps_offsets
    assert change.summary() == "stateless change: the offsets are kept"


def test_an_aggregation_gaining_a_column_over_its_keys_keeps_its_state(ex):
    change = classify(plan(ex, COUNT), plan(
        ex, "insert into counts select events.name, count(*), concat(name, '!') "
            "from events group by events.name"))
    assert change.kind is ChangeKind.COMPATIBLE and change.keeps_state
    assert change.as_json() == {"class": "compatible", "reasons": [], "operator": None,
                                "column": None, "keeps_offsets": True, "keeps_state": True,
                                "choices": [], "judge": "planner"}


def test_changed_grouping_keys_are_incompatible_naming_operator_and_column(ex):
    change = classify(plan(ex, COUNT), plan(
        ex, "insert into counts (name, n) select cast(id as string), count(*) from events "
            "group by id"))
    assert change.kind is ChangeKind.INCOMPATIBLE and not change.keeps_state
    assert (change.operator, change.column) == ("streaming aggregation", "name")
    assert change.reasons == ("streaming aggregation: its grouping keys change (name removed; "
                              "id added): its state is kept by key",)
    assert change.choices == ("FROM EARLIEST", "FROM TIMESTAMP 'yyyy-MM-dd HH:mm:ss'",
                              "WITH STATE RESET")


def test_a_new_aggregate_changes_the_state_value(ex):
    change = classify(plan(ex, COUNT), plan(
        ex, "insert into counts (name, n) select name, sum(id) from events group by name"))
    assert change.kind is ChangeKind.INCOMPATIBLE
    assert change.reasons[0].startswith("streaming aggregation: its aggregates change "
                                        "(count(*) removed; sum(id) added)")
    assert change.column == "sum(id)"


def test_state_gained_or_lost_and_new_sources_are_incompatible(ex):
    lost = classify(plan(ex, COUNT), plan(ex, "insert into counts (name) select name from events"))
    assert lost.kind is ChangeKind.INCOMPATIBLE and lost.operator == "streaming aggregation"
    assert "no longer keeps the state of its streaming aggregation" in lost.reasons[0]
    joined = classify(plan(ex, COPY), plan(
        ex, "insert into copy select a.id, a.name, b.v from events a join other b on a.id = b.id"))
    assert joined.operator == "sources" and joined.column is None
    assert "default.other read" in joined.reasons[0]
    assert "now keeps state (stream-stream join on a.id = b.id)" in joined.reasons[1]


# ---------------------------------------------------------------- fingerprint


def test_a_planned_change_is_accepted_and_an_unplanned_one_still_refused(ex, tmp_path):
    ckdir = tmp_path / "ck"
    (ckdir / "offsets").mkdir(parents=True)
    (ckdir / "offsets" / "0").write_text("v1")
    fingerprint.write(str(ckdir), fingerprint.of_plan(plan(ex, COUNT)))
    grown = plan(ex, "insert into counts select name, count(*), upper(name) from events "
                     "group by name")
    with pytest.raises(ChangedLogic):  # unplanned
        fingerprint.check(str(ckdir), grown)
    assert fingerprint.plan_change(str(ckdir), fingerprint.of_plan(grown))
    assert fingerprint.check(str(ckdir), grown) == fingerprint.of_plan(grown)
    assert fingerprint.check(str(ckdir), plan(ex, COUNT))  # killed before the switch: old runs
    with pytest.raises(ChangedLogic):  # a third query is neither
        fingerprint.check(str(ckdir), plan(ex, "insert into counts (name, n) select name, "
                                               "max(id) from events group by name"))
    fingerprint.write(str(ckdir), fingerprint.of_plan(grown))  # the new query's start
    assert not (ckdir / fingerprint.NEXT_NAME).exists()
    with pytest.raises(ChangedLogic):  # the old query is now the unplanned one
        fingerprint.check(str(ckdir), plan(ex, COUNT))


# ---------------------------------------------------------------- executor


def test_alter_of_a_stopped_job_records_versions_shown_by_describe(ex):
    run(ex, f'CREATE STREAMJOB j AS ("{COUNT}");')
    msg = run(ex, 'ALTER STREAMJOB j AS ("insert into counts select name, count(*), '
                  'upper(name) from events group by name");')
    assert msg.message.startswith("streamjob default.j altered to version 2: stateful change "
                                  "with compatible state")
    assert msg.data["change"]["class"] == "compatible"
    bob = Executor(ex.catalog, ex.home, principal="token:bob", role=Role.OPERATOR)
    run(bob, "CREATE OR REPLACE STREAMJOB j AS ('insert into counts select name, count(*), "
             "lower(name) from events group by name') "
             "JOBPROPERTIES ('morphling.checkpoint.retained'='3');")
    job = ex.catalog.get_job("default", "j")
    assert job.properties == {"morphling.checkpoint.retained": "3"}
    described = run(ex, "DESCRIBE STREAMJOB j;")
    versions = described.data["versions"]
    assert [(v["version"], v["principal"], v["change"]) for v in versions] == [
        (1, "local:alice", None), (2, "local:alice", "compatible"), (3, "token:bob", "compatible")]
    assert versions[0]["query"] == COUNT and "lower(name)" in versions[2]["query"]
    section = next(r for r in described.sections if r.title == "query versions")
    assert [row[:4] for row in section.rows][0][0] == 1 and len(section.rows) == 3


def test_create_or_replace_creates_a_missing_job(ex):
    out = run(ex, f"CREATE OR REPLACE STREAMJOB fresh AS ('{COPY}');")
    assert out.message.startswith("streamjob default.fresh created")
    assert [v.version for v in ex.catalog.list_job_versions(
        ex.catalog.get_job("default", "fresh").uid)] == [1]


def test_an_incompatible_change_is_refused_unless_an_epoch_is_chosen(ex):
    run(ex, f'CREATE STREAMJOB j AS ("{COUNT}");')
    changed = ("insert into counts (name, n) select cast(id as string), count(*) "
               "from events group by id")
    with pytest.raises(JobError) as info:
        run(ex, f'ALTER STREAMJOB j AS (\n"{changed}");')
    err = info.value
    assert "incompatible change: streaming aggregation: its grouping keys change (name " \
           "removed; id added)" in err.message
    assert "FROM EARLIEST or FROM TIMESTAMP" in err.message
    assert (err.line, err.column) == (2, 2)  # at the query
    assert ex.catalog.get_job("default", "j").query == COUNT  # nothing changed
    out = run(ex, f'ALTER STREAMJOB j AS ("{changed}") FROM EARLIEST;')
    assert "altered to version 2: incompatible change" in out.message
    assert "over from earliest (checkpoint epoch" in out.message
    assert ex.catalog.get_job("default", "j").query == changed


def test_a_job_without_checkpoints_takes_any_change(ex):
    run(ex, f'CREATE STREAMJOB j AS ("{COUNT}") '
            'JOBPROPERTIES ("morphling.job.enable.checkpoint"="false");')
    out = run(ex, "ALTER STREAMJOB j AS ('insert into counts (name, n) select cast(id as string), "
                  "count(*) from events group by id');")
    assert "altered to version 2: incompatible change" in out.message
    assert out.message.endswith("(it keeps no checkpoint: each start begins at its streams' "
                                "reset strategy)")


def test_from_is_refused_for_a_change_that_keeps_the_checkpoint(ex):
    run(ex, f'CREATE STREAMJOB j AS ("{COPY}");')
    with pytest.raises(JobError, match="needs no new checkpoint epoch: leave out FROM") as info:
        run(ex, "ALTER STREAMJOB j AS ('insert into copy (id) select id from events') "
                "FROM EARLIEST;")
    assert info.value.column == 70  # at FROM


def test_a_viewer_may_not_alter_and_the_new_query_passes_the_policy(ex):
    run(ex, f'CREATE STREAMJOB j AS ("{COPY}");')
    viewer = Executor(ex.catalog, ex.home, role=Role.VIEWER)
    for sql in (f"ALTER STREAMJOB j AS ('{COPY}');",
                f"CREATE OR REPLACE STREAMJOB j AS ('{COPY}');"):
        with pytest.raises(AccessDeniedError, match="a viewer cannot"):
            run(viewer, sql)
    with pytest.raises(Exception) as info:  # the SQL policy, as at CREATE
        run(ex, "ALTER STREAMJOB j AS ('insert into copy (id) select reflect(\"java.lang.System\", "
                "\"exit\", 1) from events');")
    assert "reflect" in str(info.value).lower()
    assert ex.catalog.get_job("default", "j").query == COPY


# ---------------------------------------------------------------- the SQL sink's rule


def test_a_sql_sink_gains_a_typed_column_as_nullable(tmp_path):
    import sqlalchemy as sa

    home = Home.open(tmp_path / "home")
    catalog = Catalog(home.catalog_url)
    ex = Executor(catalog, home, principal="local:alice")
    db = tmp_path / "sink.db"
    for stmt in parse_script(f"""
        CREATE STREAM events (id INT, name STRING) TBLPROPERTIES ("topic"="t",
          "kafka.broker.list"="h:9092", "format"="json");
        CREATE TABLE plain (id INT, name STRING)
          TBLPROPERTIES ("connector"="sql", "url"="sqlite:///{db}");
        CREATE TABLE files (id INT) STORED AS PARQUET;
        CREATE STREAMJOB j AS ("insert into plain select id, name from events");
        CREATE STREAMJOB f AS ("insert into files select id from events");"""):
        ex.execute(stmt)
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:  # the table as the job's first run created it
        conn.execute(sa.text("CREATE TABLE plain (id INTEGER, name TEXT)"))
        conn.execute(sa.text("INSERT INTO plain VALUES (1, 'a')"))

    with pytest.raises(Exception) as info:  # a computed value has no known type
        run(ex, "ALTER STREAMJOB j AS ('insert into plain select id, name, upper(name) AS tag "
                "from events');")
    assert "needs a type: write CAST(... AS type)" in str(info.value)
    assert info.value.line == 1 and info.value.column == 49  # at the select list
    out = run(ex, "ALTER STREAMJOB j AS ('insert into plain select id, name, "
                  "cast(upper(name) as string) as tag from events');")
    assert "table default.plain gains the nullable column(s) tag string" in out.message
    assert [c["name"] for c in catalog.get_table("default", "plain").columns] == [
        "id", "name", "tag"]
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT id, name, tag FROM plain")).all() == [(1, "a", None)]
    # another sink's columns are fixed: refused at the column, as at CREATE
    with pytest.raises(Exception, match="table default.files has no column extra"):
        run(ex, "ALTER STREAMJOB f AS ('insert into files (id, extra) select id, 1 from events');")
    catalog.close()


# ---------------------------------------------------------------- EXPLAIN ALTER


def test_explain_alter_classifies_and_changes_nothing(ex):
    run(ex, f'CREATE STREAMJOB j AS ("{COUNT}")')
    before = ex.catalog.require_job("default", "j")
    kept = run(ex, 'EXPLAIN ALTER STREAMJOB j AS ("insert into counts select name, count(*), '
                   'upper(name) from events group by name")')
    assert kept.data["change"]["class"] == "compatible" and kept.data["accepted"]
    rows = dict(kept.rows)
    assert rows["change class"] == "compatible" and rows["keeps state"] == "yes"
    bad = run(ex, 'EXPLAIN ALTER STREAMJOB j AS ("insert into counts (name, n) '
                  'select cast(id as string), count(*) from events group by id")')
    assert bad.data["change"]["class"] == "incompatible"
    assert not bad.data["accepted"] and "FROM" in bad.data["refusal"]
    assert any("grouping keys" in r for r in bad.data["change"]["reasons"])
    chosen = run(ex, 'EXPLAIN CREATE OR REPLACE STREAMJOB j AS ("insert into counts (name, n) '
                     'select cast(id as string), count(*) from events group by id") FROM EARLIEST')
    assert chosen.data["accepted"] and chosen.data["change"]["keeps_offsets"] is False
    fresh = run(ex, f'EXPLAIN CREATE OR REPLACE STREAMJOB other_job AS ("{COPY}")')
    assert fresh.data["exists"] is False and fresh.data["change"] is None
    after = ex.catalog.require_job("default", "j")
    assert (after.query, after.properties) == (before.query, before.properties)
    assert ex.catalog.get_job("default", "other_job") is None
    with pytest.raises(Exception, match="other_job"):
        run(ex, f'EXPLAIN ALTER STREAMJOB other_job AS ("{COPY}")')
