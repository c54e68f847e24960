"""Apache Iceberg tables (``STORED AS ICEBERG``) with real pyiceberg catalogs, Spark and
the tests' Kafka broker (TESTING.md); read back with pyiceberg itself and compared with
pandas over the same input. One module world shares Spark and the broker:

* a Kafka stream into an Iceberg table in the default catalog (streamjob's own SQLite
  catalog database): equal to the input, each snapshot's summary holding the job's
  identity and batch id; a crash after the commit but before Spark logged the batch
  replays it, and the sink skips it (nothing twice);
* an aggregation upserted on a primary key into a table of a PostgreSQL catalog (a fresh
  database): equal to pandas' group-by;
* that first table read as an Iceberg stream by another job joined with a static
  Iceberg table, more appends read incrementally, equal to pandas; meanwhile, with both
  jobs' queries active, VACUUM expires the snapshots neither job needs (the reader's
  checkpointed position, recorded in the catalog as the runner records it, kept) after
  OPTIMIZE compacted the files into a ``replace`` snapshot, and both jobs go on reading
  (no row twice) and writing; a preview then reads the
  table at the reader's snapshot (``VERSION AS OF``).

The sink and the stream reader alone (no Spark): tests/integration/test_iceberg_parts.py.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal

import pandas as pd
import pytest

from streamjob.connectors.iceberg.catalog import open_catalog
from streamjob.connectors.iceberg.sink import APP_ID, BATCH_ID
from streamjob_tools.dev import flights as nyc
from streamjob_tools.dev.broker import create_topic

from .faults import scratch_database
from .world import SparkWorld, start_planned

UTC = dt.timezone.utc
COLS = "id BIGINT, name STRING, price DECIMAL(12,2), at TIMESTAMP, day STRING"


def rows(start: int, n: int) -> list[dict]:
    """``n`` rows with ids from ``start``; every fifth has a NULL name."""
    return [{"id": i, "name": None if i % 5 == 0 else f"c{i}", "price": Decimal(i) / 4,
             "at": dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=i),
             "day": f"d{i % 3}"} for i in range(start, start + n)]


def produce(bootstrap: str, topic: str, start: int, n: int) -> None:
    records = [{**r, "price": str(r["price"]), "at": r["at"].isoformat().replace("+00:00", "Z")}
               for r in rows(start, n)]
    nyc.replay(bootstrap, topic, [json.dumps(r).encode() for r in records], 2)


class World(SparkWorld):
    """The module's world: starts jobs with their sink built as the runner builds it."""

    def start_job(self, job: str, query: str, uid: str):
        """Plan and start ``job`` (marker key ``uid``); returns ``(plan, query, sink)``."""
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
    w = World(tmp_path_factory.mktemp("iceberg"))
    yield w
    w.close()


def table(world, name: str, uri: str | None = None):
    """The pyiceberg table ``default.<name>`` (default: in the home's catalog)."""
    return open_catalog(uri or world.home.catalog_url).load_table(("default", name))


def frame(tbl, columns) -> pd.DataFrame:
    return tbl.scan().to_pandas()[columns].sort_values(columns[0]).reset_index(drop=True)


def want(start: int, n: int) -> pd.DataFrame:
    df = pd.DataFrame(rows(start, n))
    df["price"] = df["price"].astype(object)
    return df


def drain(query) -> int:
    """Run every available micro-batch; the last batch id."""
    query.processAllAvailable()
    assert query.exception() is None
    return query.lastProgress["batchId"]


