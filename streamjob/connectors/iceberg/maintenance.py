"""Maintenance and time travel of an Iceberg table through pyiceberg (issue 32;
docs/connectors.md "Iceberg table", "Maintenance"): ``VACUUM`` (snapshot expiry, then
the removal of the files no snapshot left references), the refusal of ``OPTIMIZE ...
ZORDER BY`` (compaction itself: :mod:`.compaction`), the snapshot a preview's ``VERSION AS OF`` / ``TIMESTAMP AS OF`` names, and the snapshot
that holds a job's micro-batch (``DESCRIBE STREAMJOB``).

VACUUM does what Iceberg's own ``expireSnapshots`` and ``deleteOrphanFiles`` actions do
together: pyiceberg 0.12 expires snapshots (``maintenance.expire_snapshots``, metadata
only) but deletes no file and has no orphan-file action, so the files are found here.
Snapshots older than the retention are expired except the current one (and every branch
or tag head), the snapshots from ``keep_sequence`` on (a reader's or a writer's need,
:mod:`streamjob.executor.maintenance`) and, with them, every later one. Then every file
under the table's ``data/`` and ``metadata/`` directories that neither a retained
snapshot (its manifest list, manifests, live data and delete files) nor the table's
metadata (the current metadata file, the metadata log, statistics files) references is
deleted: a file an expired snapshot referenced at once, a file no snapshot ever
referenced (a writer that crashed before its commit) only when older than the
retention and than ``orphan_floor_ms`` (a writer still committing it). Local tables
only, as the sink.

"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from urllib.parse import unquote, urlparse

from streamjob.connectors.iceberg.catalog import first_line, load_table
from streamjob.exceptions import ConnectorError

__all__ = ["DEFAULT_RETENTION_HOURS", "last_replace", "ZORDER_REFUSED", "Vacuumed", "vacuum",
           "snapshot_as_of", "snapshot_before", "batch_snapshot", "marker_sequence"]

DEFAULT_RETENTION_HOURS = 120
"""Iceberg's default age of the snapshots it expires (``history.expire.max-snapshot-age-ms``,
5 days): what VACUUM keeps without RETAIN."""

ZORDER_REFUSED = (
    "Iceberg's z-order is a sort strategy of its Spark action (rewrite_data_files with "
    "strategy => 'sort' and a zorder(...) sort order), which streamjob's compaction through "
    "pyiceberg does not do; OPTIMIZE TABLE without ZORDER BY compacts the table's small files")
"""Why ``OPTIMIZE ... ZORDER BY`` of an Iceberg table is refused."""


@dataclass(frozen=True)
class Vacuumed:
    """What one VACUUM did (``dry_run``: would do): ``expired`` snapshot ids,
    ``kept`` snapshot ids older than the retention kept for a job (``keep_sequence``),
    ``files`` deleted as ``(path relative to the table, bytes)``, sorted."""

    dry_run: bool
    expired: tuple[int, ...] = ()
    kept: tuple[int, ...] = ()
    files: tuple[tuple[str, int], ...] = field(default=())

    @property
    def bytes(self) -> int:
        """The bytes of :attr:`files`."""
        return sum(size for _path, size in self.files)


def _local(path: str) -> str:
    return unquote(urlparse(path).path) if path.startswith("file:") else path


def _referenced(tbl, snapshots) -> set[str]:
    """The local paths of every file the table's metadata and ``snapshots`` reference."""
    from pyiceberg.manifest import ManifestContent

    out = {_local(tbl.metadata_location)}
    out.update(_local(e.metadata_file) for e in tbl.metadata.metadata_log)
    out.update(_local(s.statistics_path) for s in tbl.metadata.statistics)
    out.update(_local(s.statistics_path) for s in tbl.metadata.partition_statistics)
    seen: set[str] = set()
    for snap in snapshots:
        out.add(_local(snap.manifest_list))
        for m in snap.manifests(tbl.io):
            out.add(_local(m.manifest_path))
            if m.manifest_path in seen:
                continue
            seen.add(m.manifest_path)
            del_ok = m.content == ManifestContent.DELETES
            for e in m.fetch_manifest_entry(tbl.io, discard_deleted=not del_ok):
                out.add(_local(e.data_file.file_path))
    return {os.path.abspath(p) for p in out}


def _files(root: str):
    """``(path, bytes, mtime ms)`` of every file under ``root``'s data and metadata."""
    for sub in ("data", "metadata"):
        for d, _dirs, names in os.walk(os.path.join(root, sub)):
            for n in names:
                p = os.path.join(d, n)
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                yield os.path.abspath(p), st.st_size, int(st.st_mtime * 1000)


