"""Delta Lake tables as StreamSQL tables (``STORED AS DELTA``): what the declaration
means (the spec, its TBLPROPERTIES as Delta configuration), how the catalog statements
show it, and where it may live (DESIGN §9: an operator's LOCATION under the admin's file
roots, the home's state never). Writing is tests/integration/test_delta_sink.py."""

from __future__ import annotations

import pytest

from streamjob.catalog import Catalog
from streamjob.catalog.records import Role
from streamjob.connectors import spec as cspec
from streamjob.connectors.sinks import DeltaTableSink, table_sink
from streamjob.exceptions import PropertyError, ValidationError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob.security import PolicyError

pytestmark = pytest.mark.unit


@pytest.fixture
def home(tmp_path):
    return Home.open(tmp_path / "home", {})


def _run(ex: Executor, text: str):
    out = None
    for stmt in parse_script(text):
        out = ex.execute(stmt)
    return out


def _executor(home: Home, role: Role = Role.ADMIN) -> Executor:
    return Executor(Catalog(home.catalog_url), home, role=role)


def test_the_spec_of_a_delta_table():
    sp = cspec.table_spec("t", {"Delta.AppendOnly": "TRUE", "delta.checkpointInterval": "10",
                                "delta.logRetentionDuration": "7 days"}, "DELTA", None,
                          "/w/default/t", partitioned_by=("Day",))
    assert isinstance(sp, cspec.DeltaTableSpec)
    assert sp.location == "/w/default/t" and sp.partitioned_by == ("day",)
    assert dict(sp.configuration) == {"delta.appendOnly": "true",
                                      "delta.checkpointInterval": "10",
                                      "delta.logRetentionDuration": "interval 604800 seconds"}
    assert (sp.on_files, sp.static_readable, sp.updates_in_place) == (True, True, False)
    assert sp.reach().paths == (("/w/default/t", "LOCATION", "location"),)
    assert cspec.DeltaTableSpec("file:///a%20b/t").path == "/a b/t"
    assert cspec.table_scope({}, "delta") == "delta table"
    assert cspec.table_scope({"topic": "x"}, "Delta") == "delta table"
    assert cspec.table_scope({}, "parquet") == "file table"


def test_delta_properties_are_checked_as_a_delta_tables():
    with pytest.raises(PropertyError) as err:
        cspec.table_spec("t", {"topic": "x"}, "delta", "/d", "/w")
    assert "Delta table 't': unknown property 'topic'" in err.value.message
    with pytest.raises(PropertyError) as err:
        cspec.table_spec("t", {"delta.checkpointInterval": "0"}, "delta", "/d", "/w")
    assert err.value.key == "delta.checkpointinterval"
    with pytest.raises(ValidationError) as err:
        cspec.table_spec("t", {}, "delta", "hdfs://nn/t", "/w")
    assert err.value.key == "location" and "nor an object store" in err.value.message


def test_catalog_statements_show_a_delta_table(home, tmp_path):
    ex = _executor(home)
    _run(ex, f"""CREATE STREAM s (value BIGINT) TBLPROPERTIES("source"="rate");
    CREATE TABLE d (id BIGINT, day STRING) PARTITIONED BY (day) STORED AS DELTA
      LOCATION '{tmp_path}/d' TBLPROPERTIES("delta.appendOnly"="true");""")
    assert _run(ex, "SHOW TABLES;").rows == [("default", "d", "delta", "day")]
    described = _run(ex, "DESCRIBE TABLE d;").data
    assert described["connector"] == "delta" and described["location"] == f"{tmp_path}/d"
    text = _run(ex, "SHOW CREATE TABLE d;").text
    assert "STORED AS delta" in text and "PARTITIONED BY (day)" in text
    _run(ex, "DROP TABLE d;")
    _run(ex, text)  # SHOW CREATE's text creates the same table again
    assert _run(ex, "SHOW TABLES;").rows == [("default", "d", "delta", "day")]
    explained = _run(ex, "EXPLAIN insert into d select value, 'x' from s;").data
    assert explained["sink"]["connector"] == "delta"
    assert explained["sink"]["write"] == "append (one Delta commit per micro-batch) partitioned by day"
    assert "Delta app transaction" in explained["guarantee_reason"]
    table = ex.catalog.get_table("default", "d")
    sink = table_sink(table, cspec.spec_of_table(table), marker="u:1", job="default.j",
                      exactly_once=True)
    assert isinstance(sink, DeltaTableSink) and sink.delta.app_id == "u:1"
    # a stream-static join reads the Delta table's latest snapshot at each micro-batch
    joined = _run(ex, "EXPLAIN insert into d select s.value, d.day from s join d on s.value = d.id;")
    assert joined.data["static_tables"] == [{"table": "default.d", "connector": "delta",
                                             "read": "in full at each micro-batch (a "
                                             "stream-static join keeps no state)"}]


