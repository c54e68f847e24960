"""Supervision of running jobs: start, watch, fail over, stop (DESIGN §5).

One :class:`JobRunner` thread per running job. Each attempt:

1. plans the job from the catalog (a job that no longer validates fails at once);
2. opens a run row, builds the query in the job's own session clone and starts it with
   the job's checkpoint directory — Spark resumes from the last committed batch;
3. waits for the query to end or for a stop request;
4. on failure, ends the run with the cause and, while auto failover is on and the
   failures since the last completed checkpoint stay within
   ``morphling.task.max.failures``, waits a growing backoff (1 s, 2 s, 4 s ... 30 s) and
   goes to 1; otherwise the job is FAILED with the error kept in the catalog.
"""

from __future__ import annotations

import logging
import re
import tempfile
import threading
import time
from typing import Callable

from .. import properties as jp
from ..catalog import Catalog
from ..catalog.records import JobInfo
from ..checkpoint.backends import CheckpointBackend, backend_for_plan
from ..checkpoint import fingerprint
from ..checkpoint.expiry import ExpiryWatch, expiry_message
from ..checkpoint.recorder import CheckpointRecorder, CheckpointTracker, recover_unrecorded
from ..connectors import spec as cspec
from ..connectors.kafka_sink import KafkaSink
from ..connectors.sql_sink import SqlSink
from ..exceptions import ConnectorError, StreamJobError
from ..home import Home
from ..planner.plan import JobPlan, plan_job, start_query

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 30.0

_OUR_ERROR = re.compile(r"^\s*streamjob(?:\.\w+)+: (.+?)(?:\s+SQLSTATE: \w+)?$", re.M)


def error_summary(exc: BaseException) -> str:
    """One line a user can act on from a Spark/Python failure (no JVM stack trace)."""
    text = str(getattr(exc, "desc", None) or exc)
    # an error raised by our own code in a Python worker (source, sink) ends its traceback
    # as "streamjob.<module>.<ErrorClass>: <message>": that message is what the user needs
    ours = _OUR_ERROR.findall(text)
    if ours:
        return ours[-1].strip()
    for marker in ("ConnectorError: ", "StreamJobError: "):
        idx = text.rfind(marker)
        if idx >= 0:
            tail = text[idx:].split("\n", 1)[0]
            return tail.split(": ", 1)[1] if ": " in tail else tail
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if not ln.startswith(("at ", "File ", "Traceback", "===", "JVM stacktrace")):
            return ln[:500]
    return type(exc).__name__


