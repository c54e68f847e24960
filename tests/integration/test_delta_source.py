"""Delta tables read as streams (``STORED AS DELTA LOCATION``) with real delta-rs tables
on local paths, written with ``deltalake.write_deltalake`` (TESTING.md).

(a) The source's planning alone, as Spark's micro-batch engine calls it (no Spark): the
snapshot first, then each new version's added files; ``maxFilesPerTrigger`` splitting a
version; ``startingVersion``/``startingTimestamp``; Delta's rules for commits that
remove data (fail naming the version, ``ignoreDeletes``, ``ignoreChanges``,
``skipChangeCommits``); the declared columns checked against the table.

(b) Through Spark: a job reads a Delta table appended to while it runs into a Delta
table; the output equals pandas over every version, exactly once across a restart from
its checkpoint and across a replayed batch; a DELETE in the source fails the job naming
the version; a stream-static join with a Delta table sees its latest snapshot; a chain
(file stream -> Delta table -> Delta stream -> Delta table) equals pandas.
"""

from __future__ import annotations

import time
import uuid

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles
from pyspark.sql.types import LongType, StringType, StructField, StructType

from streamjob.connectors.delta.source import DeltaStreamReader
from streamjob.connectors.delta.spec import DeltaSourceSpec
from streamjob.connectors.delta.stream import DeltaStreamSource
from streamjob.exceptions import ConnectorError, SchemaMismatch

from .world import SparkWorld, start_planned

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.string())])
SPARK_SCHEMA = StructType([StructField("id", LongType()), StructField("name", StringType()),
                           StructField("day", StringType())])


def rows(start: int, n: int) -> pa.Table:
    """``n`` rows with ids from ``start``; every fifth has a NULL name."""
    return pa.Table.from_pylist(
        [{"id": i, "name": None if i % 5 == 0 else f"n{i}", "day": f"d{i % 3}"}
         for i in range(start, start + n)], schema=SCHEMA)


def append(path, start: int, n: int) -> int:
    """Append ``n`` rows as one commit (one file per partition); returns its version."""
    write_deltalake(str(path), rows(start, n), mode="append", partition_by=["day"])
    return DeltaTable(str(path)).version()


def reader(path, **options) -> DeltaStreamReader:
    return DeltaStreamReader(SPARK_SCHEMA, {"path": str(path), **{k: str(v) for k, v in options.items()}})


def read_all(r: DeltaStreamReader, start: dict, end: dict) -> list[int]:
    """The ids the micro-batch ``[start, end)`` reads, sorted."""
    ids = []
    for part in r.partitions(start, end):
        for b in r.read(part):
            ids.extend(b.column("id").to_pylist())
    return sorted(ids)


def pos(r: DeltaStreamReader, offset: dict) -> tuple:
    at = offset[r.key]
    return at["version"], at["index"], at["snapshot"]


# -- (a) planning alone ----------------------------------------------------------------


@pytest.mark.component
def test_snapshot_then_each_new_versions_files(tmp_path):
    path = tmp_path / "t"
    append(path, 0, 30)  # version 0: three files, one per day
    append(path, 30, 30)  # version 1
    r = reader(path, partitions=2)
    start = r.initialOffset()
    assert pos(r, start) == (1, 0, 1)  # the snapshot of the current version
    end = r.latestOffset(start, ReadAllAvailable())
    assert pos(r, end) == (2, 0, 0)
    assert len(r.partitions(start, end)) == 2  # six files over two read tasks
    assert read_all(r, start, end) == list(range(60))
    assert r.latestOffset(end, ReadAllAvailable()) == end  # nothing new
    append(path, 60, 6)
    DeltaTable(str(path)).optimize.compact()  # dataChange false: nothing to read
    again = r.latestOffset(end, ReadAllAvailable())
    assert pos(r, again) == (4, 0, 0)
    assert read_all(r, end, again) == list(range(60, 66))
    # a batch read again from the same offsets (a replay after a crash) reads the same
    assert read_all(reader(path), end, again) == list(range(60, 66))
    assert reader(path).reportLatestOffset() is None  # no records-lag from versions
    # the table replaced by another one (its log starting again): not read as if nothing came
    import shutil

    shutil.rmtree(path)
    append(path, 100, 3)
    with pytest.raises(ConnectorError, match="is at version 0, before the job's position "
                                             r"\(version 4\): the table was replaced"):
        reader(path).latestOffset(again, ReadAllAvailable())


