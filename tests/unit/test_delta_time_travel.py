"""Time travel in a shell preview (issue 32): ``FROM t VERSION AS OF n`` and ``FROM t
TIMESTAMP AS OF '...'`` planned against a real delta-rs table: the version each names,
the static reader's option, the preview of tables alone as a batch, and the refusals at
the clause (a stream, a table of another kind, a version or time the log lacks, a job's
query). Rows read at a version through Spark: tests/integration/test_delta_source.py."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from streamjob.catalog import Catalog
from streamjob.connectors import lakehouse
from streamjob.connectors.delta import log as dlog
from streamjob.exceptions import ConnectorError, StreamJobError, ValidationError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob.planner.bind import bind_preview
from streamjob.planner.preview import plan_preview

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A home with Delta table ``lake`` (versions 0..2, a second apart), file table
    ``plain`` and Kafka stream ``clicks``."""
    root = tmp_path_factory.mktemp("tt")
    home = Home.open(root / "home", {})
    lake = root / "lake"
    for i in range(3):
        write_deltalake(str(lake), pa.table({"id": [i], "v": [float(i)]}), mode="append")
        os.utime(lake / "_delta_log" / f"{i:020d}.json", (1_700_000_000 + i * 10,) * 2)
    ex = Executor(Catalog(home.catalog_url), home)
    for s in parse_script(
            f"CREATE TABLE lake (id BIGINT, v DOUBLE) STORED AS DELTA LOCATION '{lake}';"
            f"CREATE TABLE plain (id BIGINT) STORED AS PARQUET LOCATION '{root / 'p'}';"
            'CREATE STREAM clicks (id BIGINT) TBLPROPERTIES("topic"="c", '
            '"kafka.broker.list"="127.0.0.1:9", "format"="json");'):
        ex.execute(s)
    return ex.catalog, home, str(lake)


def _plan(world, text):
    catalog, home, _ = world
    return plan_preview(catalog, home, text)


def test_version_as_of_reads_that_version_as_a_batch(world):
    plan = _plan(world, "SELECT id, v FROM lake VERSION AS OF 1 WHERE id >= 0 LIMIT 5")
    assert plan.batch and plan.limit == 5 and [s.as_of for s in plan.statics] == [1]
    assert "VERSION" not in plan.select.select_sql.upper()
    [read] = bind_preview(plan).statics
    assert read.reader.options["versionAsOf"] == "1"
    # the words elsewhere are the parser's: a cast, an alias
    plan = _plan(world, "select cast(id as timestamp) as of_ts from lake version as of 2")
    assert plan.columns == ("of_ts",) and [s.as_of for s in plan.statics] == [2]


def test_timestamp_as_of_is_the_latest_version_committed_at_or_before(world):
    """Commit times are the files' times here (delta-rs writes commitInfo.timestamp too;
    the log's own time counts first: read_commit), so compare with what the log says."""
    _, _, lake = world
    t1 = dlog.read_commit(lake, 1).timestamp
    plan = _plan(world, f"select * from default.lake for timestamp as of '{t1}' as x")
    assert [s.as_of for s in plan.statics] == [1]
    assert lakehouse.version_as_of(plan.statics[0].spec, "timestamp", str(t1 + 1)) == 1


def test_a_stream_joined_with_a_table_at_a_version_streams(world):
    plan = _plan(world, "select c.id, l.v from clicks c join lake version as of 0 l "
                        "on c.id = l.id")
    assert not plan.batch and [s.as_of for s in plan.statics] == [0]