@pytest.mark.spark
def test_kafka_to_iceberg_exactly_once_across_a_replay_then_read_as_a_stream(world, broker):
    topic = f"ice-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    world.run(f"""
    CREATE STREAM orders ({COLS})
      TBLPROPERTIES("topic"="{topic}", "kafka.broker.list"="{broker.bootstrap}", "format"="json");
    CREATE TABLE iorders ({COLS}) PARTITIONED BY (day) STORED AS ICEBERG;
    """)
    uid = f"{uuid.uuid4().hex}:0"
    text = "insert into iorders select * from orders"
    produce(broker.bootstrap, topic, 0, 60)
    plan, query, sink = world.start_job("to_ice", text, uid)
    assert plan.guarantee == "exactly-once" and sink.describe()["connector"] == "iceberg"
    try:
        drain(query)
        produce(broker.bootstrap, topic, 60, 40)
        last = drain(query)
        assert query.lastProgress["numInputRows"] > 0
    finally:
        query.stop()
    cols = ["id", "name", "price", "at", "day"]
    tbl = table(world, "iorders")
    got = frame(tbl, cols)
    pd.testing.assert_frame_equal(got.drop(columns="at"), want(0, 100).drop(columns="at"))
    assert list(got["at"].dt.tz_convert("UTC")) == list(want(0, 100)["at"])
    summary = tbl.current_snapshot().summary.additional_properties
    assert (summary[APP_ID], summary[BATCH_ID]) == (uid, str(last))
    assert [str(f.transform) for f in tbl.spec().fields] == ["identity"]
    snapshots = len(tbl.snapshots())

    # a crash after the commit but before Spark logged the batch: Spark runs the batch
    # again on restart, and the snapshot summaries make the sink skip it
    commits = world.root / "checkpoints" / "to_ice" / "commits"
    for name in (str(last), f".{last}.crc"):
        (commits / name).unlink(missing_ok=True)
    _, query, sink = world.start_job("to_ice", text, uid)
    try:
        assert drain(query) == last
        assert query.lastProgress["numInputRows"] > 0  # the replayed batch ran
    finally:
        query.stop()
    assert sink.iceberg.skipped == 1
    tbl = table(world, "iorders")
    assert len(tbl.snapshots()) == snapshots  # no new snapshot
    assert len(frame(tbl, cols)) == 100  # nothing twice

    # the table read as an Iceberg stream by another job, joined with a static Iceberg
    # table: its snapshot, then appends
    world.run(f"""
    CREATE STREAM ice_src (id BIGINT, name STRING, day STRING) STORED AS ICEBERG
      TBLPROPERTIES("iceberg.table"="iorders");
    CREATE TABLE copy (id BIGINT, name STRING, day STRING) STORED AS ICEBERG;
    CREATE TABLE days (day STRING, label STRING) STORED AS ICEBERG;
    """)
    _static_days(world)
    chain = ("insert into copy select s.id, s.name, d.label from ice_src s "
             "join days d on s.day = d.day")
    world.run(f'CREATE STREAMJOB chain AS ("{chain}");'
              f'CREATE STREAMJOB to_ice AS ("{text}");')
    _, query, _ = world.start_job("chain", chain, f"{uuid.uuid4().hex}:0")
    try:
        drain(query)
        _record_position(world, "chain", query)
        before = [s.snapshot_id for s in table(world, "iorders").snapshots()]
        _, writer, _ = world.start_job("to_ice", text, uid)  # the first job goes on
        produce(broker.bootstrap, topic, 100, 30)
        drain(writer)
        # maintenance while both queries run: OPTIMIZE compacts the files into a
        # replace snapshot (which the reader skips and the writer commits on top of),
        # then the snapshots before the reader's position go, the reader's and later
        # ones stay
        [opt] = world.run("OPTIMIZE TABLE iorders;")
        assert opt.to_json()["files_removed"] > opt.to_json()["files_added"] > 0, opt.message
        assert table(world, "iorders").current_snapshot().summary.operation.value == "replace"
        [done] = world.run("VACUUM TABLE iorders RETAIN 0 HOURS;")
        kept = [s.snapshot_id for s in table(world, "iorders").snapshots()]
        assert before[-1] in kept and set(before[:-1]).isdisjoint(kept), done.message
        assert done.to_json()["files_deleted"] >= len(before) - 1  # their manifest lists
        produce(broker.bootstrap, topic, 130, 20)
        drain(writer)
        writer.stop()
        drain(query)
    finally:
        query.stop()
    cols = ["id", "name", "day"]
    expect = want(0, 150)[cols].assign(day=lambda d: d["day"].str.upper())
    pd.testing.assert_frame_equal(frame(table(world, "copy"), cols), expect)
    assert len(frame(table(world, "iorders"), cols)) == 150
    # a preview reads the table at the reader's kept snapshot (time travel), through Spark
    assert _preview_ids(world, f"select id from iorders VERSION AS OF {before[-1]}") == \
        list(range(100))


def _preview_ids(world, text: str) -> list[int]:
    """The ids a shell preview of ``text`` prints (``--json`` lines)."""
    from types import SimpleNamespace

    from streamjob.client.preview import Previews
    from streamjob.spark.session import spark_session

    lines: list[str] = []
    session = SimpleNamespace(catalog=world.catalog, home=world.home, properties={},
                              database="default")
    Previews(session, lambda: spark_session(world.home),
             echo=lambda x="": lines.append(x)).run(text + " limit 1000", as_json=True)
    return sorted(json.loads(x)["id"] for x in lines if x.startswith("{"))


def _static_days(world) -> None:
    """Table ``days``: each day's label, written by a sink as a job would."""
    import pyarrow as pa

    from streamjob.connectors import spec as cspec
    from streamjob.connectors.iceberg.sink import IcebergSink

    info = world.catalog.get_table("default", "days")
    sink = IcebergSink(cspec.spec_of_table(info, world.home.table_location("default", "days")),
                       info.columns, "default.days", "days", False)
    sink.prepare()
    sink.write_arrow(pa.table({"day": ["d0", "d1", "d2"], "label": ["D0", "D1", "D2"]}), 0)