@pytest.mark.component
def test_max_files_per_trigger_splits_a_version(tmp_path):
    path = tmp_path / "t"
    append(path, 0, 30)
    append(path, 30, 30)
    r = reader(path, startingVersion=0, maxFilesPerTrigger=2)
    assert r.getDefaultReadLimit() == ReadMaxFiles(2)
    at, seen, ends = r.initialOffset(), [], []
    assert pos(r, at) == (0, 0, 0)
    while True:
        end = r.latestOffset(at, r.getDefaultReadLimit())
        if end == at:
            break
        assert len(r.partitions(at, end)) <= 2
        seen += read_all(r, at, end)
        ends.append(pos(r, end))
        at = end
    assert ends == [(0, 2, 0), (1, 1, 0), (2, 0, 0)]  # 3 + 3 files, two at a time
    assert sorted(seen) == list(range(60))  # each row once


@pytest.mark.component
def test_starting_version_latest_and_timestamp(tmp_path):
    path = tmp_path / "t"
    append(path, 0, 3)
    time.sleep(0.01)  # commit times in ms: the next commit is later
    cut = int(time.time() * 1000)
    append(path, 3, 3)
    r = reader(path, startingVersion=1)
    assert read_all(r, r.initialOffset(), r.latestOffset(r.initialOffset(), ReadAllAvailable())) \
        == [3, 4, 5]
    r = reader(path, startingVersion="latest")
    start = r.initialOffset()
    assert pos(r, start) == (2, 0, 0)
    assert r.latestOffset(start, ReadAllAvailable()) == start
    r = reader(path, startingTimestamp=cut)
    assert pos(r, r.initialOffset()) == (1, 0, 0)
    assert pos(r, reader(path, startingTimestamp=cut + 3_600_000).initialOffset()) == (2, 0, 0)
    with pytest.raises(ConnectorError, match="startingVersion 7 .* beyond its latest version 1"):
        reader(path, startingVersion=7).initialOffset()


@pytest.mark.component
def test_a_commit_that_removes_rows_fails_with_its_version_unless_a_policy_says(tmp_path):
    path = tmp_path / "t"
    append(path, 0, 30)
    at = reader(path, startingVersion=0).initialOffset()
    DeltaTable(str(path)).delete("day = 'd1'")  # version 1: removes whole files only
    DeltaTable(str(path)).update({"name": "'x'"}, predicate="id = 3")  # version 2: rewrites
    append(path, 30, 3)  # version 3
    with pytest.raises(ConnectorError) as err:
        reader(path).latestOffset(at, ReadAllAvailable())
    assert "deleted rows at version 1 (DELETE" in str(err.value)
    assert "ignoreDeletes" in str(err.value)
    with pytest.raises(ConnectorError) as err:
        reader(path, ignoreDeletes="true").latestOffset(at, ReadAllAvailable())
    assert "changed existing rows at version 2 (UPDATE" in str(err.value)
    r = reader(path, skipChangeCommits="true")
    end = r.latestOffset(at, ReadAllAvailable())
    assert read_all(r, at, end) == list(range(30)) + [30, 31, 32]  # versions 0 and 3
    r = reader(path, ignoreChanges="true")  # the rewritten file's rows come again
    got = read_all(r, at, r.latestOffset(at, ReadAllAvailable()))
    assert got == sorted(list(range(30)) + [i for i in range(30) if i % 3 == 0] + [30, 31, 32])


@pytest.mark.component
def test_the_declared_columns_are_checked_against_the_table(tmp_path):
    path = tmp_path / "t"
    cols = [{"name": "id", "type": "bigint"}, {"name": "NAME", "type": "string"}]
    src = DeltaStreamSource(DeltaSourceSpec(str(path)))
    with pytest.raises(ConnectorError, match="there is no Delta table at"):
        src.check(cols)
    append(path, 0, 3)
    src.check(cols)  # a subset of the table's columns, names in any case
    with pytest.raises(SchemaMismatch) as err:
        src.check([{"name": "id", "type": "int"}, {"name": "price", "type": "double"}])
    msg = str(err.value)
    assert "column id is long in the table, declared integer" in msg
    assert "column price is not in the table" in msg
    assert "the table has: id long, name string, day string" in msg
    assert err.value.columns == ("id", "price")
    # a later commit that retypes a declared column fails the stream naming its version
    r = reader(path, startingVersion=0)
    at = r.initialOffset()
    write_deltalake(str(path), pa.table({"id": pa.array(["a"]), "name": ["n"], "day": ["d0"]}),
                    mode="overwrite", schema_mode="overwrite", partition_by=["day"])
    with pytest.raises(ConnectorError, match="changed its schema at version 1: declared column"
                                              r"\(s\) id"):
        reader(path, startingVersion=0, ignoreChanges="true").latestOffset(at, ReadAllAvailable())


# -- (b) through Spark -----------------------------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = SparkWorld(tmp_path_factory.mktemp("delta_source"))
    yield w
    w.close()


