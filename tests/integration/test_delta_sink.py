"""The Delta Lake table sink (``STORED AS DELTA``) with real delta-rs tables on local
paths, read back with delta-rs itself (TESTING.md).

(a) The sink alone, called as the runner's foreachBatch would: the table created from the
declared columns and partition columns, each batch one commit carrying the job's app
transaction, a replayed batch skipped, a new epoch (another app id) not skipped, an
existing table of another shape refused, a batch of another schema refused.

(b) Through Spark from a Kafka stream on the real broker: the table read back equals the
input, the app transaction's version is the last batch id, and a crash after the sink
committed but before Spark logged the batch (its commit-log entry removed) replays the
batch, which the sink skips: nothing is written twice.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from streamjob import columntypes as sjtypes
from streamjob.connectors.delta.sink import DeltaSink
from streamjob.connectors.delta.spec import DeltaTableSpec
from streamjob.exceptions import SchemaMismatch
from streamjob_tools.dev import flights as nyc
from streamjob_tools.dev.broker import create_topic

from .world import SparkWorld, start_planned

UTC = dt.timezone.utc
COLUMNS = [{"name": "id", "type": "bigint"}, {"name": "name", "type": "string"},
           {"name": "price", "type": "decimal(12,2)"}, {"name": "at", "type": "timestamp"},
           {"name": "day", "type": "string"}]


def rows(start: int, n: int) -> list[dict]:
    """``n`` rows with ids from ``start``; every fifth has a NULL name."""
    return [{"id": i, "name": None if i % 5 == 0 else f"c{i}", "price": Decimal(i) / 4,
             "at": dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=i),
             "day": f"d{i % 3}"} for i in range(start, start + n)]


def batch(start: int, n: int) -> pa.Table:
    return pa.Table.from_pylist(rows(start, n), schema=sjtypes.arrow_schema(COLUMNS))


def read_back(path) -> list[dict]:
    """The table's rows through delta-rs, ordered by id."""
    return sorted(DeltaTable(str(path)).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


def sink_for(path, app_id="job-1:0", partitioned=("day",), exactly_once=True, cols=COLUMNS,
             config=()) -> DeltaSink:
    return DeltaSink(DeltaTableSpec(str(path), tuple(partitioned), tuple(config)), cols,
                     "default.t", app_id, exactly_once)


# -- (a) the sink alone --------------------------------------------------------------


@pytest.mark.component
def test_table_created_from_the_declaration_and_each_batch_one_commit(tmp_path):
    path = tmp_path / "t"
    cols = COLUMNS + [{"name": "ntz", "type": "timestamp_ntz"},
                      {"name": "tags", "type": "array<string>"},
                      {"name": "small", "type": "tinyint"}]
    sink = sink_for(path, cols=cols, config=(("delta.appendOnly", "true"),))
    sink.check()  # nothing there yet: fine, and nothing created
    assert not path.exists()
    sink.prepare()
    table = DeltaTable(str(path))
    assert table.version() == 0
    assert pa.schema(table.schema().to_arrow()).names == [c["name"] for c in cols]
    got = {f.name: f.type for f in pa.schema(table.schema().to_arrow())}
    assert got["price"] == pa.decimal128(12, 2) and got["small"] == pa.int8()
    assert got["at"] == pa.timestamp("us", "UTC") and got["ntz"] == pa.timestamp("us")
    assert pa.types.is_list(got["tags"])
    assert table.metadata().partition_columns == ["day"]
    assert table.metadata().name == "default.t"
    assert table.metadata().configuration == {"delta.appendOnly": "true"}
    sink_for(path, cols=cols).prepare()  # a restart finds its own table fitting


@pytest.mark.component
def test_app_transaction_per_batch_and_a_replay_is_skipped(tmp_path, caplog):
    path = tmp_path / "t"
    sink = sink_for(path)
    sink.prepare()
    assert sink.last_committed() is None
    assert sink.write_arrow(batch(0, 30), 0) == 30
    assert sink.write_arrow(batch(30, 20), 1) == 20
    assert DeltaTable(str(path)).transaction_version("job-1:0") == 1
    assert DeltaTable(str(path)).version() == 2  # create + one commit per batch
    # Spark replays batch 1 after a crash before its commit log entry; then batch 0
    with caplog.at_level("INFO", logger="streamjob.connectors.delta.sink"):
        assert sink.write_arrow(batch(30, 20), 1) == 0
        assert sink_for(path).write_arrow(batch(0, 30), 0) == 0
    assert sink.skipped == 1
    assert "skipped replay" in caplog.text
    assert DeltaTable(str(path)).version() == 2  # no commit for a skipped batch
    # an empty batch still commits its app transaction (as Spark's Delta sink)
    assert sink.write_arrow(batch(0, 0), 2) == 0
    assert sink.last_committed() == 2
    # a new checkpoint epoch is another app id: its batch 0 is not a replay
    assert sink_for(path, app_id="job-1:1").write_arrow(batch(50, 5), 0) == 5
    assert read_back(path) == rows(0, 55)  # every row exactly once
    assert {r["day"] for r in read_back(path)} == {"d0", "d1", "d2"}
    assert sorted(p.name for p in path.iterdir() if p.name.startswith("day=")) == \
        ["day=d0", "day=d1", "day=d2"]


@pytest.mark.component
def test_at_least_once_appends_without_an_app_transaction(tmp_path):
    path = tmp_path / "t"
    sink = sink_for(path, exactly_once=False)
    sink.prepare()
    sink.write_arrow(batch(0, 4), 0)
    sink.write_arrow(batch(0, 4), 0)  # a replay repeats the rows
    assert len(read_back(path)) == 8
    assert DeltaTable(str(path)).transaction_version("job-1:0") is None


@pytest.mark.component
def test_an_existing_table_of_another_shape_is_refused(tmp_path):
    path = tmp_path / "t"
    sink_for(path).prepare()
    other = [dict(c, type="int") if c["name"] == "id" else c for c in COLUMNS]
    other = [c for c in other if c["name"] != "name"] + [{"name": "extra", "type": "double"}]
    with pytest.raises(SchemaMismatch) as err:
        sink_for(path, cols=other).check()
    msg = err.value.message
    assert "column id is long, declared integer" in msg
    assert "column name (string) is not declared" in msg
    assert "extra" not in msg  # a declared column the table lacks would be added
    assert set(err.value.columns) == {"id", "name"}
    with pytest.raises(SchemaMismatch) as err:
        sink_for(path, partitioned=()).prepare()
    assert "partitioned by (day), declared (nothing)" in err.value.message


@pytest.mark.component
def test_a_declared_column_the_table_lacks_is_added_nullable(tmp_path):
    """Adding a nullable column is the one evolution allowed (issue 32): the job that
    declares it adds it when it starts; rows written before read it as NULL."""
    path = tmp_path / "t"
    first = sink_for(path)
    first.prepare()
    first.write_arrow(batch(0, 3), 0)
    wider = COLUMNS[:2] + [{"name": "note", "type": "string"}] + COLUMNS[2:]
    sink = sink_for(path, app_id="job-2:0", cols=wider)
    sink.check()  # allowed at START
    sink.prepare()
    names = pa.schema(DeltaTable(str(path)).schema().to_arrow()).names
    assert names == [c["name"] for c in COLUMNS] + ["note"]
    more = batch(3, 2)
    more = more.add_column(2, "note", pa.array(["a", "b"]))
    assert sink.write_arrow(more, 0) == 2
    got = read_back(path)
    assert [r["note"] for r in got] == [None, None, None, "a", "b"]
    assert [{k: v for k, v in r.items() if k != "note"} for r in got] == rows(0, 5)


@pytest.mark.component
def test_a_batch_of_another_schema_is_refused_and_nothing_written(tmp_path):
    path = tmp_path / "t"
    sink = sink_for(path)
    sink.prepare()
    wrong = batch(0, 3).set_column(0, "id", pa.array(["a", "b", "c"]))
    with pytest.raises(SchemaMismatch) as err:
        sink.write_arrow(wrong, 0)
    assert "column id is string, the table's long" in err.value.message
    with pytest.raises(SchemaMismatch) as err:
        sink.write_arrow(batch(0, 3).append_column("x", pa.array([1, 2, 3])), 0)
    assert "undeclared column 'x'" in err.value.message
    with pytest.raises(SchemaMismatch) as err:
        sink.write_arrow(batch(0, 3).drop_columns(["name"]), 0)
    assert "lacks column(s) name" in err.value.message
    assert DeltaTable(str(path)).version() == 0
    # names in another case and a timestamp in another time zone fit (the same instants)
    ok = batch(0, 3).rename_columns(["ID", "Name", "price", "at", "day"])
    ok = ok.set_column(3, "at", ok["at"].cast(pa.timestamp("us", "Europe/Paris")))
    assert sink.write_arrow(ok, 0) == 3
    assert read_back(path) == rows(0, 3)


@pytest.mark.component
def test_two_attempts_committing_one_batch_conflict_and_the_second_fails(tmp_path):
    """A fenced attempt still running read the table before the new owner committed the
    same batch: Delta's optimistic concurrency refuses its commit (delta-rs sees the app
    transaction changed since its snapshot), so the batch is not doubled."""
    from streamjob.exceptions import ConnectorError

    path = tmp_path / "t"
    sink_for(path).prepare()
    stale = DeltaTable(str(path))  # the old attempt's snapshot, before the commit below

    class Fenced(DeltaSink):
        def _open(self):
            return stale

    assert sink_for(path).write_arrow(batch(0, 10), 0) == 10
    fenced = Fenced(DeltaTableSpec(str(path), ("day",)), COLUMNS, "default.t", "job-1:0", True)
    with pytest.raises(ConnectorError) as err:
        fenced.write_arrow(batch(0, 10), 0)
    assert "writing batch 0 to Delta table default.t" in err.value.message
    assert "Traceback" not in err.value.message and "\n" not in err.value.message
    assert read_back(path) == rows(0, 10)


@pytest.mark.component
def test_an_upsert_merges_each_batch_on_the_primary_key(tmp_path):
    """Update mode into a Delta table with "primary.key": matched rows updated, others
    inserted, NULL keys equal, the last row of a key within a batch counts; a replay is
    skipped like any batch."""
    cols = [{"name": "Carrier", "type": "string"}, {"name": "month", "type": "int"},
            {"name": "flights", "type": "bigint"}]
    schema = sjtypes.arrow_schema(cols)
    path = tmp_path / "t"
    sink = DeltaSink(DeltaTableSpec(str(path), primary_key=("carrier", "month")), cols,
                     "default.t", "job-1:0", True, upsert=True)
    sink.prepare()

    def agg(rs):
        return pa.Table.from_pylist([dict(zip(("Carrier", "month", "flights"), r)) for r in rs],
                                    schema=schema)

    assert sink.write_arrow(agg([("AA", 1, 5), ("UA", 1, 3), (None, 1, 1)]), 0) == 3
    assert sink.write_arrow(agg([("AA", 1, 9), ("AA", 2, 4), (None, 1, 2), ("UA", 1, 6),
                                 ("UA", 1, 7)]), 1) == 5
    assert sink.write_arrow(agg([("AA", 1, 99)]), 1) == 0  # a replay: skipped
    got = sorted(DeltaTable(str(path)).to_pyarrow_table().to_pylist(), key=str)
    assert got == sorted([{"Carrier": "AA", "month": 1, "flights": 9},
                          {"Carrier": "AA", "month": 2, "flights": 4},
                          {"Carrier": "UA", "month": 1, "flights": 7},
                          {"Carrier": None, "month": 1, "flights": 2}], key=str)
    assert DeltaTable(str(path)).transaction_version("job-1:0") == 1


# -- (b) through Spark ---------------------------------------------------------------


class World(SparkWorld):
    """The module's :class:`SparkWorld`, starting jobs that write Delta tables."""

    def start_delta(self, job: str, query: str, uid: str):
        """Plan and start ``job`` with its Delta sink built as the runner builds it
        (marker key ``uid``); returns ``(plan, query, sink)``."""
        from streamjob.connectors.sinks import table_sink

        plan = self.plan(job, query)
        sink = table_sink(plan.sink, plan.sink_spec, marker=uid, job=plan.qualified_name,
                          exactly_once=plan.guarantee == "exactly-once",
                          upsert=plan.output_mode == "update")
        sink.prepare()
        return plan, start_planned(self.session, plan, str(self.root / "checkpoints" / job),
                                   sink), sink


@pytest.fixture(scope="module")
def world(tmp_path_factory, broker):
    w = World(tmp_path_factory.mktemp("delta_sink"))
    yield w
    w.close()


def produce(bootstrap: str, topic: str, records: list[dict]) -> None:
    nyc.replay(bootstrap, topic, [json.dumps(r, default=str).encode() for r in records], 2)


def kafka_records(start: int, n: int) -> list[dict]:
    return [{**r, "price": str(r["price"]), "at": r["at"].isoformat().replace("+00:00", "Z")}
            for r in rows(start, n)]


@pytest.mark.spark
def test_a_kafka_job_writes_a_delta_table_exactly_once_across_a_replay(world, broker):
    topic = f"delta-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    out = world.root / "orders_delta"
    world.run(f"""
    CREATE STREAM orders (id BIGINT, name STRING, price DECIMAL(12,2), at TIMESTAMP, day STRING)
      TBLPROPERTIES("topic"="{topic}", "kafka.broker.list"="{broker.bootstrap}", "format"="json");
    CREATE TABLE dorders (id BIGINT, name STRING, price DECIMAL(12,2), at TIMESTAMP, day STRING)
      PARTITIONED BY (day) STORED AS DELTA LOCATION '{out}';
    """)
    uid = f"{uuid.uuid4().hex}:0"
    text = "insert into dorders select * from orders"
    produce(broker.bootstrap, topic, kafka_records(0, 60))
    plan, query, sink = world.start_delta("to_delta", text, uid)
    assert plan.guarantee == "exactly-once" and sink.describe()["connector"] == "delta"
    try:
        query.processAllAvailable()
        produce(broker.bootstrap, topic, kafka_records(60, 40))
        query.processAllAvailable()
        assert query.exception() is None
        last = query.lastProgress["batchId"]
        assert query.lastProgress["numInputRows"] > 0  # the last batch wrote rows
    finally:
        query.stop()
    assert read_back(out) == rows(0, 100)
    assert DeltaTable(str(out)).transaction_version(uid) == last
    version = DeltaTable(str(out)).version()

    # a crash after the Delta commit but before Spark logged the batch: Spark runs the
    # batch again on restart, and the app transaction makes the sink skip it
    commits = world.root / "checkpoints" / "to_delta" / "commits"
    for name in (str(last), f".{last}.crc"):
        (commits / name).unlink(missing_ok=True)
    _, query, sink = world.start_delta("to_delta", text, uid)
    try:
        query.processAllAvailable()
        assert query.exception() is None
        assert query.lastProgress["batchId"] == last  # the replayed batch ran
        assert query.lastProgress["numInputRows"] > 0
    finally:
        query.stop()
    assert sink.delta.skipped == 1
    assert DeltaTable(str(out)).version() == version  # no new commit
    assert read_back(out) == rows(0, 100)  # nothing twice


@pytest.mark.spark
def test_an_aggregation_merges_into_a_delta_table_with_a_primary_key(world, broker):
    import pandas as pd

    topic = f"delta-agg-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    out = world.root / "per_day"
    world.run(f"""
    CREATE STREAM aorders (id BIGINT, name STRING, price DECIMAL(12,2), at TIMESTAMP, day STRING)
      TBLPROPERTIES("topic"="{topic}", "kafka.broker.list"="{broker.bootstrap}", "format"="json");
    CREATE TABLE per_day (day STRING, n BIGINT, total DECIMAL(22,2))
      STORED AS DELTA LOCATION '{out}' TBLPROPERTIES("primary.key"="day");
    """)
    uid = f"{uuid.uuid4().hex}:0"
    produce(broker.bootstrap, topic, kafka_records(0, 50))
    plan, query, sink = world.start_delta(
        "per_day", "insert into per_day select day, count(*), sum(price) from aorders group by day",
        uid)
    assert plan.output_mode == "update" and sink.describe()["upsert"] is True
    try:
        query.processAllAvailable()
        produce(broker.bootstrap, topic, kafka_records(50, 70))
        query.processAllAvailable()
        assert query.exception() is None
    finally:
        query.stop()
    want = pd.DataFrame(rows(0, 120)).groupby("day").agg(n=("id", "size"), total=("price", "sum"))
    got = {r["day"]: (r["n"], r["total"]) for r in DeltaTable(str(out)).to_pyarrow_table().to_pylist()}
    assert got == {day: (r.n, r.total) for day, r in want.iterrows()}
    assert DeltaTable(str(out)).transaction_version(uid) == query.lastProgress["batchId"]
