"""Whose checkpoint directory is this, and which epoch of it (DESIGN §4).

A checkpoint directory holds ``streamjob.json``: the uid of the job incarnation that
owns it, and its *epoch*, a random id that changes whenever the job's checkpoint starts
over (a new directory, ``START STREAMJOB j FROM EARLIEST | LATEST | TIMESTAMP t``, and
a rewind: ``FROM SAVEPOINT sp`` and ``FROM CHECKPOINT n``, executor/savepoints.py).
Sinks key their exactly-once markers by :func:`marker_key` (uid and epoch), because
Spark's batch ids restart at 0 with a new checkpoint: a marker of the old epoch saying
"batch 5 committed" must never make the new epoch's batches 0-5 look like replays
(issue 13: a deleted directory made the SQL sink skip every new record).

:func:`prepare` runs before every start of a durable job:

1. the directory has an identity: its uid must be the job's (else it belongs to another
   incarnation or catalog, and is refused); its epoch is used;
2. it has none but holds Spark's logs (written before identities existed): it is
   adopted with the empty epoch, whose marker key is the bare uid, as before;
3. it holds nothing, but the job's checkpoint backend records checkpoints: the directory
   was lost. The start is refused with the ways out (restore it, or START ... FROM);
4. it holds nothing and nothing is recorded: a first start, with a new epoch.

Directories on a Hadoop URI carry their identity too, read and written through the
process's Spark session (:func:`streamjob.checkpoint.store.read_file`).

Ownership (issue 28 point 5): a directory is deleted only by its owner. DROP STREAMJOB,
the job manager's purge after a drop and START ... FROM go through :func:`purge_owned`,
which deletes the directory only when its identity names the job's uid: a job dropped
and created again under the same name, or a job of another catalog on the same home,
never loses its checkpoints to the other incarnation. A directory without an identity
is never deleted: it is left, and the caller says so.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass

from ..exceptions import CheckpointError
from . import store
from .filesystems import reachable_here
from .store import join_uri, local_path, is_local_uri, log_ids

__all__ = ["FILE_NAME", "Identity", "Purged", "marker_key", "owner_uid", "prepare",
           "purge_owned", "read", "start_over", "takeover_refusal"]

FILE_NAME = "streamjob.json"
#: Where a START ... FROM asks the next start to read its sources from.
START_POSITIONS = ("earliest", "latest")


@dataclass(frozen=True)
class Identity:
    """``job_uid``: the owning job incarnation; ``epoch``: the checkpoint's epoch ("" for
    directories adopted from before epochs); ``start``: the source position a START
    ... FROM asked for (``earliest``, ``latest`` or a timestamp in ms as text), used while
    the directory holds no batch yet; None for the stream's own reset strategy."""

    job_uid: str
    epoch: str
    start: str | None = None


def marker_key(job_uid: str, epoch: str) -> str:
    """The key of a job's sink markers in this epoch: ``uid`` for the adopted epoch "",
    else ``uid:epoch`` (at most 45 characters)."""
    return f"{job_uid}:{epoch}" if epoch else job_uid


def _uri(checkpoint_dir: str) -> str:
    return join_uri(checkpoint_dir, FILE_NAME)


