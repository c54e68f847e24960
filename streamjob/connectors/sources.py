"""Which source a stream is, answered once: the :class:`StreamSource` contract and its
factory :func:`stream_source` (DESIGN §7), the reading side's counterpart of
:class:`~streamjob.connectors.sinks.TableSink`. Each stream kind answers for itself, in
its own room, as Flink's connector ``Factory`` does (identifier, options and validation
together): the planner, EXPLAIN and DESCRIBE, the job manager (idle targets, lag,
consumer-group commits), the security checks and the Spark room ask the source object,
never "which kind is this?".

The kinds:

* Kafka stream (:class:`.kafka.stream.KafkaStreamSource`): streamjob's Python data
  source ``streamjob_kafka`` (:mod:`.kafka.source`), whose options are defined once in
  :mod:`.kafka.options`;
* file stream (:class:`.files.stream.FileStreamSource`): Spark's file source (JSON
  read as text lines and matched to the columns as a Kafka stream's JSON);
* rate stream (:class:`.rate.RateStreamSource`): Spark's rate source;
* Delta stream (:class:`.delta.stream.DeltaStreamSource`): a Delta table's commits read
  by streamjob's Python data source ``streamjob_delta`` (:mod:`.delta.source`);
* Iceberg stream (:class:`.iceberg.stream.IcebergStreamSource`): an Iceberg table's
  snapshots read by ``streamjob_iceberg`` (:mod:`.iceberg.source`).

Where Spark is touched: a source describes its reader completely (:class:`Reader`: data
source name, options with secrets resolved, schema, the steps after reading) and
``spark/query.py`` builds the DataFrame from that description alone: the planner binds a
job's plan to its readers before the Spark room (:mod:`streamjob.planner.bind`), and
the Spark room imports no connector; the readers of the broker's
offsets (:meth:`StreamSource.offsets_reader`) are streamjob's own Kafka reader, imported
only when called.
"""

from __future__ import annotations

from typing import Any, Iterable, Protocol

from . import spec as cspec
from .source_base import QuietSource, Reader  # noqa: F401 - the contract's defaults and reader
from .spec import KafkaTopic, Reach

__all__ = ["StreamSource", "Reader", "Reach", "QuietSource", "stream_source",
           "group_committers"]


