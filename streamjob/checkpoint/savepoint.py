"""A savepoint's files: a checkpoint the user keeps, outside retention (docs/checkpoints.md).

A savepoint of checkpoint ``n`` (Spark batch ``n``) keeps only what a restore of ``n``
needs, copied from the job's checkpoint directory ``<root>/<db>/<job>`` into its own
folder ``<root>/<db>/<job>.savepoints/<name>`` (beside the checkpoints, so that purging,
trimming or starting the checkpoint directory over never touches it; a job name holds no
``.``, so the folder is never another job's directory):

- ``metadata`` (the query id) and everything under ``sources/`` (a file source's log);
- ``offsets/<n-1>``, ``offsets/<n>`` and ``commits/<n>``: Spark resumes after the newest
  committed batch, reading its offsets as where the next batch starts and those of ``n-1``
  as what was committed before it (``MicroBatchExecution.populateStartOffsets``);
- state version ``n + 1`` (batch n writes version n + 1): in each folder of the
  HDFS-backed state store, the newest ``<v>.snapshot`` at or below it and the
  ``<v>.delta`` files after it up to it (``HDFSBackedStateStoreProvider`` loads a version
  so); any other file of ``state/`` (operator metadata, state schemas, the RocksDB state
  store's files) is copied whole;
- ``streamjob.fingerprint`` (the query version, checkpoint/fingerprint.py), and
  ``savepoint.json``, the manifest: the job uid, epoch, checkpoint id and the files.

Taking one while the job runs (:func:`take_newest`) copies the newest *retained*
checkpoint, not a future batch: it exists at once, is what SHOW CHECKPOINTS shows, and
its files never change — Spark writes each log entry and state version once, under a new
name. The only thing that could touch them is the recorder's trim after later
checkpoints (checkpoint/recorder.py step 6): the savepoint first writes a *pin*
(``savepoint.pin`` naming ``n``) in the checkpoint directory, which every trim honours
(:func:`pinned`), then checks that ``n`` is still committed, copies, and checks that the
state chain it copied is complete. A trim that started before the pin can only have
removed files of ``n`` if ``n`` had already left retention; the copy then misses a file
and is retried with the then-newest checkpoint. A pin older than :data:`PIN_TTL_S`
(its process died) is ignored.

Every path is a local path, a ``file:`` URI or any Hadoop URI, through
:mod:`streamjob.checkpoint.store`'s file system functions.
"""

from __future__ import annotations

import json
import re
import time
from typing import Callable

from .. import crashpoint
from ..exceptions import CheckpointError
from . import store
from .fingerprint import FILE_NAME as FINGERPRINT_FILE
from .store import join_uri

__all__ = ["MANIFEST", "PIN", "SUFFIX", "folder", "missing", "needed_files", "pinned",
           "remove", "restore_into", "rewind_into", "take", "take_newest"]

SUFFIX = ".savepoints"
MANIFEST = "savepoint.json"
PIN = "savepoint.pin"
#: Seconds after which a pin is ignored (the process that wrote it died mid-copy).
PIN_TTL_S = 600.0

