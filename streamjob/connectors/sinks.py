"""Which sink a table is, answered once: the :class:`TableSink` contract and its factory
:func:`table_sink` (DESIGN §6, §7). The job manager (start an attempt), the planner's
query start (attach the sink to Spark's writer), START (check a SQL table's schema) and
DROP STREAMJOB (purge the exactly-once markers) all go through it.

The kinds and what they guarantee:

* SQL table (:class:`SqlTableSink`): foreachBatch, one transaction per micro-batch with
  the job's marker row (exactly-once), or plain inserts/upserts (at-least-once);
* Kafka table (:class:`KafkaTableSink`): foreachBatch, one Kafka transaction per
  micro-batch with the marker committed in it (exactly-once), or idempotent produce;
  with a primary key, records keyed by it (an upsert table, update mode);
* file table (:class:`FileTableSink`): Spark's file sink and its ``_spark_metadata``
  manifest (exactly-once with checkpoints); without checkpoints each batch's files are
  appended directly (guarantee none, DESIGN §6);
* console table (:class:`ConsoleTableSink`): Spark's console sink (no guarantee);
* Delta table (:class:`DeltaTableSink`): foreachBatch, one Delta commit per micro-batch
  carrying the job's app transaction (exactly-once, :mod:`.delta.sink`), or plain
  appends;
* Iceberg table (:class:`IcebergTableSink`): foreachBatch, one Iceberg snapshot per
  micro-batch whose summary carries the job's identity and batch id (exactly-once,
  :mod:`.iceberg.sink`), or plain appends.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Callable, Protocol, Sequence
from urllib.parse import urlparse

from ..exceptions import JobError, ValidationError
from ..sensitive import mask_url
from . import hive_forms
from . import spec as cspec

log = logging.getLogger(__name__)

__all__ = ["TableSink", "table_sink", "SqlTableSink", "KafkaTableSink", "FileTableSink",
           "ConsoleTableSink", "DeltaTableSink", "IcebergTableSink"]


class TableSink(Protocol):
    """What a job writes to. Built by :func:`table_sink`; nothing is contacted until a
    method below is called.

    * ``check()``: refuse a table whose existing shape does not fit its declaration (SQL:
      :class:`~streamjob.exceptions.SchemaMismatch`); an unreachable system is a
      ConnectorError the caller may downgrade to a warning. Others: nothing.
    * ``prepare()``: before the query starts (create or check the SQL table, connect the
      Kafka producer and fence earlier attempts). Raises ConnectorError.
    * ``on_new_checkpoint()``: the job's checkpoint starts over (batch ids from 0); a file
      table whose manifest already lists batches refuses (JobError), since Spark's file
      sink would skip them.
    * ``on_rewind(batch_id)``: the job's checkpoint goes back to ``batch_id`` (START ...
      FROM CHECKPOINT n, FROM SAVEPOINT, FROM CHECKPOINT AT); a file table whose manifest
      lists a later batch refuses (JobError): Spark's file sink would skip the re-planned
      batches up to that one, whose ranges need not match the first run's, so records
      would be lost or doubled without a word. Others: nothing (SQL and Kafka markers
      and Delta's app transactions are keyed by the checkpoint epoch).
    * ``attach(writer)``: a ``DataStreamWriter`` set up to write here; returns it.
    * ``purge_markers()``: DROP STREAMJOB: remove this job's exactly-once markers (SQL
      marker rows, the Kafka marker group); an unreachable system is a warning.
    * ``close()``: release connections (idempotent).
    * ``visibility()``: one sentence for DESCRIBE STREAMJOB: when a written row becomes
      visible to readers of the table (DESIGN §6).
    * ``describe()``: EXPLAIN's reading of the sink (the same for every job writing
      the table the same way): ``connector`` (``sql``, ``kafka``, ``files (<format>)``,
      ``console``), ``location`` (where, URLs masked; None for the console),
      ``write`` (how rows are written), ``commit`` (how a micro-batch is committed when
      the job is exactly-once) and ``upsert`` (True when a repeat of a micro-batch
      rewrites the same rows: update mode into a primary key).
    """

    def check(self) -> None: ...

    def prepare(self) -> None: ...

    def on_new_checkpoint(self) -> None: ...

    def on_rewind(self, batch_id: int) -> None: ...

    def attach(self, writer): ...

    def purge_markers(self) -> None: ...

    def close(self) -> None: ...

    def visibility(self) -> str: ...

    def describe(self) -> dict: ...


def table_sink(table, spec, *, marker: str, job: str, exactly_once: bool,
               upsert: bool = False, checkpointed: bool = True) -> TableSink:
    """The sink of catalog table ``table`` (a ``TableInfo``) whose connector spec is
    ``spec`` (:func:`.spec.spec_of_table`).

    Args:
        marker: the key of this job's exactly-once markers (job uid, with the checkpoint
            epoch: :func:`streamjob.checkpoint.identity.marker_key`).
        job: ``db.job``, for messages and Kafka client ids.
        exactly_once: the job's guarantee is exactly-once (markers are kept).
        upsert: the job runs in update mode (a SQL table with a primary key upserts).
        checkpointed: the job has durable checkpoints (file tables: Spark's file sink).

    Raises:
        ValidationError: a table kind no job can write.
    """
    if isinstance(spec, cspec.SqlTableSpec):
        return SqlTableSink(spec, table.columns, marker, exactly_once, upsert)
    if isinstance(spec, cspec.KafkaTableSpec):
        return KafkaTableSink(spec, table.columns, marker, job, exactly_once, upsert)
    if isinstance(spec, cspec.FileTableSpec):
        return FileTableSink(spec, table.qualified_name, job, checkpointed)
    if isinstance(spec, cspec.ConsoleTableSpec):
        return ConsoleTableSink()
    if isinstance(spec, cspec.DeltaTableSpec):
        return DeltaTableSink(spec, table.columns, table.qualified_name, marker, exactly_once,
                              upsert)
    if isinstance(spec, cspec.IcebergTableSpec):
        return IcebergTableSink(spec, table.columns, table.qualified_name, marker,
                                exactly_once, upsert)
    raise ValidationError(f"table {table.qualified_name} cannot be written by a job yet")


class _Quiet:
    """No-op defaults of the contract."""

    def check(self) -> None:
        pass

    def prepare(self) -> None:
        pass

    def on_new_checkpoint(self) -> None:
        pass

    def on_rewind(self, batch_id: int) -> None:
        pass

    def purge_markers(self) -> None:
        pass

    def close(self) -> None:
        pass


def _foreach_batch(write_arrow: Callable) -> Callable:
    """foreachBatch function: the batch as Arrow, handed to ``write_arrow(table, id)``."""
    def write(df, batch_id: int) -> None:
        write_arrow(df.toArrow(), batch_id)

    return write


class SqlTableSink(_Quiet):
    """A SQL table through :class:`.sql.sink.SqlSink` (COPY on PostgreSQL, batched inserts
    on SQLite; one transaction per micro-batch with the marker when exactly-once)."""

    def __init__(self, spec, columns: Sequence[dict], marker: str, exactly_once: bool,
                 upsert: bool) -> None:
        from .sql.sink import SqlSink

        self.sql = SqlSink(spec, columns, marker, exactly_once=exactly_once, upsert=upsert)
        self.spec, self.exactly_once, self.upsert = spec, exactly_once, upsert

    def describe(self) -> dict:
        sp, upsert = self.spec, self.upsert and bool(self.spec.primary_key)
        return {"connector": "sql", "location": f"table {sp.table} at {mask_url(sp.url)}",
                "write": (f"upsert on primary key ({', '.join(sp.primary_key)})" if upsert
                          else "insert"),
                "commit": ("each micro-batch's rows and the job's (uid:epoch, table) -> batch "
                           "id marker commit in one transaction of the table's database; a "
                           "replayed batch at or below the marker is skipped"),
                "upsert": upsert}

    def visibility(self) -> str:
        if self.exactly_once:
            return ("when their micro-batch commits: its rows and the job's (uid, epoch, batch) "
                    "marker in one database transaction, so readers never see part of a "
                    "micro-batch (Slipstream shows them at the checkpoint; here within a "
                    "trigger interval)")
        return ("as each micro-batch writes them (auto.flush); a micro-batch replayed after a "
                "failure may repeat rows (an upsert on a primary key makes that harmless)")

    def check(self) -> None:
        self.sql.check()

    def prepare(self) -> None:
        self.sql.prepare()

    def attach(self, writer):
        return writer.foreachBatch(_foreach_batch(self.sql.write_arrow))

    def purge_markers(self) -> None:
        self.sql.purge_markers()


class KafkaTableSink(_Quiet):
    """A Kafka table through :class:`.kafka.sink.KafkaSink` (one transaction per
    micro-batch with the marker when exactly-once; see that module)."""

    def __init__(self, spec, columns: Sequence[dict], marker: str, job: str,
                 exactly_once: bool, update: bool = False) -> None:
        from .kafka.sink import KafkaSink

        self.kafka = KafkaSink(spec, columns, marker, job, exactly_once=exactly_once)
        self.spec, self.exactly_once, self.update = spec, exactly_once, update
        self.upsert = bool(spec.primary_key)

    def describe(self) -> dict:
        sp = self.spec
        return {"connector": "kafka", "location": f"topic {sp.topic} at {mask_url(sp.bootstrap)}",
                "write": (f"produce keyed by primary key ({', '.join(sp.primary_key)}): the "
                          "latest record per key is the row" if sp.primary_key
                          else "produce" + (f" (key {sp.key})" if sp.key else "")),
                "commit": ("one Kafka transaction per micro-batch holds its records and the "
                           "batch id (committed to the group streamjob-sink-<uid>); a replayed "
                           "batch is skipped"),
                "upsert": self.update and self.upsert}

    def visibility(self) -> str:
        keyed = ("; records are keyed by the primary key, and a repeat rewrites each key "
                 "with the same row, so the latest record per key stays right"
                 if self.upsert else "")
        if self.exactly_once:
            return ("to read_committed consumers when their micro-batch's Kafka transaction "
                    "commits with the job's marker (read_uncommitted consumers may also see "
                    "rows of an aborted micro-batch" + keyed + ")")
        return ("as each micro-batch produces them (idempotent producer, auto.flush); a "
                "micro-batch replayed after a failure may repeat rows" + keyed)

    def prepare(self) -> None:
        self.kafka.prepare()

    def attach(self, writer):
        return writer.foreachBatch(_foreach_batch(self.kafka.write_arrow))

    def purge_markers(self) -> None:
        self.kafka.purge_markers()

    def close(self) -> None:
        self.kafka.close()


class FileTableSink(_Quiet):
    """A file table: Spark's file sink at the table's location (format; CSV and TEXTFILE
    without a header, with the table's delimiter, :func:`.hive_forms.text_options`;
    Hive-style partitions); without checkpoints, plain appends per batch."""

    def __init__(self, spec, table: str, job: str, checkpointed: bool) -> None:
        self.spec, self.table, self.job, self.checkpointed = spec, table, job, checkpointed

    def describe(self) -> dict:
        sp = self.spec
        return {"connector": f"files ({sp.format})", "location": sp.location,
                "write": "append files" + (f" partitioned by {', '.join(sp.partitioned_by)}"
                                           if sp.partitioned_by else ""),
                "commit": ("Spark's file-sink manifest (_spark_metadata) lists each "
                           "micro-batch's files once; readers must honour it"),
                "upsert": False}

    def visibility(self) -> str:
        if self.checkpointed:
            return ("when their micro-batch is added to the table's _spark_metadata manifest "
                    "(readers through Spark or streamjob; a bare directory listing may also "
                    "show files of a micro-batch that failed)")
        return "as each micro-batch appends its files (no guarantee without checkpoints)"

    def _manifest(self) -> Path | None:
        loc = self.spec.location
        if urlparse(loc).scheme not in ("", "file"):
            return None
        return Path(urlparse(loc).path if loc.startswith("file:") else loc) / "_spark_metadata"

    def _last_manifest_batch(self) -> int | None:
        """The newest batch id in the table's ``_spark_metadata`` (``n`` or
        ``n.compact``), None without one (or on a non-local location)."""
        meta = self._manifest()
        batches = [int(n.split(".")[0]) for n in (os.listdir(meta) if meta and meta.is_dir() else [])
                   if n.split(".")[0].isdigit()]
        return max(batches) if batches else None

    def on_new_checkpoint(self) -> None:
        """Refuse a new checkpoint (batch ids from 0) writing where Spark's file-sink
        manifest already lists batches: Spark's file sink skips every batch at or below
        its last entry, so the new epoch's first batches would be lost silently."""
        last = self._last_manifest_batch()
        if last is not None:
            raise JobError(
                f"table {self.table} at {self.spec.location} holds a file-sink manifest up "
                f"to batch {last}, written by an earlier job or checkpoint epoch; "
                f"Spark's file sink would skip the first {last + 1} batches of job "
                f"{self.job}'s new checkpoint. Write to a new table or LOCATION, or move "
                f"{self._manifest()} away (readers then see every file there)")

    def on_rewind(self, batch_id: int) -> None:
        """Refuse going back to ``batch_id`` when the manifest lists a later batch: Spark's
        file sink would skip the re-planned batches ``batch_id + 1`` up to it, and their
        input ranges need not be the first run's, so records would be lost or doubled
        silently (the contract above)."""
        last = self._last_manifest_batch() if self.checkpointed else None
        if last is not None and last > batch_id:
            raise JobError(
                f"table {self.table} at {self.spec.location} lists micro-batches up to "
                f"{last} in its file-sink manifest; after going back to batch {batch_id}, "
                f"Spark's file sink would skip batches {batch_id + 1} to {last} of job "
                f"{self.job}, whose input need not be the same as the first time. Write to "
                "a new table or LOCATION instead (the job's checkpoint needs this manifest "
                "as it is: Spark's file sink fails without it)")

    def attach(self, writer):
        sp = self.spec
        if not self.checkpointed:
            return writer.foreachBatch(self._plain_writer())
        writer = writer.format(hive_forms.spark_format(sp.format)).option("path", sp.location)
        writer = writer.options(**hive_forms.text_options(sp.format, sp.delimiter))
        if sp.partitioned_by:
            writer = writer.partitionBy(*sp.partitioned_by)
        return writer

    def _plain_writer(self) -> Callable:
        """foreachBatch writer for a job WITHOUT checkpoints (guarantee none): such a job
        starts at batch 0 on every start, so Spark's file sink, which skips batches its
        manifest lists, would drop its output after a restart; each batch's files are
        appended directly instead.

        Raises:
            ValidationError: the location holds a file-sink manifest (a checkpointed job
                wrote it): readers honour only the manifest and would not see plain files.
        """
        sp = self.spec
        meta = self._manifest()
        if meta is not None and meta.exists():
            raise ValidationError(
                f"table {self.table} at {sp.location} was written by a checkpointed job "
                f"(its _spark_metadata manifest decides what readers see), so job "
                f"{self.job}, which has morphling.job.enable.checkpoint=false, cannot "
                f"add files there: write to another table or enable checkpoints")

        def write(df, batch_id: int) -> None:
            w = df.write.mode("append").format(hive_forms.spark_format(sp.format))
            w = w.options(**hive_forms.text_options(sp.format, sp.delimiter))
            if sp.partitioned_by:
                w = w.partitionBy(*sp.partitioned_by)
            w.save(sp.location)

        return write


