"""Apache Iceberg tables as StreamSQL tables and streams (``STORED AS ICEBERG``): what
the declaration means (the spec: identifier, catalog, location), how the catalog
statements show it, where it may live (DESIGN §9: an operator's warehouse under the
admin's file roots, its catalog among the allowed servers, the catalog's own database
only by default), and the check at START against a real pyiceberg table in a SQLite
catalog. Writing through Spark is tests/integration/test_iceberg.py."""

from __future__ import annotations

import pytest

from streamjob.catalog import Catalog
from streamjob.catalog.records import Role
from streamjob.connectors import spec as cspec
from streamjob.connectors.sinks import IcebergTableSink, table_sink
from streamjob.connectors.sources import stream_source
from streamjob.exceptions import PropertyError, SchemaMismatch, ValidationError
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


def test_the_spec_of_an_iceberg_table():
    sp = cspec.table_spec("T", {"Iceberg.Catalog.Uri": "sqlite:////c/ice.db",
                                "primary.key": "Id"}, "ICEBERG", "/wh/", "/home/w/db1/T",
                          partitioned_by=("Day",), database="db1")
    assert isinstance(sp, cspec.IcebergTableSpec)
    assert sp.ref.identifier == "db1.T" and sp.location == "/wh/db1.db/T"
    assert sp.partitioned_by == ("day",) and sp.primary_key == ("id",)
    assert (sp.on_files, sp.static_readable, sp.updates_in_place) == (True, True, True)
    assert sp.reach().paths == (("/wh/db1.db/T", "LOCATION", "location"),)
    assert sp.reach().urls == (("sqlite:////c/ice.db", '"iceberg.catalog.uri"',
                                "iceberg.catalog.uri"),)
    # defaults: the streamjob catalog, the home's warehouse directory of the table
    sp = cspec.table_spec("t", {"iceberg.namespace": "ns", "iceberg.table": "x"}, "iceberg",
                          None, "/home/w/db1/t", database="db1")
    assert (sp.ref.catalog_uri, sp.ref.identifier, sp.location) == (None, "ns.x", "/home/w/db1/t")
    assert sp.reach().urls == ()
    assert "the streamjob catalog" in sp.ref.where()
    assert cspec.table_scope({}, "Iceberg") == "iceberg table"
    rest = cspec.table_spec("t", {"iceberg.catalog.uri": "https://cat.example/api"},
                            "iceberg", "/wh", "/w", database="d")
    assert rest.ref.catalog_uri == "https://cat.example/api"


def test_iceberg_properties_and_names_are_checked():
    with pytest.raises(PropertyError) as err:
        cspec.table_spec("t", {"delta.appendonly": "true"}, "iceberg", "/wh", "/w")
    assert "Iceberg table 't': unknown property 'delta.appendonly'" in err.value.message
    for props, key in (({"iceberg.catalog.uri": "nowhere"}, "iceberg.catalog.uri"),
                       ({"iceberg.namespace": "a.b"}, "iceberg.namespace"),
                       ({"iceberg.table": "x/y"}, "iceberg.table")):
        with pytest.raises(ValidationError) as err:
            cspec.table_spec("t", props, "iceberg", "/wh", "/w", database="d")
        assert err.value.key == key, props
    with pytest.raises(ValidationError) as err:
        cspec.table_spec("t", {}, "iceberg", "s3://bucket/wh", "/w", database="d")
    assert err.value.key == "location" and "not a local directory" in err.value.message
    with pytest.raises(ValidationError) as err:
        cspec.table_spec("t", {"connector": "sql"}, "iceberg", None, "/w")
    assert "drop \"connector\"" in err.value.message


