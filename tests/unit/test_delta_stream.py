"""Delta tables read as streams (``CREATE STREAM s (...) STORED AS DELTA LOCATION``):
what the declaration means (the spec and Delta's streaming options), how SHOW CREATE
shows it, and where it may live (DESIGN §9: an operator's LOCATION under the admin's
file roots, as the Delta sink's). Reading is tests/integration/test_delta_source.py."""

from __future__ import annotations

import pytest

from streamjob.catalog import Catalog
from streamjob.catalog.records import Role
from streamjob.connectors import spec as cspec
from streamjob.connectors.sources import stream_source
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


def test_the_spec_of_a_delta_stream():
    sp = cspec.source_spec("s", {"source": "Delta", "path": "file:///a%20b/t",
                                 "startingVersion": "Latest", "MaxFilesPerTrigger": "5",
                                 "ignoreDeletes": "true"}, None)
    assert isinstance(sp, cspec.DeltaSourceSpec)
    assert (sp.path, sp.starting_version, sp.max_files, sp.ignore_deletes, sp.ignore_changes) \
        == ("/a b/t", "latest", 5, True, False)
    assert sp.reach().paths == (("file:///a%20b/t", "LOCATION", "path"),)
    src = stream_source(sp)
    assert src.identifier == "delta" and src.data_sources == {"streamjob_delta"}
    assert src.bounded and src.starts_anywhere and src.kafka_topic() is None
    ts = cspec.source_spec("s", {"source": "delta", "path": "/t",
                                 "startingTimestamp": "2024-01-02 03:04:05"}, None)
    assert ts.starting_timestamp == 1704164645000 and ts.starting_version is None
    assert cspec.source_spec("s", {"source": "delta", "path": "/t",
                                   "startingtimestamp": "1704164645000"}, None) \
        .starting_timestamp == 1704164645000
    assert cspec.source_spec("s", {"source": "delta", "path": "/t"}, None).max_files == 1000


def test_delta_stream_properties_are_checked():
    with pytest.raises(PropertyError) as err:
        cspec.source_spec("s", {"source": "delta", "path": "/t", "topic": "x"}, None)
    assert "Delta stream 's': unknown property 'topic'" in err.value.message
    with pytest.raises(PropertyError) as err:
        cspec.source_spec("s", {"source": "delta", "path": "/t", "startingVersion": "soon"}, None)
    assert "startingversion" in err.value.message
    with pytest.raises(ValidationError) as err:
        cspec.source_spec("s", {"source": "delta", "path": "s3://b/t"}, None)
    assert "not a local directory" in err.value.message and err.value.key == "path"
    with pytest.raises(ValidationError) as err:
        cspec.source_spec("s", {"source": "delta"}, None)
    assert "STORED AS DELTA LOCATION" in err.value.message


def test_create_stream_stored_as_delta_and_show_create(home, tmp_path):
    ex = _executor(home)
    _run(ex, f"""CREATE STREAM s (id BIGINT, day STRING) STORED AS DELTA
LOCATION '{tmp_path}/t' TBLPROPERTIES("maxFilesPerTrigger"="2");""")
    stream = ex.catalog.get_stream("default", "s")
    assert stream.properties["source"] == "delta" and stream.properties["path"] == f"{tmp_path}/t"
    text = _run(ex, "SHOW CREATE STREAM s;").text
    assert f"STORED AS DELTA\nLOCATION '{tmp_path}/t'" in text and "'source'" not in text
    _run(ex, "DROP STREAM s;")
    _run(ex, text)  # SHOW CREATE's text creates it again
    assert ex.catalog.get_stream("default", "s").properties == stream.properties
    _run(ex, f"CREATE TABLE out (id BIGINT, day STRING) STORED AS DELTA LOCATION '{tmp_path}/o';")
    [source] = _run(ex, "EXPLAIN insert into out select * from s;").data["sources"]
    assert (source["connector"], source["location"], source["format"]) == \
        ("delta", f"{tmp_path}/t", "delta")
    assert source["starts_from"].startswith("the table's current snapshot, then the commits")
    # the TBLPROPERTIES form is the same stream
    _run(ex, f"""CREATE STREAM s2 (id BIGINT) TBLPROPERTIES("source"="delta", "path"="{tmp_path}/t");""")


@pytest.mark.parametrize("text, where, words", [
    ("CREATE STREAM b (a INT) STORED AS PARQUET\nLOCATION '/x';", (1, 25), "STORED AS DELTA or ICEBERG only"),
    ("CREATE STREAM b (a INT)\nSTORED AS DELTA;", (2, 1), "needs LOCATION"),
    ("CREATE STREAM b (a INT)\nLOCATION '/x';", (2, 10), "goes with STORED AS DELTA"),
    ("CREATE STREAM b (a INT) STORED AS DELTA LOCATION '/x'\nTBLPROPERTIES(\"path\"=\"/y\");",
     (2, 22), "drop \"path\""),
])
def test_create_stream_refuses_other_storage(home, text, where, words):
    with pytest.raises(ValidationError) as err:
        _run(_executor(home), text)
    assert words in err.value.message
    assert (err.value.line, err.value.column) == where