def vacuum(ref, retention_hours: int, dry_run: bool, keep_sequence: int | None = None,
           orphan_floor_ms: int = 0, now_ms: int | None = None) -> Vacuumed:
    """Expire the snapshots of the Iceberg table of ``ref`` (:class:`.spec.IcebergTableRef`)
    older than ``retention_hours`` and delete the files nothing retained references (the
    module docstring); ``dry_run`` changes nothing and says what it would do.

    Args:
        keep_sequence: snapshots with this sequence number or a later one are kept
            (None: only the retention counts).
        orphan_floor_ms: a file no snapshot ever referenced is kept while younger than
            this (ms), whatever the retention.

    Raises:
        ConnectorError: no such table, the catalog unreachable, the expiry's commit
            failed (a concurrent change it could not apply), a file not deletable.
    """
    tbl = load_table(ref)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    cutoff = now - retention_hours * 3_600_000
    protected = {r.snapshot_id for r in tbl.metadata.refs.values()}
    expire, kept = [], []
    for snap in tbl.metadata.snapshots:
        if snap.timestamp_ms >= cutoff or snap.snapshot_id in protected:
            continue
        if keep_sequence is not None and (snap.sequence_number or 0) >= keep_sequence:
            kept.append(snap.snapshot_id)
        else:
            expire.append(snap.snapshot_id)
    known = _referenced(tbl, tbl.metadata.snapshots)
    gone = set(expire)
    retained = [s for s in tbl.metadata.snapshots if s.snapshot_id not in gone]
    try:
        if expire and not dry_run:
            tbl.maintenance.expire_snapshots().by_ids(expire).commit()
            tbl = load_table(ref)
            retained = tbl.metadata.snapshots
        needed = _referenced(tbl, retained)
    except ConnectorError:
        raise
    except Exception as exc:
        raise ConnectorError(f"VACUUM of {ref.where()} failed: {first_line(exc)}") from None
    orphan_before = min(cutoff, now - orphan_floor_ms)
    root = os.path.abspath(_local(ref.location))
    doomed = []
    for path, size, mtime in _files(root):
        if path in needed:
            continue
        if path in known or mtime < orphan_before:
            doomed.append((path, size))
    if not dry_run:
        for path, _size in doomed:
            try:
                os.remove(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise ConnectorError(f"VACUUM of {ref.where()}: cannot delete {path}: "
                                     f"{exc.strerror or exc}") from None
    files = tuple(sorted((os.path.relpath(p, root), b) for p, b in doomed))
    return Vacuumed(dry_run, tuple(expire), tuple(kept), files)


def marker_sequence(tbl, uid: str) -> int | None:
    """The sequence number of the newest snapshot of pyiceberg table ``tbl`` committed
    by the job ``uid`` (a ``streamjob.app-id`` of ``uid`` or ``uid:epoch``), None when
    none: the snapshot its exactly-once check reads back to."""
    from .sink import APP_ID

    best = None
    for snap in tbl.metadata.snapshots:
        app = (snap.summary.additional_properties if snap.summary else {}).get(APP_ID, "")
        if app == uid or app.startswith(uid + ":"):
            seq = snap.sequence_number or 0
            best = seq if best is None else max(best, seq)
    return best


def snapshot_as_of(ref, snapshot_id: int) -> int:
    """``snapshot_id`` checked against the table of ``ref`` (``VERSION AS OF n``: an
    Iceberg snapshot id, as Iceberg's own ``VERSION AS OF``).

    Raises:
        ConnectorError: no such table, or no such snapshot (names the current one).
    """
    tbl = load_table(ref)
    if tbl.snapshot_by_id(snapshot_id) is None:
        cur = tbl.current_snapshot()
        raise ConnectorError(
            f"{ref.where()} has no snapshot {snapshot_id} (never, or expired); "
            + (f"its current snapshot is {cur.snapshot_id}" if cur else "it has none yet"))
    return snapshot_id


def snapshot_before(ref, ms: int) -> int:
    """The snapshot of the table of ``ref`` current at time ``ms`` (ms since the epoch;
    ``TIMESTAMP AS OF``): the latest of its snapshot log at or before ``ms``.

    Raises:
        ConnectorError: no such table, or ``ms`` before its oldest snapshot left.
    """
    tbl = load_table(ref)
    snap = tbl.snapshot_as_of_timestamp(ms)
    if snap is None:
        raise ConnectorError(f"{ref.where()} has no snapshot at or before that time "
                             f"({ms} ms since the epoch)")
    return snap.snapshot_id


def batch_snapshot(ref, app_id: str, batch_id: int) -> int | None:
    """The id of the snapshot of the table of ``ref`` whose summary carries micro-batch
    ``batch_id`` of ``app_id``, None when none does (not committed, empty, or expired).

    Raises:
        ConnectorError: the table cannot be loaded.
    """
    from .sink import APP_ID, BATCH_ID

    for snap in load_table(ref).metadata.snapshots:
        props = snap.summary.additional_properties if snap.summary else {}
        if props.get(APP_ID) == app_id and props.get(BATCH_ID) == str(batch_id):
            return snap.snapshot_id
    return None


def last_replace(ref) -> int | None:
    """When (ms since the epoch, the snapshot's ``timestamp_ms``) the newest retained
    snapshot of operation ``replace`` (OPTIMIZE's rewrite, by anyone) of the table of
    ``ref`` was committed; None when none is retained.

    Raises:
        ConnectorError: the table cannot be loaded.
    """
    times = [s.timestamp_ms for s in load_table(ref).metadata.snapshots
             if s.summary is not None and str(getattr(s.summary.operation, "value",
                                                      s.summary.operation)) == "replace"]
    return max(times, default=None)
