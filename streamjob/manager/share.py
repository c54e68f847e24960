"""A sharing server's share of the jobs (``streamjob server --share``, issue 33, DESIGN
§8): :class:`Share` holds what the server declared (``--max-jobs``, ``--cores``,
``--memory``, ``--labels``), its
job leases (:mod:`.job_leases`), the epoch each of its runners runs under, and the jobs
waiting for a server; :class:`~.server.JobServer` calls it from its passes.

Each pass of a sharing server follows the jobs it runs, releases any lease the catalog
says it holds but it does not run (a start that failed, a fenced job whose release
failed), then places every RUNNING job that no live lease holds (new, released by a
server that stopped it or exited, orphaned by a server that died) on the eligible
server with the fewest jobs, then the most room (:mod:`.placement`; a job no server can take waits, the
reason in its lease row for ``streamjob status``) and starts those placed on itself
(:meth:`Share.take`): it takes the job's lease at a new epoch (owner set in the same
transaction), ends the runs the previous owner left open, and starts the job from its
last checkpoint. A job that waits longer than a TTL and a little (servers that read the
catalog at different moments each placed it on another) is taken by any eligible
server with room: the lease's compare-and-set lets exactly one win.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from typing import Callable, Iterable, Mapping

from ..catalog import Catalog
from ..catalog.placement import parse_labels
from ..catalog.records import JobInfo, JobLeaseInfo, JobStatus, ShareServer
from ..exceptions import JobError, StreamJobError
from .job_leases import JobLeases
from .liveness import LIVE_WITHIN_MS, live_owner
from .placement import Need, fits, job_labels, job_need, place, why_unplaced

log = logging.getLogger(__name__)


class Share:
    """One sharing server's share (module docstring).

    Args:
        catalog: the catalog (the server's).
        server_id: the server's id.
        ttl_ms: the job leases' TTL (``--lease-ttl``), also how long a server's heartbeat
            counts as live for placement.
        renew_ms: ms between two renewals of the job leases.
        poll_s: the server's pass period, s.
        max_jobs: the most jobs it runs at once (None: no limit; >= 0).
        cores: cores for its drivers (None: not declared, no limit; >= 0).
        memory_mb: memory for its drivers, MiB (None: no limit; >= 0).
        labels: its labels (``"a,b"`` or names).
        on_lost: ``(job uid, why) -> None``: fence the job (under the leases' lock).
        echo: where one-line reports go.
        refusal: ``job -> reason or None``: why this server must not take ``job`` (its
            checkpoint directory is not reachable from here,
            :func:`checkpoint_refusal`); None: it may take any job.

    Attributes:
        ready: set once the server's Spark is up and its share declared: from then on
            the others place jobs on it.
        leases: its :class:`~.job_leases.JobLeases`.
    """

    def __init__(self, catalog: Catalog, server_id: str, ttl_ms: int, renew_ms: int,
                 poll_s: float, max_jobs: int | None, labels: str | Iterable[str] | None,
                 on_lost: Callable[[str, str], None], echo: Callable[[str], None],
                 refusal: Callable[[JobInfo], str | None] | None = None,
                 cores: int | None = None, memory_mb: int | None = None) -> None:
        for what, value in (("max_jobs", max_jobs), ("cores", cores), ("memory_mb", memory_mb)):
            if value is not None and (isinstance(value, bool) or value < 0):
                raise ValueError(f"{what} must be None or >= 0, got {value!r}")
        self.cores = cores
        self.memory_mb = memory_mb
        self.catalog = catalog
        self.server_id = server_id
        self.ttl_ms = ttl_ms
        self.poll_s = poll_s
        self.max_jobs = max_jobs
        self.labels = parse_labels(labels)
        self.leases = JobLeases(catalog, server_id, ttl_ms, renew_ms, on_lost=on_lost, echo=echo)
        self.ready = threading.Event()
        self._echo = echo
        self._epochs: dict[str, int] = {}        # uid -> epoch its runner started at
        self._unplaced: dict[str, float] = {}    # uid -> since when it waits for a server
        self._unplaceable: set[str] = set()      # said once: no server can take it
        self._refusal = refusal
        self._refused: dict[str, tuple[str, float]] = {}  # uid -> (reason, when checked)
        self._waiting: dict[str, str] = {}       # uid -> the reason recorded in the catalog

    def describe(self) -> str:
        """``max jobs N, cores C, memory M MiB, labels a,b`` for the server's first lines."""
        def shown(value, unit=""):
            return "unlimited" if value is None else f"{value}{unit}"
        return (f"max jobs {shown(self.max_jobs)}, cores {shown(self.cores)}, "
                f"memory {shown(self.memory_mb, ' MiB')}, "
                f"labels {','.join(sorted(self.labels)) or 'none'}")

    def start(self) -> None:
        """Open the leases' connection and start their renewal and watchdog threads."""
        self.leases.open()
        self.leases.start()

    def declare(self, cat: Catalog | None = None) -> None:
        """Declare the share in the catalog (``cat``, default the server's)."""
        (cat or self.catalog).declare_share(self.server_id, self.max_jobs, self.labels,
                                            cores=self.cores, memory_mb=self.memory_mb)

    def close(self) -> None:
        """Stop renewing and release every lease still held (the jobs stopped)."""
        self.leases.stop()
        for uid in list(self.leases.held()):
            self.leases.release(uid)
        self.leases.close()

    def holds(self, uid: str) -> bool:
        """True while the job's lease is held (:meth:`.JobLeases.holds`)."""
        return self.leases.holds(uid)

    def ended(self, uid: str, moved: bool = False) -> None:
        """Job ``uid``'s query here stopped: release its lease at the epoch it ran
        under (a lease another server took since is left alone); ``moved``: it was
        handed over (rebalancing), counted in the catalog."""
        self.leases.release(uid, self._epochs.pop(uid, None), moved=moved)

    def read(self, running: set[str]) -> tuple[list[ShareServer], set[str], dict[str, JobLeaseInfo]]:
        """One catalog read for a pass: ``(live sharing servers, every sharing server's
        id, {job uid: lease})``; a lease the catalog says is ours but that runs nowhere
        here (not in ``running``, nor held) is released first."""
        servers = self.catalog.share_servers(self.ttl_ms)
        sharing = self.catalog.sharing_server_ids() | {self.server_id}
        leases = {lease.job_uid: lease for lease in self.catalog.job_leases()}
        held = self.leases.held()
        for lease in list(leases.values()):
            if lease.holder == self.server_id and lease.job_uid not in held \
                    and lease.job_uid not in running:
                self.catalog.release_job_lease(lease.job_uid, self.server_id, lease.epoch)
                leases[lease.job_uid] = replace(lease, holder=None, live=False)
        return servers, sharing, leases

    def to_start(self, waiting: list[JobInfo], servers: list[ShareServer],
                 refused: Mapping[str, Iterable[str]] | None = None,
                 needs: Mapping[str, Need] | None = None) -> list[JobInfo]:
        """The jobs of ``waiting`` (RUNNING, no live lease) this server should take now:
        those placed on it, and those waiting past a TTL that fit here. Says once per job
        that no server can take it. ``refused``: ``{job uid: server ids}`` that refused
        the job (the leases' ``refusals``): placement passes them over; a job this
        server refused is offered again once a TTL after it checked (:meth:`take`
        checks again: a root that became reachable withdraws the refusal). ``needs``:
        ``{job uid: Need}`` of the waiting jobs and those the servers hold (default:
        computed for ``waiting``). A job no server can take has the reason recorded in
        its lease row (``streamjob status``)."""
        refused = refused or {}
        needs = dict(needs) if needs is not None else {}
        for job in waiting:
            needs.setdefault(job.uid, job_need(job))
        placed = place([(j.uid, job_labels(j)) for j in waiting], servers, refused, needs)
        me = next((s for s in servers if s.server_id == self.server_id), None)
        now = time.monotonic()
        overdue_s = self.ttl_ms / 1000 + 2 * self.poll_s
        out = []
        for job in waiting:
            since = self._unplaced.setdefault(job.uid, now)
            target = placed.get(job.uid)
            fit = me is not None and fits(me, job_labels(job), needs[job.uid], needs)
            mine_refused = self.server_id in set(refused.get(job.uid, ()))
            if mine_refused:
                checked = self._refused.get(job.uid, ("", 0.0))[1]
                if fit and now - checked > self.ttl_ms / 1000:
                    out.append(job)  # checked again by take()
            elif target == self.server_id or (now - since > overdue_s and fit):
                out.append(job)
            elif target is None:
                self._wait(job, why_unplaced(job_labels(job), needs[job.uid], servers, needs,
                                             refused.get(job.uid, ())))
        uids = {j.uid for j in waiting}
        for uid in [u for u in self._unplaced if u not in uids]:
            del self._unplaced[uid]
        for uid in [u for u in self._refused if u not in uids]:
            del self._refused[uid]
        self._unplaceable &= uids
        for uid in [u for u in self._waiting if u not in uids]:
            del self._waiting[uid]  # taken (the taking cleared the catalog's reason)
        return out

    def _wait(self, job: JobInfo, reason: str) -> None:
        """Job ``job`` waits: no server can take it, for ``reason``; said once per job,
        and recorded in its lease row once per reason (``streamjob status``)."""
        if job.uid not in self._unplaceable:
            self._unplaceable.add(job.uid)
            self._echo(f"streamjob {job.qualified_name} waits: {reason}")
        if self._waiting.get(job.uid) != reason:
            try:
                self.catalog.set_job_waiting(job.uid, reason)
                self._waiting[job.uid] = reason
            except StreamJobError as exc:
                log.warning("job %s: its waiting reason not recorded: %s",
                            job.qualified_name, exc)

    def to_move(self, running: list[JobInfo], servers: list[ShareServer],
                waiting: bool, needs: Mapping[str, Need] | None = None,
                refused: Mapping[str, Iterable[str]] | None = None) -> JobInfo | None:
        """Rebalancing (a server joined, or came back with fewer jobs): one job of
        ``running`` (the jobs this server runs, RUNNING) to hand over, or None. A job is
        handed over when nothing waits for a server (``waiting``) and placement
        (:func:`~.placement.place`, the rule every server applies to a released job),
        asked with this server holding every job but that one, puts it on another
        server that runs at least two fewer jobs than this one; so moves go one at a
        time per server until the load is even within one, and a job handed over is
        never placed back on the server that gave it up (a move that placement would
        undo would repeat at every pass). ``needs``: the jobs'
        :class:`~.placement.Need`, as for :meth:`to_start`; ``refused``: the leases'
        refusals, as for :meth:`to_start`. The server then stops the job gracefully
        (its final checkpoint) and releases its lease."""
        me = next((s for s in servers if s.server_id == self.server_id), None)
        if me is None or waiting or not running:
            return None
        needs = dict(needs or {})
        for job in running:
            needs.setdefault(job.uid, job_need(job))
        loads = {s.server_id: len(s.jobs) for s in servers}
        for job in sorted(running, key=lambda j: j.uid, reverse=True):
            released = [replace(s, jobs=tuple(u for u in s.jobs if u != job.uid))
                        if s.server_id == self.server_id else s for s in servers]
            target = place([(job.uid, job_labels(job))], released, refused, needs)[job.uid]
            if target not in (None, self.server_id) and len(me.jobs) - loads[target] >= 2:
                return job
        return None

    def _refuses(self, job: JobInfo) -> bool:
        """True if this server must not take ``job`` (the ``refusal`` rule): the reason
        is logged (once per reason) and recorded in the job's lease row, where
        placement and ``streamjob status`` read it; a refusal that no longer holds is
        withdrawn. Raises CatalogError if the catalog cannot be reached."""
        if self._refusal is None:
            return False
        reason = self._refusal(job)
        before = self._refused.pop(job.uid, None)
        if reason is None:
            if before is not None:
                self.catalog.refuse_job_lease(job.uid, self.server_id, None)
                self._echo(f"streamjob {job.qualified_name}: its checkpoints are reachable "
                           "from this server now")
            return False
        self._refused[job.uid] = (reason, time.monotonic())
        if before is None or before[0] != reason:
            self.catalog.refuse_job_lease(job.uid, self.server_id, reason)
            log.warning("server %s refuses to take streamjob %s: %s", self.server_id,
                        job.qualified_name, reason)
            self._echo(f"streamjob {job.qualified_name}: this server refuses to take it: "
                       f"{reason}")
        return True

    def take(self, job: JobInfo, lease: JobLeaseInfo | None, start: Callable[[JobInfo], None],
             stopping: threading.Event) -> int | None:
        """Take ``job``'s lease (a new epoch), end the runs its previous owner left open,
        and ``start`` it here under the leases' lock (module docstring); returns the
        epoch, or None if another server won the lease or the start failed (the lease is
        released again). Raises CatalogError if the catalog cannot be reached."""
        if self._refuses(job):
            return None
        presumed = () if live_owner(self.catalog, job.owner) else \
            ((job.owner,) if job.owner else ())
        epoch = self.leases.acquire(job.uid, LIVE_WITHIN_MS, presumed)
        if epoch is None:
            return None
        self._unplaced.pop(job.uid, None)
        previous = lease.holder if lease is not None and lease.holder else job.owner
        if previous and previous != self.server_id:
            ended = self.catalog.end_open_runs(
                job.uid, JobStatus.FAILED, f"its job manager ({previous}) died or lost the "
                "job's lease while running it")
            if ended:
                log.warning("streamjob %s: ended %d run(s) left open by %s",
                            job.qualified_name, ended, previous)
        with self.leases.lock:  # short: the watchdog fences under it
            if not self.leases.holds(job.uid) or stopping.is_set():
                self.leases.release(job.uid, epoch)
                return None
            try:
                start(job)
            except JobError as exc:
                self.leases.release(job.uid, epoch)
                self._echo(str(exc))
                return None
            self._epochs[job.uid] = epoch
        why = ("new" if lease is None or not lease.epoch else "orphaned" if lease.holder
               else "released")
        self._echo(f"streamjob {job.qualified_name} started (lease epoch {epoch}, {why})")
        return epoch


def label_masters(text: str | None) -> dict[str, str]:
    """``streamjob.placement.masters`` as ``{label: master}``: ``"gpu=spark://h:7077;
    eu=local[4]"`` (labels lower-cased, pairs separated by ``;``). Raises
    StreamJobError naming the pair without ``label=master``."""
    out: dict[str, str] = {}
    for n, pair in enumerate((text or "").split(";"), 1):
        if not pair.strip():
            continue
        label, sep, master = pair.partition("=")
        if not sep or not label.strip() or not master.strip():
            raise StreamJobError(f"streamjob.placement.masters: pair {n} '{pair.strip()}' "
                                 "is not label=master")
        out[label.strip().lower()] = master.strip()
    return out


def spark_master(conf: Mapping[str, str], explicit: str | None,
                 labels: str | Iterable[str] | None) -> str:
    """The Spark master of a server's drivers (issue 33 point 5): ``explicit``
    (``--spark-master``), else the master ``streamjob.placement.masters`` maps the
    server's first label (in name order) to, else the engine's ``spark.master``.
    Raises StreamJobError for a malformed ``streamjob.placement.masters``."""
    if explicit:
        return explicit
    by_label = label_masters(conf.get("streamjob.placement.masters"))
    for label in sorted(parse_labels(labels)):
        if label in by_label:
            return by_label[label]
    return conf.get("spark.master", "local[*]")


def checkpoint_refusal(catalog: Catalog, home, job: JobInfo) -> str | None:
    """Why this server must not take ``job`` over (issue 33 point 4), or None: a job
    with durable checkpoints that its checkpoint backend records must have its
    checkpoint identity readable from this server
    (:func:`streamjob.checkpoint.identity.takeover_refusal`). A backend that cannot be
    reached refuses nothing (the start reports it, as a start elsewhere would)."""
    from .. import properties as jp
    from ..checkpoint import identity
    from ..checkpoint.backends import backend_for_job
    from ..exceptions import StreamJobError

    try:
        if not jp.values(job.properties or {}, job.session_properties or {}).checkpoint_enabled:
            return None
        with backend_for_job(catalog, home, job) as backend:
            recorded = backend.latest(job) is not None
    except StreamJobError:
        return None
    return identity.takeover_refusal(home.checkpoint_dir(job.database, job.name),
                                     home.checkpoint_root, job.uid, recorded)
