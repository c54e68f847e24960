"""OPTIMIZE and VACUUM (issue 32) on a real delta-rs table read by a Delta stream job
(TESTING.md: real delta-rs writes, a real SQLite catalog; no Spark: the Delta stream
source's planning is called as Spark's micro-batch engine calls it, as in
test_delta_source.py part (a)).

Many small appends, then OPTIMIZE: fewer files, the same rows (pandas), and the stream
reading the table sees every row once — OPTIMIZE's ``dataChange`` false commit is not
read again. VACUUM is refused while a job's checkpointed Delta position still reads
files it would delete (and, with a short retention, while any job reads the table as a
stream), and allowed, DRY RUN listing the files, once the job has moved past them.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from pyspark.sql.types import LongType, StructField, StructType

from streamjob.catalog import Catalog
from streamjob.connectors.delta.source import DeltaStreamReader
from streamjob.exceptions import ObjectInUseError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home

pytestmark = pytest.mark.component

APPENDS = 12


def _run(ex: Executor, text: str):
    out = None
    for stmt in parse_script(text):
        out = ex.execute(stmt)
    return out


def _read(r: DeltaStreamReader, start: dict, end: dict) -> list[int]:
    ids = []
    for part in r.partitions(start, end):
        for b in r.read(part):
            ids.extend(b.column("id").to_pylist())
    return ids


def _age_removals(path, version: int, days: int) -> None:
    """Date the ``remove`` actions of ``version`` ``days`` back, as if OPTIMIZE had run
    then (VACUUM deletes files removed longer ago than its retention)."""
    f = path / "_delta_log" / f"{version:020d}.json"
    old = int((time.time() - days * 86400) * 1000)
    lines = []
    for line in f.read_text().splitlines():
        action = json.loads(line)
        if "remove" in action:
            action["remove"]["deletionTimestamp"] = old
        lines.append(json.dumps(action))
    f.write_text("\n".join(lines) + "\n")


def test_optimize_and_vacuum_with_a_delta_stream_reading_the_table(tmp_path):
    home = Home.open(tmp_path / "home", {})
    catalog = Catalog(home.catalog_url)
    ex = Executor(catalog, home)
    t = tmp_path / "t"
    _run(ex, f"""CREATE TABLE t (id BIGINT) STORED AS DELTA LOCATION '{t}';
