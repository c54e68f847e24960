"""A job's checkpoint directory: Spark's offset log, commit log and state, per DESIGN §4.

Every micro-batch commits the same way: Spark writes ``offsets/<id>`` before the batch runs
(write-ahead), the state versions during it, and ``commits/<id>`` after the sink has taken
the batch; only a batch with a commit marker is complete. A checkpoint is the committed
micro-batch the recorder picks once per checkpoint interval (checkpoint/recorder.py), and
its id is that batch's id; the logs and state are trimmed back to the oldest retained one.

The checkpoint root (``spark.morphling.taskstate.checkpoint.directory``) may be a local
path, a ``file:`` URI or any Hadoop URI (``hdfs://``, ``s3a://``, ``abfs://``,
``viewfs://`` ...). Local directories are read and trimmed with os calls; any other URI
goes through Hadoop's ``FileSystem`` in the JVM of the process's Spark session — the file
system Spark itself writes the checkpoint with, configured by the same ``spark.hadoop.*``
settings (:mod:`.filesystems`). Those operations need the process to host Spark (the job
manager, ``streamjob run``, the shell; a client starts its own on the first such
operation, :func:`.filesystems.start_on_demand`); elsewhere they raise
:class:`CheckpointError`. Every guarantee built on them (identity, fingerprint, expiry,
DROP's ownership rule, ``FROM CHECKPOINT n``, savepoints) therefore holds on either.
"""

from __future__ import annotations

import logging
import re
import shutil

from ..exceptions import CheckpointError
from ..home import is_local_uri
from .filesystems import filesystem, join_uri, local_path, os_reason

log = logging.getLogger(__name__)


def read_file(uri: str) -> str | None:
    """The text of a small file in a checkpoint directory (local or Hadoop), or None if
    it does not exist.

    Raises:
        CheckpointError: it exists but cannot be read, or a Hadoop URI in a process
            without Spark.
    """
    fs = filesystem(uri)
    try:
        return fs.read_text(uri) if fs.exists(uri) else None
    except OSError as exc:
        raise CheckpointError(f"cannot read {uri}: {os_reason(exc)}") from None


def write_file(uri: str, text: str) -> None:
    """Replace a small file of a checkpoint directory (local or Hadoop) with ``text``.

    Raises:
        CheckpointError: it cannot be written, or a Hadoop URI in a process without Spark.
    """
    try:
        filesystem(uri).write_text(uri, text)
    except OSError as exc:
        raise CheckpointError(f"cannot write {uri}: {os_reason(exc)}") from None


def rename(src: str, dst: str) -> None:
    """Rename a checkpoint or savepoint folder (both on one file system, local or Hadoop).

    Raises:
        CheckpointError: it cannot be renamed (``dst`` exists, or the file system refused).
    """
    try:
        filesystem(src).rename(src, dst)
    except OSError as exc:
        raise CheckpointError(f"cannot rename {src} to {dst}: {os_reason(exc)}") from None


def delete_file(uri: str) -> bool:
    """Delete one file of a checkpoint or savepoint folder (local or Hadoop); False if it
    did not exist.

    Raises:
        CheckpointError: it cannot be deleted, or a Hadoop URI in a process without Spark.
    """
    try:
        return bool(filesystem(uri).delete(uri))
    except OSError as exc:
        raise CheckpointError(f"cannot delete {uri}: {os_reason(exc)}") from None


def walk_files(folder: str) -> list[str]:
    """The paths of every file under ``folder``, relative to it and ``/``-separated,
    sorted; [] if it does not exist.

    Raises:
        CheckpointError: a folder cannot be listed, or a Hadoop URI in a process without
            Spark.
    """
    fs = filesystem(folder)
    found: list[str] = []

    def visit(uri: str, prefix: str) -> None:
        try:
            names = fs.list_names(uri)
            for name in sorted(names):
                child = join_uri(uri, name)
                if fs.is_dir(child):
                    visit(child, f"{prefix}{name}/")
                else:
                    found.append(prefix + name)
        except OSError as exc:
            raise CheckpointError(f"cannot list {uri}: {os_reason(exc)}") from None

    visit(folder, "")
    return found


def copy_file(src: str, dst: str) -> None:
    """Copy one file between checkpoint and savepoint folders (local paths and ``file:``
    URIs with os calls, any other Hadoop URI through the Spark session's file system).

    Raises:
        FileNotFoundError: ``src`` does not exist (a local one; the caller may retry);
        CheckpointError: any other failure, naming both paths.
    """
    fs = filesystem(src if not is_local_uri(src) else dst)  # Hadoop's copies if either is
    try:
        fs.copy(src, dst)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if "No such file" in str(exc):
            raise FileNotFoundError(str(exc)) from None
        raise CheckpointError(f"cannot copy {src} to {dst}: {os_reason(exc)}") from None


