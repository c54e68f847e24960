"""Fetching one partition's records for the executor: the bulk path (our own Fetch
requests over kafka-python's connection, record batches decoded by :mod:`.batches`) and
kafka-python's own path, which it falls back to.

:class:`PartitionFetcher` sends a Fetch request (Kafka's Fetch API, the version
kafka-python negotiates; kafka-python's protocol classes) for one partition straight to
its leader (kafka-python's cluster metadata) on the kept consumer's connection, and
decodes the response's records bytes with :func:`.batches.parse`; once they are parsed
it sends the request for the next offset at once (a prefetch, one in flight), so the
broker answers while the caller decodes. It falls back to
kafka-python for one fetch when:

- the bytes hold something :func:`.batches.parse` does not decode (magic 0/1 message
  sets, a codec without its library, a malformed record): the *same bytes* are parsed by
  kafka-python's ``Fetcher.PartitionRecords``, which decodes them or raises its error;
- the partition's response carries an error code (not leader, unknown topic, out of
  range above the log start...), the leader is unknown, or the request fails: one
  ``poll`` of the consumer (assigned and seeked to the offset), whose fetcher refreshes
  metadata, reconnects and backs off as kafka-python does.

A fetch offset below the partition's log start offset (records removed by retention)
is reported as :class:`OffsetLost` with the beginning offset, found without a request
of its own: Kafka answers OFFSET_OUT_OF_RANGE (then one ListOffsets asks the beginning
offset), and every Fetch response from v5 on carries the log start offset (Tansu answers
with records from it); the caller applies ``failOnDataLoss`` (:func:`.policy.lost_start`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from streamjob.exceptions import ConnectorError
from streamjob.connectors.kafka import batches
from streamjob.connectors.kafka.values import LazyValues

PARSERS = ("bulk", "kafka-python")
"""Values of the source's ``recordParser`` option: ``bulk`` (default: our parser,
:mod:`.batches`, with kafka-python's as fallback) or ``kafka-python`` (its consumer's
``poll`` only: the path before the bulk parser, kept for comparison)."""

_OFFSET_OUT_OF_RANGE = 1  # Kafka error code


class OffsetLost(Exception):
    """The fetch offset lies below the partition's beginning offset ``beginning``."""

    def __init__(self, beginning: int) -> None:
        super().__init__(f"offset below the beginning offset {beginning}")
        self.beginning = beginning


@dataclass
class Fetched:
    """Records of one fetch below the range end, as sequences aligned by index (``keys``
    and ``stamps`` only when asked for, else None; ``values`` of the bulk path a
    :class:`.values.LazyValues`, else a list), ``next_offset`` where the next fetch
    starts, and which ``path`` decoded them (``bulk``, ``kafka-python bytes``: the same
    bytes parsed by kafka-python, ``kafka-python poll``)."""

    offsets: list
    values: Sequence
    keys: list | None
    stamps: list | None
    next_offset: int
    path: str