def start(world, job: str, sink_marker: str):
    """Plan ``job`` (reading stream ``src`` into Delta table ``out``) and start its query
    with its Delta sink keyed by ``sink_marker``; returns ``(query, sink)``."""
    from streamjob.connectors.sinks import table_sink

    plan = world.plan(job, "insert into out select id, name, day from src")
    sink = table_sink(plan.sink, plan.sink_spec, marker=sink_marker, job=plan.qualified_name,
                      exactly_once=True)
    sink.prepare()
    return start_planned(world.session, plan, str(world.root / "checkpoints" / job), sink), sink


def out_ids(path) -> list[int]:
    return sorted(DeltaTable(str(path)).to_pyarrow_table().column("id").to_pylist())


@pytest.mark.spark
def test_a_job_reads_a_delta_table_appended_to_exactly_once_across_restarts(world):
    import pandas as pd

    src, out = world.root / "src", world.root / "out"
    append(src, 0, 30)
    world.run(f"""
    CREATE STREAM src (id BIGINT, name STRING, day STRING)
      STORED AS DELTA LOCATION '{src}' TBLPROPERTIES("maxFilesPerTrigger"="3");
    CREATE TABLE out (id BIGINT, name STRING, day STRING) STORED AS DELTA LOCATION '{out}';
    """)
    marker = f"{uuid.uuid4().hex}:0"
    query, sink = start(world, "chain", marker)
    try:
        query.processAllAvailable()
        for k in range(3):  # versions committed while the job runs
            append(src, 30 + 10 * k, 10)
        query.processAllAvailable()
        assert query.exception() is None
        batches = query.lastProgress["batchId"] + 1
    finally:
        query.stop()
    assert batches >= 4  # 12 files (a version: a file per day), three per micro-batch
    assert out_ids(out) == list(range(60))

    # a crash after the sink committed but before Spark logged the batch: the batch is
    # planned again from the offset log, reads the same files, and the sink skips it
    last = batches - 1
    commits = world.root / "checkpoints" / "chain" / "commits"
    for name in (str(last), f".{last}.crc"):
        (commits / name).unlink(missing_ok=True)
    append(src, 60, 12)  # and more while it was down
    query, sink = start(world, "chain", marker)
    try:
        query.processAllAvailable()
        assert query.exception() is None
    finally:
        query.stop()
    assert sink.delta.skipped == 1
    want = rows(0, 72).to_pandas().sort_values("id").reset_index(drop=True)
    got = DeltaTable(str(out)).to_pandas().sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(got[["id", "name", "day"]], want[["id", "name", "day"]])


@pytest.mark.spark
def test_a_delete_in_the_source_fails_the_job_naming_its_version(world):
    src, out = world.root / "src2", world.root / "out2"
    append(src, 0, 9)
    world.run(f"""
    CREATE STREAM src2 (id BIGINT, name STRING, day STRING) STORED AS DELTA LOCATION '{src}';
    CREATE TABLE out2 (id BIGINT, name STRING, day STRING) STORED AS DELTA LOCATION '{out}';
    """)
    plan = world.plan("deleted", "insert into out2 select * from src2")
    query = start_planned(world.session, plan, str(world.root / "checkpoints" / "deleted"))
    try:
        query.processAllAvailable()
        DeltaTable(str(src)).delete("id = 4")
        version = DeltaTable(str(src)).version()
        with pytest.raises(Exception) as err:
            query.processAllAvailable()
    finally:
        query.stop()
    assert f"changed existing rows at version {version} (DELETE" in str(err.value)
    from streamjob.manager.failures import NOT_APPEND_ONLY, permanent_failure

    assert permanent_failure(err.value, "deleted") == NOT_APPEND_ONLY.format(job="deleted")
    assert out_ids(out) == list(range(9))



