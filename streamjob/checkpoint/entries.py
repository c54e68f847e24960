"""Entries of a checkpoint's logs, one at a time: Spark's offset and commit log entries
read and written as Spark 4.3 writes them, whether the job keeps state, and which files
its file streams have committed (issue 34: ``run --until-idle`` and the restart's no-data
batch, :mod:`.watermark`). The file systems are :mod:`.store`'s: local paths with os
calls, other URIs through Hadoop in the process's Spark JVM.
"""

from __future__ import annotations

from ..exceptions import CheckpointError
from .store import filesystem, join_uri, os_reason, log_ids

__all__ = ["committed_source_files", "has_state", "read_entry", "uncommitted_batch",
           "write_entry"]


def read_entry(checkpoint_dir: str, log_name: str, batch_id: int) -> list[str] | None:
    """The lines of entry ``batch_id`` of the ``offsets`` or ``commits`` log, or None if
    it does not exist (or vanished while read: Spark's purge, the recorder's trim).

    Spark 4.3 writes both as text: a version line (``v1``), then a JSON line, the
    offset log's ``OffsetSeqMetadata`` (``batchWatermarkMs``, ``batchTimestampMs``,
    ``conf``) followed by one line per source (its offset JSON, or ``-``), the commit
    log's ``CommitMetadata`` (``nextBatchWatermarkMs``).

    Raises:
        CheckpointError: a Hadoop URI in a process without Spark.
    """
    try:
        return filesystem(checkpoint_dir).read_text(
            join_uri(checkpoint_dir, log_name, str(batch_id))).splitlines()
    except OSError:
        return None


def uncommitted_batch(checkpoint_dir: str) -> tuple[int, list[str], list[str] | None] | None:
    """The micro-batch a failed query was running: ``(batch id, end offsets, start
    offsets)`` of the newest entry of the ``offsets`` log that has no ``commits`` entry,
    or None (every planned batch committed, no log yet, or unreadable). Spark writes a
    batch's offsets ahead of running it (MicroBatchExecution), so after a failure inside
    the batch its entry is the newest and uncommitted. Offsets are the source lines of
    the entries (:func:`read_entry`; one JSON text per source in the query's source
    order, ``-`` for a source without one); ``start`` is the previous entry's (a batch
    starts where the one before ended), None for batch 0 or when that entry is gone.

    Raises:
        CheckpointError: the logs cannot be listed, or a Hadoop URI in a process
            without Spark.
    """
    planned = log_ids(checkpoint_dir, "offsets")
    committed = set(log_ids(checkpoint_dir, "commits"))
    if not planned or planned[-1] in committed:
        return None
    batch_id = planned[-1]
    end = read_entry(checkpoint_dir, "offsets", batch_id)
    if end is None:
        return None
    start = read_entry(checkpoint_dir, "offsets", batch_id - 1) if batch_id > 0 else None
    return batch_id, end[2:], (start[2:] if start is not None else None)


def write_entry(checkpoint_dir: str, log_name: str, batch_id: int, lines: list[str]) -> bool:
    """Write entry ``batch_id`` of the ``offsets`` or ``commits`` log as Spark's
    ``HDFSMetadataLog`` does: atomically, and never over an existing entry (False
    then). A stale checksum file of that name (``.<id>.crc``, left by a trim or
    truncation on a file system that kept it) is deleted first: Hadoop's checksummed
    local file system would fail to read the new entry against it; without one the
    entry is read unchecked.

    Raises:
        CheckpointError: the entry cannot be written.
    """
    fs = filesystem(checkpoint_dir)
    d = join_uri(checkpoint_dir, log_name)
    try:
        if fs.exists(join_uri(d, str(batch_id))):
            return False
        fs.delete(join_uri(d, f".{batch_id}.crc"))
        return fs.write_new(join_uri(d, str(batch_id)), "\n".join(lines))
    except OSError as exc:
        raise CheckpointError(f"cannot write {join_uri(d, str(batch_id))}: {os_reason(exc)}") from None


def has_state(checkpoint_dir: str) -> bool:
    """True if the checkpoint holds the state of a stateful operator (a
    ``state/<operator id>`` directory, which Spark creates for every operator that
    keeps state: aggregations, windows, sessions, deduplication, stream-stream joins,
    ``applyInPandasWithState``).

    Raises:
        CheckpointError: the directory cannot be listed, or a Hadoop URI in a process
            without Spark.
    """
    try:
        return any(n.isdigit() for n in filesystem(checkpoint_dir).list_names(
            join_uri(checkpoint_dir, "state")))
    except OSError as exc:
        raise CheckpointError(f"cannot list {join_uri(checkpoint_dir, 'state')}: {os_reason(exc)}") from None


def committed_source_files(checkpoint_dir: str) -> set[str]:
    """Paths of the files that Spark's file sources of a checkpoint have taken into a
    committed batch. Paths as Spark writes them (``file:///...`` URIs); an empty set
    when nothing is committed.

    A file source keeps its own log, ``sources/<i>/<n>`` (and ``.compact``;
    FileStreamSourceLog: a version line, then one JSON object per file with ``path``
    and ``batchId``), whose ids ``n`` are the source's, not the query's: a micro-batch
    without new files (a no-data batch) adds no entry. The query's offset log names
    the source's position instead: line ``i`` of ``offsets/<b>`` after the version
    and metadata lines is source ``i``'s offset, ``{"logOffset": n}`` for a file
    source (sources are numbered in the same plan order in both). So the files of
    source ``i`` that are committed are its log entries with ``batchId`` at most the
    ``logOffset`` of ``offsets/<b>``, ``b`` the newest batch in ``commits``.

    Raises:
        CheckpointError: the logs cannot be listed, or a Hadoop URI in a process
            without Spark.
    """
    import json as _json

    commits = log_ids(checkpoint_dir, "commits")
    if not commits:
        return set()
    lines = read_entry(checkpoint_dir, "offsets", commits[-1]) or []
    positions: dict[str, int] = {}
    for i, line in enumerate(lines[2:]):
        try:
            offset = _json.loads(line) if line.strip() != "-" else None
        except ValueError:
            continue
        if isinstance(offset, dict) and "logOffset" in offset:
            positions[str(i)] = int(offset["logOffset"])
    fs, done = filesystem(checkpoint_dir), set()
    for source, position in positions.items():
        folder = join_uri(checkpoint_dir, "sources", source)
        for name in fs.list_names(folder):
            if not (name.isdigit() or name.endswith(".compact")):
                continue
            try:
                entries = fs.read_text(join_uri(folder, name)).splitlines()[1:]
            except OSError:
                continue  # written as we read: the next poll sees it whole
            for line in entries:
                try:
                    entry = _json.loads(line)
                except ValueError:
                    continue
                if int(entry.get("batchId", 1 << 62)) <= position and "path" in entry:
                    done.add(entry["path"])
    return done
