"""Supervision of running jobs: start, watch, fail over, stop (DESIGN §5).

One :class:`JobRunner` thread per running job. Each attempt:

1. plans the job from the catalog (a job that no longer validates fails at once);
2. opens a run row, builds the query in the job's own session clone and starts it with
   the job's checkpoint directory — Spark resumes from the last committed batch;
3. waits for the query to end or for a stop request;
4. on failure, ends the run with the cause and, while auto failover is on and the
   failures since the last completed checkpoint stay within
   ``morphling.task.max.failures``, waits a growing backoff (by default 2 s, 4 s, 8 s ...
   30 s, each plus up to 25 % random jitter: ``streamjob.failover.initial.backoff`` and
   ``streamjob.failover.max.backoff``) and
   goes to 1; otherwise the job is FAILED with the error kept in the catalog. An error
   no restart can fix (data loss, changed logic, a sink table that does not fit, an
   invalid setting: :func:`~streamjob.manager.failures.permanent_failure`) fails the
   job at once, with a note saying so. A user function's exception is named with the
   failed micro-batch's input (:func:`~streamjob.manager.failures.user_function_failure`);
   the same one on the same input at two attempts is such an error.

Statuses are written as they happen: STARTING (RECOVERING after a failure), RUNNING,
STOPPING when a stop was asked for, then STOPPED, or FAILED. The runner of a job manager
that has an ``owner`` id (``streamjob server``) writes it into the job row when it starts
the job and clears it when the job ends. Progress (batch, rates, lag, last checkpoint) is
written by :mod:`~streamjob.manager.progress` from the checkpoint recorder's reports.

Stopping: a graceful stop (STOP STREAMJOB, SIGTERM/Ctrl-C) lets the current micro-batch
finish — it waits, at most ``morphling.checkpoint.timeout`` (and 60 s), until Spark
reports no trigger active (``query.status['isTriggerActive']``) — and, if that batch
moved the watermark of a stateful job, the micro-batch without new data that writes
what the watermark closed (within the same bound; :class:`~.idle.ReleasedOutput`,
docs/checkpoints.md "Stops": Flink's ``stop``, not ``stop --drain``), then stops the
query, so the checkpoint directory ends on a committed batch. An immediate stop (a dropped job)
stops the query at once. A *fenced* runner (its job manager lost the lease, see
:mod:`~streamjob.manager.server`) stops at once and writes nothing more to the catalog:
another job manager may already own the job.

This module holds :class:`JobRunner`'s attempt loop, failover and stopping; an
:class:`~.attempt.Attempt` builds what one run of the query needs (the session, then one
object per room: the checkpoint side, the connector side, the Spark side; and its own
progress reporter and lag probe), starts the query and releases it all;
:mod:`.job_manager` holds the :class:`JobManager` (the runners this process hosts, and
its SparkSession).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from typing import Protocol

from .. import properties as jp
from ..catalog import Catalog
from ..catalog.records import JobInfo
from ..home import Home
from ..checkpoint.expiry import expiry_message
from ..checkpoint.recorder import CheckpointTracker
from ..exceptions import CatalogError, ConnectorError, StreamJobError
from ..phases import mark
from ..planner.plan import JobPlan, plan_job
from ..planner.checks import check_plan
from .admission import NORMAL, RECOVERY, StartGate
from .attempt import Attempt
from .failures import permanent_failure, user_function_failure
from .summary import error_summary
from streamjob.catalog.records import JobStatus, RunStatus

__all__ = ["JobRunner", "RunnerHost", "GRACEFUL_STOP_S", "WATCH_S"]

log = logging.getLogger(__name__)

#: Longest wait, in seconds, for the current micro-batch of a graceful stop.
GRACEFUL_STOP_S = 60.0
#: Seconds between two looks at a running query (stop requests, expiry, progress).
WATCH_S = 0.25

class RunnerHost(Protocol):
    """What a :class:`JobRunner` uses of the process hosting it: the
    :class:`~streamjob.manager.job_manager.JobManager` is one (it imports this module,
    never the other way round)."""

    catalog: Catalog
    home: Home
    #: the server id written into ``jobs.owner``; None for ``streamjob run``
    owner: str | None
    #: a few query start-ups at a time (:mod:`.admission`)
    start_gate: StartGate
    #: what a dead Spark JVM does: "restart" (fail over in a new session) or "exit"
    on_jvm_death: str

    def job_session(self, sql_conf: dict[str, str], sources: set[str] | None = None):
        """A session clone for one job."""

    def spark_died(self) -> str | None:
        """A sentence if this process's Spark JVM died, else None."""


