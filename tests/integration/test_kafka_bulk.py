"""The bulk record path of the Kafka source (fetch.py, batches.py) against the real
broker: real Fetch responses decoded by our parser equal kafka-python's consumer record
for record (every codec, keys, headers, a fetch starting inside a compressed batch,
transaction markers under both isolation levels), and the broker requests one
micro-batch costs (counted, not timed).

Tansu (the broker of TESTING.md) keeps no records of an aborted transaction (its
read_uncommitted fetch returns none of them), and does not compact: aborted
transactions under read_committed and compacted gaps are tested on bytes in
tests/unit/test_kafka_batches.py."""

from __future__ import annotations

import collections

import pytest

from streamjob.connectors.kafka.fetch import PartitionFetcher
from streamjob.connectors.kafka.read import (DEFAULT_BATCH_ROWS, READ_CONSUMER_SETTINGS,
                                             _consumer, _reader_consumer, read_range)
from streamjob.connectors.kafka.security import KafkaSecurity
from streamjob.connectors.kafka.source import KafkaStreamReader
from streamjob_tools.dev.broker import create_topic

pytestmark = pytest.mark.component

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]
N = 600


def produce(bootstrap: str, topic: str, codec: str | None) -> None:
    from kafka import KafkaProducer

    create_topic(bootstrap, topic, 1)
    p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec, linger_ms=50,
                      batch_size=64 << 10)
    try:
        for i in range(N):
            value = None if i % 50 == 49 else (b'{"i":%d,"pad":"%s"}' % (i, b"x" * (i * 7 % 400)))
            key = None if i % 3 == 0 and value is not None else b"" if i % 7 == 0 else \
                b"key-%d" % i
            headers = [("h", b"v%d" % i), ("e", b"")] if i % 4 == 0 else []
            p.send(topic, key=key, value=value, headers=headers,
                   timestamp_ms=1_700_000_000_000 + (i * 37) % 5000)
        p.flush()
    finally:
        p.close()


def client_records(bootstrap: str, topic: str, start: int, end: int, isolation: str) -> list:
    """(offset, key, value, timestamp) by kafka-python's own consumer."""
    from kafka import TopicPartition

    c = _consumer(bootstrap, isolation_level=isolation, **READ_CONSUMER_SETTINGS)
    tp = TopicPartition(topic, 0)
    try:
        c.assign([tp])
        c.seek(tp, start)
        out = []
        while c.position(tp) < end:
            out += [(r.offset, r.key, r.value, r.timestamp)
                    for r in c.poll(timeout_ms=1000).get(tp, []) if r.offset < end]
        return out
    finally:
        c.close()


def bulk_records(bootstrap: str, topic: str, start: int, end: int, isolation: str,
                 fetch_bytes: int | None = None):
    """The same by :class:`PartitionFetcher` (responses of at most ``fetch_bytes``: a
    batch may end past a response's end); also which paths decoded the fetches."""
    from kafka import TopicPartition

    settings = dict(READ_CONSUMER_SETTINGS)
    if fetch_bytes:
        settings.update(fetch_max_bytes=fetch_bytes, max_partition_fetch_bytes=fetch_bytes)
    c = _consumer(bootstrap, isolation_level=isolation, **READ_CONSUMER_SETTINGS)
    try:
        f = PartitionFetcher(c, TopicPartition(topic, 0), settings=settings,
                             isolation_level=isolation, check_crcs=True, meta=True)
        out, position = [], start
        while position < end:
            got = f.fetch(position, end)
            out += list(zip(got.offsets, got.keys, got.values, got.stamps))
            position = max(position, got.next_offset)
        return out, f.counts
    finally:
        c.close()


@pytest.mark.parametrize("codec", CODECS)
def test_real_fetches_equal_kafka_python_for_every_codec(broker, codec):
    topic = f"bulk_{codec or 'none'}"
    produce(broker.bootstrap, topic, codec)
    for start in (0, 7):  # 7: inside the first (compressed) batch
        want = client_records(broker.bootstrap, topic, start, N, "read_uncommitted")
        got, paths = bulk_records(broker.bootstrap, topic, start, N, "read_uncommitted")
        assert got == want
        assert len(got) == N - start
        assert set(paths) == {"bulk"}  # no fallback to kafka-python
    # small responses: many fetches, each asked for while the previous one is decoded
    got, paths = bulk_records(broker.bootstrap, topic, 0, N, "read_uncommitted", 4096)
    assert got == client_records(broker.bootstrap, topic, 0, N, "read_uncommitted")
    assert set(paths) == {"bulk", "prefetched"} and paths["prefetched"] == paths["bulk"] - 1


