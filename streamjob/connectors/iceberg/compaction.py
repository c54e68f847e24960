"""Compaction of an Iceberg table through pyiceberg (issue 32; docs/connectors.md "Iceberg
table", "Maintenance"): ``OPTIMIZE TABLE t`` does what Iceberg's own ``rewriteDataFiles``
action does with its bin-pack strategy.

What it rewrites: the live data files of the current snapshot, per partition of the
table's current partition spec, that are smaller than 75% of the target file size
(Iceberg's ``min-file-size-bytes`` default ratio); a partition with fewer than two
such files is left as it is. The target is the table property
``write.target-file-size-bytes`` (Iceberg's default, 512 MB). A partition's small
files are read in bins of at most the target's bytes on disk (a bin is in memory at
once), and each bin is written back as files of about the target size on disk.
Files of an older partition spec are left as they are. A snapshot with delete files
(rows deleted by position or equality, which pyiceberg does not write) is refused.

The commit: ONE snapshot with operation ``replace`` that removes the files read and
adds the files written, the rows unchanged (their count is checked before the
commit). Iceberg streams skip ``replace`` snapshots (:mod:`.snapshots`), and the
summary carries no ``streamjob.app-id``, so a job writing the table still finds its
last batch behind it (:func:`.sink.last_batch`). A commit racing another writer's is
retried by pyiceberg against the new current snapshot (``commit.retry.num-retries``)
after the validation Iceberg's ``RewriteFiles`` does: every removed file is still
live and no delete file was added for it. So a job's concurrent append is kept (it
is in the new parent), and a concurrent overwrite or delete of the same files fails
the statement with nothing changed (the files written are deleted again).

pyiceberg 0.12 has no public ``replace`` producer (``UpdateSnapshot`` offers append,
overwrite and delete only, and its snapshot summary refuses the ``replace``
operation): :func:`_replace_files` and :func:`_write_data_files` are the only places
that use its private classes, checked against :data:`CHECKED_PYICEBERG`
(tests/unit/test_iceberg_compaction.py fails on any other version).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

from streamjob.connectors.iceberg.catalog import first_line, load_table
from streamjob.exceptions import ConnectorError

__all__ = ["CHECKED_PYICEBERG", "DEFAULT_TARGET_BYTES", "SMALL_RATIO", "Compacted", "compact"]

CHECKED_PYICEBERG = "0.12"
"""The pyiceberg release (major.minor) whose private snapshot producer
:func:`_replace_files` uses; setup.cfg pins pyiceberg to it."""

DEFAULT_TARGET_BYTES = 512 * 1024 * 1024
"""Iceberg's default ``write.target-file-size-bytes`` (bytes)."""

SMALL_RATIO = 0.75
"""A file smaller than this fraction of the target is rewritten (Iceberg's
``min-file-size-bytes`` default ratio)."""


@dataclass(frozen=True)
class Compacted:
    """What one compaction did: the ``replace`` snapshot id it committed (None: nothing
    to rewrite, no commit), data files added and removed, their bytes on disk, and the
    number of partitions rewritten (an unpartitioned table is one)."""

    snapshot_id: int | None
    files_added: int
    files_removed: int
    bytes_added: int
    bytes_removed: int
    partitions_optimized: int

    @property
    def version(self) -> int | None:
        """:attr:`snapshot_id`: what ``VERSION AS OF`` takes for an Iceberg table (the
        ``version`` of the optimize JSON shape)."""
        return self.snapshot_id


def _bins(tasks: list, target: int) -> list[list]:
    """``tasks`` (scan tasks of one partition, sorted by path) in bins of at most
    ``target`` bytes on disk; a last bin of one file joins the one before; bins of
    one file are dropped (nothing to merge)."""
    bins: list[list] = [[]]
    size = 0
    for t in tasks:
        n = t.file.file_size_in_bytes
        if bins[-1] and size + n > target:
            bins.append([])
            size = 0
        bins[-1].append(t)
        size += n
    if len(bins) > 1 and len(bins[-1]) == 1:
        bins[-2] += bins.pop()
    return [b for b in bins if len(b) > 1]


