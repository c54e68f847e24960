"""A job's checkpoint directory: Spark's offset log, commit log and state, per DESIGN §4.

A checkpoint is one committed micro-batch: Spark writes ``offsets/<id>`` before the batch
runs (write-ahead), the state versions during it, and ``commits/<id>`` after the sink has
taken the batch. Checkpoint id = batch id. Only a batch with a commit marker is complete.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from urllib.parse import urlparse

from ..exceptions import CheckpointError
from ..home import is_local_uri

log = logging.getLogger(__name__)


def _local_path(uri: str) -> Path:
    return Path(urlparse(uri).path if uri.startswith("file:") else uri)


def is_committed(checkpoint_dir: str, batch_id: int) -> bool:
    """True if Spark wrote the commit marker of ``batch_id`` (non-local URIs: assumed)."""
    if not is_local_uri(checkpoint_dir):
        return True
    return (_local_path(checkpoint_dir) / "commits" / str(batch_id)).exists()


def log_ids(checkpoint_dir: str, log_name: str) -> list[int]:
    """Batch ids present in ``offsets`` or ``commits`` of a local checkpoint, ascending."""
    d = _local_path(checkpoint_dir) / log_name
    if not d.is_dir():
        return []
    return sorted(int(p.name) for p in d.iterdir() if p.name.isdigit())


def purge(checkpoint_dir: str, root: str) -> bool:
    """Delete a job's checkpoint directory; never anything outside ``root``.

    Returns True if something was deleted.

    Raises:
        CheckpointError: the directory is not strictly inside the checkpoint root, or
            cannot be deleted.
    """
    if not is_local_uri(checkpoint_dir):
        return _purge_hadoop(checkpoint_dir, root)
    target = _local_path(checkpoint_dir).resolve()
    base = _local_path(root).resolve()
    if target == base or base not in target.parents:
        raise CheckpointError(f"refusing to delete {target}: it is not inside the checkpoint root {base}")
    if not target.exists():
        return False
    try:
        shutil.rmtree(target)
    except OSError as exc:
        raise CheckpointError(f"cannot delete checkpoint directory {target}: {exc.strerror}") from None
    return True


def _purge_hadoop(checkpoint_dir: str, root: str) -> bool:
    """Delete a checkpoint on a Hadoop file system through the running JVM."""
    if not checkpoint_dir.rstrip("/").startswith(root.rstrip("/") + "/"):
        raise CheckpointError(f"refusing to delete {checkpoint_dir}: not inside {root}")
    from ..engine import _spark  # only reachable when a session exists

    if _spark is None:
        raise CheckpointError(f"deleting {checkpoint_dir} needs the job manager's Spark session")
    jvm = _spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(checkpoint_dir)
    fs = path.getFileSystem(_spark._jsc.hadoopConfiguration())
    return bool(fs.delete(path, True))


def trim_logs(checkpoint_dir: str, keep_from: int) -> int:
    """Delete commit log entries of batches before ``keep_from`` and offset log entries
    before ``keep_from - 1``.

    Spark purges these logs when the *next* batch starts, so at rest it holds one batch
    more than ``minBatchesToRetain``; trimming right after a checkpoint is recorded makes
    the commit log hold exactly the retained checkpoints, like the backend. The offset
    log keeps one entry more: checkpoint n read from the offsets of n-1 to those of n,
    and Spark reads ``offsets/<n-1>`` to resume at n (MicroBatchExecution
    ``populateStartOffsets``), so resuming from — or restoring — the oldest retained
    checkpoint needs it. Returns the number of files deleted (local checkpoints only).
    """
    if not is_local_uri(checkpoint_dir):
        return 0
    return (_delete_entries(checkpoint_dir, "offsets", lambda i: i < keep_from - 1)
            + _delete_entries(checkpoint_dir, "commits", lambda i: i < keep_from))


def truncate_after(checkpoint_dir: str, checkpoint_id: int) -> int:
    """Delete the offset and commit log entries of batches after ``checkpoint_id``, so
    that Spark resumes from it (``START ... FROM CHECKPOINT n``, DESIGN §4). State
    versions of later batches stay on disk and are overwritten when those batches run
    again. Returns the number of files deleted (local checkpoints only).

    Raises:
        CheckpointError: a log file cannot be deleted.
    """
    if not is_local_uri(checkpoint_dir):
        raise CheckpointError(f"restoring a checkpoint on {checkpoint_dir} is not supported yet")
    return sum(_delete_entries(checkpoint_dir, log, lambda i: i > checkpoint_id)
               for log in ("offsets", "commits"))


def _delete_entries(checkpoint_dir: str, log_name: str, doomed) -> int:
    """Delete the entries (and their ``.crc`` files) of ``offsets`` or ``commits`` whose
    batch id satisfies ``doomed(id)``; returns the number of files deleted.

    Raises:
        CheckpointError: a file exists but cannot be deleted.
    """
    d = _local_path(checkpoint_dir) / log_name
    deleted = 0
    for batch_id in log_ids(checkpoint_dir, log_name):
        if not doomed(batch_id):
            continue
        for name in (str(batch_id), f".{batch_id}.crc"):
            try:
                (d / name).unlink()
                deleted += 1
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise CheckpointError(f"cannot delete {d / name}: {exc.strerror}") from None
    return deleted


def committed_offsets(checkpoint_dir: str):
    """``(id, source offset lines, started, ended)`` of the newest committed batch of a
    local checkpoint, or None: the offsets file's JSON lines after Spark's version and
    metadata lines (one per source), and the offsets/commit files' modification times as
    aware UTC datetimes."""
    import datetime as _dt

    if not is_local_uri(checkpoint_dir):
        return None
    commits = log_ids(checkpoint_dir, "commits")
    if not commits:
        return None
    batch_id = commits[-1]
    base = _local_path(checkpoint_dir)
    try:
        lines = (base / "offsets" / str(batch_id)).read_text().splitlines()
        started = (base / "offsets" / str(batch_id)).stat().st_mtime
        ended = (base / "commits" / str(batch_id)).stat().st_mtime
    except OSError:
        return None
    utc = _dt.timezone.utc
    return (batch_id, [ln for ln in lines[2:] if ln.strip() and ln.strip() != "-"],
            _dt.datetime.fromtimestamp(started, utc), _dt.datetime.fromtimestamp(ended, utc))
