"""The Iceberg sink and the Iceberg stream reader alone, on real pyiceberg tables in a
SQLite catalog under a temporary directory (no Spark session: called as the runner's
foreachBatch and as Spark's micro-batch planning would call them). Through Spark and
Kafka: tests/integration/test_iceberg.py."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from streamjob.connectors.iceberg.catalog import load_table, open_catalog
from streamjob.connectors.iceberg.sink import APP_ID, BATCH_ID, IcebergSink
from streamjob.connectors.iceberg.spec import iceberg_table_spec
from streamjob.exceptions import ConnectorError, NotAppendOnly, SchemaMismatch

UTC = dt.timezone.utc
COLUMNS = [{"name": "id", "type": "bigint"}, {"name": "name", "type": "string"},
           {"name": "at", "type": "timestamp"}, {"name": "day", "type": "string"}]


def batch(start: int, n: int, extra: dict | None = None) -> pa.Table:
    data = {"id": list(range(start, start + n)),
            "name": [None if i % 5 == 0 else f"c{i}" for i in range(start, start + n)],
            "at": pa.array([dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=i)
                            for i in range(start, start + n)], pa.timestamp("us", "UTC")),
            "day": [f"d{i % 3}" for i in range(start, start + n)]}
    return pa.table({**data, **(extra or {})})


@pytest.fixture
def uri(tmp_path):
    return f"sqlite:///{tmp_path}/ice.db"


def spec_for(uri, tmp_path, name="t", partitioned=("day",), props=None):
    return iceberg_table_spec(name, {"iceberg.catalog.uri": uri, **(props or {})},
                              str(tmp_path / "wh"), "", partitioned, database="db")


def ids(spec) -> list[int]:
    return sorted(load_table(spec.ref).scan().to_arrow().column("id").to_pylist())


@pytest.mark.component
def test_the_sink_commits_each_batch_once_with_its_identity_and_evolves_only_by_adding(
        uri, tmp_path, caplog):
    spec = spec_for(uri, tmp_path)
    sink = IcebergSink(spec, COLUMNS, "db.t", "job-1:0", True)
    sink.check()  # nothing there yet: fine, nothing created
    assert load_table(spec.ref, missing_ok=True) is None
    sink.prepare()
    tbl = load_table(spec.ref)
    assert tbl.location() == f"file://{tmp_path}/wh/db.db/t"
    assert [str(f.transform) for f in tbl.spec().fields] == ["identity"]
    assert sink.write_arrow(batch(0, 30), 0) == 30
    assert sink.write_arrow(batch(30, 20), 1) == 20
    snap = load_table(spec.ref).current_snapshot()
    assert snap.summary.additional_properties[APP_ID] == "job-1:0"
    assert snap.summary.additional_properties[BATCH_ID] == "1"
    with caplog.at_level("INFO", logger="streamjob.connectors.iceberg.sink"):
        assert sink.write_arrow(batch(30, 20), 1) == 0  # a replay, this instance
        # a restart (a new instance) finds its batches in the snapshots
        assert IcebergSink(spec, COLUMNS, "db.t", "job-1:0", True).write_arrow(batch(0, 30), 0) == 0
    assert "skipped replay" in caplog.text and sink.skipped == 1
    assert sink.write_arrow(batch(0, 0), 2) == 0  # an empty batch commits nothing
    assert len(load_table(spec.ref).snapshots()) == 2
    # a new checkpoint epoch is another app id: its batch 0 is not a replay
    assert IcebergSink(spec, COLUMNS, "db.t", "job-1:1", True).write_arrow(batch(50, 5), 0) == 5
    assert ids(spec) == list(range(55))
    # at-least-once: plain appends without the identity, a replay repeats rows
    plain = IcebergSink(spec, COLUMNS, "db.t", "job-1:2", False)
    plain.write_arrow(batch(55, 2), 0)
    plain.write_arrow(batch(55, 2), 0)
    assert ids(spec) == list(range(55)) + [55, 55, 56, 56]
    assert APP_ID not in load_table(spec.ref).current_snapshot().summary.additional_properties

    # a declared nullable column the table lacks is added; old rows read it as NULL
    wider = COLUMNS + [{"name": "note", "type": "string"}]
    grown = IcebergSink(spec, wider, "db.t", "job-2:0", True)
    grown.check()
    grown.prepare()
    assert grown.write_arrow(batch(100, 2, {"note": ["a", "b"]}), 0) == 2
    notes = load_table(spec.ref).scan(row_filter="id >= 100").to_arrow().column("note")
    assert notes.to_pylist() == ["a", "b"]
    # another type, an undeclared column, other partitioning: refused, naming them
    other = [dict(c, type="int") if c["name"] == "id" else c for c in COLUMNS]
    with pytest.raises(SchemaMismatch) as err:
        IcebergSink(spec, other, "db.t", "x", True).check()
    assert "column id is long, declared int" in err.value.message
    assert "column note (string) is not declared" in err.value.message
    with pytest.raises(SchemaMismatch) as err:
        IcebergSink(spec_for(uri, tmp_path, partitioned=()), wider, "db.t", "x", True).prepare()
    assert "partitioned by (day), declared (nothing)" in err.value.message
    with pytest.raises(SchemaMismatch) as err:  # a batch of another schema
        grown.write_arrow(batch(0, 2, {"note": ["a", "b"]}).set_column(0, "id", pa.array(["a", "b"])), 1)
    assert "column id is string, the table's long" in err.value.message


@pytest.mark.component
def test_two_attempts_committing_one_batch_conflict_and_upserts_keep_the_last_row(uri, tmp_path):
    """A fenced attempt that read the table before the new owner committed the same batch
    fails its commit (the catalog commit asserts the snapshot it read): not doubled."""
    spec = spec_for(uri, tmp_path)
    IcebergSink(spec, COLUMNS, "db.t", "job-1:0", True).prepare()
    stale = load_table(spec.ref)  # the old attempt's view, before the commit below

    class Fenced(IcebergSink):
        def _last_for(self, tbl):
            return None

    import streamjob.connectors.iceberg.sink as isink
    assert IcebergSink(spec, COLUMNS, "db.t", "job-1:0", True).write_arrow(batch(0, 10), 0) == 10
    real = isink.load_table
    isink.load_table = lambda ref, **kw: stale
    try:
        with pytest.raises(ConnectorError) as err:
            Fenced(spec, COLUMNS, "db.t", "job-1:0", True).write_arrow(batch(0, 10), 0)
    finally:
        isink.load_table = real
    assert "writing batch 0 to Iceberg table db.t" in err.value.message
    assert "\n" not in err.value.message
    assert ids(spec) == list(range(10))

    cols = [{"name": "Carrier", "type": "string"}, {"name": "flights", "type": "bigint"}]
    up = spec_for(uri, tmp_path, "u", (), {"primary.key": "carrier"})
    sink = IcebergSink(up, cols, "db.u", "job-1:0", True, upsert=True)
    sink.prepare()
    sink.write_arrow(pa.table({"Carrier": ["AA", "UA"], "flights": [5, 3]}), 0)
    sink.write_arrow(pa.table({"Carrier": ["AA", "DL", "AA"], "flights": [9, 1, 11]}), 1)
    assert sink.write_arrow(pa.table({"Carrier": ["AA"], "flights": [99]}), 1) == 0
    got = sorted(load_table(up.ref).scan().to_arrow().to_pylist(), key=lambda r: r["Carrier"])
    assert got == [{"Carrier": "AA", "flights": 11}, {"Carrier": "DL", "flights": 1},
                   {"Carrier": "UA", "flights": 3}]


@pytest.mark.component
def test_the_stream_reader_reads_a_snapshot_then_appends_and_refuses_a_delete(uri, tmp_path):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from streamjob.connectors.iceberg.source import IcebergStreamReader

    spec = spec_for(uri, tmp_path, partitioned=())
    sink = IcebergSink(spec, COLUMNS, "db.t", "w:0", True)
    sink.prepare()
    sink.write_arrow(batch(0, 10), 0)
    schema = StructType([StructField("id", LongType()), StructField("day", StringType())])
    options = {"catalog": uri, "namespace": "db", "table": "t", "path": spec.ref.path}
    reader = IcebergStreamReader(schema, options)

    def read(start, end) -> list[int]:
        out = []
        for task in reader.partitions(start, end):
            for b in reader.read(task):
                out += b.column("id").to_pylist()
        return sorted(out)

    start = reader.initialOffset()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    assert read(start, end) == list(range(10))  # the current snapshot whole
    assert reader.latestOffset(end, None) == end  # nothing new
    sink.write_arrow(batch(10, 5), 1)
    sink.write_arrow(batch(15, 5), 2)
    nxt = reader.latestOffset(end, None)
    assert read(end, nxt) == list(range(10, 20))  # two appends, incrementally
    assert read(end, nxt) == list(range(10, 20))  # replayable
    latest = IcebergStreamReader(schema, {**options, "starting": "latest"})
    assert latest.partitions(latest.initialOffset(), latest.initialOffset()) == []
    load_table(spec.ref).delete("id < 3")
    deleting = load_table(spec.ref).current_snapshot().snapshot_id
    with pytest.raises(NotAppendOnly) as err:
        reader.latestOffset(nxt, None)
    assert f"snapshot {deleting}" in err.value.message
    open_catalog(uri).engine.dispose()