class JobRunner(threading.Thread):
    """Runs one job until stopped or failed; see the module docstring."""

    def __init__(self, manager: "JobManager", job: JobInfo) -> None:
        super().__init__(name=f"job-{job.qualified_name}", daemon=True)
        self.manager = manager
        self.job = job
        self.tracker = CheckpointTracker()
        self.plan: JobPlan | None = None
        self.query = None
        self.error: str | None = None
        self.started = threading.Event()
        self._stop_requested = threading.Event()
        self._tmp: str | None = None  # checkpoint dir of a job without durable checkpoints
        self.watch: ExpiryWatch | None = None  # expiry of the current attempt's checkpoints
        self.backend: CheckpointBackend | None = None  # checkpoint backend of the current attempt
        self.kafka_sink: KafkaSink | None = None  # Kafka table sink of the current attempt
        self.committers: list = []  # Kafka consumer-group committers of the current attempt

    @property
    def catalog(self) -> Catalog:
        return self.manager.catalog

    def request_stop(self) -> None:
        """Ask the job to stop; the query is stopped and the run ends STOPPED."""
        self._stop_requested.set()
        q = self.query
        if q is not None:
            try:
                q.stop()
            except Exception:  # noqa: BLE001 - stopping a dead query is fine
                pass

    def _update(self, **kw) -> None:
        self.catalog.update_job(self.job.database, self.job.name, uid=self.job.uid, **kw)

    def run(self) -> None:  # noqa: C901 - the supervision loop reads best as one piece
        failures = 0
        attempt = 0
        completed_at_failure = -1
        while not self._stop_requested.is_set():
            attempt += 1
            run_id = None
            try:
                job = self.catalog.get_job_by_uid(self.job.uid)
                if job is None:
                    self.error = "the job was dropped"
                    self.started.set()
                    return
                self.plan = plan_job(self.catalog, self.manager.home, job.database, job.name,
                                     job.query, job.properties, job.session_properties)
                run_id = self.catalog.start_run(job.uid, attempt)
                self._update(status="RECOVERING" if failures else "STARTING")
                self.query = self._start(self.plan)
                self._update(status="RUNNING", attempts=failures)
                self.started.set()
                while not self._stop_requested.is_set():
                    if self.query.awaitTermination(0.5):
                        break
                    self._check_expiry()
                if self._stop_requested.is_set():
                    self.query.stop()
                    self.catalog.end_run(run_id, "STOPPED", "stopped")
                    self._update(status="STOPPED")
                    return
                exc = self.query.exception()
                if exc is None:
                    self.catalog.end_run(run_id, "STOPPED", "query stopped")
                    self._update(status="STOPPED")
                    return
                raise exc
            except StreamJobError as exc:
                self.error = str(exc)
                if not isinstance(exc, ConnectorError):  # invalid job: no retry can help
                    self.catalog.end_run(run_id, "FAILED", self.error)
                    self._update(status="FAILED", last_error=self.error)
                    self.started.set()
                    return
            except Exception as exc:  # noqa: BLE001 - any query failure goes to failover
                self.error = error_summary(exc)
            finally:
                self._cleanup_temp()
                self._close_backend()
                self._close_kafka_sink()
            if self._stop_requested.is_set():
                self.catalog.end_run(run_id, "STOPPED", "stopped")
                self._update(status="STOPPED")
                return
            log.warning("job %s failed: %s", self.job.qualified_name, self.error)
            self.catalog.end_run(run_id, "FAILED", self.error)
            if self.tracker.completed > completed_at_failure:
                failures = 0  # a checkpoint completed since the last failure: count afresh
            completed_at_failure = self.tracker.completed
            failures += 1
            props = self.plan.props if self.plan else {}
            allowed = props.get("morphling.task.max.failures", 5)
            if not props.get("morphling.job.enable.auto.failover", True) or allowed < 0 \
                    or failures > allowed:
                self._update(status="FAILED", last_error=self.error, attempts=failures)
                self.started.set()
                return
            self._update(status="RECOVERING", last_error=self.error, attempts=failures)
            backoff = min(MAX_BACKOFF_S, 2.0 ** (failures - 1))
            self._stop_requested.wait(backoff)

    def _start(self, plan: JobPlan):
        props = plan.props
        durable = props["morphling.job.enable.checkpoint"]
        if durable:
            ckdir = self.manager.home.checkpoint_dir(self.job.database, self.job.name)
        else:
            self._tmp = tempfile.mkdtemp(prefix=f"sj-{self.job.name}-")
            ckdir = self._tmp
        retained = int(props["morphling.checkpoint.retained"])
        session = self.manager.job_session({
            **jp.spark_settings(props),  # the job's own spark.sql.* settings
            "spark.sql.streaming.minBatchesToRetain": str(retained),
            # a state snapshot every `retained` versions lets maintenance purge older ones
            "spark.sql.streaming.stateStore.minDeltasForSnapshot": str(retained),
        })
        self.backend = backend_for_plan(self.catalog, self.manager.home, plan)
        self.backend.mark_running(self.job)
        if durable:  # refuse checkpoints of a different logic (DESIGN §4)
            fp = fingerprint.check(ckdir, plan)
            fingerprint.write(ckdir, fp)
            self.tracker.fingerprint = fp.encode()
            latest = recover_unrecorded(self.backend, self.job, ckdir, retained,
                                        self.tracker.fingerprint)
            if latest is not None:  # what the job has committed (run --until-idle compares it)
                with self.tracker.cond:
                    if self.tracker.latest_id is None:
                        self.tracker.latest_id = latest.checkpoint_id
                        self.tracker.offsets = dict(latest.source_offsets or {})
        self.watch = ExpiryWatch(ckdir, int(props["morphling.checkpoint.timeout"]))
        _prepare_dead_letters(plan)
        self.committers = group_committers(plan)
        recorder = CheckpointRecorder(self.catalog, self.job.uid, self.job.qualified_name, ckdir,
                                      retained, self.tracker, durable=durable,
                                      backend=self.backend,
                                      on_checkpoint=_commit_groups(self.committers))
        session.streams.addListener(recorder)
        writer = None
        if isinstance(plan.sink_spec, cspec.SqlTableSpec):
            sink = SqlSink(plan.sink_spec, plan.sink.columns, self.job.uid,
                           exactly_once=plan.guarantee == "exactly-once",
                           upsert=plan.output_mode == "update")
            sink.prepare()
            writer = _batch_writer(sink)
        if isinstance(plan.sink_spec, cspec.KafkaTableSpec):
            self.kafka_sink = KafkaSink(plan.sink_spec, plan.sink.columns, self.job.uid,
                                        self.job.qualified_name,
                                        exactly_once=plan.guarantee == "exactly-once")
            self.kafka_sink.prepare()
            writer = _kafka_batch_writer(self.kafka_sink)
        return start_query(session, plan, ckdir, writer)

    def _close_kafka_sink(self) -> None:
        """Close the Kafka table sink of the attempt (its producer); the next attempt's
        sink fences it anyway (KIP-98)."""
        sink, self.kafka_sink = self.kafka_sink, None
        if sink is not None:
            sink.close()

    def _close_backend(self) -> None:
        """Withdraw the running mark and close the checkpoint backend (and the consumer
        group committers) of the attempt."""
        for committer in self.committers:
            committer.close()
        self.committers = []
        backend, self.backend = self.backend, None
        if backend is None:
            return
        try:
            backend.clear_running(self.job)
        except StreamJobError as exc:
            log.warning("job %s: %s", self.job.qualified_name, exc)
        finally:
            backend.close()

    def _check_expiry(self) -> None:
        """Log and count a checkpoint running past ``morphling.checkpoint.timeout``; the
        recorder records it as LATE if it completes after all (DESIGN §4)."""
        watch = self.watch
        expired = watch.poll() if watch is not None else None
        if expired is None:
            return
        log.warning(expiry_message(expired, self.job.qualified_name))
        with self.tracker.cond:
            self.tracker.expired.add(expired)
        self.catalog.count_expired_checkpoint(self.job.uid)

    def _cleanup_temp(self) -> None:
        """Delete the temporary checkpoint of a job without durable checkpoints: each
        attempt begins afresh at the reset strategy (DESIGN §6), so none is reused."""
        if self._tmp:
            import shutil

            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def _prepare_dead_letters(plan: JobPlan) -> None:
    """Create (or check) the dead-letter tables of the job's tolerant Kafka sources before
    it starts, so executors only insert (DESIGN §7).

    Raises:
        ConnectorError / ValidationError: the database is unreachable or the existing
            table does not fit its declaration.
    """
    from ..connectors.dead_letter import DeadLetterWriter

    for src in plan.sources:
        if src.dead_letter is not None:
            DeadLetterWriter(src.dead_letter).sink.prepare()