class PartitionFetcher:
    """Fetches ``tp`` (a kafka-python TopicPartition) with ``consumer`` (a KafkaConsumer
    without a group, kept per worker: :func:`.read._reader_consumer`).

    ``settings``: the consumer's fetch settings (:data:`.read.READ_CONSUMER_SETTINGS`,
    bytes and ms); ``isolation_level``: ``read_uncommitted`` or ``read_committed``;
    ``check_crcs``: verify each batch's CRC-32C; ``meta``: also return keys and
    timestamps. ``counts`` (path -> fetches; ``prefetched``: responses that were asked
    for before they were needed) is kept for tests and the benchmark."""

    def __init__(self, consumer, tp, *, settings: dict, isolation_level: str,
                 check_crcs: bool, meta: bool) -> None:
        self.consumer, self.tp, self.settings = consumer, tp, settings
        self.read_committed = isolation_level == "read_committed"
        self.check_crcs, self.meta = check_crcs, meta
        self.counts: dict[str, int] = {}
        self._assigned = False
        self._pending: tuple | None = None  # (leader, offset, Future): a prefetch

    # -- one fetch -----------------------------------------------------------------

    def fetch(self, offset: int, end: int, timeout_ms: int = 500) -> Fetched:
        """Records at ``offset`` and after (below ``end``) from one Fetch response.

        Raises:
            OffsetLost: ``offset`` is below the partition's beginning offset.
            ConnectorError: a record batch failed its CRC-32C check (names topic,
                partition and offset); kafka-python's errors pass through from its path.
        """
        from kafka.errors import KafkaError

        cluster = self.consumer._manager.cluster
        leader = cluster.leader_for_partition(self.tp)
        if leader is None:  # a topic this worker's consumer has not seen yet
            self.consumer.partitions_for_topic(self.tp.topic)
            leader = cluster.leader_for_partition(self.tp)
        if leader is None or leader < 0:
            return self._poll(offset, end, timeout_ms)
        try:
            data = self._send(leader, offset)
        except KafkaError:
            return self._poll(offset, end, timeout_ms)
        if data.error_code == _OFFSET_OUT_OF_RANGE:
            beginning = self.consumer.beginning_offsets([self.tp])[self.tp]
            if offset < beginning:
                raise OffsetLost(beginning)
        if data.error_code:
            return self._poll(offset, end, timeout_ms)
        start = data.log_start_offset  # Fetch v5+ (KIP-107): some brokers (Tansu) answer
        if start is not None and start >= 0 and start > offset:  # with it, not out of range
            raise OffsetLost(start)
        records = data.records or b""
        if not isinstance(records, (bytes, bytearray, memoryview)):
            return self._poll(offset, end, timeout_ms)  # a protocol object: not for us
        try:
            parsed = batches.parse(records, offset, check_crcs=self.check_crcs,
                                   read_committed=self.read_committed,
                                   aborted=data.aborted_transactions or ())
        except batches.CorruptBatch as exc:
            raise ConnectorError(f"topic '{self.tp.topic}' partition {self.tp.partition}: "
                                 f"{exc} (corrupt data on the broker or in transit)") from None
        except batches.Unhandled:
            return self._client_bytes(bytes(records), offset, end, data.aborted_transactions)
        self._count("bulk")
        if parsed.next_offset < end:  # the broker prepares the next fetch meanwhile
            self._prefetch(leader, parsed.next_offset)
        cols = parsed.columns
        hi = int(cols.offsets.searchsorted(end)) if len(cols) else 0
        return Fetched(cols.offsets[:hi].tolist(), LazyValues([(cols, 0, hi)]),
                       cols.keys(0, hi) if self.meta else None,
                       cols.timestamps[:hi].tolist() if self.meta else None,
                       parsed.next_offset, "bulk")

    def _request(self, offset: int):
        """The Fetch request for ``tp`` at ``offset`` (kafka-python's protocol class)."""
        from kafka.protocol.consumer import FetchRequest

        epoch = self.consumer._manager.cluster.leader_epoch_for_partition(self.tp)
        s = self.settings
        topic = FetchRequest.FetchTopic(topic=self.tp.topic, partitions=[
            FetchRequest.FetchTopic.FetchPartition(
                partition=self.tp.partition, current_leader_epoch=-1 if epoch is None else epoch,
                fetch_offset=offset, last_fetched_epoch=-1, log_start_offset=-1,
                partition_max_bytes=s["max_partition_fetch_bytes"])])
        return FetchRequest(
            max_wait_ms=s["fetch_max_wait_ms"], min_bytes=s["fetch_min_bytes"],
            max_bytes=s["fetch_max_bytes"], isolation_level=int(self.read_committed),
            session_id=0, session_epoch=-1,   # a full fetch outside any fetch session (KIP-227)
            topics=[topic], forgotten_topics_data=[], rack_id="",
            min_version=FetchRequest.min_version_for_isolation_level(int(self.read_committed)),
            max_version=12)   # as kafka-python's fetcher: v13+ name topics by id

    def _prefetch(self, leader: int, offset: int) -> None:
        """Send the Fetch request at ``offset`` now, without waiting (kafka-python's IO
        thread receives it while the caller decodes the records it has): one request in
        flight at most; :meth:`_send` takes its answer if it asks for the same."""
        manager = self.consumer._manager
        self._pending = (leader, offset,
                         manager.call_soon(manager.send, self._request(offset), leader))

    def _send(self, leader: int, offset: int):
        """The partition data of the Fetch response at ``offset`` from ``leader``: the
        prefetched one when it is for them, else a request sent now."""
        manager = self.consumer._manager
        pending, self._pending = self._pending, None
        if pending is not None and pending[:2] == (leader, offset):
            future = pending[2]
            self._count("prefetched")
        else:
            future = manager.call_soon(manager.send, self._request(offset), leader)
        timeout = self.consumer.config["request_timeout_ms"] + self.settings["fetch_max_wait_ms"]
        response = self.consumer._net.run(manager.wait_for, future, timeout)
        for t in response.responses:
            for p in t.partitions:
                if t.topic == self.tp.topic and p.partition_index == self.tp.partition:
                    return p
        raise ConnectorError(f"the Fetch response of the broker has no data for topic "
                             f"'{self.tp.topic}' partition {self.tp.partition}")

    # -- kafka-python's paths ------------------------------------------------------

    def _client_bytes(self, records: bytes, offset: int, end: int, aborted) -> Fetched:
        """The same bytes parsed by kafka-python's ``Fetcher.PartitionRecords``."""
        from kafka.consumer.fetcher import Fetcher
        from kafka.errors import KafkaError
        from kafka.protocol.consumer import IsolationLevel
        from kafka.record import MemoryRecords

        part = Fetcher.PartitionRecords(
            offset, self.tp, MemoryRecords(records), check_crcs=self.check_crcs,
            isolation_level=IsolationLevel(int(self.read_committed)),
            aborted_transactions=aborted or [])
        got = part.take()
        if not got and part.next_fetch_offset == offset and records:
            raise KafkaError(f"no complete record batch at offset {offset} of topic "
                             f"'{self.tp.topic}' partition {self.tp.partition}")
        self._count("kafka-python bytes")
        return self._from_records(got, end, part.next_fetch_offset, "kafka-python bytes")

    def _poll(self, offset: int, end: int, timeout_ms: int) -> Fetched:
        """One ``poll`` of the consumer at ``offset`` (its own error handling)."""
        if not self._assigned:
            self.consumer.assign([self.tp])
            self._assigned = True
        self.consumer.seek(self.tp, offset)
        got = self.consumer.poll(timeout_ms=timeout_ms).get(self.tp, [])
        self._count("kafka-python poll")
        after = max(offset, self.consumer.position(self.tp)) if not got else got[-1].offset + 1
        return self._from_records(got, end, after, "kafka-python poll")

    def _from_records(self, got: list, end: int, next_offset: int, path: str) -> Fetched:
        if got and got[-1].offset >= end:
            got = [r for r in got if r.offset < end]
        return Fetched([r.offset for r in got], [r.value for r in got],
                       [r.key for r in got] if self.meta else None,
                       [r.timestamp for r in got] if self.meta else None, next_offset, path)

    def _count(self, path: str) -> None:
        self.counts[path] = self.counts.get(path, 0) + 1

    def release(self) -> None:
        """Drop the consumer's assignment if a fallback made one (no broker request)."""
        if self._assigned:
            self.consumer.unsubscribe()
            self._assigned = False