@pytest.mark.parametrize("text, col, words", [
    ("select * from clicks VERSION AS OF 1", 22, "is a stream"),
    ("select * from plain VERSION AS OF 1", 21, "is a file table"),
    ("select * from lake VERSION AS OF 9", 34, "latest version is 2"),
    ("select * from lake TIMESTAMP AS OF '2001-01-01'", 36, "before the oldest commit"),
    ("select * from lake TIMESTAMP AS OF '2999-01-01'", 36, "after the latest commit"),
    ("select * from lake TIMESTAMP AS OF 'soon'", 36, "takes a time"),
    ("select * from lake VERSION AS OF x", 34, "takes a literal"),
    ("select * from lake VERSION AS OF 1 join lake l2 on true", 20, "more than once"),
    ("with w as (select * from lake) select * from w VERSION AS OF 1", 48, "is none"),
])
def test_refusals_are_at_the_clause(world, text, col, words):
    with pytest.raises(ValidationError) as err:
        _plan(world, text)
    assert (err.value.line, err.value.column) == (1, col), err.value
    assert words in err.value.message


def test_without_time_travel_a_preview_still_needs_a_stream(world):
    with pytest.raises(ValidationError, match="VERSION AS OF n"):
        _plan(world, "select * from lake")


def test_a_jobs_query_still_refuses_time_travel(world):
    catalog, home, _ = world
    ex = Executor(catalog, home)
    with pytest.raises(StreamJobError, match="time travel"):
        for s in parse_script('CREATE STREAMJOB j AS ("insert into lake select c.id, l.v '
                              'from clicks c join lake version as of 1 l on c.id = l.id");'
                              "START STREAMJOB j;"):
            ex.execute(s)


def test_the_sinks_batch_version_is_the_commit_of_its_app_transaction(tmp_path):
    from deltalake import CommitProperties, Transaction

    path = str(tmp_path / "t")
    for batch in range(3):
        write_deltalake(path, pa.table({"id": [batch]}), mode="append",
                        commit_properties=CommitProperties(
                            app_transactions=[Transaction("uid:1", batch)]))
    write_deltalake(path, pa.table({"id": [9]}), mode="append")  # another writer
    assert dlog.transaction_commit(path, "uid:1", 2) == 2
    assert dlog.transaction_commit(path, "uid:1", 0) == 0
    assert dlog.transaction_commit(path, "uid:1", 7) is None
    assert dlog.transaction_commit(path, "uid:2", 0) is None
    with pytest.raises(ConnectorError, match="no version 5"):
        dlog.version_as_of(path, 5)


def test_describe_streamjob_names_the_sink_version_of_the_last_checkpoint(world):
    """DESCRIBE STREAMJOB (table and --json) shows the version whose commit carries the
    last checkpoint's batch: the job's app transaction (marker key: the uid, no epoch
    in a directory without an identity), not the table's latest version."""
    import datetime as dt

    from streamjob.connectors.delta.sink import DeltaSink
    from streamjob.connectors.delta.spec import DeltaTableSpec

    catalog, home, _ = world
    ex = Executor(catalog, home)
    out = home.root / "described"
    for s in parse_script(
            f"CREATE TABLE described (id BIGINT) STORED AS DELTA LOCATION '{out}';"
            'CREATE STREAMJOB dj AS ("insert into described select id from clicks");'):
        ex.execute(s)
    [desc] = parse_script("DESCRIBE STREAMJOB dj;")
    assert ex.execute(desc).data["sink_table_version"] is None  # no checkpoint yet
    job = catalog.get_job("default", "dj")
    sink = DeltaSink(DeltaTableSpec(str(out)), [{"name": "id", "type": "BIGINT"}],
                     "default.described", job.uid, True)
    sink.prepare()  # version 0
    for batch in range(3):  # versions 1..3
        sink.write_arrow(pa.table({"id": [batch]}), batch)
    write_deltalake(str(out), pa.table({"id": [99]}), mode="append")  # version 4
    now = dt.datetime.now(dt.timezone.utc)
    catalog.record_checkpoint(job.uid, 1, started_at=now, ended_at=now, duration_ms=1,
                              source_offsets={}, input_rows=1, retained=5)
    got = ex.execute(desc)
    assert got.data["sink_table_version"] == 2
    overview = dict(got.sections[0].rows)
    assert overview["sink table version"].startswith("2 (the commit of batch 1")