def group_committers(plan: JobPlan) -> list:
    """One :class:`~streamjob.connectors.kafka_group.GroupCommitter` per (broker, consumer
    group) of the job's Kafka sources; they connect lazily, at the first commit."""
    from ..connectors.kafka_group import GroupCommitter

    groups: dict[tuple[str, str], list[str]] = {}
    for src in plan.sources:
        if isinstance(src.spec, cspec.KafkaSourceSpec) and src.group_id:
            groups.setdefault((src.spec.bootstrap, src.group_id), []).append(src.spec.topic)
    return [GroupCommitter(b, g, topics) for (b, g), topics in groups.items()]


def _commit_groups(committers: list) -> Callable | None:
    """The recorder's ``on_checkpoint``: commit each checkpoint's end offsets to the
    consumer groups, so Kafka tools show the job's progress and lag (DESIGN §7; the
    engine never reads them back, except the ``committed`` reset strategy)."""
    if not committers:
        return None

    def commit(batch_id: int, offsets: dict) -> None:
        for committer in committers:  # one unreachable group must not stop the others
            try:
                committer.commit(offsets)
            except StreamJobError as exc:
                log.warning("checkpoint %s: offsets not committed to the consumer group: %s",
                            batch_id, exc)

    return commit


def _kafka_batch_writer(sink: KafkaSink) -> Callable:
    """foreachBatch function of a Kafka table: the batch as Arrow, one transaction per
    batch when exactly-once (see connectors/kafka_sink.py)."""
    def write(df, batch_id: int) -> None:
        sink.write_arrow(df.toArrow(), batch_id)

    return write


