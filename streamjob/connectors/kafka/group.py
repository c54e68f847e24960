"""Consumer-group offsets of Kafka sources (DESIGN §7).

After each checkpoint the job's processed offsets (the checkpoint's end offsets: the next
offset to read per partition) are committed to the stream's consumer group
(``transwarp.consumer.group.id``, default :func:`default_group_id` =
``streamjob.<db>.<job>``), so standard Kafka tools show the job's progress and lag. The
engine never reads them back — Spark's checkpoint is the source of truth — except the
``committed`` reset strategy of a job's first start (:func:`committed_offsets`).

How: a kafka-python ``KafkaConsumer`` with the group id, ``enable_auto_commit=False`` and
no subscription commits explicit offsets (``commit(offsets={TopicPartition:
OffsetAndMetadata(offset, "", -1)})``): a *standalone* commit (OffsetCommit with
generation -1 and an empty member id), the kind Spark's or Flink's Kafka connectors make
when they assign partitions themselves. No group membership, no rebalances.

Measured against Tansu 0.6.0 (memory storage) with kafka-python 3.0.12:

- standalone OffsetCommit works; the offsets are visible through
  ``KafkaAdminClient.list_group_offsets(group_id)`` (kafka-python 3's name of 1.x/2.x's
  ``list_consumer_group_offsets``) and ``KafkaConsumer.committed``; a partition without a
  commit reads as offset -1 (admin) / None (consumer). ``list_groups`` lists the group
  (state "Unknown"). ``describe_groups`` fails inside kafka-python against Tansu
  (ValueError: 15 is not a valid ACLOperation), so it is not used here.
- not supported by Tansu: CreatePartitions (not in its ApiVersions; a forced request
  drops the connection) and DeleteRecords (advertised, but the broker's task panics and
  the connection drops), and retention settings of a topic do not move its beginning
  offset: with Tansu a partition's beginning offset stays 0.
- ListOffsets by timestamp looks records up by the broker's append time, not the
  producer's record timestamp, and answers "no record at or after" with offset 0 and
  timestamp -1 (Apache Kafka: offset -1); the Kafka source handles both.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterable, Iterator

from streamjob.exceptions import ConnectorError

DEFAULT_TIMEOUT_MS = 30_000
"""Bound on each broker request of this module (ms); connecting waits min(it, 10 s)."""


def default_group_id(database: str, job: str) -> str:
    """The consumer group of job ``database.job`` when its stream names none:
    ``"streamjob.<database>.<job>"``."""
    return f"streamjob.{database}.{job}"


@contextmanager
def broker_errors(bootstrap: str, doing: str) -> Iterator[None]:
    """Turn kafka-python errors raised inside the block into ConnectorError naming the
    broker address: ``"cannot reach Kafka broker at <bootstrap>: <error> (while
    <doing>)"`` for timeouts and connection failures (kafka-python 3 raises
    KafkaTimeoutError/KafkaConnectionError, not NoBrokersAvailable, when a broker is
    down), ``"Kafka broker at <bootstrap> refused <doing>: <error>"`` for other errors.

    Raises:
        ConnectorError: as above; other exceptions pass through.
    """
    from kafka.errors import (KafkaConnectionError, KafkaError, KafkaTimeoutError,
                              NodeNotReadyError)

    try:
        yield
    except (KafkaTimeoutError, KafkaConnectionError, NodeNotReadyError) as exc:
        raise ConnectorError(
            f"cannot reach Kafka broker at {bootstrap}: {exc} (while {doing})") from None
    except KafkaError as exc:
        raise ConnectorError(f"Kafka broker at {bootstrap} refused {doing}: {exc}") from None


def _admin(bootstrap: str, timeout_ms: int, security: dict | None = None):
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap.split(","),
                            request_timeout_ms=timeout_ms,
                            bootstrap_timeout_ms=min(10_000, timeout_ms), **(security or {}))


class GroupCommitter:
    """Commits a job's processed offsets of ``topics`` to consumer group ``group_id`` on
    the broker(s) ``bootstrap`` (comma-separated ``host:port``).

    Connects lazily at the first :meth:`commit` that has something to commit; after a
    failed commit the connection is dropped and the next commit connects again.
    Thread-safe. ``timeout_ms`` bounds connecting and each commit; ``security`` is the
    sources' :class:`.security.KafkaSecurity` (default PLAINTEXT).
    """

    def __init__(self, bootstrap: str, group_id: str, topics: Iterable[str],
                 timeout_ms: int = DEFAULT_TIMEOUT_MS, security=None) -> None:
        self.bootstrap = bootstrap
        self.security = security
        self.group_id = group_id
        self.topics = frozenset(topics)
        self.timeout_ms = timeout_ms
        self._consumer = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (f"GroupCommitter({self.bootstrap!r}, {self.group_id!r}, "
                f"{sorted(self.topics)!r})")

    def _connect(self):
        from kafka import KafkaConsumer

        return KafkaConsumer(
            bootstrap_servers=self.bootstrap.split(","),
            group_id=self.group_id,
            enable_auto_commit=False,
            request_timeout_ms=self.timeout_ms,
            bootstrap_timeout_ms=min(10_000, self.timeout_ms),
            **(self.security.client_config() if self.security is not None else {}),
        )

    def commit(self, offsets: dict[str, dict[str, int]]) -> None:
        """Commit ``offsets`` — ``{topic: {partition (str or int): next offset}}``, the
        source offsets of a checkpoint — for this committer's topics (others are
        ignored; negative offsets too). Nothing to commit: no connection is made.

        Raises:
            ConnectorError: the broker is unreachable or refuses the commit (the message
                names the broker address and the group).
        """
        from kafka import TopicPartition
        from kafka.structs import OffsetAndMetadata

        wanted = {
            TopicPartition(topic, int(p)): OffsetAndMetadata(int(o), "", -1)
            for topic, parts in (offsets or {}).items() if topic in self.topics
            for p, o in parts.items() if int(o) >= 0
        }
        if not wanted:
            return
        with self._lock:
            try:
                with broker_errors(self.bootstrap,
                                   f"committing offsets of consumer group '{self.group_id}'"):
                    if self._consumer is None:
                        self._consumer = self._connect()
                    self._consumer.commit(offsets=wanted, timeout_ms=self.timeout_ms)
            except ConnectorError:
                self._drop()
                raise

    def _drop(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            try:
                consumer.close()
            except Exception:  # closing a broken connection must not hide the error
                pass

    def close(self) -> None:
        """Close the connection (if any); a later :meth:`commit` connects again."""
        with self._lock:
            self._drop()


def committed_offsets(bootstrap: str, group_id: str, topic: str,
                      partitions: Iterable[int] | None = None,
                      timeout_ms: int = DEFAULT_TIMEOUT_MS,
                      security: dict | None = None) -> dict[int, int | None]:
    """The offsets group ``group_id`` committed for ``topic``: ``{partition: next offset,
    or None where the group committed nothing}``, for ``partitions`` (default: every
    partition of the topic). Read with ``KafkaAdminClient.list_group_offsets``.

    Raises:
        ConnectorError: broker unreachable (names the address), the topic does not exist
            (``partitions`` not given), or the broker refuses the request.
    """
    from kafka import TopicPartition

    admin = None
    try:
        with broker_errors(bootstrap, f"reading offsets of consumer group '{group_id}'"):
            admin = _admin(bootstrap, timeout_ms, security)
            if partitions is None:
                described = admin.describe_topics([topic])
                parts = sorted(p["partition_index"] for t in described if t["name"] == topic
                               and not t["error_code"] for p in t["partitions"])
                if not parts:
                    raise ConnectorError(
                        f"topic '{topic}' does not exist on Kafka broker {bootstrap}")
            else:
                parts = sorted(set(partitions))
            if not parts:
                return {}
            found = admin.list_group_offsets(
                {group_id: [TopicPartition(topic, p) for p in parts]}).get(group_id, {})
    finally:
        if admin is not None:
            admin.close()
    out: dict[int, int | None] = {p: None for p in parts}
    for tp, meta in found.items():
        if tp.topic == topic and tp.partition in out and meta.offset is not None \
                and meta.offset >= 0:
            out[tp.partition] = meta.offset
    return out
