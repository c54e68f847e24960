"""The Kafka source: a Spark Python streaming data source over kafka-python.

Offsets follow Spark's own Kafka source: a JSON object ``{topic: {partition: offset}}``
where ``offset`` is the next offset to read. Spark writes the end offsets of each
micro-batch to the checkpoint's offset log before the batch runs (write-ahead), so a
restarted query re-reads exactly the same ranges: the source is replayable, which is what
exactly-once needs (DESIGN §6).

- The driver side (``initialOffset``/``latestOffset``/``partitions``) holds one metadata
  consumer and asks the broker for beginning/end offsets (ListOffsets).
- The executor side (``read``) reads one partition's range per Spark task (no
  consumer-group subscription: Spark decides the ranges) with a consumer kept for the
  next task of the same Python worker (:func:`_reader_consumer`), tuned for throughput
  (docs/performance.md): large fetches (:data:`READ_CONSUMER_SETTINGS`), and by default
  its own Fetch requests whose record batches are decoded in bulk (:mod:`.batches`,
  :mod:`.fetch`; kafka-python's parser is the fallback for what that path does not
  take), and JSON decoded by Arrow's reader even when integer columns arrive as JSON
  floats such as ``517.0`` (:class:`_JsonDecoder`). It yields Arrow record batches of
  at most ``batch.rows`` rows.
- Broker requests per micro-batch: ``latestOffset`` asks the end and beginning offsets
  (two ListOffsets); ``reportLatestOffset`` and ``partitions`` reuse them; an executor
  task sends Fetch requests only (no ListOffsets unless the broker answers "offset out
  of range"). ``tests/integration/test_kafka_bulk.py`` counts them.

Options (all strings, set by the planner from the stream's TBLPROPERTIES; their names are
defined once, in :mod:`.options`):
``topic``, ``bootstrap`` (``kafka.broker.list``), ``format`` (json|delimited|raw),
``delimiter``, ``maxRecordsPerBatch`` (0 = no cap; Spark's read-limit API),
``pollTimeoutMs`` (executor: longest wait for a record the range promises), and:

- ``startingOffsets`` — the reset strategy (DESIGN §7,
  ``transwarp.consumer.reset.offset.strategy``): ``earliest`` (default), ``latest``,
  ``committed`` (the consumer group's committed offset per partition, ``latest`` for a
  partition without one; needs ``groupId``) or a timestamp in ms since the epoch as an
  integer string (per partition the first record at or after it, found with
  ``offsets_for_times``; a partition without such a record starts at its end offset),
  or offsets as Spark's Kafka source takes them, ``{"topic": {"partition": offset}}``
  (``ALTER STREAMJOB ... WITH STATE RESET``: the old checkpoint's committed offsets; a
  partition not named starts at its beginning).
  It decides the offsets of a first start (:meth:`KafkaStreamReader.initialOffset`, no
  checkpoint) and where a partition added while the job runs starts (see
  :meth:`KafkaStreamReader.latestOffset`). With a checkpoint, Spark hands the reader
  the checkpointed offsets and the strategy is not used.
- ``groupId`` — the consumer group (``transwarp.consumer.group.id``, default
  ``streamjob.<db>.<job>``) whose committed offsets ``committed`` reads; offsets are
  committed to it by :class:`.group.GroupCommitter`
  (:func:`streamjob.connectors.sources.group_committers`), not by this reader.
- ``failOnDataLoss`` — ``true`` (default) or ``false``, Spark's Kafka option: offsets
  the job still needs that the broker no longer has (below a partition's beginning
  offset: retention or a truncation removed them) fail the job with a ConnectorError
  naming topic, partition and offsets; with ``false`` the reader skips to the beginning
  offset and logs a warning (logger ``streamjob.connectors.kafka.source``) naming them.
  Checked on the driver (``latestOffset``, ``partitions``) and in ``read``.
- ``requestTimeoutMs`` — bound on each driver-side broker request (default 30000, at
  least 1000; the stream's ``kafka.request.timeout.ms``); connecting waits at most
  min(it, 10000) ms. An unreachable broker is a
  ConnectorError "cannot reach Kafka broker at <address>: ...".
- ``checkCrcs`` — ``auto`` (default), ``true`` or ``false``: whether the executor's
  consumer verifies each record batch's CRC-32C. ``auto`` verifies when the native
  ``crc32c`` package is installed; kafka-python's pure-Python CRC-32C otherwise costs
  about a third of the read time (docs/results/2026-11-21.md, "The source path"); an Apache Kafka broker verifies
  each batch's CRC when it is produced and TCP checksums cover the transfer.
- ``recordParser`` — ``bulk`` (default) or ``kafka-python``: how the executor decodes
  fetched records: our bulk decoder of v2 record batches (:mod:`.batches`; kafka-python
  for what it does not take) or kafka-python's consumer ``poll`` alone (the path before
  the bulk decoder, kept for comparison and as a way out).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Iterator

from pyspark.sql.datasource import DataSource, DataSourceStreamReader
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows
from pyspark.sql.types import StructType

from streamjob.exceptions import ConnectorError, InvalidConfiguration
from streamjob.connectors import worker
from streamjob.connectors.kafka import options as opt
from streamjob.connectors.kafka.decode import ColumnCheck, _decoder, native_crc32c  # noqa: F401 - also exported
from streamjob.connectors.kafka.fetch import PARSERS
from streamjob.connectors.kafka.read import (  # noqa: F401 - the executor side, also exported
    DEFAULT_BATCH_ROWS, READ_CONSUMER_SETTINGS, KafkaRange, Offsets, _consumer, _tp, read_range)
from streamjob.connectors.kafka.security import KafkaSecurity
from streamjob.connectors.kafka.group import broker_errors, committed_offsets
from streamjob.connectors.kafka.policy import (  # noqa: F401
    _flag, beyond_end, lost_start, reset_strategy, start_position)

worker.install()  # in pyspark's source runner / Python workers: warnings to stderr, and a
# quiet exit when Spark stops the runner

log = logging.getLogger(__name__)  # "streamjob.connectors.kafka.source"

class KafkaStreamReader(DataSourceStreamReader):
    """Plans micro-batches over a Kafka topic; see the module docstring for the contract."""

    def __init__(self, schema: StructType, options: dict[str, str]) -> None:
        options = {k.lower(): v for k, v in options.items()}  # Spark lower-cases option keys
        self.schema = schema
        self.topic = options[opt.key(opt.TOPIC)]
        self.bootstrap = options[opt.key(opt.BOOTSTRAP)]
        self.format = opt.get(options, opt.FORMAT, "json")
        self.delimiter = opt.get(options, opt.DELIMITER, ",")
        self.starting = start_position(opt.get(options, opt.STARTING_OFFSETS))
        self.group_id = opt.get(options, opt.GROUP_ID) or None
        self.fail_on_data_loss = _flag(options, opt.FAIL_ON_DATA_LOSS, True)
        self.request_timeout_ms = int(opt.get(options, opt.REQUEST_TIMEOUT_MS, "30000"))
        self.isolation = opt.get(options, opt.ISOLATION_LEVEL, "read_uncommitted").lower()
        if self.isolation not in ("read_uncommitted", "read_committed"):
            raise InvalidConfiguration(f"option {opt.ISOLATION_LEVEL} must be read_uncommitted "
                                       f"or read_committed, got '{self.isolation}'")
        if self.request_timeout_ms < 1000:
            raise InvalidConfiguration(f"option {opt.REQUEST_TIMEOUT_MS} must be at least 1000, "
                                       f"got {self.request_timeout_ms}")
        self.max_records = int(opt.get(options, opt.MAX_RECORDS_PER_BATCH, "0") or 0)
        self.poll_timeout_ms = int(opt.get(options, opt.POLL_TIMEOUT_MS, "120000"))
        self.dead_letter = opt.get(options, opt.DEAD_LETTER) or None  # DeadLetterTarget JSON
        self.fail_missing = (opt.get(options, opt.MISSING_COLUMNS) or "count").lower() == "fail"
        self.security = KafkaSecurity.from_options(options)  # SSL/SASL, references unresolved
        crcs = (opt.get(options, opt.CHECK_CRCS) or "auto").strip().lower()
        if crcs not in ("auto", "true", "false"):
            raise InvalidConfiguration(
                f"option {opt.CHECK_CRCS} must be auto, true or false, got '{crcs}'")
        self.check_crcs = native_crc32c() if crcs == "auto" else crcs == "true"
        self.record_parser = (opt.get(options, opt.RECORD_PARSER) or "bulk").strip().lower()
        if self.record_parser not in PARSERS:
            raise InvalidConfiguration(f"option {opt.RECORD_PARSER} must be one of "
                                       f"{', '.join(PARSERS)}, got '{self.record_parser}'")
        self._meta = None
        self._latest: dict[int, int] | None = None  # end offsets of the last latestOffset
        self._begun: tuple[dict, dict] | None = None  # (its start, the starts it checked)
        self._warned: set[tuple[int, int]] = set()  # (partition, start) already reported

    # -- driver side ---------------------------------------------------------------

    def _metadata(self):
        if self._meta is None:
            self._meta = _consumer(self.bootstrap, self.request_timeout_ms,
                                   self.security, isolation_level=self.isolation)
        return self._meta

    def _partitions(self) -> list:
        from kafka import TopicPartition

        meta = self._metadata()
        # a topic just created may take a moment to appear in the metadata: wait for it
        # as long as one request may take (kafka.request.timeout.ms, 30 s by default)
        deadline = time.monotonic() + self.request_timeout_ms / 1000
        while True:
            with broker_errors(self.bootstrap, f"listing the partitions of '{self.topic}'"):
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
        with broker_errors(self.bootstrap, f"reading end offsets of '{self.topic}'"):
            offs = self._metadata().end_offsets(parts)
        return {tp.partition: off for tp, off in offs.items()}

    def _beginnings(self, parts) -> dict[int, int]:
        with broker_errors(self.bootstrap, f"reading beginning offsets of '{self.topic}'"):
            offs = self._metadata().beginning_offsets(parts)
        return {tp.partition: off for tp, off in offs.items()}

    def _at_time(self, parts, ms: int) -> dict[int, int]:
        """First offset at or after ``ms`` per partition; the end offset where none is.

        Apache Kafka answers "none" with offset -1 (kafka-python: None); Tansu 0.6 with
        offset 0 and timestamp -1 — both mean the end offset here. (Tansu looks records
        up by the time it appended them, not by their producer timestamp.)"""
        with broker_errors(self.bootstrap, f"looking up offsets of '{self.topic}' by time"):
            found = self._metadata().offsets_for_times({tp: ms for tp in parts})
        ends = self._ends(parts)
        out = {}
        for tp in parts:
            hit = found.get(tp)
            none = hit is None or hit.offset is None or hit.offset < 0 or hit.timestamp == -1
            out[tp.partition] = ends[tp.partition] if none else min(hit.offset, ends[tp.partition])
        return out

    def _committed(self, parts) -> dict[int, int]:
        """The group's committed offset per partition; the end offset where none is (and
        where a commit lies beyond the end: the topic was recreated; warned)."""
        if not self.group_id:
            raise ConnectorError(
                f"the reset strategy 'committed' of topic '{self.topic}' needs a consumer "
                f"group id (\"transwarp.consumer.group.id\", option groupId)")
        committed = committed_offsets(self.bootstrap, self.group_id, self.topic,
                                      [tp.partition for tp in parts], self.request_timeout_ms,
                                      self.security.client_config())
        ends = self._ends(parts)
        out = {}
        for tp in parts:
            p, c = tp.partition, committed.get(tp.partition)
            if c is not None and c > ends[p]:
                log.warning("committed offset %d of group '%s' for topic '%s' partition %d is "
                            "beyond its end offset %d (the topic was recreated?): starting at "
                            "the end", c, self.group_id, self.topic, p, ends[p])
            out[p] = ends[p] if c is None else min(c, ends[p])
        return self._no_loss(out)

    def _starts(self, parts) -> dict[int, int]:
        """Start offsets of ``parts`` (TopicPartitions) by the reset strategy."""
        if not parts:
            return {}
        if self.starting == "earliest":
            return self._beginnings(parts)
        if self.starting == "latest":
            return self._ends(parts)
        if self.starting == "committed":
            return self._committed(parts)
        if isinstance(self.starting, dict):  # given offsets (WITH STATE RESET)
            given = {int(p): int(o) for p, o in self.starting.get(self.topic, {}).items()}
            out = {tp.partition: given[tp.partition] for tp in parts if tp.partition in given}
            rest = [tp for tp in parts if tp.partition not in given]
            out.update(self._beginnings(rest) if rest else {})
            return self._no_loss(out)
        return self._at_time(parts, self.starting)

    def _no_loss(self, starts: dict[int, int]) -> dict[int, int]:
        """``starts`` (partition -> offset) checked against the beginning offsets: each
        start below its partition's beginning fails or is moved up (:func:`lost_start`,
        warned once per partition and start)."""
        if not starts:
            return starts
        beginnings = self._beginnings([_tp(self.topic, p) for p in starts])
        out = {}
        for p, start in starts.items():
            begin = beginnings.get(p, start)
            if begin > start and (p, start) in self._warned:
                out[p] = begin
                continue
            out[p] = lost_start(self.topic, p, start, begin, self.fail_on_data_loss)
            if out[p] != start:
                self._warned.add((p, start))
        return out

    def _past_end(self, starts: dict[int, int], ends: dict[int, int]) -> dict[int, int]:
        """The partitions of ``starts`` whose start lies beyond their end offset (a topic
        recreated or truncated), mapped to where reading continues (:func:`beyond_end`,
        warned once per partition and start)."""
        past = {p: s for p, s in starts.items() if s > ends[p]}
        for _ in range(2):  # fresh answers before calling it data loss, as Spark's
            if not past:    # KafkaOffsetReader re-fetches end offsets that went backward
                return {}   # (KAFKA-7703); seen here once under load with Tansu
            again = self._ends([_tp(self.topic, p) for p in past])
            ends.update({p: max(ends[p], o) for p, o in again.items()})
            past = {p: s for p, s in past.items() if s > ends[p]}
        if not past:
            return {}
        beginnings = self._beginnings([_tp(self.topic, p) for p in past])
        out = {}
        for p, start in past.items():
            if (p, start) in self._warned:
                out[p] = beginnings.get(p, 0)
                continue
            out[p] = beyond_end(self.topic, p, start, ends[p], beginnings.get(p, 0),
                                self.fail_on_data_loss)
            self._warned.add((p, start))
        return out

    def initialOffset(self) -> Offsets:
        """Offsets of a first start (no checkpoint), ``{topic: {partition: offset}}``: the
        reset strategy ``startingOffsets`` applied to every partition (module docstring).

        Raises:
            ConnectorError: broker unreachable, topic missing, ``committed`` without a
                group id, or (``committed``, failOnDataLoss) a committed offset below the
                partition's beginning offset.
        """
        starts = self._starts(self._partitions())
        return {self.topic: {str(p): o for p, o in sorted(starts.items())}}

    def getDefaultReadLimit(self) -> ReadLimit:
        """``ReadMaxRows(maxRecordsPerBatch)`` when a cap is set, else read everything."""
        return ReadMaxRows(self.max_records) if self.max_records > 0 else ReadAllAvailable()

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        """End offsets now (``{topic: {partition: offset}}``), capped by ``limit``.

        A partition missing in ``start`` was added to the topic while the job runs; it
        starts where the reset strategy says — unlike Spark's own Kafka source, which
        always starts new partitions at their earliest offset: with ``latest`` at its end
        offset when this call first sees it (records written to it before then are not
        read), with a timestamp at the first record at or after that time, with
        ``committed`` at the group's committed offset, else its end offset. With
        ``earliest`` it is read from its beginning.

        A ``start`` below a partition's beginning offset (records lost to retention)
        fails or is moved up to the beginning, by ``failOnDataLoss``; so does a ``start``
        beyond a partition's end offset (the topic recreated or truncated), which then
        reads the partition again from its beginning (:func:`beyond_end`).

        Raises:
            ConnectorError: broker unreachable ("cannot reach Kafka broker at <address>"),
                topic missing, or lost offsets with ``failOnDataLoss`` true.
        """
        self._latest = self._begun = None  # kept only from a call that succeeds
        parts = self._partitions()
        ends = self._ends(parts)
        self._latest = dict(ends)
        begun = {int(p): o for p, o in start.get(self.topic, {}).items()}
        checked = self._no_loss({p: o for p, o in begun.items() if p in ends})
        begun.update(checked)
        begun.update(self._past_end({p: o for p, o in begun.items() if p in ends}, ends))
        self._begun = (_parse_start(start, self.topic), checked)
        begun.update(self._starts([tp for tp in parts if tp.partition not in begun]))
        if isinstance(limit, ReadMaxRows):
            ends = _cap(begun, ends, limit.max_rows)
        return {self.topic: {str(p): max(ends[p], begun.get(p, 0)) for p in sorted(ends)}}

    def reportLatestOffset(self) -> Offsets:
        """The broker's end offsets, shown by Spark as the source's latest offset: those
        the last :meth:`latestOffset` read (as Spark's Kafka source reports), else asked."""
        ends = self._latest if self._latest is not None else self._ends(self._partitions())
        return {self.topic: {str(p): o for p, o in sorted(ends.items())}}

    def partitions(self, start: Offsets, end: Offsets) -> list[KafkaRange]:
        """One :class:`KafkaRange` per partition with records in ``[start, end)``.

        A partition missing in ``start`` (added while the job runs) starts by the reset
        strategy, as in :meth:`latestOffset`; a start below the partition's beginning
        offset fails or is moved up, by ``failOnDataLoss``.

        Raises:
            ConnectorError: broker unreachable, or lost offsets with ``failOnDataLoss``.
        """
        ends = {int(p): int(e) for p, e in end.get(self.topic, {}).items()}
        known = _parse_start(start, self.topic)
        recent, self._begun = self._begun, None
        if recent is not None and recent[0] == known:
            # latestOffset just checked these starts against the beginning offsets: not
            # asked twice per micro-batch (a loss since then is found by the executor)
            begun = {p: recent[1].get(p, b) for p, b in known.items() if p in ends and ends[p] > b}
        else:  # e.g. the first batch after a restart, planned from the offset log
            begun = self._no_loss({p: b for p, b in known.items() if p in ends and ends[p] > b})
        begun.update(self._past_end({p: b for p, b in known.items() if p in ends}, ends))
        begun.update(self._starts([_tp(self.topic, p) for p in ends if p not in known]))
        return [KafkaRange(self.topic, p, begun[p], e) for p, e in sorted(ends.items())
                if p in begun and e > begun[p]]

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
            self.poll_timeout_ms, dead_letter=self.dead_letter,
            fail_on_data_loss=self.fail_on_data_loss, isolation_level=self.isolation,
            check_crcs=self.check_crcs, fail_missing_columns=self.fail_missing,
            security=self.security, record_parser=self.record_parser,
        )


