"""The executor side of the Kafka source: the records of one planned range
(:class:`KafkaRange`, one Spark task) read with a consumer kept per Python worker, and
decoded into Arrow batches (:mod:`.decode`); plus the consumer every client of the
source makes (:func:`_consumer`). :mod:`.source` plans the ranges on the driver."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, replace
from typing import Iterator

from pyspark.sql.datasource import InputPartition
from pyspark.sql.types import StructType

from streamjob.exceptions import ConnectorError, InvalidConfiguration
from streamjob.connectors.kafka.decode import ColumnCheck, _decoder, native_crc32c
from streamjob.connectors.kafka.fetch import PARSERS, OffsetLost, PartitionFetcher
from streamjob.connectors.kafka.group import broker_errors
from streamjob.connectors.kafka.policy import lost_start
from streamjob.connectors.kafka.security import KafkaSecurity
from streamjob.connectors.kafka.values import LazyValues

DEFAULT_BATCH_ROWS = 10_000
"""Rows per Arrow batch handed to Spark by ``read`` (bounds executor memory). Several per
task, so the JVM converts and writes one batch while the Python worker decodes the next:
10,000 against 50,000 (one batch per task in s1), hand-written s1 job side by side over 6
alternating rounds, median 1.10x (0.61-1.20) records/s."""

READ_CONSUMER_SETTINGS = dict(
    fetch_max_bytes=64 << 20,            # per fetch response
    max_partition_fetch_bytes=16 << 20,  # per partition in a response
    fetch_min_bytes=1, fetch_max_wait_ms=100,
    receive_buffer_bytes=4 << 20,        # socket buffer: fewer reads per large fetch
)
"""kafka-python settings of the executor's consumer (bytes, ms); the benchmark's raw
consumer anchor uses the same (``streamjob_tools.bench``)."""

Offsets = dict[str, dict[str, int]]
"""``{topic: {partition (str): next offset}}``, the checkpointed offset of this source."""


@dataclass(frozen=True)
class KafkaRange(InputPartition):
    """Records ``[start, end)`` of one topic partition: one Spark task."""

    topic: str
    partition: int
    start: int
    end: int


def _consumer(bootstrap: str, request_timeout_ms: int = 30_000,
              security: KafkaSecurity | None = None, **extra):
    """A kafka-python consumer without a group, or ConnectorError naming the address
    (and, with SSL/SASL ``security``, what went wrong: :meth:`KafkaSecurity.explain`).

    ``request_timeout_ms`` bounds each request; connecting waits min(it, 10 s)."""
    security = security or KafkaSecurity()
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    try:
        return KafkaConsumer(
            bootstrap_servers=bootstrap.split(","),
            group_id=None,
            enable_auto_commit=False,
            request_timeout_ms=request_timeout_ms,
            metadata_max_age_ms=10_000,
            bootstrap_timeout_ms=min(10_000, request_timeout_ms),
            **extra, **security.client_config(),
        )
    except KafkaError as exc:
        why = security.explain(bootstrap)
        raise ConnectorError(f"cannot reach Kafka broker at {bootstrap}: {exc}"
                             + (f"; {why}" if why else "")) from None


_CONSUMERS: dict[tuple, object] = {}
"""Executor consumers kept between tasks of one Python worker (Spark reuses workers),
keyed by (bootstrap, isolation level, check_crcs, batch rows)."""


def _reader_consumer(bootstrap: str, isolation_level: str, check_crcs: bool, batch_rows: int,
                     security: KafkaSecurity):
    """The worker's consumer for these settings, created on first use: a task saves the
    connection set-up and metadata round trips of a new consumer. Callers assign, seek
    and poll; on any error they call :func:`_drop_consumer`."""
    key = (bootstrap, isolation_level, check_crcs, batch_rows, security)
    consumer = _CONSUMERS.get(key)
    if consumer is None:
        consumer = _consumer(bootstrap, isolation_level=isolation_level, check_crcs=check_crcs,
                             max_poll_records=batch_rows, security=security,
                             **READ_CONSUMER_SETTINGS)
        _CONSUMERS[key] = consumer
    return key, consumer


def _drop_consumer(key: tuple) -> None:
    consumer = _CONSUMERS.pop(key, None)
    if consumer is not None:
        try:
            consumer.close()
        except Exception:  # noqa: BLE001 - a broken consumer is being discarded
            pass


def read_range(rng: KafkaRange, bootstrap: str, schema: StructType, fmt: str,
               delimiter: str, poll_timeout_ms: int = 120_000,
               batch_rows: int = DEFAULT_BATCH_ROWS, *, dead_letter: str | None = None,
               fail_on_data_loss: bool = True,
               isolation_level: str = "read_uncommitted",
               check_crcs: bool | None = None,
               fail_missing_columns: bool = False, security=None,
               record_parser: str = "bulk") -> Iterator:
    """Read ``[rng.start, rng.end)`` of one partition as Arrow batches (see ``read``).

    A ``schema`` ending in :data:`.formats.MALFORMED_COLUMN` means a tolerant stream
    (``"malformed.policy"`` skip or dead-letter): malformed records become rows carrying
    their error there; ``dead_letter`` (a :class:`.dead_letter.DeadLetterTarget` option
    string) also writes them to the dead-letter table before the batch is yielded.

    Offsets of the range below the partition's beginning offset (lost to retention) raise
    ConnectorError naming them, or with ``fail_on_data_loss`` False are skipped with a
    logged warning (:func:`lost_start`); an unreachable broker is a ConnectorError naming
    its address. With ``isolation_level`` ``read_committed`` records of aborted
    transactions (and transaction markers) are not returned; the end offsets the driver
    plans with are then the last stable offsets (Kafka's ListOffsets rule).
    ``check_crcs``: verify record batch CRCs (None: only with a native CRC-32C,
    :func:`native_crc32c`). ``fail_missing_columns``: a declared column that no record
    of the range carries raises ConnectorError after the last batch (:class:`ColumnCheck`,
    ``"missing.columns"="fail"``). ``security``: the stream's
    :class:`.security.KafkaSecurity` (None: PLAINTEXT)."""
    if check_crcs is None:
        check_crcs = native_crc32c()
    schema, positions = _without_positions(schema)
    decode = _decoder(schema, fmt, delimiter, dead_letter)
    meta = fmt == "raw" or decode.tolerant  # keys and timestamps only where they are used
    if fail_missing_columns:
        columns, plain = ColumnCheck(schema.names), decode
        decode = lambda records: columns.see(plain(records))  # noqa: E731
    if positions:
        decoded = decode
        decode = lambda records: _with_positions(decoded(records), records)  # noqa: E731
    if record_parser not in PARSERS:
        raise InvalidConfiguration(f"option recordParser must be one of {', '.join(PARSERS)}, "
                                   f"got '{record_parser}'")
    key, consumer = _reader_consumer(bootstrap, isolation_level, check_crcs, batch_rows,
                                     security or KafkaSecurity())
    tp = _tp(rng.topic, rng.partition)
    fetch = _client_fetches if record_parser == "kafka-python" else _bulk_fetches
    done = False
    lazy = fmt == "json"  # the JSON decoder joins values without bytes per record
    try:
        pending = _Pending()
        for got in fetch(consumer, tp, rng, bootstrap, isolation_level, check_crcs, meta,
                         poll_timeout_ms, fail_on_data_loss):
            pending.add(got)
            while pending.rows >= batch_rows:
                yield decode(_slice(rng, *pending.take(batch_rows), meta, lazy))
        if pending.rows:
            yield decode(_slice(rng, *pending.take(pending.rows), meta, lazy))
        if fail_missing_columns:
            columns.check(rng.topic, rng.partition, rng.start, rng.end)
        done = True
    finally:
        if done:
            consumer.unsubscribe()  # assignment released; the connection stays for the next task
        else:
            _drop_consumer(key)  # an error or an abandoned generator: start clean next time


class _Idle:
    """Raises ConnectorError when no record arrived within ``poll_timeout_ms``."""

    def __init__(self, rng: KafkaRange, bootstrap: str, poll_timeout_ms: int) -> None:
        self.rng, self.bootstrap, self.timeout_ms = rng, bootstrap, poll_timeout_ms
        self.since = time.monotonic()

    def progress(self) -> None:
        self.since = time.monotonic()

    def check(self, position: int) -> None:
        if (time.monotonic() - self.since) * 1000 > self.timeout_ms:
            rng = self.rng
            raise ConnectorError(
                f"no records from Kafka broker {self.bootstrap} for topic '{rng.topic}' "
                f"partition {rng.partition} at offset {position} "
                f"within {self.timeout_ms} ms (expected up to offset {rng.end - 1})")


def _bulk_fetches(consumer, tp, rng: KafkaRange, bootstrap: str, isolation_level: str,
                  check_crcs: bool, meta: bool, poll_timeout_ms: int,
                  fail_on_data_loss: bool) -> Iterator:
    """:class:`.fetch.Fetched` chunks of ``rng`` by the bulk path (:mod:`.fetch`). No
    beginning offset is asked for unless the broker answers out of range: then offsets
    below it are lost (:func:`lost_start`), fail or are skipped."""
    fetcher = PartitionFetcher(consumer, tp, settings=READ_CONSUMER_SETTINGS,
                               isolation_level=isolation_level, check_crcs=check_crcs,
                               meta=meta)
    position, idle = rng.start, _Idle(rng, bootstrap, poll_timeout_ms)
    try:
        while position < rng.end:
            try:
                with broker_errors(bootstrap, f"fetching '{rng.topic}' partition "
                                              f"{rng.partition} at offset {position}"):
                    got = fetcher.fetch(position, rng.end)
            except OffsetLost as lost:
                position = lost_start(rng.topic, rng.partition, position, lost.beginning,
                                      fail_on_data_loss)
                continue
            if got.offsets:
                idle.progress()
                yield got
            elif got.next_offset <= position:
                idle.check(position)
            position = max(position, got.next_offset)
    finally:
        _FETCH_COUNTS.update({p: _FETCH_COUNTS.get(p, 0) + n for p, n in fetcher.counts.items()})
        fetcher.release()


_FETCH_COUNTS: dict[str, int] = {}
"""Fetches of this process's bulk reads by the path that decoded them (:class:`.fetch.
Fetched` ``path``): how often kafka-python's fallbacks ran (tests, the benchmark)."""


def _client_fetches(consumer, tp, rng: KafkaRange, bootstrap: str, isolation_level: str,
                    check_crcs: bool, meta: bool, poll_timeout_ms: int,
                    fail_on_data_loss: bool) -> Iterator:
    """The same chunks by kafka-python's consumer alone (``recordParser`` =
    ``kafka-python``): assign, ask the beginning offset (its ``poll`` would silently
    reset a lost offset), seek, poll."""
    from streamjob.connectors.kafka.fetch import Fetched

    consumer.assign([tp])
    with broker_errors(bootstrap, f"reading the beginning offset of '{rng.topic}' "
                                  f"partition {rng.partition}"):
        earliest = consumer.beginning_offsets([tp])[tp]
    position = lost_start(rng.topic, rng.partition, rng.start, earliest, fail_on_data_loss)
    consumer.seek(tp, position)
    idle = _Idle(rng, bootstrap, poll_timeout_ms)
    while position < rng.end:
        polled = consumer.poll(timeout_ms=500).get(tp, [])
        if not polled:
            idle.check(position)
            position = max(position, consumer.position(tp))
            continue
        idle.progress()
        if polled[-1].offset >= rng.end:  # past the range: keep what lies inside
            polled = [rec for rec in polled if rec.offset < rng.end]
        position = max(position, polled[-1].offset + 1) if polled else rng.end
        yield Fetched([r.offset for r in polled], [r.value for r in polled],
                      [r.key for r in polled] if meta else None,
                      [r.timestamp for r in polled] if meta else None, position,
                      "kafka-python poll")


class _Pending:
    """Fetched chunks (:class:`.fetch.Fetched`) not yet decoded: ``rows`` records in all;
    :meth:`take` cuts the first ones off, slicing a chunk only where a batch ends inside
    it (no list grows or shifts per record)."""

    def __init__(self) -> None:
        self.chunks: deque = deque()
        self.rows = 0

    def add(self, got) -> None:
        if got.offsets:
            self.chunks.append(got)
            self.rows += len(got.offsets)

    def take(self, n: int) -> tuple[list, object, list | None, list | None]:
        """The first ``n`` records (``n <= rows``): offsets, values (a
        :class:`.values.LazyValues`), keys and stamps (None when the fetches had none)."""
        offsets: list = []
        values, keys, stamps = [], [], []
        while n > 0:
            got = self.chunks[0]
            k = len(got.offsets)
            if k <= n:
                self.chunks.popleft()
                head = got
            else:
                head = replace(got, offsets=got.offsets[:n], values=got.values[:n],
                               keys=None if got.keys is None else got.keys[:n],
                               stamps=None if got.stamps is None else got.stamps[:n])
                self.chunks[0] = replace(
                    got, offsets=got.offsets[n:], values=got.values[n:],
                    keys=None if got.keys is None else got.keys[n:],
                    stamps=None if got.stamps is None else got.stamps[n:])
                k = n
            offsets += head.offsets
            values.append(head.values)
            if head.keys is not None:
                keys += head.keys
                stamps += head.stamps
            n -= k
            self.rows -= k
        return offsets, LazyValues.concat(values), keys or None, stamps or None


def _slice(rng: KafkaRange, offsets: list, values, keys: list | None, stamps: list | None,
           meta: bool, lazy: bool = False):
    """A :class:`.formats.RecordSlice`; without ``meta`` keys and timestamps are None.
    ``values``: a :class:`.values.LazyValues`, kept lazy with ``lazy`` (the JSON
    decoders), else made a list."""
    from streamjob.connectors.kafka.formats import RecordSlice

    if not meta:
        keys = stamps = [None] * len(offsets)
    if not lazy:
        values = values.tolist()
    return RecordSlice(rng.topic, rng.partition, offsets, values, keys, stamps)


def _without_positions(schema: StructType) -> tuple[StructType, bool]:
    """``schema`` without the hidden position columns a job's plan asked for
    (:mod:`streamjob.udf.positions`), and whether it had them (last)."""
    from streamjob.udf.positions import POSITION_COLUMNS

    names = schema.names
    if tuple(names[-len(POSITION_COLUMNS):]) != POSITION_COLUMNS:
        return schema, False
    return StructType(schema.fields[:-len(POSITION_COLUMNS)]), True


def _with_positions(batch, records):
    """``batch`` (the decoded rows of ``records``, a :class:`.formats.RecordSlice`) with
    each record's partition and offset appended as the hidden position columns; NULL
    when the rows are not one per record."""
    import pyarrow as pa

    from streamjob.udf.positions import POSITION_COLUMNS

    n = batch.num_rows
    if n == len(records.offsets):
        partition = pa.array([records.partition] * n, type=pa.int32())
        offset = pa.array(records.offsets, type=pa.int64())
    else:
        partition, offset = pa.nulls(n, type=pa.int32()), pa.nulls(n, type=pa.int64())
    return pa.RecordBatch.from_arrays([*batch.columns, partition, offset],
                                      names=[*batch.schema.names, *POSITION_COLUMNS])


def _tp(topic: str, partition: int):
    from kafka import TopicPartition

    return TopicPartition(topic, partition)
