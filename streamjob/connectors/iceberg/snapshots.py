"""What an Iceberg table's snapshots did, for the Iceberg stream source (:mod:`.source`):
the data files a snapshot added, the data files of a whole snapshot, and which
snapshots a stream may read. No Spark import here.

Iceberg's snapshot operations (the spec's ``summary.operation``): ``append`` only adds
data files (read); ``replace`` rewrites files without changing the rows (compaction;
not read, as Iceberg's own Spark source skips it); ``overwrite`` and ``delete`` change
or remove rows, which a stream of appends cannot read: :class:`NotAppendOnly` names the
snapshot (Iceberg's Spark source fails the same way unless told to skip them).
"""

from __future__ import annotations

from streamjob.exceptions import ConnectorError, NotAppendOnly

__all__ = ["read_between", "added_files", "snapshot_files"]


def _op(snap) -> str:
    op = snap.summary.operation if snap.summary is not None else None
    return getattr(op, "value", str(op or "append"))


def read_between(tbl, start_id: int | None, end_id: int, where: str) -> list:
    """The snapshots of ``tbl`` after ``start_id`` (exclusive; None: from the first) up
    to ``end_id`` (inclusive), oldest first, whose rows a stream reads (``append``;
    ``replace`` left out).

    Raises:
        NotAppendOnly: an ``overwrite`` or ``delete`` snapshot among them (names it).
        ConnectorError: ``start_id`` is no ancestor of ``end_id`` (the table was rolled
            back or replaced), or ``end_id`` is unknown.
    """
    from pyiceberg.table.snapshots import ancestors_of

    end = tbl.metadata.snapshot_by_id(end_id)
    if end is None:
        raise ConnectorError(f"{where} has no snapshot {end_id} (expired?)")
    chain = []
    for snap in ancestors_of(end, tbl.metadata):
        if start_id is not None and snap.snapshot_id == start_id:
            break
        chain.append(snap)
    else:
        if start_id is not None:
            raise ConnectorError(
                f"{where}: the job's position, snapshot {start_id}, is no ancestor of the "
                f"current snapshot {end_id} (the table was rolled back, replaced, or its "
                "snapshots expired). Start the job on a new checkpoint (DROP and CREATE "
                "STREAMJOB) to read it again")
    out = []
    for snap in reversed(chain):
        op = _op(snap)
        if op in ("overwrite", "delete"):
            raise NotAppendOnly(
                f"{where} changed or deleted rows in snapshot {snap.snapshot_id} "
                f"(operation {op}, sequence number {snap.sequence_number}); an Iceberg "
                "stream reads appends only")
        if op == "append":
            out.append(snap)
    return out


def added_files(tbl, snap) -> list[str]:
    """The paths (as the manifests write them) of the data files snapshot ``snap`` of
    ``tbl`` added, sorted.

    Raises:
        ConnectorError: a manifest cannot be read (names it).
    """
    from pyiceberg.manifest import ManifestContent, ManifestEntryStatus

    paths = []
    try:
        for m in snap.manifests(tbl.io):
            if m.content != ManifestContent.DATA or m.added_snapshot_id != snap.snapshot_id:
                continue
            for e in m.fetch_manifest_entry(tbl.io, discard_deleted=True):
                if e.status == ManifestEntryStatus.ADDED and e.snapshot_id == snap.snapshot_id:
                    paths.append(e.data_file.file_path)
    except OSError as exc:
        raise ConnectorError(f"cannot read the manifests of snapshot {snap.snapshot_id}: "
                             f"{exc}") from None
    return sorted(paths)


def snapshot_files(tbl, snapshot_id: int, where: str) -> list[str]:
    """The data files of the whole snapshot ``snapshot_id`` of ``tbl``, sorted.

    Raises:
        ConnectorError: the snapshot has delete files (rows deleted by position or
            equality, which the stream source does not apply).
    """
    tasks = list(tbl.scan(snapshot_id=snapshot_id).plan_files())
    if any(t.delete_files for t in tasks):
        raise ConnectorError(
            f"{where}: snapshot {snapshot_id} has delete files (rows deleted or updated), "
            "which the Iceberg stream source does not apply; start the stream from "
            "\"iceberg.starting\"=\"latest\" (START ... FROM LATEST)")
    return sorted(t.file.file_path for t in tasks)
