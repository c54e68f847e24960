"""One attempt of a job: :class:`Attempt`, a context manager that builds what one run of
the job's query needs, starts the query, and releases it all in reverse order.

The runner (:class:`~streamjob.manager.runner.JobRunner`) plans the job, then holds one
:class:`Attempt` per run of its query; a failover builds a new one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import shutil
import tempfile
from typing import Callable

from .. import properties as jp
from ..catalog import Catalog
from ..catalog.records import JobInfo
from ..checkpoint import fingerprint, identity, store, watermark
from ..checkpoint.backends import backend_for_plan
from ..checkpoint.expiry import ExpiryWatch
from ..checkpoint.recorder import (CheckpointRecorder, CheckpointTracker, batches_to_retain,
                                   recover_unrecorded)
from ..spark.listener import ProgressListener
from ..connectors.sinks import table_sink
from ..exceptions import StreamJobError
from ..home import Home
from ..planner.bind import bind_job
from ..planner.plan import JobPlan
from ..spark.query import start_query
from ..spark.session import job_data_sources
from .lag import EndOffsetsProbe
from .progress import ProgressReporter

# the runner's logger: records keep the name they had before this module was split off
log = logging.getLogger("streamjob.manager.runner")


class Attempt:
    """One run of a job's query: what it needs, built in order on entry and released in
    reverse order on exit (also when building fails halfway: what was built is released).

    Entering builds, in this order (the release of each step, if it has one, in brackets;
    releases run last-built first, each even if an earlier one failed, a failed one
    logged):

    1. the checkpoint directory: the job's own with durable checkpoints, else a
       temporary one, so that each attempt begins afresh at the reset strategy (DESIGN
       §6) [the temporary directory is deleted];
    2. the job's session clone: its own ``spark.sql.*`` settings, Spark's retention
       matched to the retained checkpoints, the Python data sources it reads;
    3. the checkpoint backend (``morphling.checkpoint.backend``), marked running [the
       running mark withdrawn, the backend closed];
    4. with durable checkpoints, the directory's identity: whose it is and which epoch
       (a lost one is refused, :mod:`streamjob.checkpoint.identity`); it keys the sink's
       markers;
    5. the table sink (:func:`~streamjob.connectors.sinks.table_sink`) [closed];
    6. with durable checkpoints: writes a SIGKILL cut removed; a fresh directory tells
       the sink (``on_new_checkpoint``) and applies ``START ... FROM`` a source position;
       the logic fingerprint checked and written (DESIGN §4); the micro-batch that
       writes what the watermark released before the last run ended scheduled first;
       checkpoints the last run committed but did not record recovered, seeding the
       tracker (what ``run --until-idle`` compares);
    7. the expiry watch of ``morphling.checkpoint.timeout``;
    8. the dead-letter tables of tolerant Kafka sources, created or checked;
    9. the consumer-group committers [closed];
    10. the progress reporter, from where the run resumes;
    11. the end-offsets probe of the Kafka sources (the run's lag) [stopped];
    12. the checkpoint recorder, and the job's one Spark listener feeding it and the
        progress reporter [the listener removed from the session];
    13. the sink prepared, the plan bound to its connectors' readers
        (:func:`~streamjob.planner.bind.bind_job`: secret references resolved, SQL static
        tables checked) and the query started [the query stopped].

    Args:
        catalog: the catalog (runs, checkpoints, progress).
        home: the streamjob home (checkpoint root, engine conf).
        job: the job as read when its attempt began.
        plan: the job's plan, checked against the admin's policy.
        tracker: the runner's :class:`CheckpointTracker` (it outlives attempts).
        job_session: ``(sql_conf, data source names) -> SparkSession``: a session
            clone for the job (:meth:`~streamjob.manager.job_manager.JobManager.job_session`).

    After entering, ``query`` is the running StreamingQuery, ``plan`` the plan as
    started (with a ``START ... FROM`` position applied), ``checkpoint_dir`` its
    directory; these stay readable after the attempt was released. Raises (on entering)
    whatever a step raises: StreamJobError subclasses for an invalid or refused job
    (identity, fingerprint, sink schema), ConnectorError for an unreachable system,
    Spark's errors from starting the query.
    """

    def __init__(self, catalog: Catalog, home: Home, job: JobInfo, plan: JobPlan,
                 tracker: CheckpointTracker,
                 job_session: Callable[[dict[str, str], set[str]], object]) -> None:
        self.catalog = catalog
        self.home = home
        self.job = job
        self.plan = plan
        self.tracker = tracker
        self._job_session = job_session
        self.checkpoint_dir: str | None = None
        self.backend = None      # CheckpointBackend (checkpoint/backends)
        self.sink = None         # TableSink (connectors/sinks.py)
        self.watch: ExpiryWatch | None = None
        self.committers: list = []
        self.progress: ProgressReporter | None = None
        self.probe: EndOffsetsProbe | None = None
        self.recorder: CheckpointRecorder | None = None
        self.query = None
        #: Spark runs micro-batches without new data for this job (its session's conf).
        self.no_data_batches = True
        self._stack = contextlib.ExitStack()

    def open(self) -> "Attempt":
        """Build the steps in order and start the query (class docstring); returns self.
        If a step raises, what was built is released (:meth:`close`) and the error
        raised."""
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __enter__(self) -> "Attempt":
        return self.open()

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def close(self) -> None:
        """Release what was built, last built first (class docstring). Idempotent."""
        self._stack.close()

    def _release(self, what: str, release: Callable[[], object],
                 best_effort: bool = False) -> None:
        """Register ``release`` to run at :meth:`close`; a failure is logged (``what``
        names it; at DEBUG level if ``best_effort``), so that the other releases still
        run and the runner goes on."""
        level = logging.DEBUG if best_effort else logging.WARNING

        def quietly() -> None:
            try:
                release()
            except Exception as exc:  # noqa: BLE001 - one release must not skip the others
                log.log(level, "job %s: %s failed: %s", self.job.qualified_name, what, exc)
        self._stack.callback(quietly)

    def _close_sink(self) -> None:
        """Close the table sink (a Kafka table's producer; the next attempt's sink fences
        it anyway, KIP-98); :attr:`sink` is None once it is closed."""
        sink, self.sink = self.sink, None
        if sink is not None:
            sink.close()

    def _build(self) -> None:  # noqa: C901 - the numbered steps of the class docstring
        job, plan = self.job, self.plan
        props = plan.props
        durable = props.checkpoint_enabled
        retained = props.checkpoints_retained
        # 1. the checkpoint directory
        if durable:
            ckdir = self.home.checkpoint_dir(job.database, job.name)
        else:
            ckdir = tempfile.mkdtemp(prefix=f"sj-{job.name}-")
            self._release("deleting the temporary checkpoint",
                          lambda: shutil.rmtree(ckdir, ignore_errors=True))
        self.checkpoint_dir = ckdir
        # 2. the session clone
        session = self._job_session({
            **jp.spark_settings(props),  # the job's own spark.sql.* settings
            # Spark keeps what the oldest retained checkpoint needs; the recorder trims
            "spark.sql.streaming.minBatchesToRetain": str(batches_to_retain(
                retained, props.checkpoint_interval_ms, props.trigger_ms)),
            # a state snapshot every `retained` versions lets maintenance purge older ones
            "spark.sql.streaming.stateStore.minDeltasForSnapshot": str(retained),
        }, job_data_sources(plan))
        self.no_data_batches = session.conf.get(
            "spark.sql.streaming.noDataMicroBatches.enabled", "true").lower() == "true"
        # 3. the checkpoint backend
        backend = self.backend = backend_for_plan(self.catalog, self.home, plan)
        self._release("closing the checkpoint backend", backend.close)
        backend.mark_running(job)
        self._release("withdrawing the running mark", lambda: backend.clear_running(job))
        # 4. the directory's identity
        marker = job.uid
        if durable:  # whose directory, which epoch; a lost one is refused (identity.py)
            ident = identity.prepare(ckdir, job, backend.latest(job))
            marker = identity.marker_key(job.uid, ident.epoch)
        # 5. the sink
        sink = self.sink = table_sink(
            plan.sink, plan.sink_spec, marker=marker, job=job.qualified_name,
            exactly_once=plan.guarantee == "exactly-once",
            upsert=plan.output_mode == "update", checkpointed=durable)
        self._release("closing the sink", self._close_sink)
        # 6. the checkpoint directory's state
        fresh = True
        if durable:
            fresh = self._resume(ckdir, sink, ident, retained)
        # 7. the expiry watch
        self.watch = ExpiryWatch(ckdir, props.checkpoint_timeout_ms)
        # 8. the dead-letter tables
        _prepare_dead_letters(self.plan)
        # 9. the consumer-group committers
        self.committers = group_committers(self.plan)
        for committer in self.committers:
            self._release("closing a consumer-group committer", committer.close)
        # 10. the progress reporter: the run's progress, from where it resumes: Spark's
        # offset log, whose committed end the tracker holds; without one (no durable
        # checkpoints, a fresh directory) the run begins at its reset strategy and its
        # position is unknown until a batch
        resumes = durable and not fresh
        self.progress = ProgressReporter(self.catalog, job.uid, job.qualified_name,
                                         self.tracker, start_offsets=dict(self.tracker.offsets)
                                         if resumes else None)
        # 11. the end-offsets probe
        kafka = [src.source for src in plan.sources if src.source.offsets_key is not None]
        if kafka:  # the broker's end offsets while the run lasts: its lag (manager/lag.py)
            probe = self.probe = EndOffsetsProbe(kafka, self.progress.on_end_offsets,
                                                 job.qualified_name).start()
            self._release("stopping the end-offsets probe", probe.stop)
        # 12. the recorder and the listener
        self.recorder = CheckpointRecorder(
            self.catalog, job.uid, job.qualified_name, ckdir, retained, self.tracker,
            durable=durable, backend=backend, on_checkpoint=_commit_groups(self.committers),
            interval_ms=props.checkpoint_interval_ms)
        listener = ProgressListener(
            job.qualified_name, on_progress=(self.recorder.record, self.progress.on_progress),
            on_idle=self.progress.on_idle)
        session.streams.addListener(listener)
        self._release("removing the listener",  # a dead JVM has none left
                      lambda: session.streams.removeListener(listener), best_effort=True)
        # 13. the query: the sink prepared, the plan bound to its readers (secrets
        # resolved, SQL static tables checked), the query started
        sink.prepare()
        bound = bind_job(self.plan)
        query = self.query = start_query(session, bound, ckdir, sink)
        self._release("stopping the query", query.stop, best_effort=True)  # may have ended

    def _resume(self, ckdir: str, sink, ident, retained: int) -> bool:
        """Step 6 (durable checkpoints): the directory as the last run left it. Returns
        True if it holds no offsets yet (a fresh directory)."""
        job = self.job
        for name in store.remove_torn_writes(ckdir):  # a write cut by a SIGKILL
            log.info("job %s: removed %s, a write its last run did not finish",
                     job.qualified_name, name)
        fresh = not store.log_ids(ckdir, "offsets")
        if fresh:
            sink.on_new_checkpoint()  # e.g. a file table whose manifest lists batches
        if fresh and ident.start:  # START ... FROM EARLIEST | LATEST | TIMESTAMP
            self.plan = dataclasses.replace(self.plan,
                                            props=self.plan.props.starting_at(ident.start))
        # refuse checkpoints of a different logic (DESIGN §4)
        fp = fingerprint.check(ckdir, self.plan)
        fingerprint.write(ckdir, fp)
        self.tracker.fingerprint = fp.encode()
        if self.no_data_batches:  # output the watermark released: it runs first
            released = watermark.schedule_released_batch(ckdir)
            if released is not None:
                log.info("job %s: batch %s, which writes what the watermark released before "
                         "its last run ended, runs first", job.qualified_name, released)
        latest = recover_unrecorded(self.backend, job, ckdir, retained,
                                    self.tracker.fingerprint)
        if latest is not None:  # what the job has committed (run --until-idle compares it)
            with self.tracker.cond:
                if self.tracker.latest_id is None:
                    self.tracker.latest_id = latest.checkpoint_id
                    self.tracker.latest_at = latest.ended_at or latest.started_at
                    self.tracker.offsets = dict(latest.source_offsets or {})
                    self.tracker.batch_id = latest.checkpoint_id
        return fresh


def _prepare_dead_letters(plan: JobPlan) -> None:
    """Create (or check) the dead-letter tables of the job's tolerant Kafka sources before
    it starts, so executors only insert (DESIGN §7).

    Raises:
        ConnectorError / ValidationError: the database is unreachable or the existing
            table does not fit its declaration.
    """
    from ..connectors.kafka.dead_letter import DeadLetterWriter

    for src in plan.sources:
        if src.dead_letter is not None:
            DeadLetterWriter(src.dead_letter).sink.prepare()


def group_committers(plan: JobPlan) -> list:
    """One :class:`~streamjob.connectors.kafka.group.GroupCommitter` per (broker, consumer
    group) of the job's Kafka sources; they connect lazily, at the first commit."""
    from ..connectors.sources import group_committers as committers

    return committers((src.source, src.group_id) for src in plan.sources)


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
