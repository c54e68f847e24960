"""The Spark wiring of one attempt of a job (:class:`~streamjob.manager.runner.JobRunner`).

:meth:`AttemptMixin._start` prepares and starts the query: the checkpoint directory
(a temporary one without durable checkpoints), the job's session clone, the checkpoint
backend and the logic fingerprint, the checkpoint recorder, progress reporter and
end-offsets probe (the run's lag), the
dead-letter tables, the consumer-group committers, and the table sink
(:func:`~streamjob.connectors.sinks.table_sink`); the
``_close_*``/``_stop_probe``/``_cleanup_temp`` methods release them after the attempt.
"""

from __future__ import annotations

import dataclasses
import logging
import tempfile
from typing import Callable

from .. import properties as jp
from ..checkpoint import fingerprint, identity, store, watermark
from ..checkpoint.backends import backend_for_plan
from ..checkpoint.expiry import ExpiryWatch
from ..checkpoint.recorder import CheckpointRecorder, batches_to_retain, recover_unrecorded
from ..spark.listener import ProgressListener
from ..connectors.sinks import table_sink
from ..exceptions import StreamJobError
from ..planner.plan import JobPlan
from ..spark.query import start_query
from ..spark.session import job_data_sources
from .lag import EndOffsetsProbe
from .progress import ProgressReporter

# the runner's logger: records keep the name they had before this module was split off
log = logging.getLogger("streamjob.manager.runner")


class AttemptMixin:
    """Starting and releasing one attempt: a base class of
    :class:`~streamjob.manager.runner.JobRunner` (uses its ``manager``, ``job``,
    ``catalog``, ``tracker`` and the attempt's attributes it initialises)."""


    def _start(self, plan: JobPlan):
        props = plan.props
        durable = props.checkpoint_enabled
        if durable:
            ckdir = self.manager.home.checkpoint_dir(self.job.database, self.job.name)
        else:
            self._tmp = tempfile.mkdtemp(prefix=f"sj-{self.job.name}-")
            ckdir = self._tmp
        retained = props.checkpoints_retained
        session = self.manager.job_session({
            **jp.spark_settings(props),  # the job's own spark.sql.* settings
            # Spark keeps what the oldest retained checkpoint needs; the recorder trims
            "spark.sql.streaming.minBatchesToRetain": str(batches_to_retain(
                retained, props.checkpoint_interval_ms, props.trigger_ms)),
            # a state snapshot every `retained` versions lets maintenance purge older ones
            "spark.sql.streaming.stateStore.minDeltasForSnapshot": str(retained),
        }, job_data_sources(plan))
        self.backend = backend_for_plan(self.catalog, self.manager.home, plan)
        self.backend.mark_running(self.job)
        marker = self.job.uid
        if durable:  # whose directory, which epoch; a lost one is refused (identity.py)
            ident = identity.prepare(ckdir, self.job, self.backend.latest(self.job))
            marker = identity.marker_key(self.job.uid, ident.epoch)
        sink = table_sink(plan.sink, plan.sink_spec, marker=marker, job=self.job.qualified_name,
                          exactly_once=plan.guarantee == "exactly-once",
                          upsert=plan.output_mode == "update", checkpointed=durable)
        if durable:
            for name in store.remove_torn_writes(ckdir):  # a write cut by a SIGKILL
                log.info("job %s: removed %s, a write its last run did not finish",
                         self.job.qualified_name, name)
            fresh = not store.log_ids(ckdir, "offsets")
            if fresh:
                sink.on_new_checkpoint()  # e.g. a file table whose manifest lists batches
            if fresh and ident.start:  # START ... FROM EARLIEST | LATEST | TIMESTAMP
                plan = dataclasses.replace(plan, props=plan.props.starting_at(ident.start))
        if durable:  # refuse checkpoints of a different logic (DESIGN §4)
            fp = fingerprint.check(ckdir, plan)
            fingerprint.write(ckdir, fp)
            self.tracker.fingerprint = fp.encode()
        self.no_data_batches = session.conf.get(
            "spark.sql.streaming.noDataMicroBatches.enabled", "true").lower() == "true"
        if durable and self.no_data_batches:  # output the watermark released: it runs first
            released = watermark.schedule_released_batch(ckdir)
            if released is not None:
                log.info("job %s: batch %s, which writes what the watermark released before "
                         "its last run ended, runs first", self.job.qualified_name, released)
        if durable:
            latest = recover_unrecorded(self.backend, self.job, ckdir, retained,
                                        self.tracker.fingerprint)
            if latest is not None:  # what the job has committed (run --until-idle compares it)
                with self.tracker.cond:
                    if self.tracker.latest_id is None:
                        self.tracker.latest_id = latest.checkpoint_id
                        self.tracker.latest_at = latest.ended_at or latest.started_at
                        self.tracker.offsets = dict(latest.source_offsets or {})
                        self.tracker.batch_id = latest.checkpoint_id
        self.checkpoint_dir = ckdir
        self.watch = ExpiryWatch(ckdir, props.checkpoint_timeout_ms)
        _prepare_dead_letters(plan)
        self.committers = group_committers(plan)
        # the run's progress, from where it resumes: Spark's offset log, whose committed
        # end the tracker holds; without one (no durable checkpoints, a fresh directory)
        # the run begins at its reset strategy and its position is unknown until a batch
        resumes = durable and not fresh
        self.progress = ProgressReporter(self.catalog, self.job.uid, self.job.qualified_name,
                                         self.tracker, start_offsets=dict(self.tracker.offsets)
                                         if resumes else None)
        kafka = [src.source for src in plan.sources if src.source.offsets_key is not None]
        if kafka:  # the broker's end offsets while the run lasts: its lag (manager/lag.py)
            self.probe = EndOffsetsProbe(kafka, self.progress.on_end_offsets,
                                         self.job.qualified_name).start()
        self.recorder = CheckpointRecorder(
            self.catalog, self.job.uid, self.job.qualified_name, ckdir, retained, self.tracker,
            durable=durable, backend=self.backend, on_checkpoint=_commit_groups(self.committers),
            interval_ms=props.checkpoint_interval_ms)
        session.streams.addListener(ProgressListener(
            self.job.qualified_name, on_progress=(self.recorder.record, self.progress.on_progress),
            on_idle=self.progress.on_idle))
        self.sink = sink
        sink.prepare()
        return start_query(session, plan, ckdir, sink)

    def _close_sink(self) -> None:
        """Close the table sink of the attempt (a Kafka table's producer; the next
        attempt's sink fences it anyway, KIP-98)."""
        sink, self.sink = self.sink, None
        if sink is not None:
            sink.close()

    def _stop_probe(self) -> None:
        """Stop the attempt's end-offsets probe (its thread closes its consumers)."""
        probe, self.probe = getattr(self, "probe", None), None
        if probe is not None:
            probe.stop()

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