def test_catalog_statements_show_an_iceberg_table_and_stream(home, tmp_path):
    ex = _executor(home)
    _run(ex, f"""CREATE STREAM s (value BIGINT) TBLPROPERTIES("source"="rate");
    CREATE TABLE i (id BIGINT, day STRING) PARTITIONED BY (day) STORED AS ICEBERG
      LOCATION '{tmp_path}/wh';""")
    assert _run(ex, "SHOW TABLES;").rows == [("default", "i", "iceberg", "day")]
    text = _run(ex, "SHOW CREATE TABLE i;").text
    assert "STORED AS iceberg" in text
    explained = _run(ex, "EXPLAIN insert into i select value, 'x' from s;").data
    assert explained["sink"]["connector"] == "iceberg"
    assert explained["sink"]["write"] == ("append (one Iceberg snapshot per micro-batch) "
                                          "partitioned by day")
    assert f"{tmp_path}/wh/default.db/i" in explained["sink"]["location"]
    table = ex.catalog.get_table("default", "i")
    sink = table_sink(table, cspec.spec_of_table(table), marker="u:1", job="default.j",
                      exactly_once=True)
    assert isinstance(sink, IcebergTableSink) and sink.iceberg.app_id == "u:1"
    # a stream STORED AS ICEBERG names its table wherever it is read
    _run(ex, f"CREATE STREAM r (id BIGINT) STORED AS ICEBERG LOCATION '{tmp_path}/wh' "
             "TBLPROPERTIES(\"iceberg.table\"=\"i\");")
    props = ex.catalog.get_stream("default", "r").properties
    assert props["source"] == "iceberg" and props["iceberg.namespace"] == "default"
    assert props["path"] == f"{tmp_path}/wh/default.db/i"
    src = stream_source(cspec.source_spec("r", props, None))
    assert src.identifier == "iceberg" and src.spec.ref.identifier == "default.i"
    with pytest.raises(ValidationError) as err:
        _run(ex, "CREATE STREAM q (id BIGINT) STORED AS ICEBERG TBLPROPERTIES(\"path\"=\"/x\");")
    assert "drop \"path\"" in err.value.message


def test_an_operators_iceberg_table_lies_under_the_roots_and_catalogs_allowed(home, tmp_path):
    op = _executor(home, Role.OPERATOR)
    with pytest.raises(PolicyError) as err:
        _run(op, f"CREATE TABLE t (a INT) STORED AS ICEBERG\nLOCATION '{tmp_path}/elsewhere';")
    assert "streamjob.security.file.roots" in err.value.message
    assert (err.value.line, err.value.column) == (2, 10)
    with pytest.raises(PolicyError) as err:
        _run(op, f"CREATE TABLE t (a INT) STORED AS ICEBERG LOCATION '{home.root}/data'\n"
                 "TBLPROPERTIES(\"iceberg.catalog.uri\"=\"https://cat.example:8181/api\");")
    assert err.value.key == "iceberg.catalog.uri" and err.value.line == 2
    assert "host 'cat.example' is not a catalog server" in err.value.message
    with pytest.raises(PolicyError) as err:  # anyone: the catalog's own database by name
        _run(_executor(home), "CREATE TABLE t (a INT) STORED AS ICEBERG TBLPROPERTIES("
                              f"\"iceberg.catalog.uri\"=\"{home.catalog_url}\");")
    assert "catalog's own database" in err.value.message
    _run(op, "CREATE TABLE w (a INT) STORED AS ICEBERG;")  # the warehouse default
    _run(op, f"CREATE TABLE d (a INT) STORED AS ICEBERG LOCATION '{home.root}/data' "
             "TBLPROPERTIES(\"iceberg.catalog.uri\"=\"http://127.0.0.1:8181\");")
    assert sorted(t.name for t in op.catalog.list_tables()) == ["d", "w"]


def test_start_refuses_an_iceberg_table_of_another_shape(home, tmp_path):
    """An existing Iceberg table (here created with pyiceberg in the SQLite catalog the
    table names) is checked at START STREAMJOB: a difference is an error naming it."""
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    uri = f"sqlite:///{tmp_path}/ice.db"
    cat = SqlCatalog("streamjob", uri=uri)
    cat.create_namespace("default")
    cat.create_table(("default", "d"), pa.schema([("value", pa.int32()), ("x", pa.string())]),
                     location=f"file://{tmp_path}/wh/default.db/d")
    ex = _executor(home)
    _run(ex, f"""CREATE STREAM s (value BIGINT) TBLPROPERTIES("source"="rate");
    CREATE TABLE d (value BIGINT) STORED AS ICEBERG LOCATION '{tmp_path}/wh'
      TBLPROPERTIES("iceberg.catalog.uri"="{uri}");
    CREATE STREAMJOB j AS ("insert into d select value from s");""")
    with pytest.raises(SchemaMismatch) as err:
        _run(ex, "START STREAMJOB j;")
    assert "column value is int, declared long" in err.value.message
    assert "column x (string) is not declared" in err.value.message
    assert ex.catalog.require_job("default", "j").desired_state != "RUNNING"
    _run(ex, "DROP STREAMJOB j;")  # leaves the table and its data
    assert cat.load_table(("default", "d")).schema().find_field("x") is not None
