"""Scratch copies of a sink, for shadow runs (issue 30 point 4; docs/upgrades.md "Shadow
runs"): what each sink kind knows about making a copy of itself under its own name,
reading its rows back and dropping it. The shadow (:mod:`streamjob.executor.shadow_run`)
asks only this contract, :class:`Scratch`, built by :func:`scratch_copies`.

The copies of a live sink written by job ``j`` (``side`` ``new``: the new query's,
``old``: the old query's replay), never the live one:

- SQL table ``t``: table ``t__shadow_j`` and ``t__shadow_j__old`` in the same database;
- Kafka table on topic ``x``: topics ``x__shadow_j`` and ``x__shadow_j__old`` on the
  same brokers, with the live topic's partition count (created by :meth:`Scratch.create`,
  deleted by :meth:`Scratch.drop`), read back with ``read_committed`` and decoded in
  the table's format;
- file table at ``/d/out``: directories ``/d/out__shadow_j`` and ``/d/out__shadow_j__old``
  (siblings, so Spark's manifest and readers of the live directory never see them), read
  back through the file table's own reader (local locations);
- Delta table at ``/d/t``: tables at ``/d/t__shadow_j`` and ``/d/t__shadow_j__old``, read
  back as their latest snapshot.

The names derive from the live spec and the job's name only, so a shadow's record need
not hold an address (a URL may hold a password): :func:`scratch_copies` of the catalog
table gives the same copies again for DISCARD. Where a copy may be is the admin's
decision as for any declaration: the caller checks each copy's :meth:`reach` (DESIGN §9).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
from typing import Protocol, Sequence

from ..exceptions import ConnectorError, JobError
from . import spec as cspec

log = logging.getLogger(__name__)

__all__ = ["Scratch", "scratch_copies", "SIDES"]

SIDES = ("new", "old")
"""The two copies of a shadow run: the new query's and the old query's replay."""


class Scratch(Protocol):
    """A scratch copy of one sink.

    * ``spec``: the copy's connector spec (the live spec with its own name/location);
    * ``name``: what it is, for messages and the shadow's record (``table t__shadow_j``,
      ``topic x__shadow_j``, ``directory /d/out__shadow_j``), no secret in it;
    * ``key``: the primary-key columns rows are compared by (empty: as multisets);
    * ``marks_batches``: :meth:`last_batch` answers from the sink's own exactly-once
      marker; else the caller takes the query checkpoint's last committed batch;
    * ``create()``: make it ready to be written (a Kafka topic); ConnectorError;
    * ``last_batch(sink)``: the last micro-batch ``sink`` (its
      :class:`~streamjob.connectors.sinks.TableSink`) committed, or None;
    * ``read_rows(columns)``: every row it holds now, as dicts by declared column name
      (``columns``: ``[{"name", "type"}]``); ConnectorError;
    * ``drop()``: remove it and what was written; returns ``name`` if something was
      removed, else None; ConnectorError.
    """

    spec: object
    name: str
    key: tuple[str, ...]
    marks_batches: bool

    def create(self) -> None: ...

    def last_batch(self, sink) -> int | None: ...

    def read_rows(self, columns: Sequence[dict]) -> list[dict]: ...

    def drop(self) -> str | None: ...

    def reach(self): ...


def _suffix(job: str, side: str) -> str:
    if side not in SIDES:
        raise ValueError(f"side {side!r}")
    return f"__shadow_{job}" + ("__old" if side == "old" else "")


def scratch_copies(spec, job: str) -> tuple["Scratch", "Scratch"]:
    """``(new, old)`` scratch copies of the live sink ``spec`` for job ``job`` (module
    docstring).

    Raises:
        JobError: a sink kind without scratch copies (the console), or a file table on
            a location this process cannot list (not local).
    """
    if isinstance(spec, cspec.SqlTableSpec):
        kind = _SqlScratch
    elif isinstance(spec, cspec.KafkaTableSpec):
        kind = _KafkaScratch
    elif isinstance(spec, cspec.DeltaTableSpec):
        kind = _DeltaScratch
    elif isinstance(spec, cspec.FileTableSpec):
        from .files.static import is_local

        if not is_local(spec.location):
            raise JobError(f"a shadow reads its scratch copy of file table {spec.location} "
                           "back here: only local (or file:) locations can be compared")
        kind = _FileScratch
    else:
        raise JobError(f"a shadow has no scratch copy of {spec.label} table: it compares "
                       "SQL, Kafka, file and Delta tables")
    return kind(spec, job, "new"), kind(spec, job, "old")


class _Base:
    marks_batches = True

    def __init__(self, live, job: str, side: str) -> None:
        self.live, self.job, self.side = live, job, side
        self.spec = self._copy(_suffix(job, side))
        self.key = tuple(getattr(live, "primary_key", ()) or ())

    def _copy(self, suffix: str):
        raise NotImplementedError

    def create(self) -> None:
        """Nothing to make before the first write (its sink creates it)."""

    def reach(self):
        """What the copy reaches (:class:`~streamjob.connectors.reach.Reach`)."""
        return self.spec.reach()


class _SqlScratch(_Base):
    """A SQL table's copy: another table in its database."""

    def _copy(self, suffix: str):
        copy = dataclasses.replace(self.live, table=self.live.table + suffix)
        if copy.table.lower() == self.live.table.lower():
            raise JobError(f"scratch table {copy.table} would be the live table")
        self.name = f"table {copy.table}"
        return copy

    def last_batch(self, sink) -> int | None:
        return sink.sql.last_committed()

    def read_rows(self, columns: Sequence[dict]) -> list[dict]:
        import sqlalchemy as sa

        from .sql.engine import engine_for

        schema, _, name = self.spec.table.rpartition(".")
        try:
            with engine_for(self.spec.url).connect() as conn:
                table = sa.Table(name, sa.MetaData(), schema=schema or None, autoload_with=conn)
                return [dict(r._mapping) for r in conn.execute(sa.select(table))]
        except sa.exc.SQLAlchemyError as exc:
            raise ConnectorError(f"scratch table {self.spec.table} not read: "
                                 f"{type(exc).__name__}") from None

    def drop(self) -> str | None:
        """Drop the table and its commit markers."""
        import sqlalchemy as sa

        from .sql.engine import engine_for
        from .sql.sink import MARKER_TABLE

        dropped = None
        try:
            with engine_for(self.spec.url).begin() as conn:
                insp = sa.inspect(conn)
                schema, _, name = self.spec.table.rpartition(".")
                if insp.has_table(name, schema=schema or None):
                    sa.Table(name, sa.MetaData(), schema=schema or None).drop(conn)
                    dropped = self.name
                if insp.has_table(MARKER_TABLE):
                    marker = sa.Table(MARKER_TABLE, sa.MetaData(), autoload_with=conn)
                    conn.execute(marker.delete().where(marker.c.table_name == self.spec.table))
        except sa.exc.SQLAlchemyError as exc:
            raise ConnectorError(f"scratch table {self.spec.table} not dropped: "
                                 f"{type(exc).__name__}") from None
        return dropped


