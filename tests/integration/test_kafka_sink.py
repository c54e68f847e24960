"""The Kafka table sink against the real broker (Tansu, TESTING.md).

(a) The sink alone, called as the runner's foreachBatch would: JSON and delimited values
with keys and NULLs, at-least-once, exactly-once with a replayed batch skipped, a crashed
transaction aborted by the next instance, fencing, and the errors of an unreachable broker
and a missing topic. Topics are read back the way Spark's Kafka source and streamjob's own
read them: by offset range up to the broker's end offsets, so a record the end offset does
not cover (Tansu's end-offset quirk) would be missed and fail the test.

(b) Through Spark: a file stream -> ``INSERT INTO`` a Kafka table (exactly-once), a replay
of the last batch (its commit-log entry removed, as after a crash) skipped by the marker,
then a second job reads the topic back as a Kafka stream into a Parquet table; a grouped
aggregation upserting a Kafka table with a primary key, its latest record per key
checked against pandas after a replay.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from decimal import Decimal

import pyarrow as pa
import pytest

from streamjob import columntypes as sjtypes
from streamjob.connectors.kafka.formats import RecordSlice, decode
from streamjob.connectors.kafka.sink import KafkaSink, assign_partitions
from streamjob.connectors.kafka.source import end_offsets
from streamjob.connectors.spec import KafkaTableSpec
from streamjob_tools.dev.broker import create_topic, free_port
from streamjob.exceptions import ConnectorError

from .world import SparkWorld, start_planned

#: Seconds this module takes on a fast host: make test hands the longest modules out first
#: (tests/conftest.py), so the run does not end on one of them while the other worker idles.
EXPECTED_S = 38


UTC = dt.timezone.utc
COLUMNS = [{"name": "id", "type": "bigint"}, {"name": "name", "type": "string"},
           {"name": "price", "type": "decimal(12,2)"}, {"name": "at", "type": "timestamp"}]
SCHEMA = sjtypes.arrow_schema(COLUMNS)


def rows(start: int, n: int) -> list[dict]:
    """``n`` rows with ids from ``start``; every third has NULL name and price."""
    return [{"id": i, "name": None if i % 3 == 0 else f"n{i}",
             "price": None if i % 3 == 0 else Decimal(i) / 4,
             "at": dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=i)}
            for i in range(start, start + n)]


def table(start: int, n: int) -> pa.Table:
    return pa.Table.from_pylist(rows(start, n), schema=SCHEMA)


def new_topic(broker, partitions: int = 1) -> str:
    topic = f"sink-{uuid.uuid4().hex[:10]}"
    create_topic(broker.bootstrap, topic, partitions)
    return topic


def read_topic(bootstrap: str, topic: str, timeout: float = 20.0) -> list:
    """Every record below the broker's end offsets, as (partition, key, value), per
    partition in offset order: an offset-range reader like the Kafka sources."""
    from kafka import KafkaConsumer, TopicPartition

    ends = {int(p): e for p, e in end_offsets(bootstrap, topic)[topic].items()}
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    out = []
    try:
        for p, end in sorted(ends.items()):
            tp = TopicPartition(topic, p)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            deadline = time.monotonic() + timeout
            while consumer.position(tp) < end:
                assert time.monotonic() < deadline, f"partition {p} stuck before offset {end}"
                for rec in consumer.poll(timeout_ms=200).get(tp, []):
                    if rec.offset < end:
                        out.append((p, rec.key, rec.value))
    finally:
        consumer.close()
    return out


def decoded(records, fmt: str = "json", delimiter: str = ",") -> list[dict]:
    values = [v for _, _, v in records]
    sl = RecordSlice("t", 0, list(range(len(values))), values, [None] * len(values),
                     [0] * len(values))
    return decode(sl, SCHEMA, fmt, delimiter).to_pylist()


def by_id(rs: list[dict]) -> list[dict]:
    return sorted(rs, key=lambda r: r["id"])


def marker(bootstrap: str, job_uid: str, topic: str):
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=f"streamjob-sink-{job_uid}",
                      enable_auto_commit=False)
    try:
        return c.committed(TopicPartition(topic, 0))
    finally:
        c.close()


def sink_for(broker, topic, exactly_once, uid=None, **spec) -> KafkaSink:
    s = KafkaSink(KafkaTableSpec(topic, broker.bootstrap, **spec), COLUMNS,
                  uid or uuid.uuid4().hex, "default.job", exactly_once)
    s.prepare()
    return s


# -- (a) the sink alone --------------------------------------------------------------


@pytest.mark.component
def test_json_values_with_key_and_nulls_at_least_once(broker):
    topic = new_topic(broker, partitions=3)
    sink = sink_for(broker, topic, exactly_once=False, key="id")
    try:
        assert sink.write_arrow(table(0, 40), 0) == 40
        assert sink.write_arrow(table(40, 1), 1) == 1
        assert sink.write_arrow(table(0, 0), 2) == 0
    finally:
        sink.close()
    got = read_topic(broker.bootstrap, topic)  # every record visible by end offsets
    assert len(got) == 41
    assert by_id(decoded(got)) == rows(0, 41)
    for part, key, value in got:
        obj = json.loads(value)
        assert key == str(obj["id"]).encode()
        assert [part] == assign_partitions([key], [0, 1, 2])  # Kafka's default partitioner
        if obj["id"] % 3 == 0:
            assert obj["name"] is None and obj["price"] is None  # NULLs kept as JSON null
    assert json.loads(next(v for _, k, v in got if k == b"2")) == {
        "id": 2, "name": "n2", "price": "0.50", "at": "2024-01-01T00:00:02Z"}
    assert len({p for p, _, _ in got}) == 3


@pytest.mark.component
def test_delimited_values_at_least_once_repeat_on_replay(broker):
    topic = new_topic(broker)
    sink = sink_for(broker, topic, exactly_once=False, format="delimited", delimiter="|",
                    key="name")
    try:
        assert sink.write_arrow(table(0, 5), 0) == 5
        assert sink.write_arrow(table(0, 5), 0) == 5  # a replay: at-least-once repeats it
    finally:
        sink.close()
    got = read_topic(broker.bootstrap, topic)
    assert [v for _, _, v in got[:2]] == [b"0|\\N|\\N|2024-01-01 00:00:00", b"1|n1|0.25|2024-01-01 00:00:01"]
    assert [k for _, k, _ in got[:3]] == [None, b"n1", b"n2"]
    assert decoded(got, "delimited", "|") == rows(0, 5) * 2


@pytest.mark.component
def test_exactly_once_commits_a_marker_and_skips_replayed_batches(broker):
    topic = new_topic(broker, partitions=2)
    uid = uuid.uuid4().hex
    first = sink_for(broker, topic, exactly_once=True, uid=uid)
    try:
        assert first.committed_batches() == 0
        assert first.write_arrow(table(0, 30), 0) == 30
        assert first.write_arrow(table(30, 20), 1) == 20
        assert first.committed_batches() == 2
        assert marker(broker.bootstrap, uid, topic) == 2
    finally:
        first.close()
    # a restart of the job (same uid): Spark replays batch 1, whose commit it never logged
    again = sink_for(broker, topic, exactly_once=True, uid=uid)
    try:
        assert again.write_arrow(table(30, 20), 1) == 0
        assert again.write_arrow(table(0, 30), 0) == 0
        assert again.write_arrow(table(50, 7), 2) == 7
    finally:
        again.close()
    got = read_topic(broker.bootstrap, topic)  # the commit markers make every record visible
    assert by_id(decoded(got)) == rows(0, 57)
    assert marker(broker.bootstrap, uid, topic) == 3
    # another incarnation of the job (a new uid) has its own marker
    other = sink_for(broker, topic, exactly_once=True)
    try:
        assert other.committed_batches() == 0
    finally:
        other.close()


@pytest.mark.component
def test_a_crashed_transaction_is_aborted_and_its_batch_written_again(broker):
    """A producer of the job died inside batch 4's transaction (rows and marker sent, no
    commit): the next instance's InitProducerId aborts it, the marker stays, batch 4 is
    written again."""
    from kafka import KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    topic = new_topic(broker)
    uid = uuid.uuid4().hex
    sink = sink_for(broker, topic, exactly_once=True, uid=uid)
    try:
        sink.write_arrow(table(0, 3), 3)
    finally:
        sink.close()
    zombie = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=f"streamjob-{uid}")
    zombie.init_transactions()
    zombie.begin_transaction()
    zombie.send(topic, b'{"id": -1}')
    zombie.flush()
    zombie.send_offsets_to_transaction({TopicPartition(topic, 0): OffsetAndMetadata(5, "", -1)},
                                       f"streamjob-sink-{uid}")
    assert marker(broker.bootstrap, uid, topic) == 4  # not visible before the commit
    restarted = sink_for(broker, topic, exactly_once=True, uid=uid)
    try:
        assert restarted.committed_batches() == 4  # the zombie's transaction was aborted
        assert restarted.write_arrow(table(3, 2), 4) == 2
        assert restarted.committed_batches() == 5
    finally:
        restarted.close()
        zombie.close(timeout=1)
    ids = [r["id"] for r in decoded(read_topic(broker.bootstrap, topic))]
    # Tansu still hands out the aborted record (id -1) to every reader, read_committed
    # included (TESTING.md); Apache Kafka hides it from read_committed consumers
    assert [i for i in ids if i != -1] == [0, 1, 2, 3, 4]


@pytest.mark.component
def test_a_second_instance_fences_the_first(broker):
    topic = new_topic(broker)
    uid = uuid.uuid4().hex
    old = sink_for(broker, topic, exactly_once=True, uid=uid)
    new = None
    try:
        assert old.write_arrow(table(0, 2), 0) == 2
        new = sink_for(broker, topic, exactly_once=True, uid=uid)  # fences `old`
        with pytest.raises(ConnectorError, match=r"another instance of job default.job took "
                           rf"over topic '{topic}' .*transactional id 'streamjob-{uid}'"):
            old.write_arrow(table(2, 2), 1)
        assert new.write_arrow(table(2, 2), 1) == 2
    finally:
        old.close()
        if new is not None:
            new.close()
    assert marker(broker.bootstrap, uid, topic) == 2
    assert [r["id"] for r in decoded(read_topic(broker.bootstrap, topic))] == [0, 1, 2, 3]


@pytest.mark.component
def test_fenced_between_marker_and_commit_fails_within_the_commit_timeout(broker):
    """The takeover lands after the rows and the marker were sent, before EndTxn: Apache
    Kafka answers PRODUCER_FENCED; Tansu drops the connection and kafka-python would
    retry forever, so the sink gives up after ``commit_timeout_ms``. Either way the old
    instance fails and its batch is not committed."""
    topic = new_topic(broker)
    uid = uuid.uuid4().hex
    old = sink_for(broker, topic, exactly_once=True, uid=uid)
    old.commit_timeout_ms = 1500
    takeover = []
    real_commit = old._commit

    def fenced_commit(batch_id):
        takeover.append(sink_for(broker, topic, exactly_once=True, uid=uid))
        real_commit(batch_id)

    old._commit = fenced_commit
    try:
        with pytest.raises(ConnectorError, match="another instance of job default.job took over"):
            old.write_arrow(table(0, 2), 0)
        assert takeover[0].committed_batches() == 0  # the old transaction was aborted
        assert takeover[0].write_arrow(table(0, 2), 0) == 2
    finally:
        old.close()
        for s in takeover:
            s.close()
    assert marker(broker.bootstrap, uid, topic) == 1


@pytest.mark.component
def test_unreachable_broker_names_address_and_topic():
    address = f"127.0.0.1:{free_port()}"
    sink = KafkaSink(KafkaTableSpec("t", address), COLUMNS, "u", "default.job", True)
    sink.timeout_ms = 1500
    with pytest.raises(ConnectorError, match=f"cannot reach Kafka broker at {address} for topic 't'"):
        sink.prepare()
    with pytest.raises(ConnectorError, match=f"cannot reach Kafka broker at {address}"):
        sink.write_arrow(table(0, 1), 0)


@pytest.mark.component
def test_missing_topic_is_an_error_and_is_not_created(broker):
    from kafka import KafkaConsumer

    topic = f"missing-{uuid.uuid4().hex[:8]}"
    sink = KafkaSink(KafkaTableSpec(topic, broker.bootstrap), COLUMNS, "u", "default.job", False)
    with pytest.raises(ConnectorError, match=rf"topic '{topic}' does not exist on Kafka broker "
                       rf"{broker.bootstrap}: create the topic"):
        sink.prepare()
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None)
    try:
        assert topic not in c.topics()
    finally:
        c.close()


# -- (b) through Spark ---------------------------------------------------------------

#: Micro-batches every 100 ms, not the default 500: the jobs' points are their batches'
#: outcomes, not their cadence.
QUICK = {"streamjob.trigger.interval": "100"}


class World(SparkWorld):
    """The module's :class:`SparkWorld`, starting jobs that write Kafka tables."""

    def start_kafka(self, job: str, query: str, uid: str, props: dict | None = None):
        """Plan and start ``job`` (job properties ``props``); a Kafka table sink is built
        as the runner builds it. Returns ``(plan, query, sink)`` (sink None for other
        tables)."""
        from streamjob.connectors.sinks import KafkaTableSink, table_sink

        plan = self.plan(job, query, {**QUICK, **(props or {})})
        table = table_sink(plan.sink, plan.sink_spec, marker=uid, job=plan.qualified_name,
                           exactly_once=plan.guarantee == "exactly-once")
        table.prepare()
        sink = table.kafka if isinstance(table, KafkaTableSink) else None
        query = start_planned(self.session, plan, str(self.root / "checkpoints" / job), table)
        return plan, query, sink