class ConsoleTableSink(_Quiet):
    """Spark's console sink: every row printed, none kept (no guarantee)."""

    def attach(self, writer):
        return writer.format("console").option("truncate", "false")

    def visibility(self) -> str:
        return "printed as each micro-batch runs; nothing is kept"

    def describe(self) -> dict:
        return {"connector": "console", "location": None, "write": "print",
                "commit": "the console prints each micro-batch and keeps nothing",
                "upsert": False}


class DeltaTableSink(_Quiet):
    """A Delta table through :class:`.delta.sink.DeltaSink`: one Delta commit per
    micro-batch, with the job's app transaction (marker key, batch id) when
    exactly-once."""

    def __init__(self, spec, columns: Sequence[dict], table: str, marker: str,
                 exactly_once: bool, upsert: bool = False) -> None:
        from .delta.sink import DeltaSink

        self.delta = DeltaSink(spec, columns, table, marker, exactly_once, upsert)
        self.spec, self.exactly_once, self.upsert = spec, exactly_once, self.delta.upsert

    def describe(self) -> dict:
        sp = self.spec
        write = (f"merge on primary key ({', '.join(sp.primary_key)}), one Delta commit "
                 "per micro-batch" if self.upsert else
                 "append (one Delta commit per micro-batch)")
        return {"connector": "delta", "location": sp.location,
                "write": write + (f" partitioned by {', '.join(sp.partitioned_by)}"
                                  if sp.partitioned_by else ""),
                "commit": ("each micro-batch's files and the job's Delta app transaction "
                           "(app id uid:epoch, version batch id) commit in one Delta log "
                           "entry; a replayed batch at or below the version is skipped"),
                "upsert": self.upsert}

    def visibility(self) -> str:
        if self.exactly_once:
            return ("to any Delta reader when their micro-batch's commit enters the table's "
                    "_delta_log, with the job's app transaction in the same commit, so "
                    "readers never see part of a micro-batch")
        return ("to any Delta reader as each micro-batch commits (auto.flush); a "
                "micro-batch replayed after a failure may repeat rows"
                + (" (merged on the primary key, which makes that harmless)"
                   if self.upsert else ""))

    def check(self) -> None:
        self.delta.check()

    def prepare(self) -> None:
        self.delta.prepare()

    def attach(self, writer):
        return writer.foreachBatch(_foreach_batch(self.delta.write_arrow))

    def purge_markers(self) -> None:
        """Nothing to delete: the job's app transactions are entries of the table's own
        log (Delta expires them with delta.setTransactionRetentionDuration); DROP
        STREAMJOB leaves the table and its data."""


