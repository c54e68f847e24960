"""``morphling.checkpoint.backend=zookeeper``: checkpoint records as znodes (kazoo).

Layout under the engine properties (DESIGN §3; defaults in brackets)::

    <root.path>/<namespace>/<checkpoints.path>/<db>.<job>/<uid>/<id, 10 digits>
    [/morphling]/[default]/[checkpoints]     data: the CheckpointInfo as JSON

    <root.path>/<namespace>/<submitted.job.path>/<db>.<job>
    [/morphling]/[default]/[jobs]            EPHEMERAL, data: {"host", "pid", "uid", "since"}

A record's upsert and the deletion of the ids beyond the retained ones are one ZooKeeper
transaction (multi). DROP deletes the subtree ``.../<checkpoints.path>/<db>.<job>/<uid>`` of
the dropped incarnation only (then ``<db>.<job>`` itself once no uid is left under it), and
never anything above it (job and database names are validated identifiers). The running
mark (Slipstream keeps running jobs in ZooKeeper) lives as long as this process's
session: a crashed manager's mark disappears after the session timeout (10 s).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import posixpath
import socket
from datetime import datetime, timezone
from typing import Iterator, Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import (ConnectionClosedError, ConnectionLoss, KazooException,
                              NodeExistsError, NoNodeError, NotEmptyError,
                              OperationTimeoutError,
                              SessionExpiredError)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import RetryFailedError

from ...catalog.records import CheckpointInfo, JobInfo
from ...exceptions import CheckpointError, ConnectorError, PropertyError
from ...process import pid_alive
from .base import (CheckpointBackend, check_record, from_json, job_key, padded,
                   retention_victims, to_json, uid_segment)

log = logging.getLogger(__name__)

QUORUM_KEY = "spark.morphling.zookeeper.quorum"
PATH_KEYS = ("spark.morphling.zookeeper.root.path", "spark.morphling.zookeeper.namespace",
             "spark.morphling.zookeeper.checkpoints.path", "spark.morphling.submitted.job.path")

#: Seconds to wait for the quorum when connecting; also the session timeout.
CONNECT_TIMEOUT_S = 10.0

_UNREACHABLE = (ConnectionLoss, ConnectionClosedError, SessionExpiredError,
                OperationTimeoutError, KazooTimeoutError, RetryFailedError)


def znode_path(*parts: str, key: str = "") -> str:
    """Join path pieces (each may hold ``/``) into one absolute znode path.

    Raises:
        PropertyError: a ``.`` or ``..`` segment (names the property ``key``)."""
    segments = []
    for part in parts:
        for seg in str(part).split("/"):
            if seg in (".", ".."):
                raise PropertyError(f"{key or 'znode path'} must not contain '{seg}': {part!r}")
            if seg:
                segments.append(seg)
    return "/" + "/".join(segments)


class ZooKeeperBackend(CheckpointBackend):
    """Checkpoint records in ZooKeeper (see the module docstring for the layout).

    Args:
        quorum: ``host:port,...`` (an optional ``/chroot`` suffix is kazoo's).
        root, namespace, checkpoints_path, jobs_path: the znode path pieces.
        connect_timeout_s: how long to wait for the quorum, in seconds.

    Raises:
        ConnectorError: the quorum does not answer within ``connect_timeout_s``; names it.
        PropertyError: a path piece holds ``.`` or ``..``.
    """

    name = "zookeeper"

    def __init__(self, quorum: str, root: str = "/morphling", namespace: str = "default",
                 checkpoints_path: str = "checkpoints", jobs_path: str = "jobs",
                 connect_timeout_s: float = CONNECT_TIMEOUT_S) -> None:
        self.quorum = quorum
        self.checkpoints_root = znode_path(root, namespace, checkpoints_path, key=PATH_KEYS[2])
        self.jobs_root = znode_path(root, namespace, jobs_path, key=PATH_KEYS[3])
        self._zk = KazooClient(hosts=quorum, timeout=connect_timeout_s,
                               command_retry={"max_tries": 3, "delay": 0.1, "max_delay": 2.0},
                               logger=logging.getLogger("kazoo.client"))
        self._closed = False
        try:
            self._zk.start(timeout=connect_timeout_s)
        except Exception as exc:  # noqa: BLE001 - kazoo timeout or a bad host string
            self.close()
            reason = "no answer" if isinstance(exc, KazooTimeoutError) else str(exc) or type(exc).__name__
            raise ConnectorError(f"cannot reach ZooKeeper at {quorum} ({QUORUM_KEY}): "
                                 f"{reason} within {connect_timeout_s:g} s") from None

    @classmethod
    def from_conf(cls, conf: Mapping[str, str]) -> "ZooKeeperBackend":
        """A backend from engine properties (``Home.conf``).

        Raises:
            PropertyError: ``spark.morphling.zookeeper.quorum`` is not set.
            ConnectorError: the quorum cannot be reached.
        """
        from ...properties import ENGINE

        quorum = (conf.get(QUORUM_KEY) or "").strip()
        if not quorum:
            raise PropertyError(
                f"morphling.checkpoint.backend=zookeeper needs the engine property {QUORUM_KEY} "
                f"(host:port,...), in streamjob.conf or as --conf {QUORUM_KEY}=host:2181")
        pieces = [str(conf.get(k) or ENGINE.get(k).default or "") for k in PATH_KEYS]
        return cls(quorum, *pieces)

    # -- paths -----------------------------------------------------------------------

    def job_path(self, job: JobInfo) -> str:
        """``<checkpoints root>/<db>.<job>``: everything DROP deletes."""
        return znode_path(self.checkpoints_root, job_key(job))

    def uid_path(self, job: JobInfo) -> str:
        """``<job path>/<uid>``: the parent of this incarnation's checkpoint znodes."""
        return f"{self.job_path(job)}/{uid_segment(job)}"

    def running_path(self, job: JobInfo) -> str:
        """``<jobs root>/<db>.<job>``: the ephemeral running mark."""
        return znode_path(self.jobs_root, job_key(job))

    # -- records ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """Map kazoo errors: connection trouble -> ConnectorError, refusals -> CheckpointError."""
        if self._closed:
            raise CheckpointError(f"cannot {what}: the connection to ZooKeeper at {self.quorum} is closed")
        try:
            yield
        except _UNREACHABLE as exc:
            raise ConnectorError(f"cannot {what}: lost ZooKeeper at {self.quorum} ({QUORUM_KEY}): "
                                 f"{type(exc).__name__}") from None
        except KazooException as exc:
            raise CheckpointError(f"ZooKeeper at {self.quorum} refused to {what}: "
                                  f"{type(exc).__name__} {exc}".rstrip()) from None

    def _ids(self, parent: str) -> set[int]:
        try:
            children = self._zk.retry(self._zk.get_children, parent)
        except NoNodeError:
            return set()
        return {int(c) for c in children if c.isdigit()}

    def record(self, job: JobInfo, checkpoint: CheckpointInfo, retained: int) -> None:
        check_record(checkpoint, retained)
        cid = checkpoint.checkpoint_id
        parent = self.uid_path(job)
        data = to_json(checkpoint)
        with self._errors(f"record checkpoint {cid} of job {job.qualified_name}"):
            self._zk.retry(self._zk.ensure_path, parent)
            for attempt in (1, 2):
                ids = self._ids(parent)
                victims = retention_victims(ids | {cid}, retained)
                tx = self._zk.transaction()
                if cid not in victims:
                    node = f"{parent}/{padded(cid)}"
                    if cid in ids:
                        tx.set_data(node, data)
                    else:
                        tx.create(node, data)
                for victim in victims:
                    if victim in ids:
                        tx.delete(f"{parent}/{padded(victim)}")
                failed = [r for r in tx.commit() if isinstance(r, Exception)]
                if not failed:
                    return
                if attempt == 2 or not isinstance(failed[0], (NodeExistsError, NoNodeError)):
                    raise failed[0]  # someone else changed the records meanwhile: retried once

    def list(self, job: JobInfo) -> list[CheckpointInfo]:
        parent = self.uid_path(job)
        with self._errors(f"list the checkpoints of job {job.qualified_name}"):
            pending = [(cid, self._zk.get_async(f"{parent}/{padded(cid)}"))
                       for cid in sorted(self._ids(parent))]
            out = []
            for cid, result in pending:
                try:
                    data, _ = result.get(timeout=CONNECT_TIMEOUT_S)
                except NoNodeError:
                    continue  # deleted by retention meanwhile
                out.append(from_json(data, job, f"{parent}/{padded(cid)}"))
            return out

    def truncate(self, job: JobInfo, after: int) -> int:
        parent = self.uid_path(job)
        deleted = 0
        with self._errors(f"truncate the checkpoints of job {job.qualified_name} after {after}"):
            for cid in sorted(self._ids(parent)):
                if cid > after:
                    try:
                        self._zk.retry(self._zk.delete, f"{parent}/{padded(cid)}")
                        deleted += 1
                    except NoNodeError:
                        pass
        return deleted

    def purge(self, job: JobInfo) -> int:
        """Delete this incarnation's records, the subtree ``<job path>/<uid>``, and the
        job's node once no other uid's records hang under it. Another incarnation of
        the same name (a job dropped and created again, or one of another catalog on
        the same quorum) keeps its records: DROP acts by uid, never by name."""
        path = self.job_path(job)
        if posixpath.dirname(path) != self.checkpoints_root or path == self.checkpoints_root:
            raise CheckpointError(f"refusing to delete znode {path}: it is not one job's node "
                                  f"directly under {self.checkpoints_root}")
        mine = self.uid_path(job)
        with self._errors(f"purge the checkpoints of job {job.qualified_name}"):
            count = len(self._ids(mine))
            try:
                self._zk.retry(self._zk.delete, mine, recursive=True)
            except NoNodeError:
                pass
            try:  # the name's node goes with its last incarnation
                self._zk.retry(self._zk.delete, path)
            except (NoNodeError, NotEmptyError):
                pass
            return count

    # -- running mark ----------------------------------------------------------------

    def mark_running(self, job: JobInfo) -> None:
        """Create the ephemeral running znode (see the module docstring).

        A mark left by this process, or by a dead process on this host whose session has
        not yet expired, is taken over.

        Raises:
            ConnectorError: another live process holds the mark (names its host and pid;
                the runner retries after a backoff, by when a dead holder's session has
                expired), or the quorum is unreachable.
        """
        path = self.running_path(job)
        me = {"host": socket.gethostname(), "pid": os.getpid(), "uid": job.uid,
              "since": datetime.now(timezone.utc).isoformat()}
        data = json.dumps(me).encode()
        with self._errors(f"mark job {job.qualified_name} as running"):
            self._zk.retry(self._zk.ensure_path, self.jobs_root)
            for _ in range(3):
                try:
                    self._zk.create(path, data, ephemeral=True)
                    return
                except NodeExistsError:
                    pass
                try:
                    held, stat = self._zk.get(path)
                except NoNodeError:
                    continue
                if stat.ephemeralOwner == self._zk.client_id[0]:
                    self._zk.set(path, data)
                    return
                other = _decode_mark(held)
                if other.get("host") == me["host"] and (other.get("pid") == me["pid"]
                                                        or not pid_alive(other.get("pid"))):
                    log.info("taking over the stale running mark %s of %s", path, other)
                    try:
                        self._zk.delete(path, version=stat.version)
                    except NoNodeError:
                        pass
                    continue
                raise ConnectorError(
                    f"job {job.qualified_name} is already running on host {other.get('host')} "
                    f"(pid {other.get('pid')}, since {other.get('since')}): ZooKeeper node {path} "
                    f"at {self.quorum} is held by another session")
            raise CheckpointError(f"cannot mark job {job.qualified_name} as running: "
                                  f"ZooKeeper node {path} keeps changing")

    def clear_running(self, job: JobInfo) -> None:
        """Delete the running znode if this session holds it."""
        path = self.running_path(job)
        with self._errors(f"clear the running mark of job {job.qualified_name}"):
            try:
                _, stat = self._zk.get(path)
                if stat.ephemeralOwner == self._zk.client_id[0]:
                    self._zk.delete(path, version=stat.version)
            except NoNodeError:
                pass

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._zk.stop()
            self._zk.close()
        except Exception:  # noqa: BLE001 - closing a broken client must not mask an error
            log.debug("closing the ZooKeeper client failed", exc_info=True)

    def __repr__(self) -> str:
        return f"ZooKeeperBackend({self.quorum!r}, {self.checkpoints_root!r})"


def _decode_mark(data: bytes) -> dict:
    try:
        value = json.loads(data.decode())
        return value if isinstance(value, dict) else {}
    except ValueError:
        return {}


