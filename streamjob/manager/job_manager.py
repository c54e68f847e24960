"""The job manager of a process: :class:`JobManager` hosts the SparkSession and the
:class:`~streamjob.manager.runner.JobRunner` of each job this process runs (``streamjob
run``, a shell, or ``streamjob server``), keyed by job uid, and starts, stops, fences and
waits on them."""

from __future__ import annotations

import logging

import threading
import time
from ..catalog import Catalog
from ..catalog.records import JobInfo
from ..home import Home
from .admission import StartGate
from .runner import JobRunner
from streamjob.catalog.records import JobStatus

log = logging.getLogger(__name__)

class JobManager:
    """Hosts the SparkSession and the runners of the jobs this process runs.

    Args:
        catalog: the catalog (control plane).
        home: the streamjob home (checkpoint root, engine conf).
        debug: Spark's own logs and full traces.
        owner: the server id written into ``jobs.owner`` of the jobs it runs
            (``streamjob server``); None for ``streamjob run``, whose jobs have no owner.

    A job's SET values are those captured when it was created (``JobInfo.session_properties``).
    Its queries start a few at a time (:mod:`.admission`). It is the
    :class:`~.runner.RunnerHost` of its runners: they know it through that protocol only.
    """

    def __init__(self, catalog: Catalog, home: Home, debug: bool = False,
                 owner: str | None = None) -> None:
        self.catalog = catalog
        self.home = home
        self.debug = debug
        self.owner = owner
        self.runners: dict[str, JobRunner] = {}
        self._lock = threading.Lock()
        self.start_gate = StartGate()  # a few query start-ups at a time (admission.py)
        #: What a dead Spark JVM does to this manager: "restart" (a server starts a new
        #: session and fails its jobs over) or "exit" (``streamjob run`` ends, naming it).
        self.on_jvm_death = "restart"
        self.jvm_died: str | None = None  # the sentence, once a JVM of this process died
        self._jvm_lock = threading.Lock()

    def spark(self):
        """The process's SparkSession (started on first use)."""
        from ..spark.session import spark_session

        return spark_session(self.home, self.debug)

    def spark_died(self) -> str | None:
        """If this process's Spark JVM died: a sentence saying so (kept in ``jvm_died``),
        after dropping the dead session so that the next start gets a new JVM (for a
        "restart" manager); None while it runs. Safe to call from every runner."""
        from ..spark.session import forget_dead_spark, jvm_exit_code

        with self._jvm_lock:
            code = jvm_exit_code()
            if code is None:
                return self.jvm_died if self.on_jvm_death == "exit" else None
            self.jvm_died = (f"the Spark JVM of this process died (exit code {code}: killed, "
                             "out of memory or System.exit)")
            if self.on_jvm_death == "restart":  # `run` says it in its one error line
                log.error("%s; its jobs fail over to a new Spark session", self.jvm_died)
            forget_dead_spark()
            return self.jvm_died

    def job_session(self, sql_conf: dict[str, str], sources: set[str] | None = None):
        """A session clone for one job (:func:`streamjob.spark.session.job_session`):
        ``sources`` the Python data sources to register (None: all)."""
        from ..spark.session import job_session

        return job_session(self.spark(), sql_conf, sources)

    def start(self, job: JobInfo, recovery: bool = False) -> JobRunner:
        """Run ``job`` in this process (no-op if already running here). ``recovery``:
        the job is taken over from a process that died or lost it; its query start goes
        ahead of the others waiting (:mod:`.admission`).

        Raises:
            JobError: another live process (a server, a shell, ``streamjob run``) runs
                the job (``manager/liveness.py``): two runners must never share a checkpoint.
        """
        from .liveness import LIVE_WITHIN_MS, live_owner, reap_local_dead

        with self._lock:
            runner = self.runners.get(job.uid)
            if runner is not None and runner.is_alive():
                return runner
            reap_local_dead(self.catalog)
            other = (self.catalog.claim_job(job.uid, self.owner, LIVE_WITHIN_MS)
                     if self.owner else None)
            if other is None and not self.owner:
                current = self.catalog.get_job_by_uid(job.uid)
                other = current.owner if current and live_owner(self.catalog, current.owner) else None
            if other is not None:
                from ..exceptions import JobError

                raise JobError(f"streamjob {job.qualified_name} is running in job manager "
                               f"{other}; stop it there first")
            self.spark()
            runner = JobRunner(self, job, recovery=recovery)
            self.runners[job.uid] = runner
            runner.start()
            return runner

    def stop(self, job_uid: str, timeout: float = 90.0, graceful: bool = True) -> bool:
        """Stop the job's runner if this process runs it, waiting up to ``timeout``
        seconds for it to end; True if it was running. ``graceful``: after the current
        micro-batch (module docstring), else at once."""
        with self._lock:
            runner = self.runners.pop(job_uid, None)
        if runner is None:
            return False
        runner.request_stop(graceful=graceful)
        runner.join(timeout)
        return True

    def stop_all(self, graceful: bool = True, timeout: float = 90.0) -> list[JobRunner]:
        """Stop every runner at once (in parallel), waiting up to ``timeout`` seconds in
        all; returns them."""
        with self._lock:
            runners = list(self.runners.values())
            self.runners.clear()
        for runner in runners:
            runner.request_stop(graceful=graceful)
        deadline = time.monotonic() + timeout
        for runner in runners:
            runner.join(max(0.0, deadline - time.monotonic()))
        return runners

    def fence(self) -> list[JobRunner]:
        """Stop every runner at once without further catalog writes (the lease is lost:
        see :meth:`JobRunner.fence`); returns at once with the fenced runners."""
        with self._lock:
            runners = list(self.runners.values())
            self.runners.clear()
        for runner in runners:
            runner.fence()
        return runners

    def running(self) -> list[JobRunner]:
        """The runners whose thread is alive."""
        return [r for r in list(self.runners.values()) if r.is_alive()]

    def forget(self, job_uid: str) -> JobRunner | None:
        """Remove the job's runner from this manager (without stopping it); returns it."""
        with self._lock:
            return self.runners.pop(job_uid, None)

    def shutdown(self) -> None:
        """Stop every job this process runs, each after its current micro-batch and all
        at once (checkpoints stay), then Spark."""
        self.stop_all(graceful=True)
        from ..spark.session import stop_spark

        stop_spark()

    def wait_until_idle(self, poll_s: float = 1.0, timeout: float | None = None) -> None:
        """Block until every running job has caught up: it has committed all input
        available now, and written the output its watermark released.

        "Available now" is read when this is called: the Kafka sources' end offsets and
        the files in file streams' directories. A job is idle once its committed batches
        reach those offsets and hold those files, and no micro-batch is pending for the
        output the watermark released (:class:`~.idle.ReleasedOutput`: the no-data
        micro-batch Spark runs after a batch that moved the watermark of a stateful
        job; docs/checkpoints.md, "Caught up"). Every job is waited for, even after
        another failed; then all failures are reported together. A job whose end offsets
        cannot be read (broker unreachable, topic missing) is ended FAILED with that
        error (:meth:`JobRunner.fail`: its run's cause and last error), not left to the
        STOPPED of the process's exit (issue 16).

        Raises:
            JobError: one or more jobs FAILED (each named with its error), a job did not
                catch up within ``timeout`` s, or a source is unbounded (rate) and can
                never be idle.
        """
        from ..checkpoint.entries import committed_source_files
        from ..checkpoint.store import log_ids
        from ..exceptions import ConnectorError, JobError
        from .idle import (ReleasedOutput, file_targets, files_reached, reached, recorded,
                           targets_for)

        deadline = None if timeout is None else time.monotonic() + timeout
        failed: list[str] = []
        given_up: list = []  # runners failed here (their end offsets could not be read)
        for runner in list(self.runners.values()):
            while not runner.started.wait(poll_s) and runner.is_alive():
                pass
            if runner.plan is None or self._failed(runner):
                failed.append(self._failure(runner))
                continue
            try:
                targets = targets_for(runner.plan)  # the tracker was seeded at start (Attempt)
            except ConnectorError as exc:
                runner.fail(str(exc))
                given_up.append(runner)
                failed.append(f"job {runner.job.qualified_name} {JobStatus.FAILED}: {exc}")
                continue
            files = file_targets(runner.plan)
            attempt = runner.attempt
            ckdir = (attempt.checkpoint_dir if attempt is not None else None) or \
                self.home.checkpoint_dir(runner.job.database, runner.job.name)
            released = ReleasedOutput(ckdir, runner.tracker.cond, lambda r=runner: r.query,
                                      attempt.no_data_batches if attempt is not None else True)

            def caught_up(t, targets=targets, files=files, ckdir=ckdir,
                          released=released) -> bool:
                return reached(t.offsets, targets) and (
                    not files or (files_reached(committed_source_files(ckdir), files)
                                  and recorded(t.batch_id, log_ids(ckdir, "commits")))) \
                    and released.written()

            while not runner.tracker.wait_for(caught_up, poll_s):
                if not runner.is_alive() or self._failed(runner):
                    break
                if deadline is not None and time.monotonic() > deadline:
                    raise JobError(f"job {runner.job.qualified_name} did not catch up in {timeout} s")
            if self._failed(runner) or not runner.is_alive():
                failed.append(self._failure(runner))
        for runner in given_up:  # their FAILED is in the catalog when this raises
            runner.join(poll_s * 60)
        if failed:
            raise JobError(f"{len(failed)} of {len(self.runners)} job(s) did not catch up: "
                           + "; ".join(failed))

    def _failed(self, runner) -> bool:
        """True if the runner's job ended FAILED (in the catalog) or its thread ended
        with an error."""
        job = self.catalog.get_job_by_uid(runner.job.uid)
        return (job is not None and job.status == JobStatus.FAILED) or (
            not runner.is_alive() and runner.error is not None)

    def _failure(self, runner) -> str:
        """``"job db.j FAILED: <error>"`` for a failed runner (its catalog status)."""
        job = self.catalog.get_job_by_uid(runner.job.uid)
        status = job.status if job else "gone"
        return f"job {runner.job.qualified_name} {status}: {runner.error or (job.last_error if job else '')}"