def holds_anything(checkpoint_dir: str) -> bool:
    """True if the directory exists and holds any entry (a file or a folder).

    Raises:
        CheckpointError: it cannot be listed, or a Hadoop URI in a process without Spark.
    """
    try:
        return bool(filesystem(checkpoint_dir).list_names(checkpoint_dir))
    except OSError as exc:
        raise CheckpointError(f"cannot list {checkpoint_dir}: {os_reason(exc)}") from None


def is_committed(checkpoint_dir: str, batch_id: int) -> bool:
    """True if Spark wrote the commit marker of ``batch_id``.

    Raises:
        CheckpointError: a Hadoop URI in a process without Spark.
    """
    try:
        return filesystem(checkpoint_dir).exists(join_uri(checkpoint_dir, "commits", str(batch_id)))
    except OSError as exc:
        raise CheckpointError(f"cannot read checkpoint {checkpoint_dir}: {os_reason(exc)}") from None


def log_ids(checkpoint_dir: str, log_name: str) -> list[int]:
    """Batch ids present in ``offsets`` or ``commits`` of a checkpoint, ascending
    (none if the directory does not exist).

    Raises:
        CheckpointError: the directory cannot be listed, or a Hadoop URI in a process
            without Spark.
    """
    try:
        names = filesystem(checkpoint_dir).list_names(join_uri(checkpoint_dir, log_name))
    except OSError as exc:
        raise CheckpointError(f"cannot list {join_uri(checkpoint_dir, log_name)}: {os_reason(exc)}") from None
    return sorted(int(n) for n in names if n.isdigit())


def purge(checkpoint_dir: str, root: str) -> bool:
    """Delete a job's checkpoint directory; never anything outside ``root``.

    Returns True if something was deleted.

    Raises:
        CheckpointError: the directory is not strictly inside the checkpoint root, or
            cannot be deleted.
    """
    if not is_local_uri(checkpoint_dir):
        return _purge_hadoop(checkpoint_dir, root)
    target = local_path(checkpoint_dir).resolve()
    base = local_path(root).resolve()
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
    try:
        return filesystem(checkpoint_dir).delete(checkpoint_dir, recursive=True)
    except OSError as exc:
        raise CheckpointError(f"cannot delete checkpoint directory {checkpoint_dir}: "
                              f"{os_reason(exc)}") from None


def trim_logs(checkpoint_dir: str, keep_from: int) -> int:
    """Delete commit log entries of batches before ``keep_from`` and offset log entries
    before ``keep_from - 1``.

    Spark purges these logs when the *next* batch starts, so at rest it holds one batch
    more than ``minBatchesToRetain``; trimming right after a checkpoint is recorded makes
    the commit log hold exactly the retained checkpoints, like the backend. The offset
    log keeps one entry more: checkpoint n read from the offsets of n-1 to those of n,
    and Spark reads ``offsets/<n-1>`` to resume at n (MicroBatchExecution
    ``populateStartOffsets``), so resuming from — or restoring — the oldest retained
    checkpoint needs it. Returns the number of files deleted.

    Raises:
        CheckpointError: a log cannot be listed or a file cannot be deleted.
    """
    return (_delete_entries(checkpoint_dir, "offsets", lambda i: i < keep_from - 1)
            + _delete_entries(checkpoint_dir, "commits", lambda i: i < keep_from))


_STATE_FILE = re.compile(r"^(\d+)\.(delta|snapshot)$")


def trim_state(checkpoint_dir: str, oldest_checkpoint: int) -> int:
    """Delete the state versions that no retained checkpoint needs: in every state store
    directory (``state/<operator>/<partition>[/<store>]``) of Spark's HDFS-backed state
    store, the ``<v>.delta`` and ``<v>.snapshot`` files (and their ``.crc``) older than
    the newest snapshot at or below version ``oldest_checkpoint + 1``. Batch n writes
    state version n + 1, and Spark loads a version from the newest snapshot at or below it
    plus the deltas after it (``HDFSBackedStateStoreProvider``; its own cleanup uses the
    same rule with ``minBatchesToRetain``). A directory without such a snapshot, and the
    RocksDB state store's files, are left to Spark. Returns the number of files deleted.

    Raises:
        CheckpointError: a directory cannot be listed or a file cannot be deleted.
    """
    fs = filesystem(checkpoint_dir)
    needed = oldest_checkpoint + 1
    deleted = 0

    def visit(folder: str, depth: int) -> None:
        nonlocal deleted
        try:
            names = fs.list_names(folder)
        except OSError as exc:
            raise CheckpointError(f"cannot list {folder}: {os_reason(exc)}") from None
        versions = [(int(m.group(1)), m.group(2), name) for name in names
                    if (m := _STATE_FILE.match(name))]
        snapshots = [v for v, kind, _ in versions if kind == "snapshot" and v <= needed]
        if snapshots:
            keep_from = max(snapshots)
            for v, _, name in versions:
                if v < keep_from:
                    for doomed in (name, f".{name}.crc"):
                        try:
                            deleted += bool(fs.delete(join_uri(folder, doomed)))
                        except OSError as exc:
                            raise CheckpointError(f"cannot delete {join_uri(folder, doomed)}: "
                                                  f"{os_reason(exc)}") from None
        if depth < 3:
            for name in names:
                if not name.startswith(("_", ".")) and not _STATE_FILE.match(name) \
                        and "." not in name:
                    visit(join_uri(folder, name), depth + 1)

    if fs.exists(join_uri(checkpoint_dir, "state")):
        visit(join_uri(checkpoint_dir, "state"), 0)
    return deleted


