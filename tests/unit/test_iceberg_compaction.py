"""OPTIMIZE of an Iceberg table (issue 32; streamjob/connectors/iceberg/compaction.py)
against real pyiceberg tables in the home's own SQL catalog (SQLite), without Spark:
one ``replace`` snapshot with the rows unchanged and fewer files, an Iceberg stream
reader that reads no row twice across it, a job's sink that still finds its
exactly-once markers behind it (and commits on top of it), commits racing the
compaction, the roles, and the pyiceberg version its private producer was checked
against."""

from __future__ import annotations

import os

import pandas as pd
import pyarrow as pa
import pyiceberg
import pytest

from streamjob.catalog import Catalog
from streamjob.catalog.records import Role
from streamjob.connectors import spec as cspec
from streamjob.connectors.iceberg import compaction
from streamjob.connectors.iceberg.catalog import load_table
from streamjob.connectors.iceberg.options import CATALOG, NAMESPACE, PATH, TABLE
from streamjob.connectors.iceberg.sink import IcebergSink
from streamjob.exceptions import AccessDeniedError, ConnectorError, ValidationError
from streamjob.executor import Executor
from streamjob.grammar import parse_script
from streamjob.home import Home

pytestmark = pytest.mark.unit

COLS = [{"name": "id", "type": "BIGINT"}, {"name": "day", "type": "STRING"}]


def _run(ex: Executor, text: str):
    out = None
    for stmt in parse_script(text):
        out = ex.execute(stmt)
    return out


def _batch(n: int) -> pa.Table:
    """Micro-batch ``n``: ids 10n, 10n+1 on two days (two partitions)."""
    return pa.table({"id": [10 * n, 10 * n + 1], "day": ["mon", "tue"]})


@pytest.fixture
def world(tmp_path):
    """Iceberg table ``ice`` partitioned by ``day``, four micro-batches of job ``j``'s
    sink (app id ``<uid>:1``) committed: eight small data files."""
    home = Home.open(tmp_path / "home", {})
    ex = Executor(Catalog(home.catalog_url), home)
    _run(ex, f"""CREATE TABLE ice (id BIGINT, day STRING) PARTITIONED BY (day)
                 STORED AS ICEBERG LOCATION '{tmp_path}/wh';
    CREATE STREAM clicks (id BIGINT) TBLPROPERTIES("topic"="c",
      "kafka.broker.list"="127.0.0.1:9", "format"="json");
    CREATE STREAMJOB j AS ("insert into ice select c.id, 'mon' from clicks c");""")
    spec = cspec.spec_of_table(ex.catalog.get_table("default", "ice"))
    uid = ex.catalog.get_job("default", "j").uid
    sink = IcebergSink(spec, COLS, "default.ice", f"{uid}:1", True)
    sink.prepare()
    for n in range(4):
        assert sink.write_arrow(_batch(n), n) == 2
    return ex, home, spec, sink


def _rows(ref) -> pd.DataFrame:
    return (load_table(ref).scan().to_pandas().sort_values("id")
            .reset_index(drop=True))


def _files(ref) -> int:
    return len(list(load_table(ref).scan().plan_files()))


def test_optimize_rewrites_the_small_files_in_one_replace_snapshot(world):
    ex, _, spec, _ = world
    ref = spec.ref
    before, snaps = _rows(ref), len(load_table(ref).metadata.snapshots)
    assert _files(ref) == 8
    done = _run(ex, "OPTIMIZE TABLE ice;")
    tbl = load_table(ref)
    cur = tbl.current_snapshot()
    assert cur.summary.operation.value == "replace" and len(tbl.metadata.snapshots) == snaps + 1
    assert "streamjob.app-id" not in cur.summary.additional_properties
    pd.testing.assert_frame_equal(_rows(ref), before)
    assert _files(ref) == 2  # one per partition
    data = done.to_json()
    assert (data["version"], data["files_removed"], data["files_added"],
            data["partitions_optimized"], data["operation"]) == (cur.snapshot_id, 8, 2, 2,
                                                                 "compact")
    assert data["bytes_removed"] > 0 and data["bytes_added"] > 0
    assert f"replace snapshot {cur.snapshot_id}" in done.message
    # the old files stay for the earlier snapshots (time travel), until VACUUM
    assert all(os.path.exists(p.removeprefix("file://")) for p in
               (t.file.file_path for t in tbl.scan(snapshot_id=cur.parent_snapshot_id)
                .plan_files()))
    # nothing left to merge: no commit
    again = _run(ex, "OPTIMIZE ice;")
    assert again.to_json()["version"] is None and "nothing to optimize" in again.message
    assert load_table(ref).current_snapshot().snapshot_id == cur.snapshot_id


def test_a_stream_reader_reads_no_row_twice_across_a_compaction(world):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from streamjob.connectors.iceberg.source import IcebergStreamReader

    ex, home, spec, sink = world
    ref = spec.ref
    options = {CATALOG: home.catalog_url, NAMESPACE: ref.namespace, TABLE: ref.name,
               PATH: ref.path}
    schema = StructType([StructField("id", LongType()), StructField("day", StringType())])

    def read(reader, start, end) -> list[int]:
        return sorted(i for part in reader.partitions(start, end)
                      for b in reader.read(part) for i in b.column("id").to_pylist())

    early = IcebergStreamReader(schema, options)
    start = early.initialOffset()
    end = early.latestOffset(start, early.getDefaultReadLimit())
    assert read(early, start, end) == [0, 1, 10, 11, 20, 21, 30, 31]
    _run(ex, "OPTIMIZE TABLE ice;")
    # the replace snapshot alone: a new position, nothing to read
    after = early.latestOffset(end, early.getDefaultReadLimit())
    assert read(early, end, after) == []
    sink.write_arrow(_batch(4), 4)  # commits on top of the replace snapshot
    last = early.latestOffset(after, early.getDefaultReadLimit())
    assert read(early, after, last) == [40, 41]
    # a reader from a position before the compaction with an append behind it reads
    # the append only
    assert read(early, end, last) == [40, 41]
    # a first start from earliest after it reads the compacted files, once
    fresh = IcebergStreamReader(schema, options)
    s0 = fresh.initialOffset()
    assert read(fresh, s0, fresh.latestOffset(s0, fresh.getDefaultReadLimit())) == \
        [0, 1, 10, 11, 20, 21, 30, 31, 40, 41]


