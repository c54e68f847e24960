"""Iceberg tables' maintenance and versions (issue 32) against real pyiceberg tables in
the home's own SQL catalog (SQLite), without Spark: VACUUM's snapshot expiry and file
removal (what a job reading or writing the table keeps), OPTIMIZE ZORDER BY's refusal, the
snapshot a preview's ``VERSION AS OF`` names, the static reader's rows at a snapshot,
and DESCRIBE STREAMJOB's snapshot of the last checkpoint. The same while a job runs:
tests/integration/test_iceberg.py."""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pytest

from streamjob.catalog import Catalog
from streamjob.connectors import lakehouse
from streamjob.connectors import spec as cspec
from streamjob.connectors.iceberg import maintenance as im
from streamjob.connectors.iceberg.catalog import load_table
from streamjob.connectors.iceberg.sink import IcebergSink
from streamjob.exceptions import StreamJobError, ValidationError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home
from streamjob.planner.bind import bind_preview
from streamjob.planner.preview import plan_preview

pytestmark = pytest.mark.unit

COLS = [{"name": "id", "type": "BIGINT"}, {"name": "v", "type": "DOUBLE"}]


def _run(ex: Executor, text: str):
    out = None
    for stmt in parse_script(text):
        out = ex.execute(stmt)
    return out


@pytest.fixture
def world(tmp_path):
    """Iceberg table ``ice`` with three snapshots written by a job's sink (app id
    ``u:1``, batches 0..2), Kafka stream ``clicks``, job ``j`` writing ``ice``."""
    home = Home.open(tmp_path / "home", {})
    ex = Executor(Catalog(home.catalog_url), home)
    _run(ex, f"""CREATE TABLE ice (id BIGINT, v DOUBLE) STORED AS ICEBERG
                 LOCATION '{tmp_path}/wh';
    CREATE STREAM clicks (id BIGINT) TBLPROPERTIES("topic"="c",
      "kafka.broker.list"="127.0.0.1:9", "format"="json");
    CREATE STREAMJOB j AS ("insert into ice select c.id, 1.0 from clicks c");""")
    info = ex.catalog.get_table("default", "ice")
    spec = cspec.spec_of_table(info)
    uid = ex.catalog.get_job("default", "j").uid
    sink = IcebergSink(spec, COLS, "default.ice", f"{uid}:1", True)
    sink.prepare()
    for batch in range(3):
        sink.write_arrow(pa.table({"id": [batch], "v": [float(batch)]}), batch)
    return ex, home, spec.ref, uid


def _snapshots(ref) -> list:
    return load_table(ref).metadata.snapshots


def test_version_as_of_a_snapshot_id_reads_that_snapshot(world):
    ex, home, ref, _ = world
    first, second, third = (s.snapshot_id for s in _snapshots(ref))
    plan = plan_preview(ex.catalog, home, f"SELECT id FROM ice VERSION AS OF {second}")
    assert plan.batch and [s.as_of for s in plan.statics] == [second]
    [read] = bind_preview(plan).statics
    assert read.reader.format == "streamjob_iceberg"
    assert read.reader.options["snapshotid"] == str(second)
    # the static reader's rows at that snapshot: batches 0 and 1 (Spark calls read())
    from streamjob.connectors.iceberg.source import IcebergStaticReader
    from pyspark.sql.types import LongType, StructField, StructType

    schema = StructType([StructField("ID", LongType())])
    rows = pa.Table.from_batches(list(IcebergStaticReader(schema, read.reader.options)
                                      .read(None)))
    assert sorted(rows.column("ID").to_pylist()) == [0, 1]
    latest = {k: v for k, v in read.reader.options.items() if k != "snapshotid"}
    rows = pa.Table.from_batches(list(IcebergStaticReader(schema, latest).read(None)))
    assert sorted(rows.column("ID").to_pylist()) == [0, 1, 2]
    t2 = _snapshots(ref)[1].timestamp_ms
    assert lakehouse.version_as_of(cspec.spec_of_table(ex.catalog.get_table("default", "ice")),
                                   "timestamp", str(t2)) == second
    with pytest.raises(ValidationError, match=f"no snapshot 12345.*current snapshot is {third}"):
        plan_preview(ex.catalog, home, "SELECT id FROM ice VERSION AS OF 12345")
    assert first != third


def test_describe_streamjob_names_the_snapshot_of_the_last_checkpoint(world):
    """The checkpoint directory has no identity here, so the marker key is the bare uid:
    batch 1 committed under it, then the DESCRIBE."""
    ex, home, ref, uid = world
    sink = IcebergSink(ref and cspec.spec_of_table(ex.catalog.get_table("default", "ice")),
                       COLS, "default.ice", uid, True)
    for batch in range(2):
        sink.write_arrow(pa.table({"id": [10 + batch], "v": [0.0]}), batch)
    now = dt.datetime.now(dt.timezone.utc)
    ex.catalog.record_checkpoint(uid, 1, started_at=now, ended_at=now, duration_ms=1,
                                 source_offsets={}, input_rows=1, retained=5)
    got = _run(ex, "DESCRIBE STREAMJOB j;")
    want = _snapshots(ref)[-1].snapshot_id
    assert got.data["sink_table_version"] == want
    assert dict(got.sections[0].rows)["sink table version"].startswith(f"snapshot {want} ")


