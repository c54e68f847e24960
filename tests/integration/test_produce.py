"""The development tools' bulk producer (tools/streamjob_tools/dev/produce.py) against the real
broker: both backends (librdkafka and kafka-python) deliver every record once, each
partition in order, every record visible in the end offsets; a refused record is an
error naming the broker, never a silent loss."""

from __future__ import annotations

import uuid

import pytest

from streamjob.connectors.kafka.source import end_offsets
from streamjob_tools.dev import produce as produce_mod
from streamjob_tools.dev.broker import create_topic
from streamjob.exceptions import ConnectorError

pytestmark = pytest.mark.component


def _read_all(bootstrap: str, topic: str, partitions: int) -> dict[int, list[bytes]]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, consumer_timeout_ms=2000)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        out: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            for tp, recs in consumer.poll(timeout_ms=1000).items():
                out[tp.partition] += [r.value for r in recs]
        return out
    finally:
        consumer.close()


@pytest.mark.parametrize("backend", ["librdkafka", "kafka-python"])
def test_every_record_once_in_order_and_visible(broker, backend, monkeypatch):
    if backend == "kafka-python":
        monkeypatch.setattr(produce_mod, "_with_librdkafka", produce_mod._with_kafka_python)
    topics = [f"produce_{uuid.uuid4().hex[:8]}" for _ in range(2)]
    for t in topics:
        create_topic(broker.bootstrap, t, 2)
    records = [(topics[i % 2], (i // 2) % 2, f"{i}".encode()) for i in range(5001)]
    assert produce_mod.produce(broker.bootstrap, iter(records)) == len(records)
    for t in topics:
        expected = {p: [v for topic, part, v in records if topic == t and part == p]
                    for p in (0, 1)}
        assert _read_all(broker.bootstrap, t, 2) == expected
        assert end_offsets(broker.bootstrap, t)[t] == {str(p): len(v) for p, v in expected.items()}


def test_a_record_for_a_missing_partition_is_an_error_naming_the_broker(broker):
    """With librdkafka, the backend `make setup` installs (the `bench` extra of `dev`)."""
    topic = f"produce_{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 1)
    with pytest.raises(ConnectorError, match=broker.bootstrap):
        produce_mod.produce(broker.bootstrap, iter([(topic, 0, b"a"), (topic, 5, b"b")]))