def truncate_after(checkpoint_dir: str, checkpoint_id: int) -> int:
    """Delete the offset and commit log entries of batches after ``checkpoint_id``, so
    that Spark resumes from it in the same directory, under the same checkpoint epoch
    (``START ... FROM CHECKPOINT n`` copies the checkpoint under a new epoch instead:
    checkpoint/savepoint.py ``rewind_into``). State
    versions of later batches stay on disk and are overwritten when those batches run
    again. Returns the number of files deleted.

    Raises:
        CheckpointError: a log file cannot be deleted, or the checkpoint is on a Hadoop
            URI and this process hosts no Spark session.
    """
    return sum(_delete_entries(checkpoint_dir, log, lambda i: i > checkpoint_id)
               for log in ("offsets", "commits"))


def _delete_entries(checkpoint_dir: str, log_name: str, doomed) -> int:
    """Delete the entries (and their ``.crc`` files) of ``offsets`` or ``commits`` whose
    batch id satisfies ``doomed(id)``; returns the number of files deleted (a checksummed
    Hadoop file system such as ``file:`` through viewfs deletes the ``.crc`` with its file,
    which then counts once).

    Raises:
        CheckpointError: a file exists but cannot be deleted.
    """
    fs = filesystem(checkpoint_dir)
    d = join_uri(checkpoint_dir, log_name)
    deleted = 0
    for batch_id in log_ids(checkpoint_dir, log_name):
        if not doomed(batch_id):
            continue
        for name in (str(batch_id), f".{batch_id}.crc"):
            try:
                deleted += bool(fs.delete(join_uri(d, name)))
            except OSError as exc:
                raise CheckpointError(f"cannot delete {join_uri(d, name)}: {os_reason(exc)}") from None
    return deleted


def committed_offsets(checkpoint_dir: str):
    """``(id, source offset lines, started, ended)`` of the newest committed batch of a
    checkpoint, or None: the offsets file's JSON lines after Spark's version and metadata
    lines (one per source), and the offsets/commit files' modification times as aware UTC
    datetimes.

    Raises:
        CheckpointError: the logs cannot be listed, or a Hadoop URI in a process
            without Spark.
    """
    import datetime as _dt

    commits = log_ids(checkpoint_dir, "commits")
    if not commits:
        return None
    batch_id = commits[-1]
    fs = filesystem(checkpoint_dir)
    offsets = join_uri(checkpoint_dir, "offsets", str(batch_id))
    try:
        lines = fs.read_text(offsets).splitlines()
        started = fs.mtime(offsets)
        ended = fs.mtime(join_uri(checkpoint_dir, "commits", str(batch_id)))
    except OSError:
        return None
    utc = _dt.timezone.utc
    return (batch_id, [ln for ln in lines[2:] if ln.strip() and ln.strip() != "-"],
            _dt.datetime.fromtimestamp(started, utc), _dt.datetime.fromtimestamp(ended, utc))


#: A file Spark's atomic write leaves behind when its process dies mid-write: the temp
#: file ``.<batch>.<uuid>.tmp`` of CheckpointFileManager.createAtomic (written, then
#: renamed to ``<batch>``) and its checksum ``..<batch>.<uuid>.tmp.crc``.
_TORN = re.compile(r"^\.+\d+\.[0-9a-f-]+\.tmp(\.crc)?$")


def remove_torn_writes(checkpoint_dir: str) -> list[str]:
    """Delete the temp files a SIGKILL left in ``offsets`` and ``commits`` of a checkpoint
    while Spark wrote an entry atomically (``_TORN``); returns the names deleted.

    They are never part of the checkpoint (Spark reads only ``<batch>`` files), but Spark
    4.3 refuses to start a query at batch 0 when ``offsets`` holds any file
    (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY), so a process killed while writing
    ``offsets/0`` left a job that could never start again (found by the chaos test).

    Raises:
        CheckpointError: a directory cannot be listed or a file deleted.
    """
    fs = filesystem(checkpoint_dir)
    deleted = []
    for log_name in ("offsets", "commits"):
        d = join_uri(checkpoint_dir, log_name)
        try:
            names = fs.list_names(d)
        except OSError as exc:
            raise CheckpointError(f"cannot list {d}: {os_reason(exc)}") from None
        for name in names:
            if _TORN.match(name):
                try:
                    fs.delete(join_uri(d, name))
                except OSError as exc:
                    raise CheckpointError(f"cannot delete {join_uri(d, name)}: {os_reason(exc)}") from None
                deleted.append(f"{log_name}/{name}")
    return deleted
