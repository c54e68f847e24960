"""The checkpoint side of one run of a job's query: :class:`CheckpointRun`, a context
manager that prepares the job's checkpoint directory and everything that records into
it for one attempt (:class:`streamjob.manager.attempt.Attempt`), and releases it in
reverse order.

What it needs of the other rooms comes in as values and callables: whether the job's
Spark session runs micro-batches without new data, and what to do with each recorded
checkpoint's offsets (the consumer-group commits of the connectors). It imports no
connector, Spark or job manager module.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import tempfile
from typing import TYPE_CHECKING, Any, Callable

from ..catalog import Catalog
from ..catalog.records import JobInfo
from ..home import Home
from ..releases import BuiltInOrder, Releases
from . import fingerprint, identity, store, watermark
from .backends import backend_for_plan
from .expiry import ExpiryWatch
from .recorder import CheckpointRecorder, CheckpointTracker, batches_to_retain, recover_unrecorded

if TYPE_CHECKING:  # pragma: no cover
    from ..planner.plan import JobPlan

log = logging.getLogger(__name__)


class CheckpointRun(BuiltInOrder):
    """The checkpoint directory of one attempt and what records into it.

    Entering builds, in this order (the release of each step, if it has one, in
    brackets; releases run last-built first, each even if an earlier one failed, a
    failed one logged; a step that raises releases what the earlier ones built):

    1. the checkpoint directory (:attr:`directory`): the job's own with durable
       checkpoints, else a temporary one, so that each attempt begins afresh at the reset
       strategy (DESIGN §6) [the temporary directory is deleted];
    2. the checkpoint backend (:attr:`backend`, ``morphling.checkpoint.backend``), marked
       running [the running mark withdrawn, the backend closed];
    3. with durable checkpoints, the directory's identity (:attr:`identity`): whose it is
       and which epoch (a lost one is refused, :mod:`.identity`); it keys the sink's
       markers (:attr:`marker`; without durable checkpoints the job's uid);
    4. with durable checkpoints, the directory as the last run left it: writes a SIGKILL
       cut removed; whether it holds no offsets yet (:attr:`fresh`); on a fresh one a
       ``START ... FROM`` source position applied to :attr:`plan`; the logic
       fingerprint checked and written (DESIGN §4); if the session runs micro-batches
       without new data, the micro-batch that writes what the watermark released before
       the last run ended scheduled first (:mod:`.watermark`); checkpoints the last run
       committed but did not record recovered, seeding the tracker (what ``run
       --until-idle`` compares);
    5. the expiry watch of ``morphling.checkpoint.timeout`` (:attr:`watch`);
    6. the checkpoint recorder (:attr:`recorder`), which the job's Spark listener feeds.

    Args:
        catalog: the catalog (the default backend, the recorder's counts).
        home: the streamjob home (checkpoint root, ZooKeeper conf).
        job: the job as read when its attempt began.
        plan: the job's plan (a :class:`~streamjob.planner.plan.JobPlan`).
        tracker: the runner's :class:`~.recorder.CheckpointTracker` (it outlives attempts).
        no_data_batches: Spark's ``spark.sql.streaming.noDataMicroBatches.enabled`` of
            the job's session (step 4).
        on_checkpoint: the recorder's ``(checkpoint id, end offsets)`` callback, or None
            (:class:`~.recorder.CheckpointRecorder`).

    :attr:`spark_conf` is known before entering: the session settings Spark's own
    checkpoint retention needs for this job. After entering, :attr:`plan` is the plan as
    the query starts (with a ``START ... FROM`` position applied) and :attr:`resumes` says
    whether the run resumes from offsets the directory holds. Raises (on entering)
    whatever a step raises: CheckpointError for a directory that is not the job's, or
    lost (identity), or unreadable; StreamJobError subclasses for a changed logic
    (fingerprint); ConnectorError for an unreachable backend.
    """

    def __init__(self, catalog: Catalog, home: Home, job: JobInfo, plan: "JobPlan",
                 tracker: CheckpointTracker, *, no_data_batches: bool = True,
                 on_checkpoint: Callable[[int, dict[str, Any]], None] | None = None) -> None:
        self.catalog = catalog
        self.home = home
        self.job = job
        self.plan = plan
        self.tracker = tracker
        self.no_data_batches = no_data_batches
        self.on_checkpoint = on_checkpoint
        props = plan.props
        self.durable: bool = props.checkpoint_enabled
        self.retained: int = props.checkpoints_retained
        #: Spark's session settings for this job's checkpoint: Spark keeps what the oldest
        #: retained checkpoint needs (the recorder trims), and a state snapshot every
        #: ``retained`` versions lets maintenance purge older ones
        self.spark_conf: dict[str, str] = {
            "spark.sql.streaming.minBatchesToRetain": str(batches_to_retain(
                self.retained, props.checkpoint_interval_ms, props.trigger_ms)),
            "spark.sql.streaming.stateStore.minDeltasForSnapshot": str(self.retained),
        }
        self.directory: str | None = None
        self.backend = None  # CheckpointBackend (backends/)
        self.identity: identity.Identity | None = None
        self.marker: str = job.uid
        self.fresh = True
        self.watch: ExpiryWatch | None = None
        self.recorder: CheckpointRecorder | None = None
        self._releases = Releases(job.qualified_name, log)

    @property
    def resumes(self) -> bool:
        """True if the run resumes from the offsets its durable directory holds (Spark's
        offset log, whose committed end the tracker holds); False when it begins at its
        reset strategy (no durable checkpoints, a fresh directory)."""
        return self.durable and not self.fresh

    def _build(self) -> None:
        job, durable = self.job, self.durable
        # 1. the directory
        if durable:
            ckdir = self.home.checkpoint_dir(job.database, job.name)
        else:
            ckdir = tempfile.mkdtemp(prefix=f"sj-{job.name}-")
            self._releases.add("deleting the temporary checkpoint",
                               lambda: shutil.rmtree(ckdir, ignore_errors=True))
        self.directory = ckdir
        # 2. the backend, marked running
        backend = self.backend = backend_for_plan(self.catalog, self.home, self.plan)
        self._releases.add("closing the checkpoint backend", backend.close)
        backend.mark_running(job)
        self._releases.add("withdrawing the running mark", lambda: backend.clear_running(job))
        if durable:
            # 3. whose directory, which epoch; a lost one is refused (identity.py)
            ident = self.identity = identity.prepare(ckdir, job, backend.latest(job))
            self.marker = identity.marker_key(job.uid, ident.epoch)
            # 4. the directory as the last run left it
            self._resume(ckdir, ident)
        # 5. the expiry watch
        self.watch = ExpiryWatch(ckdir, self.plan.props.checkpoint_timeout_ms)
        # 6. the recorder
        self.recorder = CheckpointRecorder(
            self.catalog, job.uid, job.qualified_name, ckdir, self.retained, self.tracker,
            durable=durable, backend=backend, on_checkpoint=self.on_checkpoint,
            interval_ms=self.plan.props.checkpoint_interval_ms)

    def _resume(self, ckdir: str, ident: identity.Identity) -> None:
        """Step 4 (durable checkpoints): the directory as the last run left it."""
        job, tracker = self.job, self.tracker
        for name in store.remove_torn_writes(ckdir):  # a write cut by a SIGKILL
            log.info("job %s: removed %s, a write its last run did not finish",
                     job.qualified_name, name)
        self.fresh = not store.log_ids(ckdir, "offsets")
        if self.fresh and ident.start:  # START ... FROM EARLIEST | LATEST | TIMESTAMP
            self.plan = dataclasses.replace(self.plan,
                                            props=self.plan.props.starting_at(ident.start))
        # refuse checkpoints of a different logic (DESIGN §4)
        fp = fingerprint.check(ckdir, self.plan)
        fingerprint.write(ckdir, fp)
        tracker.fingerprint = fp.encode()
        if self.no_data_batches:  # output the watermark released: it runs first
            released = watermark.schedule_released_batch(ckdir)
            if released is not None:
                log.info("job %s: batch %s, which writes what the watermark released before "
                         "its last run ended, runs first", job.qualified_name, released)
        latest = recover_unrecorded(self.backend, job, ckdir, self.retained,
                                    tracker.fingerprint)
        if latest is not None:  # what the job has committed (run --until-idle compares it)
            with tracker.cond:
                if tracker.latest_id is None:
                    tracker.latest_id = latest.checkpoint_id
                    tracker.latest_at = latest.ended_at or latest.started_at
                    tracker.offsets = dict(latest.source_offsets or {})
                    tracker.batch_id = latest.checkpoint_id
