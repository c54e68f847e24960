"""SHOW TOPICS and PRINT (issue 16, as in ksqlDB): a read-only look at Kafka topics,
without Spark and without a consumer group (nothing is committed, no job starts).

Which broker:

* ``SHOW TOPICS``: every broker of the declared Kafka streams and tables (each with its
  own security settings), one row per topic; ``SHOW TOPICS FROM 'host:port'`` one broker
  (PLAINTEXT); ``SHOW TOPICS FROM name`` the broker of that stream or table.
* ``PRINT name``: the topic and broker of the Kafka stream or table ``name``; a name
  that is no stream or table (and a ``'topic'`` string) is a topic, on the broker given
  by ``FROM 'host:port'``, else the broker of the declared Kafka objects naming that
  topic, else the only broker of the declared Kafka objects.

A viewer (an HTTP API viewer token, docs/security.md) reads declared objects only:
``FROM 'host:port'`` is refused (it would connect anywhere, a probe), SHOW TOPICS lists
only the topics a stream or table declares, and PRINT takes the name of a declared Kafka
stream or table, never a bare topic (which would fall back to a declared broker with the
job manager's credentials).

PRINT starts at each partition's end (new records only) or, ``FROM BEGINNING``, at its
start, and stops after ``LIMIT n`` records or when interrupted (Ctrl-C).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterator

from ..connectors import spec as cspec
from ..connectors.sources import stream_source
from ..connectors.kafka.security import KafkaSecurity
from ..catalog.records import Role
from ..exceptions import AccessDeniedError, ObjectNotFoundError, ValidationError
from ..grammar import statements as st
from .result import Result
from ..nearest import nearest

#: The fields of one PRINT record, in order.
RECORD_FIELDS = ("offset", "partition", "timestamp", "key", "value")
#: How long (ms) one poll of PRINT waits for records before it polls again.
POLL_MS = 500


@dataclass(frozen=True)
class _Broker:
    bootstrap: str
    security: KafkaSecurity
    request_timeout_ms: int = 30_000


def _kafka_spec(obj):
    """The :class:`~streamjob.connectors.spec.KafkaTopic` of a stream or table record, or
    None (another connector)."""
    if obj.kind == "stream":
        if obj.is_derived:
            return None
        spec = cspec.source_spec(obj.name, obj.properties, obj.row_format)
        return stream_source(spec).kafka_topic()
    spec = cspec.table_spec(obj.name, obj.properties, obj.stored_as, obj.location, "",
                            obj.partitioned_by, obj.row_format)
    return spec.kafka_topic()


def _broker(topic) -> _Broker:
    return _Broker(topic.bootstrap, topic.security, topic.request_timeout_ms)


def _consumer(broker: _Broker):
    """A consumer without a group on ``broker`` (:func:`streamjob.connectors.kafka.read._consumer`)."""
    from ..connectors.kafka.read import _consumer as consumer

    return consumer(broker.bootstrap, broker.request_timeout_ms, broker.security)


class PrintRecords:
    """The records PRINT delivers, read while iterated: dicts of :data:`RECORD_FIELDS`
    (``timestamp`` ISO-8601 UTC with ms, ``key``/``value`` UTF-8 text, undecodable bytes
    as ``\\xNN``). Stops after ``limit`` records (None: never); ``idle_timeout_s`` (None:
    never) ends it when no record came for that long (the HTTP API sets it). Closes its
    consumer at the end or on :meth:`close`."""

    def __init__(self, consumer, topic: str, limit: int | None) -> None:
        self.consumer, self.topic, self.limit = consumer, topic, limit
        self.idle_timeout_s: float | None = None
        self.count = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        import time

        from ..connectors.kafka.group import broker_errors

        last = time.monotonic()
        try:
            while self.limit is None or self.count < self.limit:
                with broker_errors(",".join(self.consumer.config["bootstrap_servers"]),
                                   f"reading topic {self.topic}"):
                    batches = self.consumer.poll(timeout_ms=POLL_MS)
                records = sorted((r for rs in batches.values() for r in rs),
                                 key=lambda r: (r.timestamp, r.partition, r.offset))
                if records:
                    last = time.monotonic()
                elif self.idle_timeout_s is not None and time.monotonic() - last > self.idle_timeout_s:
                    return
                for r in records:
                    if self.limit is not None and self.count >= self.limit:
                        return
                    self.count += 1
                    yield {"offset": r.offset, "partition": r.partition,
                           "timestamp": _iso(r.timestamp), "key": _text(r.key),
                           "value": _text(r.value)}
        finally:
            self.close()

    def close(self) -> None:
        """Close the consumer (idempotent)."""
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None


def _iso(ms: int | None) -> str | None:
    if ms is None or ms < 0:
        return None
    at = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="backslashreplace")


class TopicStatements:
    """SHOW TOPICS and PRINT of :class:`~streamjob.executor.Executor`."""

    def _kafka_objects(self) -> list[tuple[Any, Any]]:
        """``(record, spec)`` of every declared Kafka stream and table (objects whose
        properties no longer make a spec are skipped)."""
        out = []
        for obj in [*self.catalog.list_streams(), *self.catalog.list_tables()]:
            try:
                spec = _kafka_spec(obj)
            except ValidationError:
                continue
            if spec is not None:
                out.append((obj, spec))
        return out

    def _object(self, name: st.QualifiedName):
        db, obj_name = self._names(name, "stream or table")
        return self.catalog.get_stream(db, obj_name) or self.catalog.get_table(db, obj_name)

    def _kafka_of(self, obj):
        spec = _kafka_spec(obj)
        if spec is None:
            raise ValidationError(f"{obj.kind} {obj.qualified_name} is not a Kafka {obj.kind}: "
                                  "SHOW TOPICS and PRINT read Kafka topics")
        return spec

    def _viewer(self) -> bool:
        return getattr(self, "role", Role.ADMIN) is Role.VIEWER

    def _do_ShowTopics(self, s: st.ShowTopics) -> Result:
        if s.broker is not None and self._viewer():
            raise AccessDeniedError(f"a viewer reads declared objects only: SHOW TOPICS FROM "
                                    f"'{s.broker}' would connect to a broker no stream or table "
                                    "declares (SHOW TOPICS lists the declared topics)")
        declared = self._kafka_objects()
        if s.source is not None:
            obj = self._object(s.source)
            if obj is None:
                db, name = self._names(s.source, "stream or table")
                raise ObjectNotFoundError(f"stream or table {db}.{name} does not exist")
            brokers = [_broker(self._kafka_of(obj))]
        elif s.broker is not None:  # a Kafka host of the admin's list (streamjob/security)
            self.home.policy.check_kafka(s.broker, "SHOW TOPICS FROM", self.confined, key=None)
            brokers = [_Broker(s.broker, KafkaSecurity())]
        else:
            brokers = list({_broker(spec): None for _, spec in declared})
            if not brokers:
                return Result("no Kafka stream or table is declared: name a broker, "
                              "SHOW TOPICS FROM 'host:port'")
        if self.dry_run:
            return Result(f"can show the topics of {', '.join(b.bootstrap for b in brokers)}")
        rows = []
        for broker in brokers:
            consumer = _consumer(broker)
            try:
                from ..connectors.kafka.group import broker_errors

                with broker_errors(broker.bootstrap, "listing topics"):
                    topics = sorted(t for t in consumer.topics() if not t.startswith("__"))
                    parts = {t: len(consumer.partitions_for_topic(t) or ()) for t in topics}
            finally:
                consumer.close()
            for topic in topics:
                users = sorted(o.qualified_name for o, spec in declared
                               if spec.topic == topic and spec.bootstrap == broker.bootstrap)
                if not users and self._viewer():
                    continue  # a viewer sees declared topics only
                rows.append((broker.bootstrap, topic, parts[topic], ", ".join(users) or None))
        return Result(columns=("broker", "topic", "partitions", "declared as"), rows=rows,
                      title="topics")

    def _print_target(self, s: st.PrintTopic) -> tuple[str, _Broker]:
        """The topic and broker PRINT reads (module doc)."""
        obj = self._object(s.name) if s.name is not None else None
        if obj is not None:
            if s.broker is not None:
                raise ValidationError(f"{obj.kind} {obj.qualified_name} names its own broker; "
                                      "FROM 'host:port' is for a topic: PRINT 'topic' FROM 'host:port'")
            spec = self._kafka_of(obj)
            return spec.topic, _broker(spec)
        if self._viewer():
            shown = f"'{s.topic}'" if s.topic is not None else str(s.name)
            raise AccessDeniedError(f"a viewer reads declared objects only: PRINT {shown} names "
                                    "no declared stream or table (PRINT takes a Kafka stream's "
                                    "or table's name: SHOW STREAMS, SHOW TABLES)")
        if s.name is not None and s.name.database is not None:
            db, name = self._names(s.name, "stream or table")
            raise ObjectNotFoundError(f"stream or table {db}.{name} does not exist; to print a "
                                      f"topic, write PRINT '{s.name}'")
        topic = s.topic if s.topic is not None else s.name.name
        if s.broker is not None:  # a Kafka host of the admin's list (streamjob/security)
            self.home.policy.check_kafka(s.broker, "PRINT ... FROM", self.confined, key=None)
            return topic, _Broker(s.broker, KafkaSecurity())
        declared = self._kafka_objects()
        naming = list({_broker(spec): None for _, spec in declared if spec.topic == topic})
        brokers = naming or list({_broker(spec): None for _, spec in declared})
        if len(brokers) == 1:
            return topic, brokers[0]
        which = (f"the declared Kafka streams and tables use {len(brokers)} brokers "
                 f"({', '.join(sorted(b.bootstrap for b in brokers))})" if brokers
                 else "no Kafka stream or table is declared")
        raise ValidationError(f"{topic} is no stream or table, and {which}: say which broker, "
                              f"PRINT '{topic}' FROM 'host:port'")

    def _do_PrintTopic(self, s: st.PrintTopic) -> Result:
        topic, broker = self._print_target(s)
        if self.dry_run:
            return Result(f"can print topic {topic} of {broker.bootstrap}")
        from kafka import TopicPartition

        from ..connectors.kafka.group import broker_errors

        consumer = _consumer(broker)
        try:
            with broker_errors(broker.bootstrap, f"reading topic {topic}"):
                partitions = consumer.partitions_for_topic(topic)
                if not partitions:
                    topics = sorted(consumer.topics())
                    close = nearest(topic, topics)
                    hint = f" (did you mean {close}?)" if close else ""
                    raise ObjectNotFoundError(
                        f"topic {topic} does not exist on the Kafka broker at {broker.bootstrap}{hint}")
                tps = [TopicPartition(topic, p) for p in sorted(partitions)]
                consumer.assign(tps)
                if s.from_beginning:
                    consumer.seek_to_beginning(*tps)
                else:
                    consumer.seek_to_end(*tps)
                    for tp in tps:  # fix the start now: records produced from here on
                        consumer.position(tp)
        except BaseException:
            consumer.close()
            raise
        where = "from the beginning" if s.from_beginning else "new records"
        limit = f", at most {s.limit}" if s.limit is not None else ", until interrupted"
        return Result(f"topic {topic} of {broker.bootstrap}: {where}{limit}",
                      columns=RECORD_FIELDS, records=PrintRecords(consumer, topic, s.limit),
                      title=f"topic {topic}")
