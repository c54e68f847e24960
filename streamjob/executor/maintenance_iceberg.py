"""Iceberg table maintenance (issue 32; docs/connectors.md "Iceberg table",
"Maintenance"): ``VACUUM [TABLE] t [RETAIN n HOURS] [DRY RUN]`` expires the snapshots
older than the retention and deletes the files nothing retained references
(:func:`streamjob.connectors.iceberg.maintenance.vacuum`); ``OPTIMIZE [TABLE] t``
compacts the table's small data files into one ``replace`` snapshot
(:func:`streamjob.connectors.iceberg.compaction.compact`), which Iceberg streams skip and
behind which a writer's exactly-once markers are still found: it is never refused for
the jobs. ``ZORDER BY`` is refused (Iceberg's z-order is a sort strategy of its Spark
action). The roles and path rules are those of Delta's (:mod:`.maintenance`).

What VACUUM keeps for the jobs of the catalog, instead of refusing:

* a job reading the table as an Iceberg stream (of any status: a stopped one resumes
  from its checkpoint) reads from the snapshot of its oldest retained checkpoint's
  position (``iceberg:<dir>`` in the offsets, :mod:`streamjob.connectors.iceberg.source`)
  and walks the snapshots from there to the current one: those are kept; a reader with
  no checkpoint recorded yet keeps every snapshot;
* a job writing the table finds its last batch id in its newest snapshot, walking back
  from the current one (:func:`streamjob.connectors.iceberg.sink.last_batch`): the
  snapshots from that one are kept, so that a replay after a restart is still skipped;
* while a job writing the table is running, files no snapshot references yet are kept
  when younger than an hour (:data:`ORPHAN_FLOOR_MS`): they may be its commit in
  progress.
"""

from __future__ import annotations

import os

from .. import shapes
from ..catalog.records import JobStatus
from ..connectors import spec as cspec
from ..connectors.iceberg import maintenance as im
from ..connectors.iceberg.options import OFFSETS_PREFIX
from ..exceptions import ValidationError
from ..grammar import statements as st
from .result import Result

ORPHAN_FLOOR_MS = 3_600_000
"""How young a file no snapshot references is kept while a job writing the table runs."""

_ACTIVE = {JobStatus.STARTING, JobStatus.RUNNING, JobStatus.RECOVERING, JobStatus.STOPPING}


class IcebergMaintenance:
    """OPTIMIZE and VACUUM of Iceberg tables, for :class:`.maintenance.MaintenanceStatements`."""

    def _optimize_iceberg(self, info, ref, s: st.OptimizeTable) -> Result:
        """OPTIMIZE of the Iceberg table of ``ref``: the module docstring; the result as
        Delta's OPTIMIZE (``version`` the ``replace`` snapshot's id).

        Raises:
            ValidationError: ZORDER BY (at its first column).
            ConnectorError: the table cannot be loaded, has delete files, or the commit
                lost a race with a concurrent change of the same files (run it again).
        """
        from ..connectors.iceberg.compaction import compact

        if s.zorder_by:
            col = s.zorder_by[0]
            pos = s.where(f"column:{col}")
            raise ValidationError(f"OPTIMIZE of Iceberg table {info.qualified_name} ZORDER BY "
                                  f"is refused: {im.ZORDER_REFUSED}", pos.line, pos.column, col)
        if self.dry_run:
            return Result(f"table {info.qualified_name} can be optimized")
        done = compact(ref)
        data = shapes.optimize_json(info.qualified_name, ref.location, (), done)
        row = (info.qualified_name, done.snapshot_id, done.files_added, done.files_removed,
               done.bytes_added, done.bytes_removed, done.partitions_optimized)
        message = (f"table {info.qualified_name} compacted: {done.files_removed} files "
                   f"({done.bytes_removed} bytes) rewritten into {done.files_added} "
                   f"({done.bytes_added} bytes), replace snapshot {done.snapshot_id}"
                   if done.snapshot_id is not None else
                   f"table {info.qualified_name}: nothing to optimize")
        return Result(message, columns=("table", "snapshot", "files added", "files removed",
                                        "bytes added", "bytes removed",
                                        "partitions optimized"),
                      rows=[row], title="optimize", object=info.qualified_name, data=data)

    def _vacuum_iceberg(self, info, ref, s: st.VacuumTable) -> Result:
        """VACUUM of the Iceberg table of ``ref``: the module docstring.

        Raises:
            ConnectorError: the table cannot be loaded, the expiry's commit failed.
        """
        hours = im.DEFAULT_RETENTION_HOURS if s.retain_hours is None else s.retain_hours
        if self.dry_run:
            return Result(f"table {info.qualified_name} can be vacuumed")
        keep, why, writing = self._iceberg_needs(info, ref)
        done = im.vacuum(ref, hours, s.dry_run, keep_sequence=keep,
                         orphan_floor_ms=ORPHAN_FLOOR_MS if writing else 0)
        kept = (f"; kept {len(done.kept)} older snapshots that {', '.join(sorted(why))} "
                "still need" if done.kept else "")
        did = (f"would expire {len(done.expired)} snapshots and delete" if s.dry_run else
               f"expired {len(done.expired)} snapshots and deleted")
        message = (f"VACUUM of {info.qualified_name} (RETAIN {hours} HOURS) {did} "
                   f"{len(done.files)} files ({done.bytes} bytes){kept}")
        return Result(message, columns=("file", "bytes"), rows=list(done.files),
                      title=f"files {'to delete' if s.dry_run else 'deleted'}",
                      object=info.qualified_name,
                      data=shapes.vacuum_json(info.qualified_name, ref.location, hours, done,
                                              kept_for=why))

    def _iceberg_needs(self, info, ref) -> tuple[int | None, set[str], bool]:
        """``(keep_sequence, the jobs needing it, a writer running)`` of the table of
        ``ref``: the lowest sequence number a reader's oldest position or a writer's
        newest snapshot needs (None: none needed)."""
        from ..connectors.iceberg.catalog import load_table

        tbl = load_table(ref)
        path = os.path.abspath(ref.path)
        needs: list[int] = []
        who: set[str] = set()
        writing = False
        for job in self.catalog.list_jobs():
            if any(kind == "table" and role == "sink" and (d, n) == (info.database, info.name)
                   for kind, d, n, role in job.dependencies):
                seq = im.marker_sequence(tbl, job.uid)
                if seq is not None:
                    needs.append(seq)
                    who.add(f"streamjob {job.qualified_name} (writing it)")
                writing = writing or job.status in _ACTIVE
            reads = any(os.path.abspath(other.path) == path
                        for other in self._stream_refs(job, cspec.iceberg_stream_ref))
            positions = [at for cp in self.catalog.list_checkpoints(job.uid)
                         for k, at in dict(cp.source_offsets or {}).items()
                         if str(k) == OFFSETS_PREFIX + path and isinstance(at, dict)]
            if not (reads or positions):
                continue
            who.add(f"streamjob {job.qualified_name} (reading it)")
            if not positions:
                needs.append(0)
                continue
            needs.append(min(_sequence(tbl, int(at.get("snapshot") or 0)) for at in positions))
        return (min(needs) if needs else None), who, writing


def _sequence(tbl, snapshot_id: int) -> int:
    """The sequence number of snapshot ``snapshot_id`` of ``tbl`` (0 when none or gone:
    every snapshot is kept)."""
    snap = tbl.snapshot_by_id(snapshot_id) if snapshot_id else None
    return 0 if snap is None else (snap.sequence_number or 0)