def test_the_sink_finds_its_markers_behind_a_compaction(world):
    ex, _, spec, sink = world
    ref = spec.ref
    _run(ex, "OPTIMIZE TABLE ice;")
    # a restarted job (a new sink, same app id) skips the batch it committed before
    again = IcebergSink(spec, COLS, "default.ice", sink.app_id, True)
    assert again.last_committed() == 3
    assert again.write_arrow(_batch(3), 3) == 0 and again.skipped == 1
    # the running sink's handle is older than the replace snapshot: it commits on top
    assert sink.write_arrow(_batch(4), 4) == 2
    # ... where another writer's append (that batch, seen from again's older handle)
    # fails the commit, and the replay finds the batch committed
    with pytest.raises(ConnectorError, match="writing batch 4"):
        again.write_arrow(_batch(4), 4)
    assert again.write_arrow(_batch(4), 4) == 0 and again.skipped == 2
    # a compaction and then another writer's append: the commit fails, the replay
    # checks again
    _run(ex, "OPTIMIZE TABLE ice;")
    load_table(ref).append(pa.table({"id": [99], "day": ["mon"]}))
    with pytest.raises(ConnectorError, match="writing batch 5"):
        sink.write_arrow(_batch(5), 5)
    assert sink.write_arrow(_batch(5), 5) == 2
    assert _rows(ref)["id"].tolist() == [0, 1, 10, 11, 20, 21, 30, 31, 40, 41, 50, 51, 99]


def test_a_jobs_append_racing_the_compaction_is_kept(world, monkeypatch):
    """The append lands between the compaction's read and its commit (in the function
    that writes the new files): pyiceberg's retry commits on top of it."""
    _, _, spec, sink = world
    ref = spec.ref
    write = compaction._write_data_files

    def racing(tbl, rows, target):
        out = write(tbl, rows, target)
        if not racing.done:
            racing.done = True
            sink.write_arrow(_batch(7), 7)
        return out

    racing.done = False
    monkeypatch.setattr(compaction, "_write_data_files", racing)
    done = compaction.compact(ref)
    tbl = load_table(ref)
    assert tbl.current_snapshot().snapshot_id == done.snapshot_id
    assert tbl.current_snapshot().summary.operation.value == "replace"
    assert _rows(ref)["id"].tolist() == [0, 1, 10, 11, 20, 21, 30, 31, 70, 71]
    assert _files(ref) == 4  # two compacted, two appended during it


def test_a_concurrent_delete_of_the_rewritten_files_fails_the_statement(world, monkeypatch):
    """A delete of rows in the files being rewritten lands before the commit: nothing
    is committed, the files written are deleted again, it can be run again."""
    from pyiceberg.expressions import EqualTo

    _, _, spec, _ = world
    ref = spec.ref
    write = compaction._write_data_files
    written: list[str] = []

    def racing(tbl, rows, target):
        out = write(tbl, rows, target)
        written.extend(f.file_path for f in out)
        if len(written) == len(out):
            load_table(ref).delete(EqualTo("day", "mon"))
        return out

    monkeypatch.setattr(compaction, "_write_data_files", racing)
    with pytest.raises(ConnectorError, match="concurrent commit.*run it again"):
        compaction.compact(ref)
    assert load_table(ref).current_snapshot().summary.operation.value == "delete"
    assert _rows(ref)["id"].tolist() == [1, 11, 21, 31]
    assert written and not any(os.path.exists(p.removeprefix("file://")) for p in written)
    monkeypatch.undo()
    assert compaction.compact(ref).files_removed == 4
    assert _rows(ref)["id"].tolist() == [1, 11, 21, 31]


def test_zorder_and_a_viewer_are_refused(world):
    ex, home, _, _ = world
    with pytest.raises(ValidationError, match="ZORDER BY is refused: Iceberg's z-order"):
        _run(ex, "OPTIMIZE TABLE ice ZORDER BY (id);")
    viewer = Executor(Catalog(home.catalog_url), home, role=Role.VIEWER)
    with pytest.raises(AccessDeniedError, match="viewer may not run it"):
        _run(viewer, "OPTIMIZE TABLE ice;")
    operator = Executor(Catalog(home.catalog_url), home, role=Role.OPERATOR)
    with pytest.raises(Exception, match="streamjob.security.file.roots"):
        _run(operator, "OPTIMIZE TABLE ice;")  # its LOCATION is outside the roots


def test_pyiceberg_is_the_version_the_replace_producer_was_checked_against():
    """compaction._replace_files and _write_data_files use pyiceberg's private
    ``_OverwriteFiles``, ``update.validate`` and ``_dataframe_to_data_files``: on
    another version, check them (and the tests above) before changing
    CHECKED_PYICEBERG."""
    release = ".".join(pyiceberg.__version__.split(".")[:2])
    assert release == compaction.CHECKED_PYICEBERG, (
        f"pyiceberg {pyiceberg.__version__}: re-check streamjob/connectors/iceberg/"
        f"compaction.py's private producer (checked against {compaction.CHECKED_PYICEBERG})")