def _batch_writer(sink: SqlSink) -> Callable:
    """foreachBatch function of a SQL sink: the batch as Arrow, written in one transaction
    (COPY on PostgreSQL, batched inserts on SQLite; see connectors/sql_sink.py)."""
    def write(df, batch_id: int) -> None:
        sink.write_arrow(df.toArrow(), batch_id)

    return write


class JobManager:
    """Hosts the SparkSession and the runners of the jobs this process runs.

    Args:
        catalog: the catalog (control plane).
        home: the streamjob home (checkpoint root, engine conf).

    A job's SET values are those captured when it was created (``JobInfo.session_properties``).
    """

    def __init__(self, catalog: Catalog, home: Home, debug: bool = False) -> None:
        self.catalog = catalog
        self.home = home
        self.debug = debug
        self.runners: dict[str, JobRunner] = {}
        self._lock = threading.Lock()

    def spark(self):
        """The process's SparkSession (started on first use)."""
        from ..engine import spark_session

        return spark_session(self.home, self.debug)

    def job_session(self, sql_conf: dict[str, str]):
        from ..engine import job_session

        return job_session(self.spark(), sql_conf)

    def start(self, job: JobInfo) -> JobRunner:
        """Run ``job`` in this process (no-op if already running here)."""
        with self._lock:
            runner = self.runners.get(job.uid)
            if runner is not None and runner.is_alive():
                return runner
            self.spark()
            runner = JobRunner(self, job)
            self.runners[job.uid] = runner
            runner.start()
            return runner

    def stop(self, job_uid: str, timeout: float = 60.0) -> bool:
        """Stop the job's runner if this process runs it; True if it was running."""
        with self._lock:
            runner = self.runners.pop(job_uid, None)
        if runner is None:
            return False
        runner.request_stop()
        runner.join(timeout)
        return True

    def running(self) -> list[JobRunner]:
        return [r for r in self.runners.values() if r.is_alive()]

    def shutdown(self) -> None:
        """Stop every job this process runs (checkpoints stay), then Spark."""
        for uid in list(self.runners):
            self.stop(uid)
        from ..engine import stop_spark

        stop_spark()

    def wait_until_idle(self, poll_s: float = 1.0, timeout: float | None = None) -> None:
        """Block until every running job has committed all input available now.

        "Available now" is the sources' end offsets read when this is called; a job is
        idle once its latest checkpoint's offsets reach them. A job that FAILED ends the
        wait with its error.

        Raises:
            JobError: a job failed, or a source is unbounded (rate) and can never be idle.
        """
        from ..exceptions import JobError
        from .idle import targets_for, reached

        deadline = None if timeout is None else time.monotonic() + timeout
        for runner in list(self.runners.values()):
            while not runner.started.wait(poll_s) and runner.is_alive():
                pass
            if runner.plan is None:
                raise JobError(f"job {runner.job.qualified_name} failed: {runner.error}")
            targets = targets_for(runner.plan)  # the tracker was seeded at start (_start)
            while not runner.tracker.wait_for(lambda t: reached(t.offsets, targets), poll_s):
                if not runner.is_alive():
                    job = self.catalog.get_job_by_uid(runner.job.uid)
                    raise JobError(
                        f"job {runner.job.qualified_name} is {job.status if job else 'gone'}: "
                        f"{runner.error or (job.last_error if job else '')}")
                if deadline is not None and time.monotonic() > deadline:
                    raise JobError(f"job {runner.job.qualified_name} did not catch up in {timeout} s")