@pytest.fixture(scope="module")
def world(tmp_path_factory, broker):
    w = World(tmp_path_factory.mktemp("kafka_sink"))
    yield w
    w.close()


def orders(start: int, n: int) -> list[dict]:
    return [{"id": i, "name": None if i % 5 == 0 else f"c{i}", "price": f"{i}.25",
             "at": f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}Z"} for i in range(start, start + n)]


def expected(n: int) -> list[dict]:
    """The rows read back: ``at`` as the sink's ISO-8601 UTC text (the stream reading it
    back declares it STRING, to check the exact text the sink wrote)."""
    return [{"id": i, "name": None if i % 5 == 0 else f"C{i}",
             "price": Decimal(f"{i}.25") * 2,
             "at": f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}Z"}
            for i in range(n)]


@pytest.mark.spark
def test_job_writes_a_kafka_table_exactly_once_and_a_stream_reads_it_back(world, broker):
    from streamjob.connectors.files.table import read_table

    topic = new_topic(broker, partitions=2)
    src = world.root / "orders"
    src.mkdir()
    out = world.root / "back"
    world.run(f"""
    CREATE STREAM orders (id BIGINT, name STRING, price DECIMAL(12,2), at TIMESTAMP)
      TBLPROPERTIES("source"="files", "path"="{src}", "format"="json");
    CREATE TABLE korders (id BIGINT, name STRING, price DECIMAL(12,2), at TIMESTAMP)
      TBLPROPERTIES("topic"="{topic}", "kafka.broker.list"="{broker.bootstrap}", "key"="id");
    CREATE STREAM kback (id BIGINT, name STRING, price DECIMAL(12,2), at STRING)
      TBLPROPERTIES("topic"="{topic}", "kafka.broker.list"="{broker.bootstrap}", "format"="json",
                    "kafka.isolation.level"="read_committed");
    CREATE TABLE back (id BIGINT, name STRING, price DECIMAL(12,2), at STRING)
      STORED AS PARQUET LOCATION '{out}';
    """)
    uid = uuid.uuid4().hex
    query_text = "insert into korders select id, upper(name), price * 2, at from orders"
    plan, query, sink = world.start_kafka("to_kafka", query_text, uid)
    assert plan.guarantee == "exactly-once" and plan.output_mode == "append"
    try:
        world.write(src, orders(0, 60))
        query.processAllAvailable()
        world.write(src, orders(60, 40))
        query.processAllAvailable()
        assert query.exception() is None
        last = query.lastProgress["batchId"]
    finally:
        query.stop()
        sink.close()
    assert marker(broker.bootstrap, uid, topic) == last + 1

    # a crash after the sink committed but before Spark logged the batch: Spark runs the
    # batch again on restart, and the marker makes the sink skip it
    commits = world.root / "checkpoints" / "to_kafka" / "commits"
    for name in (str(last), f".{last}.crc"):  # the entry and its checksum file
        (commits / name).unlink(missing_ok=True)
    _, query, sink = world.start_kafka("to_kafka", query_text, uid)
    try:
        query.processAllAvailable()
        assert query.exception() is None
        assert query.lastProgress["batchId"] == last  # the replayed batch ran
        assert query.lastProgress["numInputRows"] == 40
    finally:
        query.stop()
        sink.close()

    got = read_topic(broker.bootstrap, topic)
    assert len(got) == 100  # no batch twice
    assert all(k == str(json.loads(v)["id"]).encode() for _, k, v in got)

    _, back, _ = world.start_kafka("from_kafka", "insert into back select * from kback",
                                   uuid.uuid4().hex)
    try:
        back.processAllAvailable()
        assert back.exception() is None
    finally:
        back.stop()
    assert by_id(read_table(str(out)).to_pylist()) == expected(100)


@pytest.mark.spark
def test_an_aggregation_upserts_a_kafka_table_and_a_replay_keeps_the_latest_per_key(
        world, broker, flights_df):
    """A grouped aggregation into a Kafka table with "primary.key" (update mode,
    at-least-once): records keyed by the JSON of the key columns, each micro-batch
    writes only the keys it changed, a replayed batch (its commit-log entry removed, as
    after a crash) writes them again with the same values, and the latest record per key
    equals pandas over the same flights."""
    import pandas as pd

    flights = flights_df.head(600)
    data = [{"carrier": c, "origin": o, "dep_delay": None if pd.isna(d) else int(d)}
            for c, o, d in zip(flights.carrier, flights.origin, flights.dep_delay)]
    topic = new_topic(broker, partitions=2)
    src = world.root / "upsert_in"
    src.mkdir()
    world.run(f"""
    CREATE STREAM up_flights (carrier STRING, origin STRING, dep_delay BIGINT)
      TBLPROPERTIES("source"="files", "path"="{src}", "format"="json");
    CREATE TABLE up_delays (carrier STRING, origin STRING, flights BIGINT, total BIGINT,
                            worst BIGINT)
      TBLPROPERTIES("connector"="kafka", "topic"="{topic}", "kafka.broker.list"="{broker.bootstrap}",
                    "primary.key"="carrier,origin");
    """)
    uid = uuid.uuid4().hex
    text = ("insert into up_delays select carrier, origin, count(*), sum(dep_delay), "
            "max(dep_delay) from up_flights group by carrier, origin")
    props = {"morphling.result.auto.flush": "true"}
    plan, query, sink = world.start_kafka("upsert", text, uid, props)
    assert (plan.output_mode, plan.guarantee) == ("update", "at-least-once")
    try:
        world.write(src, data[:400])
        query.processAllAvailable()
        world.write(src, data[400:])
        query.processAllAvailable()
        assert query.exception() is None
        last = query.lastProgress["batchId"]
    finally:
        query.stop()
        sink.close()
    commits = world.root / "checkpoints" / "upsert" / "commits"
    for name in (str(last), f".{last}.crc"):
        (commits / name).unlink(missing_ok=True)
    _, query, sink = world.start_kafka("upsert", text, uid, props)
    try:
        query.processAllAvailable()
        assert query.exception() is None
        assert (query.lastProgress["batchId"], query.lastProgress["numInputRows"]) == (last, 200)
    finally:
        query.stop()
        sink.close()

    got = read_topic(broker.bootstrap, topic)
    first = {(r["carrier"], r["origin"]) for r in data[:400]}
    changed = {(r["carrier"], r["origin"]) for r in data[400:]}
    assert len(got) == len(first) + 2 * len(changed)  # update mode; the replay repeats
    latest = {}
    for _, key, value in got:  # a key's records share a partition: offset order is time
        row = json.loads(value)
        assert json.loads(key) == {"carrier": row["carrier"], "origin": row["origin"]}
        latest[key] = row
    frame = pd.DataFrame(data)
    want = (frame.groupby(["carrier", "origin"])
            .agg(flights=("carrier", "size"), total=("dep_delay", lambda x: x.sum(min_count=1)),
                 worst=("dep_delay", "max")).reset_index())
    expect = {json.dumps({"carrier": r.carrier, "origin": r.origin}, separators=(",", ":")).encode():
              {"carrier": r.carrier, "origin": r.origin, "flights": int(r.flights),
               "total": None if pd.isna(r.total) else int(r.total),
               "worst": None if pd.isna(r.worst) else int(r.worst)}
              for r in want.itertuples()}
    assert latest == expect


@pytest.mark.spark
def test_a_started_job_writes_a_kafka_table_at_least_once_through_the_manager(world, broker):
    """START STREAMJOB in an in-process manager: the runner builds, prepares and closes
    the sink (at-least-once: ``morphling.result.auto.flush``); Kafka stream in, delimited
    Kafka table out, keyed by name."""
    from streamjob_tools.dev.flights import replay
    from streamjob.executor import Executor
    from streamjob.manager import JobManager

    source, target = new_topic(broker, partitions=2), new_topic(broker, partitions=2)
    replay(broker.bootstrap, source,
           [json.dumps({"id": i, "name": None if i % 7 == 0 else f"p{i}"}).encode()
            for i in range(500)], 2)
    manager = JobManager(world.catalog, world.home)
    ex = Executor(world.catalog, world.home, manager)
    script = f"""
    CREATE STREAM kin (id BIGINT, name STRING)
      TBLPROPERTIES("topic"="{source}", "kafka.broker.list"="{broker.bootstrap}", "format"="json");
    CREATE TABLE kout (id BIGINT, name STRING)
      TBLPROPERTIES("connector"="kafka", "topic"="{target}", "kafka.broker.list"="{broker.bootstrap}",
                    "format"="delimited", "delimiter"="|", "key"="name");
    CREATE STREAMJOB relay AS ("insert into kout select id, upper(name) from kin")
      JOBPROPERTIES("morphling.job.checkpoint.interval"="0", "morphling.result.auto.flush"="true",
                    "streamjob.trigger.interval"="100");
    START STREAMJOB relay;
    """
    from streamjob.grammar import parse_script

    job = None
    try:
        for stmt in parse_script(script):
            ex.execute(stmt)
        job = world.catalog.get_job("default", "relay")
        manager.wait_until_idle(timeout=120)
        attempt = manager.runners[job.uid].attempt
        assert attempt.sink is not None and not attempt.sink.kafka.exactly_once
    finally:
        if job is not None:
            manager.stop(job.uid)
    assert attempt.sink is None  # closed with the attempt
    got = read_topic(broker.bootstrap, target)
    cols = [{"name": "id", "type": "bigint"}, {"name": "name", "type": "string"}]
    values = [v for _, _, v in got]
    back = decode(RecordSlice(target, 0, list(range(len(values))), values, [None] * len(values),
                              [0] * len(values)), sjtypes.arrow_schema(cols), "delimited", "|")
    assert sorted(back.to_pylist(), key=lambda r: r["id"]) == [
        {"id": i, "name": None if i % 7 == 0 else f"P{i}"} for i in range(500)]
    assert all(k == (None if v.endswith(b"|\\N") else v.split(b"|")[1]) for _, k, v in got)


@pytest.mark.spark
def test_drop_streamjob_deletes_the_marker_group_of_its_kafka_table(world, broker):
    """DROP STREAMJOB purges the job's exactly-once marker (the consumer group
    ``streamjob-sink-<uid>``), as it purges SQL sink markers."""
    import pyarrow as pa
    from kafka import KafkaAdminClient

    from streamjob.connectors.kafka.sink import KafkaSink
    from streamjob.connectors.spec import spec_of_table

    topic = new_topic(broker)
    world.run(f"""
    CREATE STREAM ticks (`timestamp` TIMESTAMP, value BIGINT) TBLPROPERTIES("source"="rate");
    CREATE TABLE dropout (id BIGINT)
      TBLPROPERTIES("topic"="{topic}", "kafka.broker.list"="{broker.bootstrap}");
    CREATE STREAMJOB dropjob AS ("insert into dropout select value from ticks");""")
    job = world.catalog.require_job("default", "dropjob")
    table = world.catalog.get_table("default", "dropout")
    sink = KafkaSink(spec_of_table(table), table.columns, job.uid, job.qualified_name, True)
    try:  # batch 0 as the running job would write it
        sink.write_arrow(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), 0)
    finally:
        sink.close()
    assert marker(broker.bootstrap, job.uid, topic) == 1
    world.run("DROP STREAMJOB dropjob;")
    group = f"streamjob-sink-{job.uid}"
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        assert admin.list_group_offsets(group)[group] == {}
    finally:
        admin.close()