@pytest.mark.spark
def test_a_stream_joins_a_delta_tables_latest_snapshot(world):
    """A Delta table in a stream-static join is read whole at each micro-batch: rows
    committed to it while the job runs are joined by the next micro-batches."""
    src, dims, out = world.root / "src4", world.root / "dims", world.root / "out4"
    append(src, 0, 9)
    write_deltalake(str(dims), pa.table({"day": ["d0"], "label": ["zero"]}))
    world.run(f"""
    CREATE STREAM src4 (id BIGINT, name STRING, day STRING) STORED AS DELTA LOCATION '{src}';
    CREATE TABLE dims (day STRING, label STRING) STORED AS DELTA LOCATION '{dims}';
    CREATE TABLE out4 (id BIGINT, label STRING) STORED AS DELTA LOCATION '{out}';
    """)
    plan = world.plan("joined", "insert into out4 select s.id, d.label from src4 s "
                                "join dims d on s.day = d.day")
    query = start_planned(world.session, plan, str(world.root / "checkpoints" / "joined"))
    try:
        query.processAllAvailable()
        write_deltalake(str(dims), pa.table({"day": ["d1"], "label": ["one"]}), mode="append")
        append(src, 9, 9)
        query.processAllAvailable()
        assert query.exception() is None
    finally:
        query.stop()
    got = sorted(DeltaTable(str(out)).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    want = [{"id": i, "label": "zero"} for i in range(0, 9, 3)] + \
        [{"id": i, "label": {0: "zero", 1: "one"}[i % 3]} for i in range(9, 18) if i % 3 < 2]
    assert got == sorted(want, key=lambda r: r["id"])


@pytest.mark.spark
def test_a_preview_reads_a_delta_table_at_a_version(world):
    """Time travel (issue 32): ``SELECT ... FROM t VERSION AS OF n`` in a preview reads
    the rows of that version through Spark, the table alone as one batch; ``TIMESTAMP
    AS OF`` the version committed then (planning and refusals:
    tests/unit/test_delta_time_travel.py)."""
    import json
    from types import SimpleNamespace

    from streamjob.client.preview import Previews
    from streamjob.connectors.delta import log as dlog
    from streamjob.spark.session import spark_session

    hist = world.root / "hist"
    for i in range(3):
        write_deltalake(str(hist), pa.table({"id": [i * 10, i * 10 + 1],
                                             "label": [f"v{i}", f"v{i}"]}), mode="append")
    world.run(f"CREATE TABLE hist (id BIGINT, label STRING) STORED AS DELTA "
              f"LOCATION '{hist}';")
    lines: list[str] = []
    session = SimpleNamespace(catalog=world.catalog, home=world.home, properties={},
                              database="default")
    previews = Previews(session, lambda: spark_session(world.home),
                        echo=lambda x="": lines.append(x))

    def ids(text: str) -> list[int]:
        lines.clear()
        previews.run(text, as_json=True)
        return sorted(json.loads(x)["id"] for x in lines if x.startswith("{"))

    assert ids("select id from hist VERSION AS OF 1") == [0, 1, 10, 11]
    assert ids("select id, label from hist version as of 0 where id > 0") == [1]
    t1 = dlog.read_commit(str(hist), 1).timestamp
    assert ids(f"select * from hist TIMESTAMP AS OF '{t1}' limit 9") == [0, 1, 10, 11]
    assert lines[-1] == "4 rows"
    assert ids("select * from hist version as of 2") == [0, 1, 10, 11, 20, 21]


@pytest.mark.spark
def test_a_chain_through_a_delta_table_equals_pandas(world):
    """Bronze to silver: job 1 writes the files of a file stream to a Delta table (its
    sink: one commit per micro-batch with its app transaction, empty ones included), job 2
    streams that table into another one, filtered; the result equals pandas over the
    input."""
    import pandas as pd

    inbox, bronze, silver = world.root / "inbox", world.root / "bronze", world.root / "silver"
    inbox.mkdir()
    world.run(f"""
    CREATE STREAM raw (id BIGINT, name STRING, day STRING)
      TBLPROPERTIES("source"="files", "path"="{inbox}", "format"="json");
    CREATE TABLE bronze (id BIGINT, name STRING, day STRING) STORED AS DELTA LOCATION '{bronze}';
    CREATE STREAM bronze_s (id BIGINT, name STRING, day STRING) STORED AS DELTA LOCATION '{bronze}';
    CREATE TABLE silver (id BIGINT, day STRING) STORED AS DELTA LOCATION '{silver}';
    """)
    first = start_planned(world.session, world.plan("to_bronze", "insert into bronze select * from raw"),
                          str(world.root / "checkpoints" / "to_bronze"))
    second = None
    try:
        world.write(inbox, rows(0, 20).to_pylist())
        first.processAllAvailable()  # the table exists once job 1 has started
        second = start_planned(world.session, world.plan(
            "to_silver", "insert into silver select id, day from bronze_s where name is not null"),
            str(world.root / "checkpoints" / "to_silver"))
        second.processAllAvailable()
        world.write(inbox, rows(20, 20).to_pylist())
        first.processAllAvailable()
        second.processAllAvailable()
        assert first.exception() is None and second.exception() is None
    finally:
        for q in (first, second):
            if q is not None:
                q.stop()
    df = rows(0, 40).to_pandas()
    want = df[df.name.notna()][["id", "day"]].sort_values("id").reset_index(drop=True)
    got = DeltaTable(str(silver)).to_pandas().sort_values("id").reset_index(drop=True)
    pd.testing.assert_frame_equal(got[["id", "day"]], want)