CREATE STREAM ts (id BIGINT) STORED AS DELTA LOCATION '{t}';
CREATE TABLE out (id BIGINT) STORED AS DELTA LOCATION '{tmp_path}/out';
CREATE STREAMJOB reader AS ("insert into out select id from ts");""")
    for i in range(APPENDS):  # many small appends: one file each
        write_deltalake(str(t), pa.table({"id": [2 * i, 2 * i + 1]}), mode="append")
    before = DeltaTable(str(t)).to_pandas().sort_values("id").reset_index(drop=True)

    # the stream reads the snapshot (version 0) and then each later version
    r = DeltaStreamReader(StructType([StructField("id", LongType())]),
                          {"path": str(t), "startingVersion": "0"})
    start = r.initialOffset()
    end = r.latestOffset(start, r.getDefaultReadLimit())
    seen = _read(r, start, end)
    assert sorted(seen) == list(range(2 * APPENDS))
    # the job's checkpoint holds a position in the middle of the table's history
    job = catalog.get_job("default", "reader")
    now = datetime.now(timezone.utc)
    catalog.record_checkpoint(job.uid, 0, started_at=now, ended_at=now, duration_ms=1,
                              source_offsets={r.key: {"version": 3, "index": 0,
                                                      "snapshot": 0}},
                              input_rows=6, retained=1)

    optimized = _run(ex, "OPTIMIZE TABLE t;").to_json()
    assert (optimized["files_removed"], optimized["files_added"]) == (APPENDS, 1)
    assert optimized["version"] == APPENDS
    dt = DeltaTable(str(t))
    assert len(dt.file_uris()) == 1
    assert dt.to_pandas().sort_values("id").reset_index(drop=True).equals(before)

    # OPTIMIZE's commit is not read again: the stream's next batch holds only new rows
    write_deltalake(str(t), pa.table({"id": [1000]}), mode="append")
    later = r.latestOffset(end, r.getDefaultReadLimit())
    assert later[r.key]["version"] == APPENDS + 2
    seen += _read(r, end, later)
    assert sorted(seen) == list(range(2 * APPENDS)) + [1000]
    assert len(seen) == len(set(seen))

    # VACUUM: a short retention is refused while the job reads the table
    with pytest.raises(ObjectInUseError) as err:
        _run(ex, "VACUUM TABLE t RETAIN 0 HOURS DRY RUN;")
    assert "default.reader" in err.value.message
    # with the removals 8 days old, Delta's default retention would delete the files
    # of versions 3 and later, which the job's checkpoint still reads: refused
    _age_removals(t, APPENDS, days=8)
    with pytest.raises(ObjectInUseError) as err:
        _run(ex, "VACUUM TABLE t DRY RUN;")
    assert "streamjob default.reader" in err.value.message and "version 3" in err.value.message
    assert len(list(t.glob("*.parquet"))) == APPENDS + 2  # nothing deleted

    # the job moves on past OPTIMIZE: VACUUM lists, then deletes, the compacted files
    catalog.record_checkpoint(job.uid, 1, started_at=now, ended_at=now, duration_ms=1,
                              source_offsets={r.key: {"version": APPENDS + 2, "index": 0,
                                                      "snapshot": 0}},
                              input_rows=1, retained=1)
    listed = _run(ex, "VACUUM TABLE t DRY RUN;")
    data = listed.to_json()
    assert (data["dry_run"], data["files_deleted"], data["retention_hours"]) == (True, APPENDS, 168)
    assert data["bytes_deleted"] == sum(size for _f, size in listed.rows) > 0
    assert len(list(t.glob("*.parquet"))) == APPENDS + 2
    done = _run(ex, "VACUUM TABLE t;").to_json()
    assert done["files_deleted"] == APPENDS and not done["dry_run"]
    assert len(list(t.glob("*.parquet"))) == 2
    assert DeltaTable(str(t)).to_pandas().sort_values("id")["id"].tolist() == \
        list(range(2 * APPENDS)) + [1000]


@pytest.mark.spark
def test_a_running_job_streaming_the_table_is_not_doubled_by_optimize(tmp_path):
    """Through Spark: a job streams a Delta table into another while the table gets
    small appends, OPTIMIZE (plain and ZORDER BY) and more appends; every row reaches the
    output once, equal to pandas over the source table."""
    from streamjob.connectors.sinks import table_sink

    from .world import SparkWorld, start_planned

    world = SparkWorld(tmp_path)
    try:
        src, out = tmp_path / "src", tmp_path / "out"
        for i in range(6):
            write_deltalake(str(src), pa.table({"id": [3 * i, 3 * i + 1, 3 * i + 2]}),
                            mode="append")
        world.run(f"""CREATE STREAM src (id BIGINT) STORED AS DELTA LOCATION '{src}';
CREATE TABLE srct (id BIGINT) STORED AS DELTA LOCATION '{src}';
CREATE TABLE out (id BIGINT) STORED AS DELTA LOCATION '{out}';""")
        plan = world.plan("copy", "insert into out select id from src")
        sink = table_sink(plan.sink, plan.sink_spec, marker="copy:0", job=plan.qualified_name,
                          exactly_once=True)
        sink.prepare()
        query = start_planned(world.session, plan, str(tmp_path / "checkpoints" / "copy"), sink)
        try:
            query.processAllAvailable()
            assert world.run("OPTIMIZE TABLE srct")[0].to_json()["files_removed"] == 6
            for i in range(6, 9):
                write_deltalake(str(src), pa.table({"id": [3 * i, 3 * i + 1, 3 * i + 2]}),
                                mode="append")
            query.processAllAvailable()
            assert world.run("OPTIMIZE srct ZORDER BY (id)")[0].to_json()["version"] is not None
            write_deltalake(str(src), pa.table({"id": [1000]}), mode="append")
            query.processAllAvailable()
            assert query.exception() is None
        finally:
            query.stop()
        want = DeltaTable(str(src)).to_pandas().sort_values("id")["id"].tolist()
        got = DeltaTable(str(out)).to_pandas().sort_values("id")["id"].tolist()
        assert want == list(range(27)) + [1000]
        assert got == want
    finally:
        world.close()