class JobRunner(threading.Thread):
    """Runs one job until stopped or failed; see the module docstring.

    ``status`` is the status this runner last wrote (None before it wrote one);
    ``ended_by_request`` tells, once the thread ended, whether a stop request ended it
    (otherwise the job failed, was invalid, or its query stopped by itself).
    ``attempt`` is the current run of the query (:class:`~.attempt.Attempt`), or the
    last one once it ended (its query, checkpoint directory and tracker stay readable);
    None before the first.
    """

    def __init__(self, manager: RunnerHost, job: JobInfo, recovery: bool = False) -> None:
        super().__init__(name=f"job-{job.qualified_name}", daemon=True)
        self.manager = manager
        self.job = job
        #: the job was taken over from a process that died or lost it: its first start
        #: goes ahead of the start gate's other waiters (:data:`.admission.RECOVERY`)
        self.recovery = recovery
        self.tracker = CheckpointTracker()
        self.plan: JobPlan | None = None
        self.error: str | None = None
        #: ``updated_at`` of this runner's last write to its job's row (None before one):
        #: the job manager tells a START that came after the runner ended by it.
        self.last_written_at = None
        self.status: str | None = None
        self.started = threading.Event()
        self._stop_requested = threading.Event()
        self._graceful = True
        self.fenced = False
        self.ended_by_request = False
        self._fail_cause: str | None = None  # set by fail(): the stop ends the job FAILED
        self._write_lock = threading.Lock()  # status writes vs. reassert()
        self.attempt: Attempt | None = None

    @property
    def catalog(self) -> Catalog:
        return self.manager.catalog

    @property
    def query(self):
        """The StreamingQuery of the current (or last) attempt; None before one started."""
        attempt = self.attempt
        return attempt.query if attempt is not None else None

    @property
    def stop_requested(self) -> bool:
        """True once :meth:`request_stop` or :meth:`fence` was called."""
        return self._stop_requested.is_set()

    def request_stop(self, graceful: bool = True) -> None:
        """Ask the job to stop; the runner thread stops the query (after its current
        micro-batch if ``graceful``) and the run ends STOPPED. Returns at once."""
        if not graceful:
            self._graceful = False
        self._stop_requested.set()

    def fail(self, cause: str) -> None:
        """Stop the job at once and end it FAILED with ``cause`` (the run's cause and the
        job's last error) rather than STOPPED: the process gives up on a job that cannot
        go on, e.g. ``run --until-idle`` cannot read its sources' end offsets (issue 16).
        Returns at once."""
        if self._fail_cause is None:
            self._fail_cause = cause
        self.request_stop(graceful=False)

    def fence(self) -> threading.Thread | None:
        """Stop at once and write nothing more to the catalog (the job manager lost its
        lease: another one may own the job now). The query is stopped from a helper
        thread, returned (None without a query), so this returns at once even if the
        runner thread is stuck on the catalog."""
        self.fenced = True
        attempt = self.attempt
        if attempt is not None and attempt.progress is not None:
            attempt.progress.enabled = False
        self.request_stop(graceful=False)
        q = self.query
        if q is None:
            return None
        helper = threading.Thread(target=_stop_quietly, args=(q,), daemon=True,
                                  name=f"fence-{self.job.qualified_name}")
        helper.start()
        return helper

    def _update(self, **kw) -> None:
        with self._write_lock:
            if self.fenced:
                return
            written = self.catalog.update_job(self.job.database, self.job.name,
                                              uid=self.job.uid, **kw)
            if written is not None:
                self.last_written_at = written.updated_at
            if "status" in kw:
                self.status = kw["status"]

    def reassert(self, job: JobInfo) -> bool:
        """Write this runner's status and owner again if ``job`` (a catalog read) shows
        others, e.g. a client wrote STOPPED while a START followed at once, so the job
        kept running here. Only while the job runs (not stopping, not ended). Returns
        True if it wrote."""
        with self._write_lock:
            if self.fenced or self._stop_requested.is_set() or not self.is_alive() \
                    or self.status not in (JobStatus.STARTING, JobStatus.RUNNING, JobStatus.RECOVERING):
                return False
            if job.status == self.status and job.owner == self.manager.owner:
                return False
            self.catalog.update_job(self.job.database, self.job.name, uid=self.job.uid,
                                    status=self.status, owner=self.manager.owner)
            return True

    def _end(self, run_id: int | None, status: str, cause: str, **kw) -> None:
        """Final writes of the runner: the run ends with ``status``/``cause``, the job
        gets ``status`` and no owner. Catalog errors are logged (the thread ends anyway);
        a fenced runner writes nothing."""
        if self.fenced:
            return
        try:
            self.catalog.end_run(run_id, RunStatus.STOPPED if status == JobStatus.STOPPED
                                 else RunStatus.FAILED, cause)
            self._update(status=status, owner=None, **kw)
        except CatalogError as exc:
            log.warning("job %s: status %s not written: %s", self.job.qualified_name, status, exc)

    def _end_stopped(self, run_id: int | None) -> None:
        """End after a stop request: STOPPED, cause "stopped"; FAILED with the cause
        given to :meth:`fail` if the stop came from there."""
        cause = self._fail_cause
        if cause is None:
            self.ended_by_request = True
            self._end(run_id, JobStatus.STOPPED, "stopped")
            return
        self.error = cause
        self._end(run_id, JobStatus.FAILED, cause, last_error=cause)

    def run(self) -> None:  # noqa: C901 - the supervision loop reads best as one piece
        failures = 0
        failed_at: list[float] = []  # monotonic times of failures within the window
        consecutive = 0  # failures since the last completed checkpoint (the backoff's exponent)
        attempt = 0
        completed_at_failure = -1
        run_id = None
        function_failures: list = []  # user function failures of the attempts (failures.py)
        while not self._stop_requested.is_set():
            attempt += 1
            run_id = None
            admission = None  # this attempt's start-up slot (admission.py)
            current = None  # this attempt's Attempt, once building began
            permanent = None  # the note of an error no restart can fix (failures.py)
            try:
                job = self.catalog.get_job_by_uid(self.job.uid)
                if job is None:
                    self.error = "the job was dropped"
                    self.started.set()
                    return
                self.plan = plan_job(self.catalog, self.manager.home, job.database, job.name,
                                     job.query, job.properties, job.session_properties)
                # the admin's rules for everyone, again here: a row written before them
                # (or by another client) never reaches the home's state or the catalog
                check_plan(self.manager.home.policy, self.plan)
                mark("plan done", job.qualified_name)
                if self._stop_requested.is_set():
                    break
                run_id = None if self.fenced else self.catalog.start_run(job.uid, attempt)
                if not self.fenced:  # the previous run's rates and lag are not this run's
                    self.catalog.update_progress(job.uid, {})
                self._update(status=JobStatus.RECOVERING if failures else JobStatus.STARTING,
                             owner=self.manager.owner)
                admission = self.manager.start_gate.admit(
                    self._stop_requested,
                    priority=RECOVERY if self.recovery and attempt == 1 else NORMAL)
                if admission is None:
                    break
                current = self.attempt = Attempt(self.catalog, self.manager.home, job,
                                                 self.plan, self.tracker,
                                                 self.manager.job_session)
                query = current.open().query
                mark("query started", job.qualified_name)
                self._update(status=JobStatus.RUNNING, attempts=failures)
                self.started.set()
                while not self._stop_requested.is_set():
                    if query.awaitTermination(WATCH_S):
                        break
                    admission.release_once_started(query)
                    self._check_expiry()
                    current.progress.flush()
                if self._stop_requested.is_set():
                    self._stop_query()
                    current.progress.flush(force=True)
                    self._end_stopped(run_id)
                    return
                exc = query.exception()
                if exc is None:
                    self._end(run_id, JobStatus.STOPPED, "query stopped")
                    return
                raise exc
            except StreamJobError as exc:
                self.error = str(exc)
                function_failures.clear()
                if not isinstance(exc, (ConnectorError, CatalogError)):
                    # an invalid job: no retry can help
                    self._end(run_id, JobStatus.FAILED, self.error, last_error=self.error)
                    self.started.set()
                    return
                permanent = permanent_failure(exc, self.job.name)
            except Exception as exc:  # noqa: BLE001 - any query failure goes to failover
                failure = user_function_failure(  # None if no function's
                    exc, current.checkpoint_dir if current else None, function_failures)
                function_failures[:] = [*function_failures, failure] if failure else []
                self.error = str(failure) if failure else error_summary(exc, {
                    f.source: f.qualified_name for f in (self.plan.functions if self.plan else ())
                    if f.kind == "hive"})
                permanent = permanent_failure(failure or exc, self.job.name)
            finally:
                if admission is not None:
                    admission.release()
                if current is not None:  # never leave a query behind an attempt
                    current.close()
            if self._stop_requested.is_set():
                self._end_stopped(run_id)
                return
            died = self.manager.spark_died()  # a dead JVM fails every job at once
            if died and self.manager.on_jvm_death == "exit":
                self.error = died  # `streamjob run` ends; the next run resumes the job
                self._end(run_id, JobStatus.STOPPED, died, last_error=died)
                self.started.set()
                return
            log.warning("job %s failed: %s", self.job.qualified_name, died or self.error)
            props = self.plan.props if self.plan else jp.values({})
            if self.tracker.completed > completed_at_failure:
                failed_at.clear()  # a checkpoint completed since the last failure: count afresh
                consecutive = 0
            completed_at_failure = self.tracker.completed
            # Flink's failure-rate strategy: failures within the window count; an outage of
            # minutes (backoff growing to its maximum) stays under the bound, a job that
            # fails fast and often does not (DESIGN §5)
            now = time.monotonic()
            window_s = props.failure_window_ms / 1000
            failed_at[:] = [t for t in failed_at if now - t < window_s] + [now]
            failures = len(failed_at)
            consecutive += 1
            allowed = props.max_failures
            if permanent and not died:
                self.error = f"{self.error}; {permanent}"
            if (permanent and not died) or not props.auto_failover or allowed < 0 \
                    or failures > allowed:
                self._end(run_id, JobStatus.FAILED, self.error, last_error=self.error, attempts=failures)
                self.started.set()
                return
            try:
                if not self.fenced:
                    self.catalog.end_run(run_id, RunStatus.FAILED, self.error)
                run_id = None
                self._update(status=JobStatus.RECOVERING, last_error=self.error, attempts=failures)
            except CatalogError as exc:
                log.warning("job %s: failure not recorded: %s", self.job.qualified_name, exc)
            # full backoff plus up to 25 % jitter, so that jobs failing together (one
            # overloaded machine, one broker down) do not all restart at the same moment
            backoff = props.backoff_s(consecutive) * (1 + random.random() / 4)
            self._stop_requested.wait(backoff)
        # stopped while between attempts (backoff, planning, waiting for a start slot)
        self._end_stopped(run_id)
        self.started.set()

    def _stop_query(self) -> None:
        """Stop the query: STOPPING, then (graceful) wait for the current micro-batch to
        end, bounded by ``morphling.checkpoint.timeout`` and :data:`GRACEFUL_STOP_S`."""
        q = self.query
        try:
            self._update(status=JobStatus.STOPPING)
        except CatalogError as exc:
            log.warning("job %s: status STOPPING not written: %s", self.job.qualified_name, exc)
        if self._graceful and not self.fenced:
            deadline = self._await_batch_end(q)
            self._await_released(q, deadline)
        _stop_quietly(q)
        if self._graceful and not self.fenced:
            self._await_recorded()

    def _await_recorded(self, timeout_s: float = 5.0) -> None:
        """After a graceful stop, give the checkpoint recorder (Spark's listener bus is
        asynchronous) up to ``timeout_s`` seconds to see the last committed micro-batch,
        then make it a checkpoint if it is not one (DESIGN §4: the stopped job's state is
        a retained, restorable checkpoint, and the catalog shows it at once)."""
        from ..checkpoint.store import log_ids

        recorder = self.attempt.recorder if self.attempt is not None else None
        if not self.plan or not self.plan.props.checkpoint_enabled or recorder is None:
            return
        try:
            commits = log_ids(self.manager.home.checkpoint_dir(self.job.database,
                                                               self.job.name), "commits")
        except Exception:  # noqa: BLE001 - a remote checkpoint URI: not listed here
            return
        if commits:
            last = commits[-1]
            self.tracker.wait_for(lambda t: t.batch_id is not None and t.batch_id >= last,
                                  timeout_s)
        try:
            recorder.checkpoint_now()
        except StreamJobError as exc:  # the next start records it from the directory
            log.warning("job %s: the last micro-batch was not recorded as a checkpoint: %s",
                        self.job.qualified_name, exc)

    def _await_released(self, q, deadline: float) -> None:
        """After the current micro-batch of a graceful stop: if it moved the watermark
        of a stateful job, wait (until ``deadline``, monotonic seconds: the graceful
        stop's bound) for the micro-batch without new data that writes what the
        watermark closed (:class:`~.idle.ReleasedOutput`), so that a stopped job's
        tables hold everything its watermark released. Past the bound, the stop goes
        ahead and the job's next start runs that batch first
        (:func:`~streamjob.checkpoint.watermark.schedule_released_batch`)."""
        from .idle import ReleasedOutput

        attempt = self.attempt
        if attempt is None or not attempt.checkpoint_dir:
            return
        released = ReleasedOutput(attempt.checkpoint_dir, self.tracker.cond, lambda: q,
                                  attempt.no_data_batches)

        def done(_t) -> bool:
            try:
                return self.fenced or not q.isActive or released.written()
            except Exception:  # noqa: BLE001 - a query that died, unreadable logs: stop
                return True
        while time.monotonic() < deadline:  # woken by each commit; polled for a dead query
            if self.tracker.wait_for(done, min(WATCH_S, max(0.0, deadline - time.monotonic()))):
                return
        if not done(self.tracker):
            log.warning("job %s: the micro-batch that writes what the watermark released "
                        "did not run before the stop's bound; it runs at the next start",
                        self.job.qualified_name)

    def _await_batch_end(self, q) -> float:
        """Wait until no trigger is active, polling every 5 ms. A job whose batches run
        back to back (each longer than the checkpoint interval) is never idle: once the
        batch that ran when the stop was asked for has completed, the stop goes ahead
        (the batch that just began is interrupted; its offsets are logged, so the next
        start replays it). Bounded by ``morphling.checkpoint.timeout`` and
        :data:`GRACEFUL_STOP_S`; returns the bound's deadline (monotonic seconds), which
        :meth:`_await_released` shares."""
        props = self.plan.props if self.plan else jp.values({})
        bound = min(GRACEFUL_STOP_S, props.checkpoint_timeout_ms / 1000)
        deadline = time.monotonic() + bound
        try:
            last = q.lastProgress
            running = (int(last["batchId"]) if last else -1) + 1
        except Exception:  # noqa: BLE001 - a query that died meanwhile
            return deadline
        while not self.fenced and time.monotonic() < deadline:
            try:
                if not q.isActive or not q.status.get("isTriggerActive"):
                    return deadline
                last = q.lastProgress
                if last is not None and int(last["batchId"]) >= running:
                    log.info("job %s: batch %s completed and the next one began; stopping "
                             "(it is replayed at the next start)", self.job.qualified_name,
                             last["batchId"])
                    return deadline
            except Exception:  # noqa: BLE001 - a query that died meanwhile
                return deadline
            time.sleep(0.005)
        log.warning("job %s: the current batch did not end within %.0f s; stopping it "
                    "(it is replayed at the next start)", self.job.qualified_name, bound)
        return deadline

    def _check_expiry(self) -> None:
        """Log and count a checkpoint running past ``morphling.checkpoint.timeout``; the
        recorder records it as LATE if it completes after all (DESIGN §4)."""
        watch = self.attempt.watch
        recorder = self.attempt.recorder
        due = recorder.due_now() if recorder is not None else True
        expired = watch.poll(due) if watch is not None else None
        if expired is None:
            return
        log.warning(expiry_message(expired, self.job.qualified_name))
        with self.tracker.cond:
            self.tracker.expired.add(expired)
        try:
            self.catalog.count_expired_checkpoint(self.job.uid)
        except CatalogError as exc:  # the count is informational; the job runs on
            log.warning("job %s: expired checkpoint not counted: %s", self.job.qualified_name, exc)


def _stop_quietly(query) -> None:
    """``query.stop()``; stopping a query that already ended is fine."""
    try:
        query.stop()
    except Exception:  # noqa: BLE001
        pass
