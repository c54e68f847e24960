"""A Kafka stream as a :class:`~streamjob.connectors.sources.StreamSource`: its reader
(streamjob's data source ``streamjob_kafka``, options from :mod:`.options`), EXPLAIN's
description, end offsets for ``--until-idle`` and the lag probe, the consumer group its
checkpoints are committed to, and the brokers it reaches. Imports neither Spark nor the
Kafka client until a method needs them."""

from __future__ import annotations

from typing import Any

from ...sensitive import mask_url
from ..source_base import QuietSource, Reader
from ..spec import KafkaTopic, Reach
from . import options as opt


class KafkaStreamSource(QuietSource):
    """A Kafka stream (:class:`~streamjob.connectors.spec.KafkaSourceSpec`)."""

    identifier = "kafka"
    data_sources = frozenset({opt.SOURCE_NAME})

    def __init__(self, spec) -> None:
        self.spec = spec
        self.tolerant = spec.malformed != "fail"
        self.position_topic = None if self.tolerant else spec.topic
        self.offsets_key = (spec.bootstrap, spec.topic)
        self.dead_letter = spec.dead_letter

    def consumer_group(self, default: str) -> str:
        return self.spec.group_id or default

    def preview(self, reset: str | None, stream: str) -> tuple[Any, str | None]:
        """The spec with ``reset`` (if given) and the stream's own group.

        Raises:
            ValidationError: ``committed`` offsets without a consumer group.
        """
        from dataclasses import replace

        from ...exceptions import ValidationError

        sp = replace(self.spec, reset=reset) if reset else self.spec
        if sp.reset == "committed" and not sp.group_id:
            raise ValidationError(
                f"stream {stream} starts at its consumer group's committed "
                f"offsets ('committed') but names no group (\"transwarp.consumer.group.id\"); "
                f"SET transwarp.consumer.reset.offset.strategy=earliest or latest to look at it")
        return sp, sp.group_id

    def reader(self, columns, *, start: str | None, max_records: int,
               group_id: str | None, dead_letter=None, positions: bool = False) -> Reader:
        """The job's reader: the declared columns (and, when tolerant, the
        malformed-record column; with ``positions``, not tolerant, each record's
        partition and offset as the hidden columns of :mod:`streamjob.udf.positions`),
        options as :func:`.options.reader_options`.

        Raises:
            ConnectorError: a secret reference that cannot be resolved.
        """
        from ...columntypes import ddl

        schema, malformed = ddl(columns), None
        if self.tolerant:
            from .formats import MALFORMED_COLUMN

            schema, malformed = f"{schema}, `{MALFORMED_COLUMN}` STRING", MALFORMED_COLUMN
        elif positions:
            from ...udf.positions import position_ddl

            schema = f"{schema}, {position_ddl()}"
        return Reader(opt.SOURCE_NAME, opt.reader_options(
            self.spec, starting=start, max_records=max_records, group_id=group_id,
            dead_letter=dead_letter), schema, malformed=malformed)

    def describe(self, *, group_id: str | None, dead_letter_table: str | None,
                 checkpointed: bool, offsets: dict, checkpoint_id: str | None) -> dict:
        sp = self.spec
        out: dict[str, Any] = dict(
            connector=self.identifier, location=f"topic {sp.topic} at {mask_url(sp.bootstrap)}",
            format=sp.format, reset=str(sp.reset), consumer_group=group_id,
            malformed_policy=self.malformed_policy(dead_letter_table))
        parts = offsets.get(sp.topic)
        if not checkpointed:
            out["starts_from"] = (f"its reset strategy ({sp.reset}) at every start: the job "
                                  "keeps no checkpoint")
        elif checkpoint_id is not None and isinstance(parts, dict):
            out["starting_offsets"] = {str(k): v for k, v in sorted(
                parts.items(), key=lambda kv: int(kv[0]) if str(kv[0]).isdigit() else 0)}
            out["partitions"] = sorted(int(k) for k in parts if str(k).isdigit())
            out["starts_from"] = (f"after its last committed micro-batch (checkpoint "
                                  f"{checkpoint_id} holds the offsets below); "
                                  f"partitions added since: {sp.reset}")
        else:
            out["starts_from"] = (f"its reset strategy ({sp.reset}): no checkpoint yet; "
                                  "then from its checkpoints")
        return out

    def malformed_policy(self, dead_letter_table: str | None) -> str:
        return self.spec.malformed + (f" -> {dead_letter_table}" if dead_letter_table else "")

    def end_offsets(self) -> dict[str, dict[str, int]]:
        """The topic's end offsets now (:func:`.source.end_offsets`).

        Raises:
            ConnectorError: broker unreachable or topic missing.
        """
        from .source import end_offsets

        sp = self.spec
        return end_offsets(sp.bootstrap, sp.topic, sp.security, sp.request_timeout_ms)

    def offsets_reader(self):
        """A :class:`.source.KafkaStreamReader` that only reads end offsets."""
        from pyspark.sql.types import StructType

        from .source import KafkaStreamReader

        return KafkaStreamReader(StructType(), opt.probe_options(self.spec))

    def commit_target(self, group_id: str | None) -> tuple[tuple, str] | None:
        if not group_id:
            return None
        return (self.spec.bootstrap, group_id, self.spec.security), self.spec.topic

    def kafka_topic(self) -> KafkaTopic:
        sp = self.spec
        return KafkaTopic(sp.topic, sp.bootstrap, sp.security, sp.request_timeout_ms)

    def reach(self) -> Reach:
        return Reach(broker=(self.spec.bootstrap, self.spec.security))
