"""The offset side of the Kafka source against the real broker (Tansu, TESTING.md): reset
strategies, partitions added while a job runs, consumer-group commits, lost offsets and an
unreachable broker. The reader is driven directly (initialOffset / latestOffset /
partitions / read), without a Spark session.

What the broker cannot do is simulated, and says so: Tansu 0.6 has no CreatePartitions
(a partition "added while running" is a ``start`` that lacks it, exactly what Spark hands
the reader then) and no DeleteRecords or retention (a partition's beginning offset stays
0, so lost offsets are a ``start`` below it: negative)."""

from __future__ import annotations

import logging
import time
import uuid

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
from pyspark.sql.types import LongType, StringType, StructField, StructType

from streamjob.connectors.kafka.group import GroupCommitter, committed_offsets, default_group_id
from streamjob.connectors.kafka.source import KafkaRange, KafkaStreamReader, read_range
from streamjob_tools.dev.broker import LocalBroker, create_topic
from streamjob.exceptions import ConnectorError

pytestmark = pytest.mark.component

SCHEMA = StructType([StructField("value", StringType()), StructField("offset", LongType())])
ALL = ReadAllAvailable()


def new_topic(bootstrap: str, partitions: int) -> str:
    name = f"offsets_{uuid.uuid4().hex[:10]}"
    assert create_topic(bootstrap, name, partitions)
    return name


def produce(bootstrap: str, topic: str, records: dict[int, list[str]]) -> None:
    """Send ``records`` per partition; each partition's last record goes alone and flushed
    (Tansu's end offset counts only the last batch's first record, TESTING.md)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks=1)
    try:
        for p, values in records.items():
            for v in values[:-1]:
                producer.send(topic, v.encode(), partition=p)
        producer.flush()
        for p, values in records.items():
            if values:
                producer.send(topic, values[-1].encode(), partition=p)
                producer.flush()
    finally:
        producer.close()


def now_after(ms: int) -> int:
    """Busy-wait (a few ms at most) until the clock passes ``ms``; returns the time."""
    while (now := int(time.time() * 1000)) <= ms:
        pass
    return now


def reader(bootstrap: str, topic: str, **options) -> KafkaStreamReader:
    opts = {"topic": topic, "bootstrap": bootstrap, "format": "raw"}
    opts.update({k: str(v) for k, v in options.items()})
    return KafkaStreamReader(SCHEMA, opts)


def read_all(r: KafkaStreamReader, start: dict, end: dict) -> dict[int, list[str]]:
    """Values per partition of the batch ``[start, end)``, read as Spark's tasks would."""
    out: dict[int, list[str]] = {}
    for rng in r.partitions(start, end):
        for batch in r.read(rng):
            out.setdefault(rng.partition, []).extend(batch.column("value").to_pylist())
    return out


@pytest.fixture(scope="module")
def two_parts(broker):
    """A topic with 2 partitions: p0 holds a0..a2, p1 holds b0..b1."""
    topic = new_topic(broker.bootstrap, 2)
    produce(broker.bootstrap, topic, {0: ["a0", "a1", "a2"], 1: ["b0", "b1"]})
    return topic


def test_earliest_and_latest(broker, two_parts):
    r = reader(broker.bootstrap, two_parts)  # earliest is the default
    try:
        start = r.initialOffset()
        assert start == {two_parts: {"0": 0, "1": 0}}
        end = r.latestOffset(start, ALL)
        assert end == {two_parts: {"0": 3, "1": 2}}
        assert read_all(r, start, end) == {0: ["a0", "a1", "a2"], 1: ["b0", "b1"]}
    finally:
        r.stop()
    r = reader(broker.bootstrap, two_parts, startingOffsets="LATEST")
    try:
        start = r.initialOffset()
        assert start == {two_parts: {"0": 3, "1": 2}}
        assert r.partitions(start, r.latestOffset(start, ALL)) == []
    finally:
        r.stop()


def test_timestamp_starts_at_first_record_at_or_after_it(broker):
    bs = broker.bootstrap
    topic = new_topic(bs, 2)
    produce(bs, topic, {0: ["old0", "old1"], 1: ["old2"]})
    cut = now_after(int(time.time() * 1000))  # every record above is before ``cut``
    now_after(cut)
    produce(bs, topic, {0: ["new0", "new1"]})  # p1 gets nothing at or after ``cut``
    r = reader(bs, topic, startingOffsets=cut)
    try:
        start = r.initialOffset()
        assert start == {topic: {"0": 2, "1": 1}}  # p1: its end offset
        assert read_all(r, start, r.latestOffset(start, ALL)) == {0: ["new0", "new1"]}
    finally:
        r.stop()
    r = reader(bs, topic, startingOffsets=0)  # before everything: the beginning
    try:
        assert r.initialOffset() == {topic: {"0": 0, "1": 0}}
    finally:
        r.stop()
    r = reader(bs, topic, startingOffsets=now_after(cut) + 3_600_000)  # after everything
    try:
        assert r.initialOffset() == {topic: {"0": 4, "1": 1}}
    finally:
        r.stop()