def _local(path: str) -> str:
    return unquote(urlparse(path).path) if path.startswith("file:") else path


def compact(ref, target_bytes: int | None = None) -> Compacted:
    """Compact the Iceberg table of ``ref`` (:class:`.spec.IcebergTableRef`): the module
    docstring.

    Args:
        target_bytes: the target file size in bytes (None: the table's
            ``write.target-file-size-bytes``, else :data:`DEFAULT_TARGET_BYTES`).

    Raises:
        ConnectorError: no such table, the catalog unreachable, delete files in the
            current snapshot, a file unreadable, or the commit failed (a concurrent
            commit removed or changed rows of the files rewritten: nothing changed, run
            it again).
    """
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan

    tbl = load_table(ref)
    snap = tbl.current_snapshot()
    if snap is None:
        return Compacted(None, 0, 0, 0, 0, 0)
    try:
        target = int(target_bytes or tbl.metadata.properties.get(
            "write.target-file-size-bytes", DEFAULT_TARGET_BYTES))
    except ValueError:
        raise ConnectorError(f"{ref.where()}: its write.target-file-size-bytes is no "
                             "number of bytes") from None
    spec_id = tbl.metadata.default_spec_id
    groups: dict = {}
    try:
        tasks = list(tbl.scan(snapshot_id=snap.snapshot_id).plan_files())
    except Exception as exc:
        raise ConnectorError(f"OPTIMIZE of {ref.where()}: cannot read its manifests: "
                             f"{first_line(exc)}") from None
    if any(t.delete_files for t in tasks):
        raise ConnectorError(
            f"OPTIMIZE of {ref.where()} is refused: snapshot {snap.snapshot_id} has delete "
            "files (rows deleted or updated by position or equality), which its compaction "
            "does not apply; compact it with Iceberg's own tools (Spark's "
            "rewrite_data_files procedure)")
    for t in tasks:
        f = t.file
        if f.spec_id == spec_id and f.file_size_in_bytes < target * SMALL_RATIO:
            groups.setdefault(f.partition, []).append(t)
    bins = {key: _bins(sorted(ts, key=lambda t: t.file.file_path), target)
            for key, ts in groups.items()}
    bins = {key: b for key, b in bins.items() if b}
    if not bins:
        return Compacted(None, 0, 0, 0, 0, 0)
    removed = [t.file for b in bins.values() for one in b for t in one]
    written: list = []
    try:
        for b in (one for b in bins.values() for one in b):
            rows = ArrowScan(tbl.metadata, tbl.io, tbl.schema(), AlwaysTrue()).to_table(b)
            disk = sum(t.file.file_size_in_bytes for t in b)
            # pyiceberg sizes files by Arrow bytes in memory: scale the target by this
            # bin's ratio so that the files on disk come out near the target
            arrow_target = max(1, int(target * rows.nbytes / max(disk, 1)))
            written += _write_data_files(tbl, rows, arrow_target)
        want = sum(f.record_count for f in removed)
        got = sum(f.record_count for f in written)
        if want != got:
            raise ConnectorError(f"OPTIMIZE of {ref.where()}: the files written hold {got} "
                                 f"rows, the files read {want}; nothing committed")
        new_id = _replace_files(tbl, removed, written)
    except Exception as exc:
        _delete(written)
        if isinstance(exc, ConnectorError):
            raise
        from pyiceberg.exceptions import CommitFailedException, ValidationException

        if isinstance(exc, (CommitFailedException, ValidationException)):
            raise ConnectorError(
                f"OPTIMIZE of {ref.where()} failed: a concurrent commit changed the files it "
                f"rewrote ({first_line(exc)}); nothing changed, run it again") from None
        raise ConnectorError(f"OPTIMIZE of {ref.where()} failed: {first_line(exc)}") from None
    return Compacted(new_id, len(written), len(removed),
                     sum(f.file_size_in_bytes for f in written),
                     sum(f.file_size_in_bytes for f in removed), len(bins))