def test_an_operators_delta_stream_lies_under_the_file_roots(home, tmp_path):
    op = _executor(home, Role.OPERATOR)
    for where in ("/etc/d", str(tmp_path / "elsewhere"), f"file://{tmp_path}/elsewhere"):
        with pytest.raises(PolicyError) as err:
            _run(op, f"CREATE STREAM s (a INT) STORED AS DELTA\nLOCATION '{where}';")
        assert "streamjob.security.file.roots" in err.value.message
        assert (err.value.line, err.value.column) == (2, 10), where
    with pytest.raises(PolicyError):  # the TBLPROPERTIES form is checked the same way
        _run(op, f'CREATE STREAM s (a INT) TBLPROPERTIES("source"="delta", "path"="/etc/d");')
    _run(op, f"CREATE STREAM a (a INT) STORED AS DELTA LOCATION '{home.root}/data/a';")
    assert [s.name for s in op.catalog.list_streams()] == ["a"]


def test_start_refuses_a_delta_stream_whose_table_does_not_fit(home, tmp_path):
    """The Delta table a stream reads is checked at START STREAMJOB: a declared column it
    lacks or holds with another type is an error naming it, before the job starts; a
    table not there yet is not (an upstream job may create it: the job starts and its
    attempts retry)."""
    import pyarrow as pa
    from deltalake import DeltaTable

    from streamjob.exceptions import SchemaMismatch

    ex = _executor(home)
    _run(ex, f"""CREATE STREAM s (id BIGINT, name STRING) STORED AS DELTA LOCATION '{tmp_path}/s';
    CREATE TABLE out (id BIGINT, name STRING) STORED AS DELTA LOCATION '{tmp_path}/out';
    CREATE STREAMJOB j AS ("insert into out select id, name from s");""")
    DeltaTable.create(str(tmp_path / "s"), pa.schema([("id", pa.int32()), ("other", pa.string())]))
    with pytest.raises(SchemaMismatch) as err:
        _run(ex, "START STREAMJOB j;")
    assert "column id is integer in the table, declared long" in err.value.message
    assert "column name is not in the table" in err.value.message
    assert ex.catalog.require_job("default", "j").desired_state != "RUNNING"


def test_a_delta_position_is_caught_up_at_or_past_its_target():
    """``run --until-idle``: a Delta stream's progress offsets merge as Kafka's do, and its
    position reaches the target (the version after the latest at the wait's start) also
    when versions committed since were read; a Kafka offset past its end does not (lost
    data, docs/design.md)."""
    from streamjob.manager.idle import reached
    from streamjob.spark.listener import merge_offsets

    key = "delta:/lake/t"
    merged = merge_offsets([("delta", f'{{"{key}": {{"version": 7, "index": 0, "snapshot": 0}}}}')])
    assert merged == {key: {"version": 7, "index": 0, "snapshot": 0}}
    assert reached(merged, {key: {"version": 7}})
    assert reached(merged, {key: {"version": 5}})  # later versions read too
    assert not reached(merged, {key: {"version": 8}})
    assert not reached({key: {"version": 6, "index": 3, "snapshot": 0}}, {key: {"version": 7}})
    assert not reached({"t": {"0": 9}}, {"t": {"0": 5}})


def test_a_job_joining_a_delta_table_registers_the_delta_data_source():
    from streamjob.connectors import static

    delta_table = cspec.DeltaTableSpec("/lake/dims")
    files = cspec.FileTableSpec("parquet", "/w/t", False)
    assert static.data_sources([]) == set()
    assert static.data_sources([files]) == {"streamjob_sql", "streamjob_files"}
    assert static.data_sources([files, delta_table]) == \
        {"streamjob_sql", "streamjob_files", "streamjob_delta"}
    how = static.table_reader(delta_table, [{"name": "Day", "type": "string"}], "default.dims")
    assert (how.format, how.options, how.schema) == \
        ("streamjob_delta", {"path": "/lake/dims"}, "`Day` string")


@pytest.mark.parametrize("value", [3, "3"], ids=["typed", "text"])
def test_a_partition_value_fits_its_column_typed_or_as_text(tmp_path, value):
    """A partition column's value comes as text from the log's JSON and typed from
    delta-rs' add actions; both fill the declared column (an INT partition column once
    failed with "does not fit int32" when the value came typed)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from streamjob.connectors.delta.source import _read_file

    path = tmp_path / "part.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int32())}), path)
    target = pa.schema([("id", pa.int32()), ("month", pa.int32())])
    (batch,) = _read_file(str(path), {"month": value}, target)
    assert batch.column(1).to_pylist() == [3, 3] and batch.column(0).to_pylist() == [1, 2]
    (nulls,) = _read_file(str(path), {"month": None}, target)
    assert nulls.column(1).to_pylist() == [None, None]
