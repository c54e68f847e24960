"""The record parsers side by side on the same bytes, in one process: the bulk decoder
of the Kafka source (:mod:`streamjob.connectors.kafka.batches`) against kafka-python's
consumer-side parser (``Fetcher.PartitionRecords``), both from fetched bytes to the
values list the source's decoders take. A ratio of two timings in the same process, so
it says something even on a loaded machine."""

from __future__ import annotations

import time


def fetched_bytes(bootstrap: str, topic: str, partition: int = 0) -> tuple[bytes, int]:
    """The records bytes of one Fetch response at offset 0 of ``topic``/``partition``
    (up to the source's per-partition fetch size), and how many records they hold."""
    from kafka import TopicPartition

    from streamjob.connectors.kafka import batches
    from streamjob.connectors.kafka.fetch import PartitionFetcher
    from streamjob.connectors.kafka.read import READ_CONSUMER_SETTINGS, _consumer

    c = _consumer(bootstrap, **READ_CONSUMER_SETTINGS)
    try:
        tp = TopicPartition(topic, partition)
        c.partitions_for_topic(topic)
        f = PartitionFetcher(c, tp, settings=READ_CONSUMER_SETTINGS,
                             isolation_level="read_uncommitted", check_crcs=True, meta=False)
        data = bytes(f._send(c._manager.cluster.leader_for_partition(tp), 0).records or b"")
        return data, len(batches.parse(data, 0).columns)
    finally:
        c.close()


def parse_rates(data: bytes, repeat: int = 3) -> tuple[float, float]:
    """Records/s of (kafka-python, bulk) parsing ``data`` into values, best of ``repeat``.

    Raises:
        AssertionError: the two parsers disagree on the values (they never should).
    """
    from kafka.consumer.fetcher import Fetcher
    from kafka.record import MemoryRecords
    from kafka.structs import TopicPartition

    from streamjob.connectors.kafka import batches

    def client():
        part = Fetcher.PartitionRecords(0, TopicPartition("t", 0), MemoryRecords(data),
                                        check_crcs=True)
        return [r.value for r in part.take()]

    def bulk():
        return batches.parse(data, 0).columns.values()

    assert client() == bulk()
    rates = []
    for fn in (client, bulk):
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            n = len(fn())
            best = min(best, time.perf_counter() - t0)
        rates.append(n / best)
    return rates[0], rates[1]
