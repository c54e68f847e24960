"""Processes that host jobs without the manager lease — ``streamjob run`` and the shell
(DESIGN §8: they run the jobs they start when no server does).

Such a process registers in the catalog's ``servers`` table like a server and keeps a
heartbeat, and the jobs it runs name it as their ``owner``. A server (the lease holder)
leaves a job alone while its owner is another live process, and any process refuses to
start a job a live other process runs: two processes never run the same job on one
checkpoint directory. An owner whose heartbeat is older than :data:`LIVE_WITHIN_MS` is
dead (killed); its jobs are then free to be resumed from their checkpoints.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid

from ..catalog import Catalog
from streamjob.catalog.records import DesiredState

log = logging.getLogger(__name__)

HEARTBEAT_S = 2.0
"""Seconds between two heartbeats of a hosting process."""
LIVE_WITHIN_MS = 15_000
"""A registered process whose heartbeat is older than this (ms) is taken for dead."""


def reap_local_dead(catalog: Catalog) -> list[str]:
    """Unregister processes of this host that are registered but no longer exist (killed
    with SIGKILL: no clean exit), so that their jobs are free at once rather than after
    :data:`LIVE_WITHIN_MS`; returns their ids. Other hosts' rows age out instead."""
    import os
    import socket

    here = socket.gethostname()
    dead = []
    for s in catalog.list_servers():
        if s.host == here and s.pid != os.getpid() and _gone_here(s.host, s.pid):
            dead.append(s.server_id)
    for sid in dead:
        catalog.unregister_server(sid)
        log.info("job manager %s is gone (its process no longer exists); unregistered", sid)
    return dead


SWITCH_TTL_S = 180.0
"""A pending query switch of a process on another host, with no live registration, is
taken for abandoned after this many seconds (the graceful stop waits at most 60 s)."""


def switch_abandoned(catalog: Catalog, marker: dict | None) -> bool:
    """True if the process that recorded the pending query switch ``marker``
    (``Catalog.begin_switch``: ``{"host", "pid", "owner", "at"}``) is gone: a process of
    this host that no longer exists, else a registered owner whose heartbeat aged out, else
    (another host, unregistered) a marker older than :data:`SWITCH_TTL_S`. A live
    process is still switching (it stops, switches and starts the job itself)."""
    import datetime as dt

    if not marker:
        return False
    host, pid, owner = marker.get("host"), marker.get("pid"), marker.get("owner")
    if host == socket.gethostname() and pid == os.getpid():
        return False  # this process: it is switching now
    if owner and live_owner(catalog, owner):
        return False
    if host == socket.gethostname() and isinstance(pid, int):
        return _gone_here(host, pid)
    if owner:
        return True  # registered elsewhere, and no longer live
    try:
        at = dt.datetime.fromisoformat(marker["at"])
    except (KeyError, TypeError, ValueError):
        return True
    return (dt.datetime.now(dt.timezone.utc) - at).total_seconds() > SWITCH_TTL_S


def resume_abandoned_switches(catalog: Catalog, jobs=None, finish=None) -> list:
    """Run again, with its current query, every job whose query switch was abandoned
    (:func:`switch_abandoned`: the process doing ALTER STREAMJOB ... AS was killed
    between the graceful stop and the catalog switch; docs/upgrades.md). Each is one
    catalog transaction (``Catalog.resume_switch``, compare-and-set on the marker), so two
    processes resuming at once resume it once. A switch that committed cleared its
    marker in its own transaction (the new query, desired RUNNING), so this never undoes
    one. A switch to a new checkpoint epoch (FROM, WITH STATE RESET) that committed left
    a marker of phase ``start_over`` (the epoch still to prepare): ``finish(job)`` (the
    executor's ``finish_start_over``, given by the server) prepares it and ends the
    marker; without ``finish`` it is left for a server or START STREAMJOB. ``jobs``: the
    jobs just listed (default: list them). Returns the jobs resumed or finished."""
    resumed = []
    for job in catalog.list_jobs() if jobs is None else jobs:
        marker = job.pending_switch
        if not marker or not switch_abandoned(catalog, marker):
            continue
        if marker.get("phase") == "start_over":  # the new query, once its epoch is ready
            if finish is None:
                continue
            try:
                finish(job)
            except Exception as exc:  # noqa: BLE001 - e.g. a directory without identity
                log.warning("streamjob %s: the new checkpoint epoch of query version %s "
                            "could not be prepared (%s); START STREAMJOB %s prepares it",
                            job.qualified_name, marker.get("version"), exc, job.name)
                continue
            log.warning("streamjob %s: the switch to query version %s was interrupted "
                        "before its new checkpoint epoch was prepared; prepared now",
                        job.qualified_name, marker.get("version"))
            resumed.append(job)
            continue
        again = catalog.resume_switch(job.uid, marker.get("at"))
        if again is not None:
            log.warning("streamjob %s: the switch to query version %s was interrupted "
                        "before the catalog switched; it runs on with its current query",
                        job.qualified_name, marker.get("version"))
            resumed.append(again)
    return resumed


def live_owner(catalog: Catalog, owner: str | None, me: str | None = None) -> bool:
    """True if ``owner`` (a job's owner id) is a registered process other than ``me``
    whose heartbeat is younger than :data:`LIVE_WITHIN_MS`."""
    if not owner or owner == me:
        return False
    for s in catalog.list_servers():
        if s.server_id == owner:
            return s.heartbeat_age_ms < LIVE_WITHIN_MS and not _gone_here(s.host, s.pid)
    return False