class _KafkaScratch(_Base):
    """A Kafka table's copy: another topic on its brokers."""

    def _copy(self, suffix: str):
        copy = dataclasses.replace(self.live, topic=self.live.topic + suffix)
        self.name = f"topic {copy.topic}"
        return copy

    def _admin(self):
        from kafka import KafkaAdminClient

        return KafkaAdminClient(bootstrap_servers=self.spec.bootstrap.split(","),
                                request_timeout_ms=30_000, client_id=f"streamjob-{self.job}",
                                **self.spec.security.client_config())

    def _failure(self, what: str, exc: BaseException) -> ConnectorError:
        return ConnectorError(f"scratch topic {self.spec.topic} on {self.spec.bootstrap} "
                              f"not {what}: {exc}")

    def create(self) -> None:
        """Create the topic with the live topic's partition count."""
        from kafka.admin import NewTopic
        from kafka.errors import KafkaError, TopicAlreadyExistsError

        from .kafka.read import _consumer

        consumer = _consumer(self.spec.bootstrap, 30_000, self.spec.security)
        try:
            parts = len(consumer.partitions_for_topic(self.live.topic) or ()) or 1
        finally:
            consumer.close()
        admin = None
        try:
            admin = self._admin()
            admin.create_topics([NewTopic(self.spec.topic, parts, -1)])
        except TopicAlreadyExistsError:
            pass
        except (KafkaError, OSError, ValueError) as exc:
            raise self._failure("created", exc) from None
        finally:
            if admin is not None:
                admin.close()

    def last_batch(self, sink) -> int | None:
        done = sink.kafka.committed_batches()
        return done - 1 if done else None

    def read_rows(self, columns: Sequence[dict]) -> list[dict]:
        """The committed records of every partition, in offset order, decoded as the
        table's format (a Kafka stream of the same columns reads them so)."""
        from kafka import TopicPartition

        from .kafka.formats import RecordSlice, decode
        from .kafka.read import _consumer

        schema = _struct(columns, arrow=True)
        consumer = _consumer(self.spec.bootstrap, 30_000, self.spec.security,
                             isolation_level="read_committed", consumer_timeout_ms=2_000)
        rows: list[dict] = []
        try:
            parts = sorted(consumer.partitions_for_topic(self.spec.topic) or ())
            tps = [TopicPartition(self.spec.topic, p) for p in parts]
            if not tps:
                return rows
            consumer.assign(tps)
            consumer.seek_to_beginning(*tps)
            ends = consumer.end_offsets(tps)
            got: dict[int, list] = {p: [] for p in parts}
            while any(consumer.position(tp) < ends[tp] for tp in tps):
                polled = consumer.poll(timeout_ms=1_000)
                if not polled and all(consumer.position(tp) >= ends[tp] for tp in tps):
                    break
                for tp, records in polled.items():
                    got[tp.partition].extend(records)
            for p in parts:
                recs = got[p]
                batch = decode(RecordSlice(self.spec.topic, p, [r.offset for r in recs],
                                           [r.value for r in recs], [r.key for r in recs],
                                           [r.timestamp for r in recs]),
                               schema, self.spec.format, self.spec.delimiter)
                rows += batch.to_pylist()
        finally:
            consumer.close()
        return rows

    def drop(self) -> str | None:
        """Delete the topic (None when it did not exist)."""
        from kafka.errors import KafkaError, UnknownTopicOrPartitionError

        admin = None
        try:
            admin = self._admin()
            if self.spec.topic not in set(admin.list_topics()):
                return None
            admin.delete_topics([self.spec.topic])
            return self.name
        except UnknownTopicOrPartitionError:
            return None
        except (KafkaError, OSError, ValueError) as exc:
            raise self._failure("deleted", exc) from None
        finally:
            if admin is not None:
                admin.close()