def test_group_commit_is_visible_to_admin_tools_and_read_back(broker, two_parts):
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient

    bs = broker.bootstrap
    group = default_group_id("db1", f"job_{uuid.uuid4().hex[:6]}")
    assert group.startswith("streamjob.db1.job_")
    committer = GroupCommitter(bs, group, [two_parts])
    admin = KafkaAdminClient(bootstrap_servers=bs)
    try:
        committer.commit({two_parts: {"0": 2}, "some_other_topic": {"0": 9}})
        listed = admin.list_group_offsets(group)[group]
        assert {tp: m.offset for tp, m in listed.items()} == {TopicPartition(two_parts, 0): 2}
        committer.commit({two_parts: {"0": 3, "1": 1}})  # the next checkpoint
        listed = admin.list_group_offsets(group)[group]
        assert {tp.partition: m.offset for tp, m in listed.items() if tp.topic == two_parts} \
            == {0: 3, 1: 1}
        assert committed_offsets(bs, group, two_parts) == {0: 3, 1: 1}
        assert committed_offsets(bs, group + ".none", two_parts) == {0: None, 1: None}
    finally:
        committer.close()
        admin.close()


def test_committed_strategy(broker, two_parts):
    bs = broker.bootstrap
    r = reader(bs, two_parts, startingOffsets="committed")  # no groupId
    try:
        with pytest.raises(ConnectorError, match="needs a consumer group id"):
            r.initialOffset()
    finally:
        r.stop()
    group = f"g_{uuid.uuid4().hex[:8]}"
    r = reader(bs, two_parts, startingOffsets="committed", groupId=group)
    try:
        assert r.initialOffset() == {two_parts: {"0": 3, "1": 2}}  # no commit: latest
        committer = GroupCommitter(bs, group, [two_parts])
        try:
            committer.commit({two_parts: {"0": 1}})
        finally:
            committer.close()
        start = r.initialOffset()
        assert start == {two_parts: {"0": 1, "1": 2}}  # p1 still has no commit: latest
        assert read_all(r, start, r.latestOffset(start, ALL)) == {0: ["a1", "a2"]}
    finally:
        r.stop()


def test_partition_added_while_running_starts_by_the_strategy(broker):
    """Tansu has no CreatePartitions; if the broker grows the topic, that is used,
    else the reader sees what Spark hands it after a partition appears: a ``start``
    without the new partition."""
    from kafka.admin import KafkaAdminClient, NewPartitions
    from kafka.errors import IncompatibleBrokerVersion, KafkaError, UnsupportedVersionError

    bs = broker.bootstrap
    topic = new_topic(bs, 3)
    admin = KafkaAdminClient(bootstrap_servers=bs)
    try:
        admin.create_partitions({topic: NewPartitions(total_count=4)})
        pytest.fail("the broker now supports CreatePartitions: grow the topic in this test")
    except (IncompatibleBrokerVersion, UnsupportedVersionError):
        pass  # Tansu 0.6.0: not in its ApiVersions
    except KafkaError as exc:
        pytest.fail(f"CreatePartitions failed unexpectedly: {exc!r}")
    finally:
        admin.close()
    produce(bs, topic, {0: ["x0"], 1: ["y0"], 2: ["n0", "n1"]})
    cut = now_after(int(time.time() * 1000))
    now_after(cut)
    produce(bs, topic, {2: ["n2", "n3"]})
    group = f"g_{uuid.uuid4().hex[:8]}"
    committer = GroupCommitter(bs, group, [topic])
    committer.commit({topic: {"2": 1}})
    committer.close()
    before = {topic: {"0": 0, "1": 0}}  # partition 2 is new to the running job
    expect = {"earliest": 0, "latest": 4, str(cut): 2, "committed": 1}
    for strategy, first in expect.items():
        r = reader(bs, topic, startingOffsets=strategy, groupId=group)
        try:
            end = r.latestOffset(before, ALL)
            assert end == {topic: {"0": 1, "1": 1, "2": 4}}, strategy
            ranges = r.partitions(before, end)
            assert [(g.partition, g.start, g.end) for g in ranges] == \
                [(0, 0, 1), (1, 0, 1)] + ([(2, first, 4)] if first < 4 else []), strategy
            assert read_all(r, before, end).get(2, []) == ["n0", "n1", "n2", "n3"][first:]
        finally:
            r.stop()
    # a capped batch starts the new partition where the strategy says, too
    r = reader(bs, topic, startingOffsets=str(cut), maxRecordsPerBatch=3)
    try:
        capped = r.latestOffset(before, r.getDefaultReadLimit())
        assert isinstance(r.getDefaultReadLimit(), ReadMaxRows)
        assert capped == {topic: {"0": 1, "1": 1, "2": 3}}
    finally:
        r.stop()