def _delete(files) -> None:
    """Delete the data files written for a commit that did not happen (best effort:
    what is left is an orphan VACUUM removes)."""
    for f in files:
        try:
            os.remove(_local(f.file_path))
        except OSError:
            pass


# -- pyiceberg internals (checked against CHECKED_PYICEBERG) -----------------------------

def _write_data_files(tbl, rows, arrow_target: int) -> list:
    """Write ``rows`` (a ``pa.Table`` of one partition of ``tbl``'s current spec) as new
    data files of ``tbl`` of about ``arrow_target`` Arrow bytes each; returns their
    pyiceberg ``DataFile`` records (uncommitted).

    Why private: pyiceberg 0.12 writes data files only inside an append or overwrite
    (``Transaction.append`` calls ``pyiceberg.io.pyarrow._dataframe_to_data_files``); the
    same function is called here with the target size set on a copy of the metadata
    (``write.target-file-size-bytes``), so the files are named, partitioned and
    described exactly as an append's.
    """
    from pyiceberg.io.pyarrow import _dataframe_to_data_files

    props = dict(tbl.metadata.properties)
    props["write.target-file-size-bytes"] = str(arrow_target)
    meta = tbl.metadata.model_copy(update={"properties": props})
    return list(_dataframe_to_data_files(table_metadata=meta, df=rows, io=tbl.io))


def _replace_files(tbl, removed: list, added: list) -> int:
    """Commit one ``replace`` snapshot of ``tbl``'s main branch that removes the data
    files ``removed`` and adds ``added`` (pyiceberg ``DataFile`` records); returns its
    snapshot id.

    Why private: pyiceberg 0.12's public ``UpdateSnapshot`` has no replace (rewrite)
    producer, and ``update_snapshot_summaries`` raises for ``Operation.REPLACE``. Its
    ``_OverwriteFiles`` producer does the manifest work of a rewrite (removed entries
    marked deleted, manifests holding them rewritten, others kept); the subclass below
    (1) labels the snapshot ``replace`` after the summary is computed as for an
    overwrite (the totals are the same), and (2) validates a retried commit as Iceberg's
    ``RewriteFiles`` does (the removed files still live, no new delete file for them),
    instead of the ``serializable`` check of an overwrite, which would fail on any
    concurrent append. Checked against pyiceberg :data:`CHECKED_PYICEBERG`.

    Raises:
        CommitFailedException, ValidationException: (pyiceberg's) the commit lost a race
            it could not retry; nothing committed.
    """
    from pyiceberg.table.snapshots import Operation, Summary
    from pyiceberg.table.update.snapshot import _OverwriteFiles
    from pyiceberg.table.update.validate import (_validate_data_files_exist,
                                                 _validate_no_new_deletes_for_data_files)

    class _ReplaceFiles(_OverwriteFiles):
        def _summary(self, snapshot_properties=None):
            self._operation = Operation.OVERWRITE
            try:
                summary = super()._summary(snapshot_properties or {})
            finally:
                self._operation = Operation.REPLACE
            return Summary(Operation.REPLACE, **summary.additional_properties)

        def _validate_concurrency(self) -> None:
            window = self._commit_window
            if window is None or window.is_empty() or window.head is None:
                return
            table = self._transaction._table
            files = set(self._deleted_data_files)
            _validate_data_files_exist(table, window.head, files, window.base)
            _validate_no_new_deletes_for_data_files(table, window.head, None, files,
                                                    window.base)

    with tbl.transaction() as tx:
        producer = _ReplaceFiles(operation=Operation.REPLACE, transaction=tx, io=tbl.io)
        for f in removed:
            producer.delete_data_file(f)
        for f in added:
            producer.append_data_file(f)
        producer.commit()
    return producer.snapshot_id