def test_optimize_zorder_of_an_iceberg_table_is_refused_naming_why(world):
    """OPTIMIZE itself: tests/unit/test_iceberg_compaction.py."""
    ex, *_ = world
    with pytest.raises(StreamJobError, match="ZORDER BY is refused: Iceberg's z-order"):
        _run(ex, "OPTIMIZE TABLE ice ZORDER BY (v);")


def test_vacuum_expires_old_snapshots_and_deletes_their_files_and_orphans(world, tmp_path):
    ex, _, ref, uid = world
    data = os.path.join(ref.path, "data")
    orphan = os.path.join(data, "crashed-writer.parquet")  # written, never committed
    with open(orphan, "wb") as f:
        f.write(b"x" * 10)
    # the writer job's newest snapshot is the current one: nothing of its keeps others
    old = _snapshots(ref)
    # DRY RUN changes nothing
    dry = _run(ex, "VACUUM TABLE ice RETAIN 0 HOURS DRY RUN;")
    assert "would expire 2 snapshots" in dry.message and len(_snapshots(ref)) == 3
    assert os.path.exists(orphan)
    done = _run(ex, "VACUUM ice RETAIN 0 HOURS;")
    assert [s.snapshot_id for s in _snapshots(ref)] == [old[-1].snapshot_id]
    deleted = {p for p, _b in done.rows}
    assert "data/crashed-writer.parquet" in deleted and not os.path.exists(orphan)
    assert sum(p.startswith("metadata/snap-") for p in deleted) == 2  # their manifest lists
    # the current snapshot still reads every row
    assert sorted(load_table(ref).scan().to_arrow().column("id").to_pylist()) == [0, 1, 2]
    assert done.to_json()["files_deleted"] == len(deleted) > 0
    shape = done.to_json()  # the snapshots it expired, by id; none kept for a job
    assert shape["snapshots_expired"] == sorted(s.snapshot_id for s in old[:2])
    assert shape["snapshots_kept"] == [] and shape["kept_for"] == []


def test_vacuum_keeps_what_a_job_reading_or_writing_still_needs(world, tmp_path):
    ex, home, ref, uid = world
    snaps = _snapshots(ref)
    _run(ex, f"""CREATE STREAM ice_s (id BIGINT) STORED AS ICEBERG LOCATION '{tmp_path}/wh'
                 TBLPROPERTIES("iceberg.table"="ice");
    CREATE TABLE out (id BIGINT) STORED AS PARQUET LOCATION '{tmp_path}/out';
    CREATE STREAMJOB reader AS ("insert into out select id from ice_s");""")
    # a reader without a checkpoint keeps every snapshot
    done = _run(ex, "VACUUM ice RETAIN 0 HOURS DRY RUN;")
    assert "would expire 0 snapshots" in done.message and "reader (reading it)" in done.message
    # its checkpoint read up to the second snapshot: the first may go
    reader = ex.catalog.get_job("default", "reader").uid
    now = dt.datetime.now(dt.timezone.utc)
    key = "iceberg:" + os.path.abspath(ref.path)
    ex.catalog.record_checkpoint(reader, 0, started_at=now, ended_at=now, duration_ms=1,
                                 source_offsets={key: {"snapshot": snaps[1].snapshot_id,
                                                       "sequence": 3, "initial": 0}},
                                 input_rows=1, retained=5)
    # another writer appends; the job j's newest snapshot (the third) is then kept too
    load_table(ref).append(pa.table({"id": [7], "v": [7.0]}))
    kept = _run(ex, "VACUUM ice RETAIN 0 HOURS;").to_json()
    assert kept["snapshots_expired"] == [snaps[0].snapshot_id]
    assert kept["snapshots_kept"] == sorted(s.snapshot_id for s in snaps[1:])
    assert kept["kept_for"] == ["streamjob default.j (writing it)",
                                "streamjob default.reader (reading it)"]
    assert [s.snapshot_id for s in _snapshots(ref)] == [s.snapshot_id for s in snaps[1:]] + [
        _snapshots(ref)[-1].snapshot_id]
    assert sorted(load_table(ref).scan().to_arrow().column("id").to_pylist()) == [0, 1, 2, 7]
    keep, who, writing = ex._iceberg_needs(ex.catalog.get_table("default", "ice"), ref)
    assert keep == snaps[1].sequence_number and not writing  # j is not running
    # a running writer keeps young files no snapshot references (its commit in progress)
    orphan = os.path.join(ref.path, "data", "in-flight.parquet")
    open(orphan, "wb").close()
    assert not im.vacuum(ref, 0, False, keep, orphan_floor_ms=3_600_000).files
    assert os.path.exists(orphan)
    assert [p for p, _ in im.vacuum(ref, 0, False, keep).files] == ["data/in-flight.parquet"]