def read(checkpoint_dir: str) -> Identity | None:
    """The directory's identity, or None (no directory, or no ``streamjob.json`` in it).

    Raises:
        CheckpointError: the file exists but cannot be read as an identity, or the
            directory is on a Hadoop URI and this process hosts no Spark session.
    """
    text = store.read_file(_uri(checkpoint_dir))
    if text is None:
        return None
    try:
        data = json.loads(text)
        return Identity(str(data["job_uid"]), str(data["epoch"]), data.get("start"))
    except (ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(f"cannot read the checkpoint identity {_uri(checkpoint_dir)}: "
                              f"{exc}") from None


def _write(checkpoint_dir: str, identity: Identity) -> None:
    store.write_file(_uri(checkpoint_dir), json.dumps(asdict(identity), indent=1))


def _shown(checkpoint_dir: str) -> str:
    return str(local_path(checkpoint_dir)) if is_local_uri(checkpoint_dir) else checkpoint_dir


def _has_logs(checkpoint_dir: str) -> bool:
    return bool(log_ids(checkpoint_dir, "offsets") or log_ids(checkpoint_dir, "commits"))


def prepare(checkpoint_dir: str, job, recorded) -> Identity:
    """The identity to start ``job`` with (the module's steps 1-4), written if new.

    Args:
        checkpoint_dir: the job's checkpoint directory.
        job: the job (``uid``, ``qualified_name``, ``name``).
        recorded: the newest checkpoint its backend records (``checkpoint_id``), or None.

    Raises:
        CheckpointError: the directory belongs to another job incarnation, or it is gone
            while the backend records checkpoints (both refuse the start; the message
            names the directory and the ways out).
    """
    found = read(checkpoint_dir)
    if found is not None:
        if found.job_uid != job.uid:
            raise CheckpointError(
                f"checkpoint directory {_shown(checkpoint_dir)} belongs to another job "
                f"(uid {found.job_uid}; this streamjob {job.qualified_name} is {job.uid}), "
                "e.g. one of another catalog on the same home; streamjob does not take it "
                "over. Move it away, or give this job another checkpoint root")
        return found
    if _has_logs(checkpoint_dir):
        identity = Identity(job.uid, "")  # written before identities: adopt it
    elif recorded is not None:
        raise CheckpointError(
            f"streamjob {job.qualified_name} has checkpoints up to {recorded.checkpoint_id} "
            f"recorded, but its checkpoint directory {_shown(checkpoint_dir)} holds none "
            "(deleted, or on a disk that was replaced): starting afresh would re-read or skip "
            "input silently. Restore the directory, or start over explicitly with START "
            f"STREAMJOB {job.name} FROM EARLIEST | LATEST | TIMESTAMP 'yyyy-mm-dd hh:mm:ss' "
            "(a new checkpoint epoch; what the sinks already hold stays)")
    else:
        identity = Identity(job.uid, uuid.uuid4().hex[:12])
    _write(checkpoint_dir, identity)
    return identity


def start_over(checkpoint_dir: str, job, start: str | None) -> Identity:
    """Give ``job`` a new checkpoint epoch whose first start reads from ``start``
    (``earliest``, ``latest`` or ms since the epoch as text; None: a restored savepoint
    or checkpoint, whose logs say where to read, checkpoint/savepoint.py). The caller has emptied
    the directory (:func:`streamjob.checkpoint.store.purge`) or found it gone.

    Raises:
        CheckpointError: the directory still holds Spark's logs.
    """
    if _has_logs(checkpoint_dir):
        raise CheckpointError(f"checkpoint directory {checkpoint_dir} still holds checkpoints")
    identity = Identity(job.uid, uuid.uuid4().hex[:12], start)
    _write(checkpoint_dir, identity)
    return identity


def owner_uid(checkpoint_dir: str) -> str | None:
    """The uid the directory's identity names, or None (no directory or no identity)."""
    found = read(checkpoint_dir)
    return found.job_uid if found is not None else None


@dataclass(frozen=True)
class Purged:
    """What :func:`purge_owned` did: ``deleted`` True if the directory was removed;
    ``identity`` the one it held (None if none); ``kept`` a sentence saying why a
    directory that exists was left ("" when nothing was left)."""

    deleted: bool
    identity: Identity | None
    kept: str = ""


def purge_owned(checkpoint_dir: str, root: str, job_uid: str) -> Purged:
    """Delete ``checkpoint_dir`` (under the checkpoint ``root``) if and only if its
    identity names ``job_uid`` (issue 28 point 5: deletion by uid, never by name).

    - identity of ``job_uid``: deleted (:func:`streamjob.checkpoint.store.purge`);
    - identity of another uid: kept (another incarnation of the name, or another
      catalog's job);
    - no identity but the directory holds something: kept (it may be anyone's: a
      directory of a streamjob before identities, a copy, a mistake); the caller shows
      ``kept`` as a warning, naming the directory;
    - no directory, or an empty one: nothing to keep (an empty one is removed).

    Raises:
        CheckpointError: the identity cannot be read, the directory cannot be deleted or
            is not inside ``root``.
    """
    found = read(checkpoint_dir)
    shown = _shown(checkpoint_dir)
    if found is None:
        if not store.holds_anything(checkpoint_dir):
            store.purge(checkpoint_dir, root)  # absent or empty: nothing anyone owns
            return Purged(False, None)
        return Purged(False, None, (
            f"warning: checkpoint directory {shown} has no identity ({FILE_NAME}), so "
            "streamjob cannot tell whose it is and left it; delete it by hand if it holds "
            "nothing you need"))
    if found.job_uid != job_uid:
        return Purged(False, found, (
            f"its checkpoint directory {shown} belongs to another job and was kept "
            f"(its {FILE_NAME} names uid {found.job_uid})"))
    return Purged(store.purge(checkpoint_dir, root), found)


def job_directories(root: str) -> list[str]:
    """``db.job`` of every job checkpoint directory under the checkpoint ``root`` that
    holds Spark's logs (``<root>/<db>/<job>/offsets`` or ``commits`` not empty), on a
    local path or a Hadoop URI alike; [] for none, or for a Hadoop root in a process
    without Spark (:func:`streamjob.checkpoint.filesystems.reachable_here`).

    Raises:
        CheckpointError: the root cannot be listed.
    """
    if not reachable_here(root):
        return []
    fs = store.filesystem(root)
    found = []
    try:
        for db in sorted(fs.list_names(root)):
            for job in sorted(fs.list_names(join_uri(root, db))):
                if _has_logs(join_uri(root, db, job)):
                    found.append(f"{db}.{job}")
    except OSError as exc:
        raise CheckpointError(f"cannot list the checkpoint root {root}: {exc}") from None
    return found


def refuse_orphaned(home, catalog) -> None:
    """Refuse a catalog that holds no jobs while the home's checkpoint root holds job
    checkpoints (issue 13 point 7): the catalog was deleted or emptied, and a new one
    would start its jobs afresh over them (or next to them) without a word.

    Raises:
        CheckpointError: naming the catalog, the directories and the ways out
            (restore the catalog, or ``--new-catalog`` / ``STREAMJOB_NEW_CATALOG=1``).
    """
    if catalog.list_jobs():
        return
    found = job_directories(home.checkpoint_root)
    if not found:
        return
    from ..sensitive import mask_url

    shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    raise CheckpointError(
        f"the catalog {mask_url(home.catalog_url)} holds no streamjobs, but "
        f"{home.checkpoint_root} holds the checkpoints of {len(found)} ({shown}): the catalog "
        "was deleted or emptied, or points elsewhere. Restore it (or give --catalog), or "
        "start a new catalog over them with --new-catalog (STREAMJOB_NEW_CATALOG=1)")


def takeover_refusal(checkpoint_dir: str, root: str, job_uid: str, recorded: bool) -> str | None:
    """Why this process must not take over a job (issue 33 point 4), or None.

    A sharing server may take a job only if it reaches the job's checkpoints: a job
    with ``recorded`` checkpoints must have its identity (``streamjob.json`` naming
    ``job_uid``) readable at ``checkpoint_dir`` from here — the directory this
    server's checkpoint ``root`` gives the job. If the server's root is another
    storage (a local path on another machine, another cluster's file system), the
    identity is not there, and starting would begin afresh beside the real
    checkpoints. A job without recorded checkpoints may start anywhere (its start
    checks the directory, :func:`prepare`).

    Args:
        checkpoint_dir: the job's checkpoint directory as this process sees it.
        root: this process's checkpoint root (named in the reason).
        job_uid: the job's uid.
        recorded: the job's checkpoint backend records checkpoints of it.

    Returns:
        None when it may take the job; else a sentence: why not.
    """
    if not recorded:
        return None
    shown = _shown(checkpoint_dir)
    try:
        found = read(checkpoint_dir)
    except CheckpointError as exc:
        return (f"its checkpoint directory {shown} cannot be read from this server "
                f"({exc}); its checkpoint root {root} must be storage every sharing "
                "server reaches")
    if found is None:
        return (f"its checkpoints are recorded but its checkpoint directory {shown} holds no "
                f"{FILE_NAME} as this server sees it: this server's checkpoint root {root} "
                "is not the storage the job's checkpoints are on (a local path of another "
                "machine?); give every sharing server the same shared root (hdfs://, "
                "s3a://, a shared mount)")
    if found.job_uid != job_uid:
        return (f"its checkpoint directory {shown}, as this server sees it, belongs to "
                f"another job (its {FILE_NAME} names uid {found.job_uid}): this server's "
                f"checkpoint root {root} is not the storage the job's checkpoints are on")
    return None
