"""The Kafka source: a Spark Python streaming data source over kafka-python.

Offsets follow Spark's own Kafka source: a JSON object ``{topic: {partition: offset}}``
where ``offset`` is the next offset to read. Spark writes the end offsets of each
micro-batch to the checkpoint's offset log before the batch runs (write-ahead), so a
restarted query re-reads exactly the same ranges: the source is replayable, which is what
exactly-once needs (DESIGN §6).

- The driver side (``initialOffset``/``latestOffset``/``partitions``) holds one metadata
  consumer and asks the broker for beginning/end offsets (ListOffsets).
- The executor side (``read``) assigns one partition with ``assign()`` and ``seek()``
  (no consumer-group subscription: Spark decides the ranges), polls until the end
  offset, and yields Arrow record batches of at most ``batch.rows`` rows.

Options (all strings, set by the planner from the stream's TBLPROPERTIES):
``topic``, ``bootstrap`` (``kafka.broker.list``), ``format`` (json|delimited|raw),
``delimiter``, ``startingOffsets`` (earliest|latest, DESIGN §7 reset strategy),
``maxRecordsPerBatch`` (0 = no cap; Spark's read-limit API), ``pollTimeoutMs``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Iterator

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows
from pyspark.sql.types import StructType

from ..exceptions import ConnectorError
from . import worker

worker.install()  # imported inside pyspark's source runner: quiet exit when Spark stops it

SOURCE_NAME = "streamjob_kafka"
DEFAULT_BATCH_ROWS = 50_000
"""Rows per Arrow batch handed to Spark by ``read`` (bounds executor memory)."""

Offsets = dict[str, dict[str, int]]
"""``{topic: {partition (str): next offset}}``, the checkpointed offset of this source."""


@dataclass(frozen=True)
class KafkaRange(InputPartition):
    """Records ``[start, end)`` of one topic partition: one Spark task."""

    topic: str
    partition: int
    start: int
    end: int


def _consumer(bootstrap: str, **extra):
    """A kafka-python consumer without a group, or ConnectorError naming the address."""
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    try:
        return KafkaConsumer(
            bootstrap_servers=bootstrap.split(","),
            group_id=None,
            enable_auto_commit=False,
            request_timeout_ms=30_000,
            metadata_max_age_ms=10_000,
            bootstrap_timeout_ms=10_000,
            **extra,
        )
    except KafkaError as exc:
        raise ConnectorError(f"cannot reach Kafka broker at {bootstrap}: {exc}") from None


class KafkaStreamReader(DataSourceStreamReader):
    """Plans micro-batches over a Kafka topic; see the module docstring for the contract."""

    def __init__(self, schema: StructType, options: dict[str, str]) -> None:
        options = {k.lower(): v for k, v in options.items()}  # Spark lower-cases option keys
        self.schema = schema
        self.topic = options["topic"]
        self.bootstrap = options["bootstrap"]
        self.format = options.get("format", "json")
        self.delimiter = options.get("delimiter", ",")
        self.starting = options.get("startingoffsets", "earliest").lower()
        self.max_records = int(options.get("maxrecordsperbatch", "0") or 0)
        self.poll_timeout_ms = int(options.get("polltimeoutms", "120000"))
        self._meta = None

    # -- driver side ---------------------------------------------------------------

    def _metadata(self):
        if self._meta is None:
            self._meta = _consumer(self.bootstrap)
        return self._meta

    def _partitions(self) -> list:
        from kafka import TopicPartition

        meta = self._metadata()
        deadline = time.monotonic() + 30
        while True:
            parts = meta.partitions_for_topic(self.topic)
            if parts:
                return [TopicPartition(self.topic, p) for p in sorted(parts)]
            if time.monotonic() > deadline:
                raise ConnectorError(
                    f"topic '{self.topic}' does not exist on Kafka broker {self.bootstrap}"
                )
            meta.topics()  # forces a metadata refresh
            time.sleep(0.2)

    def _ends(self, parts) -> dict[int, int]:
        return {tp.partition: off for tp, off in self._metadata().end_offsets(parts).items()}

    def _beginnings(self, parts) -> dict[int, int]:
        return {tp.partition: off for tp, off in self._metadata().beginning_offsets(parts).items()}

    def initialOffset(self) -> Offsets:
        """Offsets of a first start: the reset strategy (earliest or latest)."""
        parts = self._partitions()
        offs = self._ends(parts) if self.starting == "latest" else self._beginnings(parts)
        return {self.topic: {str(p): o for p, o in offs.items()}}

    def getDefaultReadLimit(self) -> ReadLimit:
        """``ReadMaxRows(maxRecordsPerBatch)`` when a cap is set, else read everything."""
        return ReadMaxRows(self.max_records) if self.max_records > 0 else ReadAllAvailable()

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        """End offsets now, capped by ``limit``; partitions new since ``start`` begin at
        their earliest offset (as Spark's Kafka source does)."""
        parts = self._partitions()
        ends = self._ends(parts)
        begun = {int(p): o for p, o in start.get(self.topic, {}).items()}
        missing = [tp for tp in parts if tp.partition not in begun]
        if missing:
            begun.update(self._beginnings(missing))
        if isinstance(limit, ReadMaxRows):
            ends = _cap(begun, ends, limit.max_rows)
        return {self.topic: {str(p): max(ends[p], begun.get(p, 0)) for p in sorted(ends)}}

    def reportLatestOffset(self) -> Offsets:
        """The broker's end offsets, shown by Spark as the source's latest offset."""
        return {self.topic: {str(p): o for p, o in self._ends(self._partitions()).items()}}

    def partitions(self, start: Offsets, end: Offsets) -> list[KafkaRange]:
        """One :class:`KafkaRange` per partition with records in ``[start, end)``."""
        s = start.get(self.topic, {})
        ranges = []
        for p, e in sorted(end.get(self.topic, {}).items(), key=lambda kv: int(kv[0])):
            b = s.get(p)
            if b is None:  # partition added since the start offsets were taken
                b = self._beginnings([_tp(self.topic, int(p))])[int(p)]
            if e > b:
                ranges.append(KafkaRange(self.topic, int(p), b, e))
        return ranges

    def commit(self, end: Offsets) -> None:
        """Spark finished every record before ``end``; nothing to release here."""

    def stop(self) -> None:
        if self._meta is not None:
            self._meta.close()
            self._meta = None

    # -- executor side -------------------------------------------------------------

    def read(self, partition: KafkaRange) -> Iterator:
        """Yield Arrow record batches of the records in ``partition``, in offset order.

        Raises:
            ConnectorError: the broker is unreachable, the range is no longer on the
                broker (retention), or a record is malformed (names topic/partition/offset).
        """
        return read_range(
            partition, self.bootstrap, self.schema, self.format, self.delimiter,
            self.poll_timeout_ms,
        )


def read_range(rng: KafkaRange, bootstrap: str, schema: StructType, fmt: str,
               delimiter: str, poll_timeout_ms: int = 120_000,
               batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator:
    """Read ``[rng.start, rng.end)`` of one partition as Arrow batches (see ``read``)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from .formats import RecordSlice, decode

    arrow = to_arrow_schema(schema)
    consumer = _consumer(
        bootstrap, fetch_max_bytes=64 << 20, max_partition_fetch_bytes=16 << 20,
        max_poll_records=batch_rows, fetch_min_bytes=1, fetch_max_wait_ms=100,
    )
    tp = _tp(rng.topic, rng.partition)
    try:
        consumer.assign([tp])
        earliest = consumer.beginning_offsets([tp])[tp]
        if earliest > rng.start:
            raise ConnectorError(
                f"offsets {rng.start}..{earliest - 1} of topic '{rng.topic}' partition "
                f"{rng.partition} are no longer on the broker (retention removed them)"
            )
        consumer.seek(tp, rng.start)
        offsets, values, keys, stamps = [], [], [], []
        position = rng.start
        idle_since = time.monotonic()
        while position < rng.end:
            polled = consumer.poll(timeout_ms=500).get(tp, [])
            if not polled:
                if (time.monotonic() - idle_since) * 1000 > poll_timeout_ms:
                    raise ConnectorError(
                        f"no records from Kafka broker {bootstrap} for topic '{rng.topic}' "
                        f"partition {rng.partition} at offset {position} "
                        f"within {poll_timeout_ms} ms (expected up to offset {rng.end - 1})"
                    )
                position = max(position, consumer.position(tp))
                continue
            idle_since = time.monotonic()
            for rec in polled:
                if rec.offset >= rng.end:
                    break
                offsets.append(rec.offset)
                values.append(rec.value)
                keys.append(rec.key)
                stamps.append(rec.timestamp)
            position = max(position, polled[-1].offset + 1)
            if len(offsets) >= batch_rows:
                yield decode(RecordSlice(rng.topic, rng.partition, offsets, values, keys, stamps),
                             arrow, fmt, delimiter)
                offsets, values, keys, stamps = [], [], [], []
        if offsets:
            yield decode(RecordSlice(rng.topic, rng.partition, offsets, values, keys, stamps),
                         arrow, fmt, delimiter)
    finally:
        consumer.close()


def _tp(topic: str, partition: int):
    from kafka import TopicPartition

    return TopicPartition(topic, partition)


def _cap(start: dict[int, int], ends: dict[int, int], max_rows: int) -> dict[int, int]:
    """Spread ``max_rows`` over partitions in proportion to their backlog (Spark's Kafka
    ``maxOffsetsPerTrigger`` rule); every partition with a backlog advances by >= 1."""
    backlog = {p: max(0, e - start.get(p, e)) for p, e in ends.items()}
    total = sum(backlog.values())
    if total <= max_rows:
        return ends
    capped = {}
    for p, e in ends.items():
        b = start.get(p, e)
        if backlog[p] == 0:
            capped[p] = b
            continue
        share = max(1, int(max_rows * backlog[p] / total))
        capped[p] = min(e, b + share)
    return capped


class KafkaDataSource(DataSource):
    """``spark.readStream.format("streamjob_kafka")``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        raise ConnectorError("the streamjob Kafka source needs the stream's declared columns")

    def streamReader(self, schema: StructType) -> KafkaStreamReader:
        return KafkaStreamReader(schema, dict(self.options))


def end_offsets(bootstrap: str, topic: str) -> Offsets:
    """The broker's current end offsets of ``topic`` in the source's offset shape.

    Raises:
        ConnectorError: broker unreachable or topic missing.
    """
    reader = KafkaStreamReader(StructType(), {"topic": topic, "bootstrap": bootstrap})
    try:
        return reader.reportLatestOffset()
    finally:
        reader.stop()


def parse_offsets(text: str | dict) -> Offsets:
    """Offsets from Spark's progress JSON (string) or a dict, as ints."""
    data = json.loads(text) if isinstance(text, str) else text
    return {t: {str(p): int(o) for p, o in parts.items()} for t, parts in (data or {}).items()}