def _record_position(world, job: str, query) -> None:
    """Record the query's last offsets as ``job``'s checkpoint in the catalog, as the
    runner records each checkpoint (VACUUM reads the readers' positions there)."""
    progress = query.lastProgress
    offsets = {}
    for source in progress["sources"]:
        end = source["endOffset"]
        offsets.update(json.loads(end) if isinstance(end, str) else end)
    now = dt.datetime.now(UTC)
    world.catalog.record_checkpoint(world.catalog.get_job("default", job).uid,
                                    progress["batchId"], started_at=now, ended_at=now,
                                    duration_ms=1, source_offsets=offsets, input_rows=1,
                                    retained=5)


@pytest.mark.spark
def test_an_aggregation_upserts_into_an_iceberg_table_in_a_postgresql_catalog(world, broker):
    topic = f"ice-agg-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    with scratch_database() as url:
        world.run(f"""
        CREATE STREAM aorders ({COLS})
          TBLPROPERTIES("topic"="{topic}", "kafka.broker.list"="{broker.bootstrap}", "format"="json");
        CREATE TABLE per_day (day STRING, n BIGINT, total DECIMAL(22,2)) STORED AS ICEBERG
          LOCATION '{world.root / "pgwarehouse"}'
          TBLPROPERTIES("primary.key"="day", "iceberg.catalog.uri"="{url}",
                        "iceberg.namespace"="sales");
        """)
        uid = f"{uuid.uuid4().hex}:0"
        produce(broker.bootstrap, topic, 0, 50)
        plan, query, sink = world.start_job(
            "per_day", "insert into per_day select day, count(*), sum(price) from aorders "
            "group by day", uid)
        assert plan.output_mode == "update" and sink.describe()["upsert"] is True
        try:
            drain(query)
            produce(broker.bootstrap, topic, 50, 70)
            last = drain(query)
        finally:
            query.stop()
        tbl = open_catalog(url).load_table(("sales", "per_day"))
        assert tbl.location() == f"file://{world.root}/pgwarehouse/sales.db/per_day"
        expect = pd.DataFrame(rows(0, 120)).groupby("day").agg(n=("id", "size"),
                                                                total=("price", "sum"))
        got = {r["day"]: (r["n"], r["total"]) for r in tbl.scan().to_arrow().to_pylist()}
        assert got == {day: (r.n, r.total) for day, r in expect.iterrows()}
        summary = tbl.current_snapshot().summary.additional_properties
        assert (summary[APP_ID], summary[BATCH_ID]) == (uid, str(last))
        open_catalog(url).engine.dispose()  # before the scratch database is dropped