_STATE_FILE = re.compile(r"^(\d+)\.(delta|snapshot)$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Raced(Exception):
    """A file of the checkpoint vanished while it was copied (it left retention)."""


def folder(checkpoint_dir: str, name: str) -> str:
    """The folder of savepoint ``name`` of the job whose checkpoint directory is
    ``checkpoint_dir``: ``<checkpoint_dir>.savepoints/<name>``.

    Raises:
        CheckpointError: ``name`` is not an identifier (the grammar only makes those).
    """
    if not _NAME.match(name):
        raise CheckpointError(f"'{name}' is not a savepoint name (letters, digits, _)")
    return join_uri(checkpoint_dir.rstrip("/") + SUFFIX, name)


def pinned(checkpoint_dir: str) -> int | None:
    """The checkpoint id a savepoint in progress has pinned in ``checkpoint_dir`` (the
    recorder trims nothing it needs), or None (no pin, an unreadable one, or one older
    than :data:`PIN_TTL_S`)."""
    try:
        text = store.read_file(join_uri(checkpoint_dir, PIN))
        data = json.loads(text) if text else None
        if data and time.time() - float(data["at"]) < PIN_TTL_S:
            return int(data["checkpoint_id"])
    except (CheckpointError, ValueError, KeyError, TypeError):
        pass
    return None


def needed_files(checkpoint_dir: str, checkpoint_id: int) -> list[str]:
    """The files (relative paths) a restore of ``checkpoint_id`` needs (module docstring),
    ``.crc`` checksums included where present.

    Raises:
        CheckpointError: the checkpoint is not committed, or a folder cannot be listed.
        _Raced: the state chain of version ``checkpoint_id + 1`` is incomplete.
    """
    n = int(checkpoint_id)
    if not store.is_committed(checkpoint_dir, n):
        raise CheckpointError(f"checkpoint {n} is not committed in {checkpoint_dir}")
    fs = store.filesystem(checkpoint_dir)
    files = [f"sources/{f}" for f in store.walk_files(join_uri(checkpoint_dir, "sources"))]
    wanted = ["metadata", ".metadata.crc"]
    for i in (n - 1, n):
        wanted += [f"offsets/{i}", f"offsets/.{i}.crc"] if i >= 0 else []
    wanted += [f"commits/{n}", f"commits/.{n}.crc"]
    try:
        files += [rel for rel in wanted if fs.exists(join_uri(checkpoint_dir, rel))]
    except OSError as exc:
        raise CheckpointError(f"cannot read checkpoint {checkpoint_dir}: {store.os_reason(exc)}") from None
    for rel in [f"offsets/{n}"] + ([f"offsets/{n - 1}"] if n > 0 else []):
        if rel not in files:
            raise _Raced(rel)
    state = store.walk_files(join_uri(checkpoint_dir, "state"))
    by_folder: dict[str, list[str]] = {}
    for path in state:
        head, _, name = path.rpartition("/")
        by_folder.setdefault(head, []).append(name)
    needed = n + 1
    for head, names in by_folder.items():
        prefix = f"state/{head}/" if head else "state/"
        versions = {}
        for name in names:
            m = _STATE_FILE.match(name.removeprefix(".").removesuffix(".crc"))
            if m is None:
                files.append(prefix + name)  # metadata, schemas, RocksDB files: whole
            else:
                versions.setdefault((int(m.group(1)), m.group(2)), []).append(name)
        if not versions:
            continue
        snapshots = [v for v, kind in versions if kind == "snapshot" and v <= needed]
        start = max(snapshots) if snapshots else 0
        chain = [(start, "snapshot")] if snapshots else []
        chain += [(v, "delta") for v in range(start + 1, needed + 1)]
        absent = [f"{prefix}{v}.{kind}" for v, kind in chain if (v, kind) not in versions]
        if absent:
            raise _Raced(absent[0])
        for key in chain:
            files.extend(prefix + name for name in versions[key])
    return sorted(set(files))


def take(checkpoint_dir: str, target: str, checkpoint_id: int, job_uid: str,
         epoch: str) -> list[str]:
    """Copy what a restore of ``checkpoint_id`` needs from ``checkpoint_dir`` into the
    savepoint folder ``target`` (which must not exist), with its manifest; returns the
    files copied. The caller keeps ``checkpoint_id`` pinned or the job stopped.

    Raises:
        CheckpointError: ``target`` exists, the checkpoint is not committed, a copy fails.
        _Raced: a file vanished (the checkpoint left retention meanwhile).
    """
    if store.holds_anything(target):
        raise CheckpointError(f"savepoint folder {target} exists already; move it away")
    files = _copy_checkpoint(checkpoint_dir, target, checkpoint_id)
    store.write_file(join_uri(target, MANIFEST), json.dumps(
        {"job_uid": job_uid, "epoch": epoch, "checkpoint_id": int(checkpoint_id),
         "files": files}, indent=1))
    return files


def _copy_checkpoint(checkpoint_dir: str, target: str, checkpoint_id: int) -> list[str]:
    """Copy what a restore of ``checkpoint_id`` needs, and the fingerprint, from
    ``checkpoint_dir`` into ``target``; returns the files copied (fingerprint aside).

    Raises:
        CheckpointError: the checkpoint is not committed, a copy fails.
        _Raced: a file vanished.
    """
    files = needed_files(checkpoint_dir, checkpoint_id)
    try:
        for i, rel in enumerate(files):
            if i == len(files) // 2:
                crashpoint.reached("savepoint.copy")
            store.copy_file(join_uri(checkpoint_dir, rel), join_uri(target, rel))
    except FileNotFoundError as exc:
        raise _Raced(str(exc)) from None
    if store.read_file(join_uri(checkpoint_dir, FINGERPRINT_FILE)) is not None:
        store.copy_file(join_uri(checkpoint_dir, FINGERPRINT_FILE), join_uri(target, FINGERPRINT_FILE))
    return files


def rewind_into(checkpoint_dir: str, checkpoint_id: int, target: str) -> int:
    """Copy retained checkpoint ``checkpoint_id`` of the (stopped) job's
    ``checkpoint_dir`` into the new directory ``target`` (``START ... FROM CHECKPOINT
    n``, DESIGN §4): the files a restore needs, as a savepoint holds them, so the job
    resumes from it. Returns the number of files copied.

    Raises:
        CheckpointError: the checkpoint is not committed, or a file it needs is missing
            or cannot be copied (names it).
    """
    try:
        return len(_copy_checkpoint(checkpoint_dir, target, checkpoint_id))
    except _Raced as exc:
        raise CheckpointError(f"checkpoint {checkpoint_id} in {checkpoint_dir} cannot be "
                              f"restored: {exc} is missing") from None


def take_newest(checkpoint_dir: str, target: str, latest: Callable[[], object], job_uid: str,
                epoch: str, root: str, attempts: int = 5):
    """Take a savepoint of the newest retained checkpoint while the job may be running
    (module docstring: pin, check, copy, retry). ``latest()`` returns the newest recorded
    :class:`~streamjob.catalog.records.CheckpointInfo` (or None). Returns
    ``(checkpoint info, files)``.

    A folder ``target`` without a manifest is what a copy killed before its end left
    (the manifest is written last), and one whose manifest names ``job_uid`` is a copy
    killed before its catalog row was written (the row comes after the files): either
    is removed first. No savepoint is listed before its files are whole.

    Raises:
        CheckpointError: the job has no checkpoint yet, ``target`` holds a whole savepoint
            no row names (another incarnation's), or ``attempts`` copies in a row
            lost a file to retention (a retention of 1 with a checkpoint interval shorter
            than the copy), or a copy failed.
    """
    pin_uri = join_uri(checkpoint_dir, PIN)
    lost = ""
    if store.holds_anything(target):  # no row names it (the caller checked): a leftover
        text = store.read_file(join_uri(target, MANIFEST))
        try:
            ours = text is not None and json.loads(text).get("job_uid") == job_uid
        except (ValueError, AttributeError):
            ours = False
        if text is not None and not ours:
            raise CheckpointError(f"savepoint folder {target} exists already and no savepoint "
                                  "of this job names it; move it away")
        # a copy whose process died: without its manifest (written last), or whole but
        # before its row was written (this job's, listed nowhere)
        store.purge(target, root)
    for _ in range(attempts):
        info = latest()
        if info is None:
            raise CheckpointError("it has no checkpoint yet to keep: wait for its first "
                                  "checkpoint (SHOW CHECKPOINTS)")
        if not store.log_ids(checkpoint_dir, "commits"):
            raise CheckpointError(
                f"its checkpoint directory {checkpoint_dir} holds no committed batch here, "
                f"though checkpoint {info.checkpoint_id} is recorded: take the savepoint where "
                "the job runs (through its server: --server URL)")
        n = info.checkpoint_id
        store.write_file(pin_uri, json.dumps({"checkpoint_id": n, "at": time.time()}))
        try:
            if not store.is_committed(checkpoint_dir, n):
                continue  # trimmed between latest() and the pin: take the next newest
            try:
                return info, take(checkpoint_dir, target, n, job_uid, epoch)
            except _Raced as exc:
                lost = str(exc)
                if store.holds_anything(target):
                    store.purge(target, root)
        finally:
            store.delete_file(pin_uri)
    raise CheckpointError(f"its checkpoints left retention while they were copied "
                          f"({lost or 'trimmed'}), {attempts} times in a row: raise "
                          "morphling.checkpoint.retained, or STOP it WITH SAVEPOINT")


def missing(location: str) -> list[str]:
    """The files of the savepoint at ``location`` that are gone, as full paths: the
    folder ``location`` itself if it holds nothing (deleted), else its manifest first if
    that is gone; [] when it is whole.

    Raises:
        CheckpointError: a Hadoop URI in a process without Spark.
    """
    manifest_uri = join_uri(location, MANIFEST)
    text = store.read_file(manifest_uri)
    if text is None:
        return [manifest_uri if store.holds_anything(location) else location]
    try:
        files = json.loads(text)["files"]
    except (ValueError, KeyError, TypeError):
        return [manifest_uri]
    fs = store.filesystem(location)
    return [join_uri(location, f) for f in files if not fs.exists(join_uri(location, f))]


def restore_into(location: str, checkpoint_dir: str) -> int:
    """Copy the savepoint at ``location`` into the (emptied) ``checkpoint_dir``: its
    files and fingerprint, not its manifest. Returns the number of files copied.

    Raises:
        CheckpointError: a file is missing or cannot be copied (names it).
    """
    text = store.read_file(join_uri(location, MANIFEST))
    files = json.loads(text)["files"] if text else []
    if store.read_file(join_uri(location, FINGERPRINT_FILE)) is not None:
        files = [*files, FINGERPRINT_FILE]
    for rel in files:
        try:
            store.copy_file(join_uri(location, rel), join_uri(checkpoint_dir, rel))
        except FileNotFoundError:
            raise CheckpointError(f"savepoint file {join_uri(location, rel)} is missing") from None
    return len(files)


def remove(location: str, root: str, job_uid: str) -> bool:
    """Delete the savepoint folder ``location`` (inside the checkpoint ``root``) if its
    manifest names ``job_uid`` or it has none (by uid, never by name: issue 28 point 5);
    True if something was deleted.

    Raises:
        CheckpointError: it is not inside ``root``, or cannot be deleted.
    """
    text = store.read_file(join_uri(location, MANIFEST))
    if text is not None:
        try:
            if json.loads(text).get("job_uid") not in (None, job_uid):
                return False
        except ValueError:
            pass
    return store.purge(location, root)