class StreamSource(Protocol):
    """What a job reads. Built by :func:`stream_source` from a stream's connector spec;
    nothing is contacted until a method below that says so is called.

    * ``identifier``: the connector's name in EXPLAIN (``kafka``, ``files``, ``rate``).
    * ``spec``: the connector spec (:mod:`.spec`).
    * ``tolerant``: malformed records are set aside (``skip``/``dead-letter``) instead
      of failing the job; the reader then adds the malformed-record column.
    * ``fixed_columns``: the only column names the source produces (rate: timestamp,
      value), which a declaration may not go beyond; None: any declared columns.
    * ``observes_columns``: the job counts per batch how many records carried each
      declared column (records with named fields: Kafka, files).
    * ``position_topic``: the topic, when the reader can add each record's partition
      and offset as hidden columns (``reader(..., positions=True)``,
      :mod:`streamjob.udf.positions`) for a user function's error; None: it cannot
      (not Kafka, or a tolerant Kafka stream, whose rows are not one per record).
    * ``bounded``: the source runs out of input (``--until-idle`` can apply; rate:
      never).
    * ``starts_anywhere``: START ... FROM LATEST / TIMESTAMP can apply (files: only
      FROM EARLIEST, a file source has no such position).
    * ``data_sources``: names of streamjob's Python data sources Spark must register
      for this source (``planner/plan.py:JobPlan.data_sources``).
    * ``reader(columns, start=, max_records=, group_id=, dead_letter=)``: the
      :class:`Reader` of a job's query; ``columns`` the stream's declared columns
      (``[{"name", "type"}]``), ``start`` the job's START position or None, ``max_records`` the cap per
      micro-batch (0: none). Resolves secret references (ConnectorError).
    * ``describe(group_id=, dead_letter_table=, checkpointed=, offsets=,
      checkpoint_id=)``: EXPLAIN's fields of this source (``connector``, ``location``,
      ``format``, ``reset``, ``consumer_group``, ``malformed_policy``, ``starts_from``,
      ``starting_offsets``, ``partitions``; those the kind has), given the checkpoint's
      ``offsets`` (``{topic: {partition: offset}}``) and its id (None: none yet).
    * ``malformed_policy(dead_letter_table)``: DESCRIBE's policy text, or None for a
      kind without malformed records.
    * ``end_offsets()``: ``{topic: {partition: end offset}}`` read from the broker now
      (``{}`` for kinds without offsets); ConnectorError when unreachable.
    * ``present_files()``: absolute paths of the files the source would read now
      (hidden and temporary files left out, as Spark's file source); empty for others.
    * ``offsets_reader()``: a reader of the broker's end offsets kept open by the lag
      probe (``reportLatestOffset()``, ``stop()``, ``topic``), or None; ``offsets_key``
      ``(bootstrap, topic)`` identifies it (None without one).
    * ``commit_target(group_id)``: ``((bootstrap, group, security), topic)`` to which a
      checkpoint's offsets are committed (consumer groups, :func:`group_committers`),
      or None.
    * ``kafka_topic()``: the :class:`~.spec.KafkaTopic` of a Kafka source, else None
      (the kafka checkpoint backend, PRINT and SHOW TOPICS).
    * ``reach()``: the :class:`~.spec.Reach` of the declaration.
    * ``check(columns)``: the source against the stream's declared ``columns`` at START
      STREAMJOB and job start (a Delta stream: its table's schema); SchemaMismatch
      names the difference, ConnectorError when the source cannot be reached.
    * ``dead_letter``: the dead-letter table's name as written (``"malformed.policy"``
      ``dead-letter``), resolved by the planner, or None.
    * ``consumer_group(default)``: the consumer group a job's offsets are committed to
      (the stream's own, else ``default``: ``streamjob.<db>.<job>``), or None for a kind
      without consumer groups.
    * ``preview(reset, stream)``: ``(spec, consumer group)`` a SELECT preview of
      ``stream`` (its qualified name) reads: the reset strategy replaced by ``reset``
      if given, only the stream's own group (read, never written). Raises
      ValidationError when the preview cannot start (``committed`` without a group).
    """

    identifier: str
    spec: Any
    tolerant: bool
    fixed_columns: frozenset[str] | None
    observes_columns: bool
    position_topic: str | None
    bounded: bool
    starts_anywhere: bool
    data_sources: frozenset[str]
    offsets_key: tuple[str, str] | None

    def reader(self, columns, *, start: str | None, max_records: int,
               group_id: str | None, dead_letter=None) -> Reader: ...

    def describe(self, *, group_id: str | None, dead_letter_table: str | None,
                 checkpointed: bool, offsets: dict, checkpoint_id: str | None) -> dict: ...

    def malformed_policy(self, dead_letter_table: str | None) -> str | None: ...

    def end_offsets(self) -> dict[str, dict[str, int]]: ...

    def present_files(self) -> set[str]: ...

    def offsets_reader(self): ...

    def commit_target(self, group_id: str | None) -> tuple[tuple, str] | None: ...

    def kafka_topic(self) -> KafkaTopic | None: ...

    def reach(self) -> Reach: ...

    def check(self, columns) -> None: ...

    dead_letter: str | None

    def consumer_group(self, default: str) -> str | None: ...

    def preview(self, reset: str | None, stream: str) -> tuple[Any, str | None]: ...


def stream_source(spec) -> StreamSource:
    """The source of a stream whose connector spec is ``spec``
    (:func:`.spec.source_spec`).

    Raises:
        ValidationError: a spec of no stream kind.
    """
    from ..exceptions import ValidationError

    if isinstance(spec, cspec.KafkaSourceSpec):
        from .kafka.stream import KafkaStreamSource

        return KafkaStreamSource(spec)
    if isinstance(spec, cspec.FileSourceSpec):
        from .files.stream import FileStreamSource

        return FileStreamSource(spec)
    if isinstance(spec, cspec.RateSourceSpec):
        from .rate import RateStreamSource

        return RateStreamSource(spec)
    if isinstance(spec, cspec.DeltaSourceSpec):
        from .delta.stream import DeltaStreamSource

        return DeltaStreamSource(spec)
    if isinstance(spec, cspec.IcebergSourceSpec):
        from .iceberg.stream import IcebergStreamSource

        return IcebergStreamSource(spec)
    raise ValidationError(f"{type(spec).__name__} is not a stream's connector")


def group_committers(targets: Iterable[tuple[StreamSource, str | None]]) -> list:
    """One :class:`~streamjob.connectors.kafka.group.GroupCommitter` per (broker,
    consumer group, security) of ``targets``, pairs of a source and its consumer group
    (None: none), with the topics committed to it; they connect lazily, at the first
    commit."""
    groups: dict[tuple, list[str]] = {}
    for source, group_id in targets:
        target = source.commit_target(group_id)
        if target is not None:
            groups.setdefault(target[0], []).append(target[1])
    if not groups:
        return []
    from .kafka.group import GroupCommitter

    return [GroupCommitter(b, g, topics, security=sec) for (b, g, sec), topics in groups.items()]