def test_a_delta_table_with_a_connector_is_refused_at_the_property(home):
    with pytest.raises(ValidationError) as err:
        _run(_executor(home), 'CREATE TABLE e (a INT) STORED AS DELTA\n'
                              'TBLPROPERTIES("connector"="sql");')
    assert "drop \"connector\"" in err.value.message
    assert err.value.line == 2


def test_an_operators_delta_location_lies_under_the_file_roots(home, tmp_path):
    op = _executor(home, Role.OPERATOR)
    for where in ("/etc/d", str(tmp_path / "elsewhere"), f"file://{tmp_path}/elsewhere"):
        with pytest.raises(PolicyError) as err:
            _run(op, f"CREATE TABLE t (a INT) STORED AS DELTA\nLOCATION '{where}';")
        assert "streamjob.security.file.roots" in err.value.message
        assert (err.value.line, err.value.column) == (2, 10), where
    with pytest.raises(ValidationError) as err:  # the home's state, for anyone
        _run(_executor(home), f"CREATE TABLE t (a INT) STORED AS DELTA\n"
                              f"LOCATION '{home.root}/checkpoints/default/t';")
    assert (err.value.line, err.value.column) == (2, 10)
    _run(op, f"CREATE TABLE a (a INT) STORED AS DELTA LOCATION '{home.root}/data/a';")
    _run(op, "CREATE TABLE w (a INT) STORED AS DELTA;")  # the warehouse default
    assert ex_tables(op) == ["a", "w"]
    # a row written before the rules is refused when a job is planned, for anyone
    _run(op, 'CREATE STREAM s (value BIGINT) TBLPROPERTIES("source"="rate");')
    op.catalog.create_table("default", "x", [{"name": "a", "type": "bigint"}], {}, None,
                            stored_as="delta", location=str(home.root))
    with pytest.raises(PolicyError) as err:
        _run(_executor(home), 'CREATE STREAMJOB j AS ("insert into x select value from s");')
    assert "streamjob home" in err.value.message


def ex_tables(ex: Executor) -> list[str]:
    return sorted(t.name for t in ex.catalog.list_tables())


def test_start_refuses_a_delta_table_of_another_shape(home, tmp_path):
    """An existing Delta table is checked at START STREAMJOB, as a SQL sink table is: a
    difference is an error naming it, before the job starts (its own delta-rs table,
    written here with delta-rs)."""
    import pyarrow as pa
    from deltalake import DeltaTable

    from streamjob.exceptions import SchemaMismatch

    DeltaTable.create(str(tmp_path / "d"), pa.schema([("value", pa.int32())]))
    ex = _executor(home)
    _run(ex, f"""CREATE STREAM s (value BIGINT) TBLPROPERTIES("source"="rate");
    CREATE TABLE d (value BIGINT) STORED AS DELTA LOCATION '{tmp_path}/d';
    CREATE STREAMJOB j AS ("insert into d select value from s");""")
    with pytest.raises(SchemaMismatch) as err:
        _run(ex, "START STREAMJOB j;")
    assert "column value is integer, declared long" in err.value.message
    assert ex.catalog.require_job("default", "j").desired_state != "RUNNING"


def test_a_delta_primary_key_names_declared_columns_and_makes_aggregations_merge(home, tmp_path):
    ex = _executor(home)
    with pytest.raises(ValidationError) as err:
        _run(ex, f"""CREATE TABLE k (day STRING, n BIGINT) STORED AS DELTA
          LOCATION '{tmp_path}/k' TBLPROPERTIES("primary.key"="dy");""")
    assert "primary key column 'dy' is not a column" in err.value.message
    assert err.value.key == "primary.key"
    _run(ex, f"""CREATE STREAM s (value BIGINT) TBLPROPERTIES("source"="rate");
    CREATE TABLE k (day STRING, n BIGINT) STORED AS DELTA LOCATION '{tmp_path}/k'
      TBLPROPERTIES("primary.key"="Day");""")
    explained = _run(ex, "EXPLAIN insert into k select cast(value % 7 as string), count(*) "
                         "from s group by value % 7;").data
    assert explained["output_mode"] == "update"
    assert explained["sink"]["write"] == "merge on primary key (day), one Delta commit per micro-batch"