def _struct(columns: Sequence[dict], arrow: bool = False):
    """The declared ``columns`` as an Arrow schema (TIMESTAMP as UTC instants, as the
    readers yield them) or, by default, as Spark's StructType."""
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    from ..columntypes import arrow_schema

    struct = from_arrow_schema(arrow_schema(columns))
    return to_arrow_schema(struct, timezone="UTC") if arrow else struct


def _sibling(location: str, suffix: str) -> str:
    return location.rstrip("/") + suffix


def _remove_dir(path: str, name: str) -> str | None:
    if not os.path.lexists(path):
        return None
    try:
        shutil.rmtree(path)
    except OSError as exc:
        raise ConnectorError(f"scratch {name} not removed: {exc.strerror}") from None
    return name


class _FileScratch(_Base):
    """A file table's copy: a sibling directory, written by Spark's file sink."""

    def _copy(self, suffix: str):
        copy = dataclasses.replace(self.live, location=_sibling(self.live.location, suffix))
        self.name = f"directory {copy.location}"
        return copy

    def _dir(self) -> str:
        from .files.static import absolute

        return absolute(self.spec.location)

    def last_batch(self, sink) -> int | None:
        return sink._last_manifest_batch()

    def read_rows(self, columns: Sequence[dict]) -> list[dict]:
        """The files its ``_spark_metadata`` manifest lists (the committed ones)."""
        from .files.static import read_file_table

        rows: list[dict] = []
        for batch in read_file_table(self._dir(), self.spec.format, _struct(columns),
                                     header=self.spec.header,
                                     partitioned_by=self.spec.partitioned_by,
                                     delimiter=self.spec.delimiter):
            rows += batch.to_pylist()
        return rows

    def drop(self) -> str | None:
        return _remove_dir(self._dir(), self.name)


class _DeltaScratch(_Base):
    """A Delta table's copy: a Delta table in a sibling directory."""

    marks_batches = False  # its app transaction is read by the checkpoint's commit log

    def _copy(self, suffix: str):
        copy = dataclasses.replace(self.live, location=_sibling(self.live.location, suffix))
        self.name = f"Delta table {copy.location}"
        return copy

    def last_batch(self, sink) -> int | None:
        return None

    def read_rows(self, columns: Sequence[dict]) -> list[dict]:
        """Its latest snapshot (an empty list when nothing was committed)."""
        from .delta import log as dlog
        from .delta.options import PATH
        from .delta.source import DeltaStaticReader

        if dlog.latest_version(self.spec.path) is None:
            return []
        reader = DeltaStaticReader(_struct(columns), {PATH: self.spec.path})
        rows: list[dict] = []
        for part in reader.partitions():
            for batch in reader.read(part):
                rows += batch.to_pylist()
        return rows

    def drop(self) -> str | None:
        return _remove_dir(self.spec.path, self.name)