def _gone_here(host: str, pid: int) -> bool:
    """True if ``host`` is this machine and process ``pid`` no longer exists."""
    import socket

    from ..process import pid_alive

    return host == socket.gethostname() and not pid_alive(pid)


class HostRegistration:
    """Registers this process as a job host and heartbeats every :data:`HEARTBEAT_S` s
    until :meth:`close` (which unregisters it).

    Args:
        catalog: the catalog (control plane).
        spark_master: the master this process's Spark uses (shown by ``status``).

    Raises:
        CatalogError: the catalog cannot be written at registration.
    """

    def __init__(self, catalog: Catalog, spark_master: str) -> None:
        import os
        import socket


        self.catalog = catalog
        self.server_id = new_server_id()
        catalog.register_server(self.server_id, socket.gethostname(), os.getpid(), spark_master)
        try:  # a switch a killed process left midway: its job runs on (docs/upgrades.md)
            resume_abandoned_switches(catalog)
        except Exception as exc:  # noqa: BLE001 - the server's reconcile retries
            log.warning("could not resume interrupted query switches: %s", exc)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="host-heartbeat", daemon=True)
        self._thread.start()

    def follow(self, manager) -> None:
        """With each heartbeat, stop the jobs ``manager`` (a JobManager) runs whose
        desired state another client set to STOPPED (after their current micro-batch), or
        that were dropped (at once): STOP and DROP STREAMJOB from any client reach the
        process hosting the job within :data:`HEARTBEAT_S` seconds."""
        self._manager = manager
        self._stopping: set = set()  # the runners (not uids) whose stop was asked here

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                if not self.catalog.heartbeat(self.server_id):  # pruned: register again
                    import os
                    import socket

                    self.catalog.register_server(self.server_id, socket.gethostname(),
                                                 os.getpid(), "")
                self._follow_desired_states()
            except Exception as exc:  # noqa: BLE001 - a missed beat is retried
                log.warning("heartbeat of %s failed: %s", self.server_id, exc)

    def _follow_desired_states(self) -> None:
        manager = getattr(self, "_manager", None)
        if manager is None or not manager.runners:
            return
        running = manager.running()
        # A runner that ended leaves the set: a job started again has a new runner, which a
        # later STOP from another client must reach (a set of uids once skipped it).
        self._stopping &= set(running)
        jobs = {j.uid: j for j in self.catalog.list_jobs()}
        for runner in running:
            job = jobs.get(runner.job.uid)
            if job is not None and job.desired_state == DesiredState.RUNNING:
                continue
            if runner in self._stopping:
                continue
            self._stopping.add(runner)
            log.info("streamjob %s: %s by another client; stopping it",
                     runner.job.qualified_name,
                     "dropped" if job is None else "desired state STOPPED")
            # Only asked, not awaited, and the runner stays registered: the process
            # (`run`'s supervision, the shell) sees it end as it sees any job end, and
            # does not shut Spark down under a batch that is still finishing.
            runner.request_stop(graceful=job is not None)

    def close(self) -> None:
        """Stop the heartbeat and unregister (its jobs are free at once)."""
        self._stop.set()
        self._thread.join(HEARTBEAT_S + 1)
        try:
            self.catalog.unregister_server(self.server_id)
        except Exception as exc:  # noqa: BLE001 - a dead row is pruned later anyway
            log.warning("could not unregister %s: %s", self.server_id, exc)


def new_server_id() -> str:
    """``f"{hostname}:{pid}:{8 random hex digits}"``, the host name shortened so that the
    id fits the catalog's 64 characters."""
    suffix = f":{os.getpid()}:{uuid.uuid4().hex[:8]}"
    return socket.gethostname()[: 64 - len(suffix)] + suffix


def await_stopped(catalog: Catalog, job, me: str | None, wait_s: float) -> str | None:
    """After a job's desired state became STOPPED (STOP or DROP STREAMJOB): wait until no
    live job manager runs it (the one that does stops it after its current micro-batch,
    writes STOPPED and clears ``jobs.owner``), for at most ``wait_s`` seconds, woken by
    catalog changes (LISTEN/NOTIFY on PostgreSQL, else polling each 0.2 s). ``me`` is the
    caller's own server id (its own runner does not count as another owner).

    Returns None once the job is stopped (a job nobody runs, or whose owner died, gets
    status STOPPED here, as STOP gives a CREATED or FAILED job), or the id of the job
    manager still stopping it. Flink's ``stop`` likewise waits for its savepoint."""
    import time

    from ..catalog.records import JobStatus, RunStatus
    from ..catalog.watch import CatalogWatcher

    deadline = time.monotonic() + wait_s
    with CatalogWatcher(catalog, poll_s=0.2) as watcher:
        while True:
            now = catalog.get_job_by_uid(job.uid)
            if now is None:
                return None
            if not (now.owner and live_owner(catalog, now.owner, me)):
                break
            left = deadline - time.monotonic()
            if left <= 0:
                return now.owner
            watcher.wait(min(left, 0.2))
    if now.owner and now.owner != me:  # its job manager died: nothing runs it
        catalog.end_open_runs(job.uid, RunStatus.STOPPED,
                              f"stopped while its job manager ({now.owner}) was gone")
        catalog.update_job(job.database, job.name, status=JobStatus.STOPPED, owner=None,
                           uid=job.uid)
    elif now.status != JobStatus.STOPPED:
        catalog.update_job(job.database, job.name, status=JobStatus.STOPPED, uid=job.uid)
    return None
