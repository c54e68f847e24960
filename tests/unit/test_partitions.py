"""PARTITIONED BY of file tables: grammar (Hive's typed columns and Spark's names),
located errors, the executor's checks, the catalog record, DESCRIBE/SHOW and the
planner's file-table spec. No Spark (tests/integration/test_files_and_static.py runs it)."""

from __future__ import annotations

import pytest

from streamjob.catalog import Catalog
from streamjob.connectors import spec as cspec
from streamjob.exceptions import ParseError, StreamJobError, ValidationError
from streamjob.executor import Executor
from streamjob.grammar import parse_script, parse_statement
from streamjob.grammar.statements import Column, CreateTable, Position, QualifiedName, RowFormat
from streamjob.home import Home
from streamjob.planner.plan import plan_job

pytestmark = pytest.mark.unit


def error_of(text: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse_script(text, source="t.sql")
    return info.value


# ------------------------------------------------------------------------- grammar


def test_hive_partitioned_by_declares_columns_appended_last():
    stmt = parse_statement(
        "CREATE TABLE sales (id BIGINT, amount DOUBLE)\n"
        "  PARTITIONED BY (dt STRING COMMENT 'the day', `Hour` INT)\n"
        "  ROW FORMAT DELIMITED FIELDS TERMINATED BY '|'\n"
        "  STORED AS CSV LOCATION 'file:///tmp/sales' TBLPROPERTIES ('k'='v');")
    assert stmt == CreateTable(
        name=QualifiedName("sales"),
        columns=(Column("id", "bigint"), Column("amount", "double"), Column("dt", "string"),
                 Column("Hour", "int")),
        row_format=RowFormat("|"), stored_as="csv", location="file:///tmp/sales",
        properties=(("k", "v"),), partitioned_by=("dt", "Hour"))
    assert stmt.where("partitioned_by") == Position(2, 3)
    assert stmt.where("partition:dt") == Position(2, 19)
    assert stmt.where("column:hour") == stmt.where("partition:hour") == Position(2, 48)


def test_spark_partitioned_by_names_declared_columns():
    stmt = parse_statement("create table t (a int, dt string, b int) stored as parquet "
                           "partitioned by (dt, A)")
    assert stmt.columns == (Column("a", "int"), Column("dt", "string"), Column("b", "int"))
    assert stmt.partitioned_by == ("dt", "a")
    assert stmt.stored_as == "parquet"


def test_names_and_typed_columns_mix_and_clauses_keep_their_order_free():
    stmt = parse_statement("create table t (a int, region string) location '/x' "
                           "partitioned by (region, dt date) stored as json")
    assert [c.name for c in stmt.columns] == ["a", "region", "dt"]
    assert stmt.partitioned_by == ("region", "dt") and stmt.location == "/x"


def test_unpartitioned_table_has_no_partitions():
    assert parse_statement("create table t (a int)").partitioned_by == ()


@pytest.mark.parametrize("text, where, words", [
    ("create table t (a int)\n  partitioned by (dt)", (2, 19, "dt"),
     "partition column 'dt' is not a column of the table; declare it with a type"),
    ("create table t (a int, dt string) partitioned by (dt string)", (1, 51, "dt"),
     "column 'dt' is declared in the column list and again in PARTITIONED BY"),
    ("create table t (a int, b int, c int) partitioned by (b, c, B)", (1, 60, "B"),
     "partition column 'b' is listed twice in PARTITIONED BY"),
    ("create table t (a int) partitioned by (dt string, dt int)", (1, 51, "dt"),
     "partition column 'dt' is listed twice"),
    ("create table t (a int, b int) Partitioned By (a, b)", (1, 31, "Partitioned"),
     "every column is a partition column"),
    ("create table t (a int, b int) partitioned by (a) stored as csv partitioned by (b)",
     (1, 64, "partitioned"), "duplicate PARTITIONED BY clause"),
    ("create table t (a int) partitioned by ()", (1, 40, ")"), "unexpected ')', expected a name"),
    ("create table t (a int) partitioned (a)", (1, 36, "("), "expected BY"),
])
def test_partition_errors_are_located(text, where, words):
    err = error_of(text)
    assert (err.line, err.column, err.text) == where
    assert words in err.message
    assert err.snippet.splitlines()[-1] == " " * (where[1] - 1) + "^"


def test_streams_cannot_be_partitioned():
    err = error_of("create stream s (a int) partitioned by (a)")
    assert (err.line, err.column) == (1, 25)
    assert err.message.startswith("unexpected 'partitioned'")


# ------------------------------------------------------------------------- executor


@pytest.fixture
def ex(tmp_path):
    home = Home.open(tmp_path / "home")
    catalog = Catalog(home.catalog_url)
    yield Executor(catalog, home)
    catalog.close()


def run(ex, script: str):
    return [ex.execute(s) for s in parse_script(script)][-1]


def failure(ex, script: str) -> StreamJobError:
    with pytest.raises(StreamJobError) as info:
        run(ex, script)
    return info.value


def test_create_describe_and_show_a_partitioned_table(ex, tmp_path):
    run(ex, f"CREATE TABLE sales (id BIGINT, region STRING) PARTITIONED BY (region, dt STRING) "
            f"STORED AS PARQUET LOCATION 'file://{tmp_path}/sales';"
            "CREATE TABLE plain (id BIGINT) STORED AS JSON;")
    table = ex.catalog.get_table("default", "sales")
    assert table.partitioned_by == ("region", "dt")
    assert [c["name"] for c in table.columns] == ["id", "region", "dt"]
    assert ex.catalog.get_table("default", "plain").partitioned_by == ()

    described = run(ex, "DESCRIBE TABLE sales").to_json()
    assert described["partitioned_by"] == ["region", "dt"]
    assert described["location"] == f"file://{tmp_path}/sales"
    assert [r["column"] for r in described["columns"]] == ["id", "region", "dt"]
    assert run(ex, "DESCRIBE plain").to_json()["partitioned_by"] == []

    shown = run(ex, "SHOW TABLES").to_json()
    assert shown == [
        {"database": "default", "table": "plain", "connector": "files (json)", "partitioned_by": None},
        {"database": "default", "table": "sales", "connector": "files (parquet)",
         "partitioned_by": "region, dt"},
    ]


@pytest.mark.parametrize("props, kind", [
    ('"connector"="sql", "url"="sqlite:///x.db"', "a SQL table"),
    ('"connector"="console"', "a console table"),
])
def test_only_file_tables_can_be_partitioned(ex, props, kind):
    err = failure(ex, f"CREATE TABLE t (a INT, b INT)\n  PARTITIONED BY (b)\n  TBLPROPERTIES ({props});")
    assert isinstance(err, ValidationError)
    assert (err.line, err.column) == (2, 3)
    assert f"only file, Delta and Iceberg tables can be partitioned: default.t is {kind}" in err.message
    assert ex.catalog.get_table("default", "t") is None


def test_partition_column_types_are_checked_where_declared(ex):
    err = failure(ex, "CREATE TABLE t (a INT)\n  PARTITIONED BY (tags ARRAY<STRING>);")
    assert (err.line, err.column, err.text) == (2, 19, "tags")
    assert "partition column 'tags' has type array<string>" in err.message
    err = failure(ex, "CREATE TABLE t (a INT)\n  PARTITIONED BY (dt strng);")
    assert (err.line, err.column) == (2, 19) and "unknown column type 'strng'" in err.message


def test_plan_carries_partitions_into_the_file_table_spec(ex, tmp_path):
    run(ex, f"""
    CREATE STREAM ev (id BIGINT, kind STRING) TBLPROPERTIES ("source"="files", "path"="{tmp_path}/ev",
      "format"="json");
    CREATE TABLE by_kind (id BIGINT) PARTITIONED BY (kind STRING) STORED AS CSV;
    CREATE TABLE kinds (kind STRING, label STRING) PARTITIONED BY (kind) STORED AS PARQUET;
    """)
    plan = plan_job(ex.catalog, ex.home, "default", "j",
                    "insert into by_kind select e.id, k.kind from ev e join kinds k on e.kind = k.kind",
                    {})
    assert plan.sink_spec == cspec.FileTableSpec(
        "csv", ex.home.table_location("default", "by_kind"), False, ("kind",))
    assert plan.statics[0].spec.partitioned_by == ("kind",)


def test_table_spec_partitions_only_file_tables():
    spec = cspec.table_spec("t", {}, "parquet", None, "/w/t", partitioned_by=("DT", "h"))
    assert spec.partitioned_by == ("dt", "h")
    assert cspec.table_spec("t", {}, None, None, "/w/t").partitioned_by == ()
    assert isinstance(cspec.table_spec("t", {"connector": "console"}, None, None, "/w",
                                       partitioned_by=("a",)), cspec.ConsoleTableSpec)
