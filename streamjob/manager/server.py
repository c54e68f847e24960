"""The job manager service, ``streamjob server`` (DESIGN §5, §8).

The catalog is the control plane: clients (shell, ``submit``, CLI verbs) only change it,
and the job manager makes the running jobs follow it. Any number of servers may run on
one catalog; exactly one of them, the holder of the catalog's ``manager`` lease
(:mod:`streamjob.catalog.servers`), runs jobs. The others are standbys.

Each server:

1. registers itself (``servers`` row, id ``host:pid:random``) and starts its SparkSession
   at once (on a thread), standbys too, so a takeover does not wait for Spark;
2. renews its heartbeat and tries to take or renew the lease every second (every third
   of the TTL if that is shorter; ``lease_renew_ms``), on a thread and a catalog
   connection pool of its own; a standby tries again the moment the holder's lease
   expires (:mod:`.lease`);
3. as a standby, runs nothing but one throwaway micro-batch that warms Spark's Python
   workers (:mod:`streamjob.spark.warmup`), and says once per holder ``standby: server X
   holds the lease``; as the holder, reconciles at least once a second and at once when another
   client changes the catalog (PostgreSQL LISTEN/NOTIFY; :mod:`streamjob.catalog.watch`):

   * a job whose desired state is RUNNING and that it does not run is started (its open
     runs, left by a job manager that died, are ended first; ``jobs.owner`` becomes this
     server's id);
   * a job it runs whose desired state became STOPPED is stopped after its current
     micro-batch (STOPPING, then STOPPED, owner cleared);
   * a job it runs that was dropped (its uid is gone) is stopped at once, and its
     checkpoint directory is purged again once it stopped (the dropping client purged
     it while the query could still write to it);
   * a job that ended by itself (FAILED after its failover attempts, or invalid) is left
     alone until its row changes (START, STOP/START, ALTER); a job already FAILED when
     this server first sees it is left alone likewise, so a takeover or a restart never
     revives a FAILED job;
   * ALTER STREAMJOB on a running job does not restart it: properties apply at its next
     start (as the ALTER message says);
   * a job with desired state STOPPED that still names an owner (its job manager died
     while it was stopped) gets its open runs ended and its owner cleared.

Fencing: the holder counts its lease as held until ``ttl`` after it *sent* its latest
successful renewal (its own monotonic clock; the database recorded a later expiry). A
watchdog thread, which never touches the catalog, fences the server when less than
``min(2 s, ttl/4)`` of that time is left without a renewal (the catalog unreachable, the
process stalled), and the lease thread fences it when a renewal finds another holder:
every job it runs is stopped at once and writes nothing more to the catalog, since a
standby may take over as soon as the lease expires. A fenced server stays a candidate
and runs the jobs again if it gets the lease back; if another server holds it, it gives
up the ownership of those jobs as soon as the catalog answers (``release_jobs``), so the
new holder starts them at once although the fenced process lives on as a standby. Limits: a process frozen past its
lease (SIGSTOP, a long GC pause) runs its queries until it resumes and fences itself;
nothing stops a ``streamjob run`` process (which holds no lease) from running a job
that a server runs too.

Shutdown (SIGTERM, SIGINT/Ctrl-C): every job stops after its current micro-batch, in
parallel (their desired state stays RUNNING; status STOPPED), the lease is kept renewed
meanwhile, then released, and the server unregistered, so a standby takes over within
a second instead of after the TTL. A second signal interrupts the shutdown.

Sharing (``streamjob server --share``, ``--max-jobs N``, ``--cores N``, ``--memory SIZE``,
``--labels a,b``, ``--spark-master URL``; issue 33):
any number of sharing servers on one catalog each run a share of the jobs, every job
under a lease of its own with a fencing epoch (:mod:`.share`, :mod:`.job_leases`,
:mod:`.placement`, :mod:`streamjob.catalog.placement`). The manager lease then only
elects a coordinator (alerts, pruning dead servers' rows, the server clients name);
losing it stops no job. A job whose lease is lost is fenced at once; a job that stops
or ends releases its lease, and a clean exit releases them all after the jobs' final
checkpoints, so the others take them over at once; a server that dies stops renewing,
and the others restart its jobs from their last checkpoints after the TTL. Jobs move
to a server that joins at checkpoint boundaries (a graceful stop, then a start there),
one at a time per server, until the load is even within one
(:meth:`.share.Share.to_move`). Do not mix sharing and non-sharing servers on one
catalog: a non-sharing lease holder starts every job no live process owns.

With ``until_idle`` (``streamjob server --until-idle``) the server takes the lease (an
error if another live server holds it), starts the RUNNING jobs once, waits until each
has committed all input available when it started, then shuts down the same way.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from dataclasses import replace
from datetime import datetime
from functools import partial
from typing import Callable

from ..catalog import Catalog
from ..catalog.records import JobInfo
from ..exceptions import JobError, StreamJobError
from ..home import Home
from .job_manager import JobManager
from .lease import Lease, renew_every_ms
from .share import Share, checkpoint_refusal
from .share import spark_master as master_for
from .placement import job_need
from .runner import JobRunner
from .liveness import LIVE_WITHIN_MS, live_owner, new_server_id
from streamjob.catalog.records import ACTIVE_STATUSES, DesiredState, JobStatus

log = logging.getLogger(__name__)

#: Longest wait, in seconds, for the jobs to stop at shutdown.
SHUTDOWN_TIMEOUT_S = 120.0


class JobServer:
    """A job manager process: see the module docstring.

    Args:
        catalog: the catalog (control plane).
        home: the streamjob home (Spark conf with ``spark.master``, checkpoint root).
        debug: Spark's own logs and full traces.
        lease_ttl_ms: the lease's time to live, milliseconds (> 0): a standby takes over
            at most about this long after the holder died.
        poll_s: seconds between two reconciliations without notifications (> 0).
        lease_renew_ms: ms between two renewals of the lease (> 0, at most half the TTL);
            None: ``min(poll_s, ttl/3)`` (:mod:`.lease` for the trade-off).
        warm_up: a standby runs a throwaway micro-batch once Spark started
            (:mod:`streamjob.spark.warmup`); ``self.warm`` then holds what it did.
        spark_at_start: start Spark when :meth:`run` starts (standbys too); False: at
            the first job start or preview that needs it (no warm-up then). A sharing
            server starts it at once regardless (its share is declared once it is up).
        echo: where the server's one-line reports go (``click.echo`` in the CLI);
            default: the log at INFO level.
        share: run a share of the jobs beside other sharing servers, each job under its
            own lease (issue 33; module docstring "Sharing"); implied by ``max_jobs`` or
            ``labels``. False: the single manager lease's holder runs every job.
        max_jobs: the most jobs this sharing server runs at once (None: no limit).
        labels: this sharing server's labels (``"a,b"`` or names), matched against a
            job's ``streamjob.placement.labels``.
        cores, memory_mb: a sharing server's cores and memory (MiB) for its drivers
            (None: not declared, no limit), placement counts the jobs' needs against.
        spark_master: the master of this server's drivers (None: the one its labels map
            to in ``streamjob.placement.masters``, else ``spark.master``:
            :func:`.share.spark_master`).
        finish_switch: ``finish(job)``, which prepares the new checkpoint epoch of a
            switch its killed process left pending (``executor/switch_finish.py``, given
            by ``streamjob server``; None: such switches are left to START STREAMJOB).

    The server holds one :class:`~.lease.Lease` (``self.lease``): while it is held, the
    server runs the jobs; when it is lost, the lease fences the server (:meth:`_fenced`).

    Raises ValueError for an invalid TTL, poll or renewal period. Raises (from :meth:`run`): CatalogError if the catalog cannot be reached at start;
    StreamJobError with ``until_idle`` when another server holds the lease or a job fails.
    """

    def __init__(self, catalog: Catalog, home: Home, debug: bool = False,
                 lease_ttl_ms: int = 10_000, poll_s: float = 1.0,
                 echo: Callable[[str], None] | None = None,
                 lease_renew_ms: int | None = None, warm_up: bool = True,
                 spark_at_start: bool = True, share: bool = False, max_jobs: int | None = None,
                 labels: str | tuple[str, ...] | None = None, cores: int | None = None,
                 memory_mb: int | None = None, spark_master: str | None = None,
                 finish_switch: Callable[[JobInfo], object] | None = None) -> None:
        if isinstance(lease_ttl_ms, bool) or not isinstance(lease_ttl_ms, int) or lease_ttl_ms <= 0:
            raise ValueError(f"lease_ttl_ms must be a positive int, got {lease_ttl_ms!r}")
        if poll_s <= 0:
            raise ValueError(f"poll_s must be > 0, got {poll_s!r}")
        self.catalog = catalog
        self.home = home
        self.debug = debug
        self.finish_switch = finish_switch  # a switch's new epoch (executor/switch_finish.py)
        self.lease_ttl_ms = lease_ttl_ms
        self.poll_s = float(poll_s)
        self.renew_ms = renew_every_ms(lease_ttl_ms, lease_renew_ms, self.poll_s)
        self.warm_up = warm_up
        self.spark_at_start = spark_at_start
        self.warm = None                         # the warm-up batch's WarmUp, once it ran
        self.server_id = new_server_id()
        self.spark_master = master_for(home.conf, spark_master, labels)
        if self.spark_master != home.conf.get("spark.master"):
            home = replace(home, conf={**home.conf, "spark.master": self.spark_master})
            self.home = home
        self.manager = JobManager(catalog, home, debug, owner=self.server_id)
        self._echo = echo or log.info
        self._stop = threading.Event()           # shutdown requested
        self.share = Share(catalog, self.server_id, lease_ttl_ms, self.renew_ms, self.poll_s,
                           max_jobs, labels, on_lost=self._job_lease_lost, echo=self._echo,
                           refusal=lambda job: checkpoint_refusal(self.catalog, home, job),
                           cores=cores, memory_mb=memory_mb) \
            if share or labels or {max_jobs, cores, memory_mb} != {None} else None
        if self.share:  # frozen mid-transaction, it must not keep the others' rows locked
            catalog.bound_transactions(lease_ttl_ms)
        # sharing: the manager lease only elects the coordinator (alerts, pruning, what
        # clients name), and each job has a lease of its own (self.share)
        self.lease = Lease(catalog, self.server_id, lease_ttl_ms, self.renew_ms,
                           heartbeat=self._heartbeat, on_taken=self._lease_taken,
                           on_lost=self._coordinator_lost if self.share else self._fenced,
                           shutdown=self._stop, echo=self._echo)
        self._stopping: dict[str, tuple[JobRunner, threading.Thread | None]] = {}
        self._ended: dict[str, datetime] = {}    # uid -> updated_at when seen ended/FAILED
        self._hosted_elsewhere: dict[str, str] = {}  # uid -> live owner that is not a server
        self._signals = 0
        self._signal_name: str | None = None
        self._loop_error: str | None = None
        self._watcher = None

    @property
    def holding(self) -> bool:
        """True while this server holds the job manager lease and may run jobs."""
        return self.lease.held

    # ---------------------------------------------------------------- public

    def run(self, until_idle: bool = False) -> None:
        """Serve until :meth:`request_stop` (SIGTERM/SIGINT when called in the main
        thread), or with ``until_idle`` until the jobs caught up; always shuts down
        cleanly (module docstring)."""
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, self._on_signal)
        if until_idle and self.share:
            raise ValueError("--until-idle runs every job in one server; not with --share")
        self.catalog.register_server(self.server_id, socket.gethostname(), os.getpid(),
                                     self.spark_master)
        try:
            if self.share:  # declared (placed on) once its Spark is up: _start_spark
                self.share.start()
            self.lease.open()
            self._watcher = self.catalog.watcher(self.poll_s)
            self._echo(f"server {self.server_id}: job manager on {self.spark_master}, "
                       f"catalog {self.catalog.url}")
            if self.share:
                self._echo(f"server {self.server_id}: sharing the jobs ({self.share.describe()})")
            self.lease.renew()
            if until_idle:
                self.lease.await_held()
            self.lease.start()
            # standbys too, so a takeover need not wait for Spark (unless it starts on
            # demand); on a thread, so the loop answers signals and reports meanwhile (a
            # job start waits for it)
            if self.spark_at_start or self.share:
                threading.Thread(target=self._start_spark, name="spark-start",
                                 daemon=True).start()
            if until_idle:
                self._until_idle()
            else:
                self._serve()
        finally:
            self.shutdown()

    def request_stop(self) -> None:
        """Ask :meth:`run` to shut down (returns at once; safe from signal handlers)."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.wake()

    def shutdown(self) -> None:
        """Stop every job after its current micro-batch (in parallel), then release the
        lease, unregister and stop Spark. Idempotent."""
        self._stop.set()
        if self._signal_name:
            self._echo(f"server {self.server_id}: {self._signal_name}: stopping the jobs after "
                       "their current batch")
            self._signal_name = None
        for runner in list(self.manager.runners.values()):
            self._stop_job(runner, graceful=True, why="server shutdown")
        deadline = time.monotonic() + SHUTDOWN_TIMEOUT_S
        for _runner, waiter in list(self._stopping.values()):
            if waiter is not None:
                waiter.join(max(0.0, deadline - time.monotonic()))
        if self.share:  # the jobs stopped: the others take them now
            self.share.close()
        self.lease.stop()
        try:
            self.catalog.unregister_server(self.server_id)  # releases the lease too
            self.lease.released()
        except StreamJobError as exc:
            log.warning("server %s: lease not released: %s", self.server_id, exc)
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
        self.lease.close()
        from ..spark.session import stop_spark

        stop_spark()

    # ---------------------------------------------------------------- the lease's hooks

    def _heartbeat(self, cat: Catalog) -> None:
        """This server's heartbeat, sent with each renewal of the lease (on its
        connection); registers again if the row was pruned as dead."""
        if not cat.heartbeat(self.server_id):
            cat.register_server(self.server_id, socket.gethostname(), os.getpid(),
                                self.spark_master)
            if self.share and self.share.ready.is_set():
                self.share.declare(cat)

    def _lease_taken(self) -> None:
        """The lease was taken: reconcile now (under the lease's lock)."""
        if self._watcher is not None:
            self._watcher.wake()

    def _fenced(self) -> tuple[list[threading.Thread], int]:
        """The lease was lost (under its lock): stop every job at once, writing nothing
        more (:mod:`.lease`). The fenced runners count as stopping until they ended, so
        that no job of theirs starts again here while its old query still stops.
        Returns the threads stopping the queries and the number of jobs stopped."""
        runners = self.manager.fence()
        stopping = [r for r, _w in list(self._stopping.values())]
        helpers = [h for h in (r.fence() for r in runners + stopping) if h is not None]
        for runner in runners:
            self._stop_job(runner, graceful=False, why="fenced")
        return helpers, len(runners)

    def _coordinator_lost(self) -> tuple[list[threading.Thread], int]:
        """Sharing: the manager lease only elects the coordinator; losing it stops no
        job (each job's own lease fences it, :meth:`_job_lease_lost`)."""
        return [], 0

    def _job_lease_lost(self, uid: str, why: str) -> None:
        """Sharing: job ``uid``'s lease was lost (under the job leases' lock): its query
        stops at once and its runner writes nothing more (:mod:`.job_leases`)."""
        runner = self.manager.runners.get(uid)
        if runner is None:  # stopping after its batch: now at once
            stopping = self._stopping.get(uid)
            if stopping is not None:
                stopping[0].fence()
            return
        runner.fence()
        self._echo(f"streamjob {runner.job.qualified_name}: {why}: stopped at once (fenced)")
        self._stop_job(runner, graceful=False, why="fenced")

    def _start_spark(self) -> None:
        """Start Spark (standbys too); then a standby keeps itself warm: unless it
        already holds the lease or warm-up is off, it runs one throwaway micro-batch
        (:func:`streamjob.spark.warmup.warm_up`) through the Python data-source path a
        Kafka job takes, and says so (``standby warm: ...``)."""
        try:
            self.manager.spark()
        except Exception as exc:  # noqa: BLE001 - the first job start raises it again
            log.error("server %s: Spark did not start: %s", self.server_id, exc)
            return
        if self.share:  # the others place jobs on it from now on
            try:
                self.share.declare()
                self.share.ready.set()
                self._echo(f"server {self.server_id}: ready for its share of the jobs")
            except StreamJobError as exc:
                log.error("server %s: share not declared: %s", self.server_id, exc)
            if self._watcher is not None:
                self._watcher.wake()
        if not self.warm_up or self.holding or self.share or self._stop.is_set():
            return
        from ..spark.warmup import warm_up

        admission = self.manager.start_gate.admit(self._stop)  # not beside a job's start
        if admission is None:
            return
        try:
            self.warm = warm_up(self.manager.spark())
        except Exception as exc:  # noqa: BLE001 - a standby that is not warm still serves
            log.warning("server %s: the warm-up batch failed: %s", self.server_id, exc)
            return
        finally:
            admission.release()
        self._echo(f"server {self.server_id}: standby warm: Spark up, a throwaway batch "
                   f"read {self.warm.rows} rows in {len(self.warm.worker_pids)} Python "
                   f"worker(s) in {self.warm.seconds:.1f} s")

    # ---------------------------------------------------------------- loops

    def _serve(self) -> None:
        while not self._stop.is_set():
            if self.holding or self.share:
                try:
                    if not self.share:
                        self._reconcile()
                    elif self.share.ready.is_set():
                        self._reconcile_share()
                    self._loop_error = None
                except StreamJobError as exc:  # catalog trouble: the watchdog fences if needed
                    if str(exc) != self._loop_error:  # once per distinct error
                        log.warning("server %s: reconciling failed: %s", self.server_id, exc)
                    self._loop_error = str(exc)
            else:
                self.lease.note_standby()
            self._watcher.wait()

    def _until_idle(self) -> None:
        self._reconcile()
        runners = list(self.manager.runners.values())
        if not runners:
            self._echo("no streamjob was started")
            return
        self.manager.wait_until_idle()
        self._echo(f"all {len(runners)} job(s) caught up with their input")

    def _on_signal(self, signum, frame) -> None:
        # no output here: a handler that writes may interrupt a write of the main thread
        self._signals += 1
        if self._signals > 1:
            raise KeyboardInterrupt
        self._signal_name = signal.Signals(signum).name
        self.request_stop()

    def _reconcile(self) -> None:
        """One pass of the holder (module docstring)."""
        jobs = self._resume_abandoned(self.catalog.list_jobs())
        by_uid = {j.uid: j for j in jobs}
        self._follow_runners(by_uid)
        busy_names = {r.job.qualified_name for r, _w in list(self._stopping.values())}
        for job in jobs:
            mine = job.uid in self.manager.runners or job.uid in self._stopping
            if job.desired_state != DesiredState.RUNNING:
                if job.owner and not mine and not live_owner(self.catalog, job.owner,
                                                              self.server_id):
                    self._disown(job)  # a live owner (a shell, `run`) stops it itself
                continue
            if mine or job.qualified_name in busy_names or self._ended_here(job):
                continue
            if self._left_to_live_owner(job):
                continue
            self._start_job(job)
        for uid in [u for u in self._ended if u not in by_uid]:
            del self._ended[uid]

    def _reconcile_share(self) -> None:
        """One pass of a sharing server (module docstring, "Sharing"): follow the jobs
        it runs, then place every RUNNING job that no live lease holds and start those
        placed here."""
        jobs = self._resume_abandoned(self.catalog.list_jobs())
        by_uid = {j.uid: j for j in jobs}
        self._follow_runners(by_uid)
        # a hand-over still stopping (read before the catalog, whose loads it changes)
        moving = any(r.stop_requested and not r.fenced for r, _w in self._stopping.values())
        running = set(self.manager.runners) | set(self._stopping)
        servers, sharing, leases = self.share.read(running)
        busy_names = {r.job.qualified_name for r, _w in list(self._stopping.values())}
        waiting: list[JobInfo] = []
        for job in jobs:
            mine = job.uid in running
            lease = leases.get(job.uid)
            held_elsewhere = lease is not None and lease.live and lease.holder != self.server_id
            if job.desired_state != DesiredState.RUNNING:
                if job.owner and not mine and not held_elsewhere and not live_owner(
                        self.catalog, job.owner, self.server_id):
                    self._disown(job)
                continue
            if mine or held_elsewhere or job.qualified_name in busy_names \
                    or self._ended_here(job):
                continue
            # a job whose owner is a sharing server without the job's live lease (it
            # exited, died or was fenced) is placed again; one hosted by another live
            # process (a shell, `run`) is left to it
            if job.owner and job.owner not in sharing and self._left_to_live_owner(job):
                continue
            waiting.append(job)
        refused = {uid: lease.refusals for uid, lease in leases.items() if lease.refusals}
        needs = {j.uid: job_need(j) for j in jobs if j.desired_state == DesiredState.RUNNING}

        def orphaned(job: JobInfo) -> bool:  # its lease's holder died or lost it
            lease = leases.get(job.uid)
            return bool(lease is not None and lease.holder and lease.holder != self.server_id)
        # the orphaned first: their query starts go ahead of the others' (admission.py)
        for job in sorted(self.share.to_start(waiting, servers, refused, needs),
                          key=lambda j: not orphaned(j)):
            self.manager.spark()
            if self._stop.is_set():
                break
            self.share.take(job, leases.get(job.uid),
                            partial(self.manager.start, recovery=orphaned(job)), self._stop)
        running = [by_uid[u] for u in self.manager.runners if u in by_uid
                   and self.manager.runners[u].status == JobStatus.RUNNING]
        job = None if moving else self.share.to_move(running, servers, bool(waiting), needs,
                                                     refused)
        if job is not None:  # at its next checkpoint boundary, to a server with fewer jobs
            self._echo(f"streamjob {job.qualified_name}: moving to a server with fewer jobs")
            self._stop_job(self.manager.runners[job.uid], graceful=True, why="moved")
        for uid in [u for u in self._ended if u not in by_uid]:
            del self._ended[uid]

    def _resume_abandoned(self, jobs: list[JobInfo]) -> list[JobInfo]:
        """``jobs``, after the query switches a killed process left between its graceful
        stop and its catalog switch were resumed (their jobs desired RUNNING again, with
        their current query: :func:`~streamjob.manager.liveness.resume_abandoned_switches`,
        docs/upgrades.md), and the new checkpoint epochs of those a killed process left
        after its switch prepared (``finish_switch``)."""
        if not any(j.pending_switch for j in jobs):
            return jobs
        from .liveness import resume_abandoned_switches

        return self.catalog.list_jobs() if resume_abandoned_switches(
            self.catalog, jobs, self.finish_switch) else jobs

    def _ended_here(self, job: JobInfo) -> bool:
        """True if ``job`` ended by itself (or was FAILED when first seen) and its row
        has not changed since: it is left alone until START, STOP/START or ALTER."""
        seen = self._ended.get(job.uid)
        if seen is not None:
            if job.updated_at == seen:
                return True
            del self._ended[job.uid]  # its row changed since it ended: try again
        elif job.status == JobStatus.FAILED:
            self._ended[job.uid] = job.updated_at
            self._echo(f"streamjob {job.qualified_name} is FAILED ({job.last_error}); "
                       "START it again to retry")
            return True
        return False

    def _left_to_live_owner(self, job: JobInfo) -> bool:
        """True (said once per owner) if a live process that is not this server hosts
        ``job`` (a shell, ``streamjob run``)."""
        if live_owner(self.catalog, job.owner, self.server_id):
            if self._hosted_elsewhere.get(job.uid) != job.owner:
                self._hosted_elsewhere[job.uid] = job.owner
                self._echo(f"streamjob {job.qualified_name} runs in {job.owner} "
                           "(a shell or streamjob run); left to it")
            return True
        self._hosted_elsewhere.pop(job.uid, None)
        return False

    def _follow_runners(self, by_uid: dict[str, JobInfo]) -> None:
        """Make the jobs this server runs follow the catalog: dropped ones stop at once,
        stopped ones after their batch, ended ones are forgotten (and, sharing, their
        lease released); the others reassert their status and owner."""
        for uid, runner in list(self.manager.runners.items()):
            job = by_uid.get(uid)
            if job is None:
                self._stop_job(runner, graceful=False, why="dropped")
            elif job.desired_state != DesiredState.RUNNING:
                self._stop_job(runner, graceful=True, why="stopped")
            elif not runner.is_alive():
                self.manager.forget(uid)
                now = self.catalog.get_job_by_uid(uid)  # after the runner's last writes
                if now is not None:
                    # The row as the runner left it: a START written since (a client saw
                    # FAILED and started it again before this pass) changes updated_at,
                    # so the job is started below instead of being taken as ended.
                    self._ended[uid] = runner.last_written_at or now.updated_at
                    self._echo(f"streamjob {job.qualified_name} {now.status.lower()}"
                               + (f": {runner.error}" if runner.error else ""))
                if self.share:
                    self.share.ended(uid)
            elif not self.share or self.share.holds(uid):
                runner.reassert(job)

    def _start_job(self, job: JobInfo) -> None:
        self.manager.spark()  # outside the lock: starting Spark takes seconds
        other = self.catalog.claim_job(job.uid, self.server_id, LIVE_WITHIN_MS,
                                       presumed_dead=() if live_owner(self.catalog, job.owner)
                                       else (job.owner,) if job.owner else ())
        if other is not None:  # a shell or `streamjob run` got there first
            return
        ended = self.catalog.end_open_runs(
            job.uid, JobStatus.FAILED, f"its job manager ({job.owner or 'unknown'}) died or lost "
            "its lease while running it")
        if ended:
            log.warning("streamjob %s: ended %d run(s) left open by job manager %s",
                        job.qualified_name, ended, job.owner or "unknown")
        with self.lease.guard():  # short: the watchdog fences under it
            if not self.lease.held or self._stop.is_set():
                return
            try:  # a job its dead owner ran is a recovery (admission.py)
                self.manager.start(job, recovery=bool(job.owner) and job.owner != self.server_id)
            except JobError as exc:  # claimed by another process meanwhile
                self._echo(str(exc))
                return
        self._echo(f"streamjob {job.qualified_name} started")

    def _stop_job(self, runner: JobRunner, graceful: bool, why: str) -> None:
        """Stop a runner without blocking the loop: a waiter thread joins it, reports,
        and for a dropped job purges its checkpoint directory."""
        uid = runner.job.uid
        with self.lease.guard():
            self.manager.forget(uid)
            if uid in self._stopping:
                return
            runner.request_stop(graceful=graceful)
            self._stopping[uid] = (runner, None)  # the waiter follows

        def wait() -> None:
            runner.join(SHUTDOWN_TIMEOUT_S)
            try:
                if why == "dropped" and not runner.fenced:
                    self._purge_dropped(runner.job)
                self._echo(f"streamjob {runner.job.qualified_name} stopped ({why})")
            finally:
                if self.share and not runner.is_alive():  # the others may take it now
                    self.share.ended(uid, moved=why == "moved" and not runner.fenced)
                self._stopping.pop(uid, None)
                if self._watcher is not None:
                    self._watcher.wake()  # a recreated job of that name may start now

        waiter = threading.Thread(target=wait, name=f"stop-{runner.job.qualified_name}",
                                  daemon=True)
        with self.lease.guard():
            self._stopping[uid] = (runner, waiter)
        waiter.start()

    def _purge_dropped(self, job: JobInfo) -> None:
        """Purge the checkpoint directory of a dropped job again, after its query
        stopped: only if its identity is still the dropped job's uid (a job created
        again under the name, running anywhere, owns it by then; one without identity
        is left, issue 28 point 5)."""
        from ..checkpoint import identity

        try:
            purged = identity.purge_owned(self.home.checkpoint_dir(job.database, job.name),
                                          self.home.checkpoint_root, job.uid)
        except StreamJobError as exc:
            log.warning("streamjob %s: checkpoint directory not purged: %s",
                        job.qualified_name, exc)
            return
        if purged.kept:
            log.info("streamjob %s (dropped): %s", job.qualified_name, purged.kept)

    def _disown(self, job: JobInfo) -> None:
        """A stopped job still naming an owner: its job manager died meanwhile."""
        self.catalog.end_open_runs(job.uid, JobStatus.STOPPED,
                                   f"stopped while its job manager ({job.owner}) was gone")
        self.catalog.update_job(job.database, job.name, uid=job.uid, owner=None,
                                status=JobStatus.STOPPED if job.status in ACTIVE_STATUSES else None)
