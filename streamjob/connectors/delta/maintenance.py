"""Maintenance of a Delta table through delta-rs (issue 32; docs/connectors.md "Delta
Lake", "Maintenance"): compaction (``OPTIMIZE``), Z-ordering (``OPTIMIZE ... ZORDER
BY``) and the removal of files the table no longer references (``VACUUM``), as Delta
Lake's own commands do them.

OPTIMIZE commits its rewrite with ``dataChange`` false on every ``add`` and ``remove``
(Delta's protocol: the same rows in other files), so the Delta stream source
(:mod:`.log`) does not read it again and a job downstream sees no duplicate. VACUUM
changes no version: it deletes files, which a reader of an older version (a Delta
stream's checkpointed position) may still need; :func:`needed_files` says which, so
that the caller can refuse a VACUUM that would delete them. Local paths only, as the
sink.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from urllib.parse import unquote

from streamjob.connectors.delta import log as dlog
from streamjob.exceptions import ConnectorError

__all__ = ["DEFAULT_RETENTION_HOURS", "Optimized", "Vacuumed", "open_table", "optimize",
           "vacuum", "needed_files"]

DEFAULT_RETENTION_HOURS = 168
"""Delta's default retention of removed files (``delta.deletedFileRetentionDuration``,
``interval 1 week``): what VACUUM keeps without RETAIN, and the shortest retention a
table read by a Delta stream accepts."""


def _first_line(exc: BaseException) -> str:
    """delta-rs errors carry a Rust backtrace after their first line."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


@dataclass(frozen=True)
class Optimized:
    """What one OPTIMIZE did: the table ``version`` it committed (None: nothing to
    rewrite, no commit), data files added and removed, their bytes, and the number
    of partitions rewritten."""

    version: int | None
    files_added: int
    files_removed: int
    bytes_added: int
    bytes_removed: int
    partitions_optimized: int


@dataclass(frozen=True)
class Vacuumed:
    """What one VACUUM deleted (or, ``dry_run``, would delete): ``files`` as
    ``(path relative to the table, bytes)``, sorted by path. Delta's VACUUM removes
    files only, never table versions (the log's own cleanup does, by
    ``delta.logRetentionDuration``): ``expired`` and ``kept`` are None (the Iceberg
    VACUUM's snapshot ids, :class:`streamjob.connectors.iceberg.maintenance.Vacuumed`)."""

    dry_run: bool
    files: tuple[tuple[str, int], ...] = field(default=())
    expired: None = None
    kept: None = None

    @property
    def bytes(self) -> int:
        """The bytes of :attr:`files`."""
        return sum(size for _path, size in self.files)


def open_table(path: str, storage_options: dict | None = None):
    """The ``deltalake.DeltaTable`` at local ``path``, or at an object store's URI with
    delta-rs' ``storage_options`` (:meth:`.spec.DeltaTableSpec.storage_options`).

    Raises:
        ConnectorError: no Delta table there yet (a job creates it when it first starts),
            or its log cannot be loaded.
    """
    from deltalake import DeltaTable

    from deltalake.exceptions import TableNotFoundError

    if storage_options is None and dlog.latest_version(path) is None:
        raise ConnectorError(f"there is no Delta table at {path} yet (a job writing it "
                             "creates it when it first starts)")
    try:
        return DeltaTable(path, storage_options=storage_options)
    except TableNotFoundError:
        raise ConnectorError(f"there is no Delta table at {path} yet (a job writing it "
                             "creates it when it first starts)") from None
    except Exception as exc:  # DeltaError, OSError
        raise ConnectorError(f"cannot load the Delta table at {path}: {_first_line(exc)}") from None


def _stats(text) -> dict:
    """delta-rs reports a file group's statistics as JSON text."""
    if isinstance(text, dict):
        return text
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {}