@pytest.fixture(scope="module")
def transactional_topic(broker):
    """``bulk_txn``: committed, aborted, committed transactions and plain records.
    Offsets: 0-2 committed, 3 marker, (the aborted ones: Tansu keeps none), 4-5
    committed, 6 marker, then 2 plain records (as measured on Tansu 0.6)."""
    from kafka import KafkaProducer

    topic = "bulk_txn"
    create_topic(broker.bootstrap, topic, 1)
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="bulk-tx",
                      max_block_ms=20_000)
    try:
        p.init_transactions()
        for values, commit in (([b"c0", b"c1", b"c2"], True), ([b"a0", b"a1"], False),
                               ([b"c3", b"c4"], True)):
            p.begin_transaction()
            for v in values:
                p.send(topic, v)
            p.commit_transaction() if commit else p.abort_transaction()
    finally:
        p.close()
    plain = KafkaProducer(bootstrap_servers=broker.bootstrap)
    try:
        for v in (b"p0", b"p1"):
            plain.send(topic, v).get(20)
    finally:
        plain.close()
    return topic


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_transaction_markers_are_never_records(broker, transactional_topic, isolation):
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition(transactional_topic, 0)
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, isolation_level=isolation)
    try:
        end = c.end_offsets([tp])[tp]
    finally:
        c.close()
    want = client_records(broker.bootstrap, transactional_topic, 0, end, isolation)
    got, paths = bulk_records(broker.bootstrap, transactional_topic, 0, end, isolation)
    assert got == want
    values = [r[2] for r in got]
    assert b"c0" in values and b"c4" in values and not any(v.startswith(b"a") for v in values)
    assert len(got) < end  # the markers took offsets, and were not returned
    assert set(paths) <= {"bulk", "prefetched"}


class Counted:
    """Counts the requests a kafka-python consumer sends, by request type (the
    consumer's connection manager's ``send`` wrapped; requests still go to the broker)."""

    def __init__(self, consumer) -> None:
        self.counts: collections.Counter = collections.Counter()
        manager = consumer._manager
        send = manager.send

        def counting(request, *args, **kw):
            self.counts[type(request).__name__] += 1
            return send(request, *args, **kw)

        manager.send = counting


def test_broker_requests_per_micro_batch(broker):
    """One micro-batch as Spark drives a source (latestOffset, reportLatestOffset,
    partitions, then one read per partition): the driver asks the end and the beginning
    offsets once each (it asked 4 times before: ends twice, beginnings twice), an
    executor task sends Fetch requests only (before: one ListOffsets per task too)."""
    from pyspark.sql.streaming.datasource import ReadAllAvailable
    from pyspark.sql.types import StringType, StructField, StructType

    topic = "bulk_none"
    if create_topic(broker.bootstrap, topic, 1):
        produce(broker.bootstrap, topic, None)
    schema = StructType([StructField("value", StringType())])
    reader = KafkaStreamReader(schema, {"topic": topic, "bootstrap": broker.bootstrap,
                                        "format": "raw"})
    try:
        start = reader.initialOffset()
        driver = Counted(reader._metadata())
        end = reader.latestOffset(start, ReadAllAvailable())
        assert reader.reportLatestOffset() == end
        (rng,) = reader.partitions(start, end)
        assert rng.start == 0 and rng.end == end[topic]["0"] > N // 2
        assert driver.counts["ListOffsetsRequest"] == 2
        assert driver.counts["FetchRequest"] == 0
        # the executor: the worker's kept consumer, counted from its first task on
        _, consumer = _reader_consumer(broker.bootstrap, "read_uncommitted", True,
                                       DEFAULT_BATCH_ROWS,
                                       KafkaSecurity())
        task = Counted(consumer)
        for _ in range(2):  # two micro-batches' tasks on the same worker
            rows = [r for b in read_range(rng, broker.bootstrap, schema, "raw", ",",
                                          check_crcs=True) for r in b.to_pylist()]
            assert len(rows) == rng.end
        assert task.counts["ListOffsetsRequest"] == 0
        assert 2 <= task.counts["FetchRequest"] <= 4  # N records fit one fetch
        # the path before (recordParser=kafka-python) asks the beginning offset per task
        rows = [r for b in read_range(rng, broker.bootstrap, schema, "raw", ",",
                                      check_crcs=True, record_parser="kafka-python")
                for r in b.to_pylist()]
        assert len(rows) == rng.end and task.counts["ListOffsetsRequest"] == 1
    finally:
        reader.stop()