def test_lost_offsets_fail_by_default(broker, two_parts):
    """Tansu cannot delete records (DeleteRecords panics its task, no retention), so the
    beginning offset is 0 and a start of -2 stands for "offsets -2..-1 are gone"."""
    bs = broker.bootstrap
    start = {two_parts: {"0": -2, "1": 0}}
    r = reader(bs, two_parts)
    try:
        lost = f"offsets -2..-1 of topic '{two_parts}' partition 0 are no longer on the broker"
        with pytest.raises(ConnectorError, match=lost):
            r.latestOffset(start, ALL)
        with pytest.raises(ConnectorError, match=lost):
            r.partitions(start, {two_parts: {"0": 3, "1": 2}})
        with pytest.raises(ConnectorError, match=lost):
            list(read_range(KafkaRange(two_parts, 0, -2, 3), bs, SCHEMA, "raw", ","))
    finally:
        r.stop()


def test_lost_offsets_skipped_with_a_warning(broker, two_parts, caplog):
    bs = broker.bootstrap
    start = {two_parts: {"0": -2, "1": 0}}
    r = reader(bs, two_parts, failOnDataLoss="false")
    caplog.set_level(logging.WARNING, logger="streamjob.connectors.kafka.source")
    try:
        end = r.latestOffset(start, ALL)
        assert end == {two_parts: {"0": 3, "1": 2}}
        ranges = r.partitions(start, end)
        assert [(g.partition, g.start, g.end) for g in ranges] == [(0, 0, 3), (1, 0, 2)]
        warned = [rec for rec in caplog.records
                  if rec.name == "streamjob.connectors.kafka.source"]
        assert len(warned) == 1  # latestOffset and partitions report one loss once
        assert f"offsets -2..-1 of topic '{two_parts}' partition 0" in warned[0].getMessage()
        caplog.clear()
        rows = [v for b in read_range(KafkaRange(two_parts, 0, -2, 3), bs, SCHEMA, "raw", ",",
                                      fail_on_data_loss=False)
                for v in b.column("value").to_pylist()]
        assert rows == ["a0", "a1", "a2"]
        assert any(f"offsets -2..-1 of topic '{two_parts}' partition 0" in rec.getMessage()
                   and rec.levelno == logging.WARNING for rec in caplog.records)
        # a range entirely lost yields nothing (and does not wait for records)
        assert list(read_range(KafkaRange(two_parts, 0, -5, -1), bs, SCHEMA, "raw", ",",
                               fail_on_data_loss=False)) == []
    finally:
        r.stop()


def test_unreachable_broker_names_the_address():
    addr = "127.0.0.1:1"
    r = reader(addr, "t", requestTimeoutMs=1000)
    with pytest.raises(ConnectorError, match=f"cannot reach Kafka broker at {addr}"):
        r.initialOffset()
    with pytest.raises(ConnectorError, match=f"cannot reach Kafka broker at {addr}.*group 'g1'"):
        committed_offsets(addr, "g1", "t", timeout_ms=1000)
    committer = GroupCommitter(addr, "g1", ["t"], timeout_ms=1000)
    with pytest.raises(ConnectorError, match=f"cannot reach Kafka broker at {addr}.*group 'g1'"):
        committer.commit({"t": {"0": 5}})
    committer.close()


def test_broker_gone_while_running_names_the_address():
    """A broker that goes away after the job started: kafka-python raises timeouts and
    connection errors from later calls; they become ConnectorError naming the address."""
    own = LocalBroker.start()
    addr = own.bootstrap
    try:
        topic = new_topic(addr, 1)
        produce(addr, topic, {0: ["r0"]})
        r = reader(addr, topic, requestTimeoutMs=1000)
        committer = GroupCommitter(addr, "g_gone", [topic], timeout_ms=1000)
        start = r.initialOffset()
        assert r.latestOffset(start, ALL) == {topic: {"0": 1}}
        committer.commit({topic: {"0": 1}})
    finally:
        own.process.kill()  # the broker crashes (a graceful stop waits ~5 s for clients)
        own.process.wait(10)
    try:
        with pytest.raises(ConnectorError, match=f"cannot reach Kafka broker at {addr}"):
            r.latestOffset(start, ALL)
        with pytest.raises(ConnectorError, match=f"cannot reach Kafka broker at {addr}"):
            r.reportLatestOffset()
        with pytest.raises(ConnectorError,
                           match=f"cannot reach Kafka broker at {addr}.*group 'g_gone'"):
            committer.commit({topic: {"0": 2}})
    finally:
        r.stop()
        committer.close()