def optimize(path: str, zorder_by: tuple[str, ...] = (),
             storage_options: dict | None = None) -> Optimized:
    """Compact the Delta table at ``path`` into files of Delta's target size (delta-rs
    ``optimize.compact``: 100 MiB), or rewrite it clustered on ``zorder_by``
    (``optimize.z_order``) — Delta Lake's ``OPTIMIZE [ZORDER BY]``. The commit carries
    ``dataChange`` false (same rows).

    Raises:
        ConnectorError: no table there, or delta-rs failed (a concurrent commit it could
            not reconcile, a column it cannot order by).
    """
    dt = open_table(path, storage_options)
    before = dt.version()
    try:
        metrics = dt.optimize.z_order(list(zorder_by)) if zorder_by else dt.optimize.compact()
    except Exception as exc:
        raise ConnectorError(f"OPTIMIZE of the Delta table at {path} failed: "
                             f"{_first_line(exc)}") from None
    added, removed = _stats(metrics.get("filesAdded")), _stats(metrics.get("filesRemoved"))
    changed = int(metrics.get("numFilesAdded", 0)) or int(metrics.get("numFilesRemoved", 0))
    version = dt.version() if changed and dt.version() != before else None
    return Optimized(version, int(metrics.get("numFilesAdded", 0)),
                     int(metrics.get("numFilesRemoved", 0)), int(added.get("totalSize", 0)),
                     int(removed.get("totalSize", 0)), int(metrics.get("partitionsOptimized", 0)))


def vacuum(path: str, retention_hours: int, dry_run: bool, enforce: bool = True,
           storage_options: dict | None = None) -> Vacuumed:
    """Delete the files of the Delta table at ``path`` that its current version does
    not reference and that were removed more than ``retention_hours`` ago (or never
    committed: a crashed writer's), as Delta Lake's VACUUM; ``dry_run`` only lists them.
    ``enforce`` False lets the retention be shorter than the table's
    ``delta.deletedFileRetentionDuration`` (Delta's ``retentionDurationCheck``; the
    caller decided it is safe).

    Raises:
        ConnectorError: no table there, or delta-rs refused or failed.
    """
    dt = open_table(path, storage_options)
    try:
        names = dt.vacuum(retention_hours=retention_hours, dry_run=True,
                          enforce_retention_duration=enforce)
    except Exception as exc:
        raise ConnectorError(f"VACUUM of the Delta table at {path} failed: "
                             f"{_first_line(exc)}") from None
    sizes = {}  # delta-rs lists removed files an earlier VACUUM deleted: not counted
    for name in names:
        if storage_options is not None:  # an object store: not listed again, bytes unknown
            sizes[name] = 0
            continue
        try:
            sizes[name] = os.path.getsize(dlog.file_path(path, name))
        except OSError:
            continue
    names = list(sizes)
    if not dry_run and names:
        try:  # what it deleted (a file the listing saw may be gone, none is added)
            names = dt.vacuum(retention_hours=retention_hours, dry_run=False,
                              enforce_retention_duration=enforce)
        except Exception as exc:
            raise ConnectorError(f"VACUUM of the Delta table at {path} failed: "
                                 f"{_first_line(exc)}") from None
    return Vacuumed(dry_run, tuple((unquote(n), sizes[n]) for n in sorted(names) if n in sizes))


def needed_files(path: str, version: int, snapshot: bool) -> set[str]:
    """The data files (paths relative to the table, decoded) a Delta stream reading the
    table at ``path`` from ``version`` still reads: that version's snapshot when it
    reads the snapshot (``snapshot``), and every file a version from ``version`` on
    added (:mod:`.source`'s offsets).

    Raises:
        ConnectorError: a version's commit is gone from the log (log retention), so the
            stream cannot resume anyway.
    """
    latest = dlog.latest_version(path)
    if latest is None:
        return set()
    out: set[str] = set()
    if snapshot:
        out.update(unquote(f.path) for f in dlog.snapshot_files(path, version))
    for v in range(version, latest + 1):
        out.update(unquote(f.path) for f in dlog.read_commit(path, v).adds)
    return out