def _parse_start(start: Offsets, topic: str) -> dict[int, int]:
    """``{partition: offset}`` of ``topic`` in a start offset (strings to ints)."""
    return {int(p): int(o) for p, o in (start or {}).get(topic, {}).items()}


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
        return opt.SOURCE_NAME

    def schema(self) -> str:
        raise ConnectorError("the streamjob Kafka source needs the stream's declared columns")

    def streamReader(self, schema: StructType) -> KafkaStreamReader:
        return KafkaStreamReader(schema, dict(self.options))


def end_offsets(bootstrap: str, topic: str, security: KafkaSecurity | None = None,
                request_timeout_ms: int = 30_000) -> Offsets:
    """The broker's current end offsets of ``topic`` in the source's offset shape;
    ``security`` as the stream's (None: PLAINTEXT); ``request_timeout_ms`` bounds each
    request (connecting: at most min(it, 10 s)), as the stream's ``kafka.request.timeout.ms``.

    Raises:
        ConnectorError: broker unreachable or topic missing.
    """
    reader = KafkaStreamReader(StructType(), {opt.TOPIC: topic, opt.BOOTSTRAP: bootstrap,
                                              opt.REQUEST_TIMEOUT_MS: str(request_timeout_ms),
                                              **(security or KafkaSecurity()).options()})
    try:
        return reader.reportLatestOffset()
    finally:
        reader.stop()


def parse_offsets(text: str | dict) -> Offsets:
    """Offsets from Spark's progress JSON (string) or a dict, as ints."""
    data = json.loads(text) if isinstance(text, str) else text
    return {t: {str(p): int(o) for p, o in parts.items()} for t, parts in (data or {}).items()}