class IcebergTableSink(_Quiet):
    """An Iceberg table through :class:`.iceberg.sink.IcebergSink`: one snapshot per
    micro-batch, with the job's identity and batch id in its summary when
    exactly-once."""

    def __init__(self, spec, columns: Sequence[dict], table: str, marker: str,
                 exactly_once: bool, upsert: bool = False) -> None:
        from .iceberg.sink import IcebergSink

        self.iceberg = IcebergSink(spec, columns, table, marker, exactly_once, upsert)
        self.spec, self.exactly_once, self.upsert = spec, exactly_once, self.iceberg.upsert

    def describe(self) -> dict:
        sp = self.spec
        write = (f"upsert on primary key ({', '.join(sp.primary_key)}), one Iceberg "
                 "snapshot per micro-batch" if self.upsert else
                 "append (one Iceberg snapshot per micro-batch)")
        return {"connector": "iceberg",
                "location": f"{sp.ref.where()} at {sp.location}",
                "write": write + (f" partitioned by {', '.join(sp.partitioned_by)}"
                                  if sp.partitioned_by else ""),
                "commit": ("each micro-batch's files and a snapshot whose summary holds the "
                           "job's streamjob.app-id (uid:epoch) and streamjob.batch-id commit "
                           "in one catalog commit; a replayed batch at or below the last "
                           "such batch id is skipped"),
                "upsert": self.upsert}

    def visibility(self) -> str:
        if self.exactly_once:
            return ("to any Iceberg reader when their micro-batch's snapshot becomes the "
                    "table's current one in its catalog, with the job's batch id in the "
                    "snapshot's summary, so readers never see part of a micro-batch")
        return ("to any Iceberg reader as each micro-batch commits (auto.flush); a "
                "micro-batch replayed after a failure may repeat rows"
                + (" (upserted on the primary key, which makes that harmless)"
                   if self.upsert else ""))

    def check(self) -> None:
        self.iceberg.check()

    def prepare(self) -> None:
        self.iceberg.prepare()

    def attach(self, writer):
        return writer.foreachBatch(_foreach_batch(self.iceberg.write_arrow))

    def purge_markers(self) -> None:
        """Nothing to delete: the job's batch ids are in the summaries of the table's own
        snapshots (snapshot expiry removes them with the snapshots); DROP STREAMJOB
        leaves the table and its data."""
