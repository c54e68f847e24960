"""``morphling.checkpoint.backend=kafka``: checkpoint records in a compacted Kafka topic.

The topic (default ``streamjob.checkpoints``, one partition, ``cleanup.policy=compact``,
created with the admin client when missing) lives on the job's broker: the bootstrap
servers of the job's first Kafka source. A record is

    key   = ``<db>.<job>/<uid>/<id, 10 digits>`` (UTF-8)
    value = the CheckpointInfo as JSON, or null (a tombstone: the record is deleted)

Retention, truncation and purge write tombstones, so compaction eventually removes the
old records. Reading folds the topic from its beginning to its end offsets (last write
wins, tombstones delete) with ``assign()`` and ``seek`` — no consumer group, whose
rebalances the test broker handles badly (TESTING.md).

Every write is its own record batch (``batch_size=0``): Tansu reports the end offset
as the base offset of the last batch plus one, so a multi-record batch would hide its
later records from the next reader. Checkpoint writes are one or two records, so the
cost (about 2,000 records/s) does not matter.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Iterator

from ...catalog.records import CheckpointInfo, JobInfo
from ...exceptions import CheckpointError, ConnectorError
from .base import (CheckpointBackend, check_record, from_json, job_key, padded,
                   retention_victims, to_json, uid_segment)

log = logging.getLogger(__name__)

#: Name of the metadata topic.
DEFAULT_TOPIC = "streamjob.checkpoints"

#: Seconds to wait for the broker when connecting, and for a read to make progress.
TIMEOUT_S = 10.0


class KafkaBackend(CheckpointBackend):
    """Checkpoint records in a compacted topic (see the module docstring).

    Args:
        bootstrap: the broker's bootstrap servers, ``host:port,...``.
        topic: the metadata topic; created (compacted) if missing.
        timeout_s: connect/read timeout in seconds.

    Raises:
        ConnectorError: the broker cannot be reached (names the address).
        CheckpointError: the broker refused to create the topic.
    """

    name = "kafka"

    def __init__(self, bootstrap: str, topic: str = DEFAULT_TOPIC,
                 timeout_s: float = TIMEOUT_S, security=None) -> None:
        self.bootstrap = bootstrap
        #: kafka-python SSL/SASL settings of the job's Kafka source (kafka_security.py)
        self.security = security.client_config() if security is not None else {}
        self.topic = topic
        self.timeout_s = timeout_s
        self._producer = None
        self._consumer = None
        self._known: dict[str, set[int]] = {}  # "<db>.<job>/<uid>/" -> live ids (writer's view)
        self._closed = False
        self.created = self.ensure_topic()

    # -- plumbing --------------------------------------------------------------------

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """Map kafka-python errors: retriable/connection -> ConnectorError, else CheckpointError."""
        from kafka.errors import KafkaError, RetriableError

        if self._closed:
            raise CheckpointError(f"cannot {what}: the Kafka checkpoint backend is closed")
        try:
            yield
        except RetriableError as exc:
            raise ConnectorError(f"cannot {what}: Kafka broker at {self.bootstrap} "
                                 f"(checkpoint topic {self.topic}) does not answer: {exc}") from None
        except KafkaError as exc:
            raise CheckpointError(f"Kafka broker at {self.bootstrap} refused to {what} "
                                  f"(checkpoint topic {self.topic}): {exc}") from None

    def _ms(self) -> int:
        return int(self.timeout_s * 1000)

    def ensure_topic(self) -> bool:
        """Create the compacted topic if missing; True if it was created now."""
        from kafka.admin import KafkaAdminClient, NewTopic
        from kafka.errors import TopicAlreadyExistsError

        with self._errors(f"create topic {self.topic}"):
            admin = KafkaAdminClient(bootstrap_servers=self.bootstrap.split(","),
                                     bootstrap_timeout_ms=self._ms(),
                                     request_timeout_ms=self._ms(), **self.security)
            try:
                admin.create_topics([NewTopic(self.topic, 1, -1,  # -1: the broker's replication
                                              topic_configs={"cleanup.policy": "compact"})])
                log.info("created compacted checkpoint topic %s on %s", self.topic, self.bootstrap)
                return True
            except TopicAlreadyExistsError:
                return False
            finally:
                admin.close()

    def topic_config(self) -> dict[str, str]:
        """The topic's configuration as the broker reports it, ``{name: value}``."""
        from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

        with self._errors(f"describe topic {self.topic}"):
            admin = KafkaAdminClient(bootstrap_servers=self.bootstrap.split(","),
                                     bootstrap_timeout_ms=self._ms(),
                                     request_timeout_ms=self._ms(), **self.security)
            try:
                res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, self.topic)],
                                             config_filter="all")
            finally:
                admin.close()
        return {k: v.get("value") for k, v in res.get("topic", {}).get(self.topic, {}).items()}

    def _send(self, records: list[tuple[str, bytes | None]]) -> None:
        """Produce ``(key, value)`` records in order and wait until each is acknowledged."""
        from kafka import KafkaProducer

        if self._producer is None:
            self._producer = KafkaProducer(
                bootstrap_servers=self.bootstrap.split(","), batch_size=0, linger_ms=0,
                bootstrap_timeout_ms=self._ms(), max_block_ms=self._ms(),
                request_timeout_ms=self._ms(), delivery_timeout_ms=3 * self._ms(),
                **self.security)
        futures = [self._producer.send(self.topic, key=k.encode(), value=v) for k, v in records]
        self._producer.flush(timeout=3 * self.timeout_s)
        for f in futures:
            f.get(timeout=self.timeout_s)

    def _scan(self) -> dict[str, bytes]:
        """The live records of the topic, ``{key: value}``, read from the beginning to the
        end offsets of now."""
        from kafka import KafkaConsumer, TopicPartition

        if self._consumer is None:
            self._consumer = KafkaConsumer(
                bootstrap_servers=self.bootstrap.split(","), group_id=None,
                enable_auto_commit=False, bootstrap_timeout_ms=self._ms(),
                request_timeout_ms=max(self._ms(), 30_000), metadata_max_age_ms=5_000,
                fetch_max_wait_ms=100, **self.security)
        consumer = self._consumer
        deadline = time.monotonic() + self.timeout_s
        parts = consumer.partitions_for_topic(self.topic)
        while not parts:  # a just-created topic reaches the metadata a moment later
            if time.monotonic() > deadline:
                raise CheckpointError(f"checkpoint topic {self.topic} does not exist on Kafka "
                                      f"broker {self.bootstrap}")
            consumer.topics()  # forces a metadata refresh; no busy loop: it is a round trip
            parts = consumer.partitions_for_topic(self.topic)
        tps = [TopicPartition(self.topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        ends = consumer.end_offsets(tps)
        consumer.seek_to_beginning(*tps)
        live: dict[str, bytes] = {}
        idle_since = time.monotonic()
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            polled = consumer.poll(timeout_ms=200)
            if not polled:
                if time.monotonic() - idle_since > self.timeout_s:
                    raise ConnectorError(f"Kafka broker at {self.bootstrap} sent no records of "
                                         f"checkpoint topic {self.topic} within {self.timeout_s:g} s "
                                         f"(positions behind end offsets {ends})")
                continue
            idle_since = time.monotonic()
            for tp, recs in polled.items():
                for r in recs:
                    if r.offset >= ends[tp] or r.key is None:
                        continue
                    key = r.key.decode(errors="replace")
                    if r.value is None:
                        live.pop(key, None)
                    else:
                        live[key] = r.value
        return live

    @staticmethod
    def _prefix(job: JobInfo) -> str:
        return f"{job_key(job)}/{uid_segment(job)}/"

    def _ids(self, live: dict[str, bytes], prefix: str) -> dict[int, str]:
        out = {}
        for key in live:
            if key.startswith(prefix) and key[len(prefix):].isdigit():
                out[int(key[len(prefix):])] = key
        return out

    # -- records ---------------------------------------------------------------------

    def record(self, job: JobInfo, checkpoint: CheckpointInfo, retained: int) -> None:
        check_record(checkpoint, retained)
        cid = checkpoint.checkpoint_id
        prefix = self._prefix(job)
        with self._errors(f"record checkpoint {cid} of job {job.qualified_name}"):
            known = self._known.get(prefix)
            if known is None:
                known = set(self._ids(self._scan(), prefix))
            victims = retention_victims(known | {cid}, retained)
            records: list[tuple[str, bytes | None]] = []
            if cid not in victims:
                records.append((prefix + padded(cid), to_json(checkpoint)))
            records += [(prefix + padded(v), None) for v in victims if v in known]
            self._known.pop(prefix, None)  # if the send fails, the next record reads afresh
            self._send(records)
            self._known[prefix] = (known | {cid}) - set(victims)

    def list(self, job: JobInfo) -> list[CheckpointInfo]:
        prefix = self._prefix(job)
        with self._errors(f"list the checkpoints of job {job.qualified_name}"):
            live = self._scan()
        ids = self._ids(live, prefix)
        self._known[prefix] = set(ids)
        return [from_json(live[ids[cid]], job, f"{self.topic}[{ids[cid]}]") for cid in sorted(ids)]

    def truncate(self, job: JobInfo, after: int) -> int:
        prefix = self._prefix(job)
        with self._errors(f"truncate the checkpoints of job {job.qualified_name} after {after}"):
            ids = self._ids(self._scan(), prefix)
            doomed = [key for cid, key in sorted(ids.items()) if cid > after]
            self._known.pop(prefix, None)
            if doomed:
                self._send([(key, None) for key in doomed])
            self._known[prefix] = {cid for cid in ids if cid <= after}
        return len(doomed)

    def purge(self, job: JobInfo) -> int:
        """Tombstones for this incarnation's records (keys ``<db>.<job>/<uid>/...``);
        another incarnation of the same name keeps its records (DROP acts by uid)."""
        prefix = self._prefix(job)
        self._known.pop(prefix, None)
        with self._errors(f"purge the checkpoints of job {job.qualified_name}"):
            doomed = sorted(k for k in self._scan() if k.startswith(prefix))
            if doomed:
                self._send([(key, None) for key in doomed])
        return len(doomed)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        closers = []
        if self._producer is not None:
            closers.append(lambda: self._producer.close(timeout=self.timeout_s))
        if self._consumer is not None:
            closers.append(lambda: self._consumer.close(autocommit=False, timeout_ms=self._ms()))
        for close in closers:
            try:
                close()
            except Exception:  # noqa: BLE001 - closing must not mask the real error
                log.debug("closing a Kafka client failed", exc_info=True)
        self._producer = self._consumer = None

    def __repr__(self) -> str:
        return f"KafkaBackend({self.bootstrap!r}, {self.topic!r})"
