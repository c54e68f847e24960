"""Bulk production of prepared records into Kafka topics, for the development tools
(the flights replay, the Nexmark generator) and the tests that feed a broker.

librdkafka (PyPI ``confluent-kafka``, the ``bench`` extra, in ``dev``) when it is
installed, kafka-python otherwise: on the same 336,776 flights into the local Tansu
broker librdkafka took 1.4 s against 8.6-9.4 s (6.2-6.7x, two runs side by side on a
loaded 2-core host). Either way each record is sent once: librdkafka with ``retries=0``
(a failed delivery is an error, never a silent resend that could double or reorder
records) and both with acks from the partition leader.
"""

from __future__ import annotations

import logging
from typing import Iterable

from streamjob.exceptions import ConnectorError

log = logging.getLogger(__name__)

Record = tuple[str, int, bytes]
"""``(topic, partition, value)``: one record to produce, without a key."""


def produce(bootstrap: str, records: Iterable[Record]) -> int:
    """Produce ``records`` in order, each partition's records in the order given;
    returns how many were produced (all acknowledged by the broker on return).

    The last record of each partition is held back and sent alone, flushed, after all
    the others: the broker of TESTING.md (Tansu) reports a partition's end offset as its
    last batch's base offset + 1, so a final batch of one record makes every record
    visible to offset readers (``flights.replay``).

    Raises:
        ConnectorError: a record was not delivered (naming the broker address, topic,
            partition and Kafka's error); records before it may have been written.
    """
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return _with_kafka_python(bootstrap, records)
    return _with_librdkafka(bootstrap, records)


def _held_back(records: Iterable[Record], send) -> dict[tuple[str, int], bytes]:
    """Send every record but each partition's last through ``send(topic, partition,
    value)``; returns the held-back last records by ``(topic, partition)``."""
    held: dict[tuple[str, int], bytes] = {}
    for topic, partition, value in records:
        old = held.get((topic, partition))
        if old is not None:
            send(topic, partition, old)
        held[(topic, partition)] = value
    return held


def _with_librdkafka(bootstrap: str, records: Iterable[Record]) -> int:
    from confluent_kafka import KafkaException, Producer

    failed: list[str] = []

    def delivered(err, msg) -> None:
        if err is not None and len(failed) < 3:
            failed.append(f"{msg.topic()}[{msg.partition()}]: {err.str()}")

    producer = Producer({
        "bootstrap.servers": bootstrap, "acks": 1, "retries": 0, "linger.ms": 20,
        "batch.size": 1 << 20, "message.max.bytes": 16 << 20,
        "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1 << 20,
        "enable.idempotence": False}, logger=log)
    count = 0

    def send(topic: str, partition: int, value: bytes) -> None:
        nonlocal count
        while True:
            try:
                producer.produce(topic, value, partition=partition, on_delivery=delivered)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.05)
            except KafkaException as e:  # refused before sending: unknown partition, ...
                raise ConnectorError(f"Kafka broker {bootstrap}: record for {topic}[{partition}] "
                                     f"refused: {e.args[0].str()}") from None
        count += 1
        if count % 10_000 == 0:
            producer.poll(0)

    def flush() -> None:
        left = producer.flush(60)
        if left or failed:
            raise ConnectorError(
                f"Kafka broker {bootstrap}: {left} record(s) not delivered within 60 s"
                if left else f"Kafka broker {bootstrap} refused records: {'; '.join(failed)}")

    held = _held_back(records, send)
    flush()
    for (topic, partition), value in sorted(held.items()):
        send(topic, partition, value)
        flush()
    return count


def _with_kafka_python(bootstrap: str, records: Iterable[Record]) -> int:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, batch_size=1 << 20,
                             acks=1, max_request_size=16 << 20)
    count = 0
    futures = []

    def send(topic: str, partition: int, value: bytes) -> None:
        nonlocal count
        futures.append(producer.send(topic, value, partition=partition))
        count += 1

    def flush() -> None:
        producer.flush()
        for future in futures:
            try:
                future.get(0)
            except KafkaError as e:
                raise ConnectorError(f"Kafka broker {bootstrap} refused records: {e}") from e
        futures.clear()

    try:
        held = _held_back(records, send)
        flush()
        for (topic, partition), value in sorted(held.items()):
            send(topic, partition, value)
            flush()
    finally:
        producer.close()
    return count
