"""One attempt of a job: :class:`Attempt`, a context manager that builds what one run of
the job's query needs, starts the query, and releases it all in reverse order.

The runner (:class:`~streamjob.manager.runner.JobRunner`) plans the job, then holds one
:class:`Attempt` per run of its query; a failover builds a new one.
"""

from __future__ import annotations

import logging
from typing import Callable

from .. import properties as jp
from ..catalog import Catalog
from ..catalog.records import JobInfo
from ..checkpoint.recorder import CheckpointTracker
from ..checkpoint.run import CheckpointRun
from ..connectors.run import ConnectorRun
from ..home import Home
from ..planner.bind import bind_job
from ..planner.plan import JobPlan
from ..releases import BuiltInOrder, Releases
from ..spark.run import QueryRun
from .lag import EndOffsetsProbe
from .progress import ProgressReporter

# the runner's logger: records keep the name they had before this module was split off
log = logging.getLogger("streamjob.manager.runner")

#: Spark's setting for micro-batches without new data (the watermark's released output)
NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"


class Attempt(BuiltInOrder):
    """One run of a job's query: what it needs, built in order on entry and released in
    reverse order on exit (also when building fails halfway: what was built is released).

    Each room builds its part in one object, entered once, from the top down; the attempt
    sequences them and its own objects. Entering builds, in this order (the release of
    each step, if it has one, in brackets; releases run last-built first, each even if
    an earlier one failed, a failed one logged):

    1. the job's session clone (the ``job_session`` callable): its own ``spark.sql.*``
       settings and the Python data sources it reads
       (:attr:`~streamjob.planner.plan.JobPlan.data_sources`); whether it runs
       micro-batches without new data (:attr:`no_data_batches`) is read from its conf,
       as step 2 needs it;
    2. the checkpoint side (:class:`~streamjob.checkpoint.run.CheckpointRun`, its own
       numbered steps):

       a. the checkpoint directory: the job's own with durable checkpoints, else a
          temporary one, so that each attempt begins afresh at the reset strategy (DESIGN
          §6) [the temporary directory is deleted];
       b. the checkpoint backend (``morphling.checkpoint.backend``), marked running [the
          running mark withdrawn, the backend closed];
       c. with durable checkpoints, the directory's identity: whose it is and which
          epoch (a lost one is refused, :mod:`streamjob.checkpoint.identity`); it keys
          the sink's markers;
       d. with durable checkpoints: writes a SIGKILL cut removed; on a fresh directory
          ``START ... FROM`` a source position applied; the logic fingerprint checked and
          written (DESIGN §4); the micro-batch that writes what the watermark released
          before the last run ended scheduled first; checkpoints the last run committed
          but did not record recovered, seeding the tracker (what ``run --until-idle``
          compares);
       e. the expiry watch of ``morphling.checkpoint.timeout``;
       f. the checkpoint recorder, whose recorded checkpoints' offsets go to the
          consumer groups (step 3d);
    3. the connector side (:class:`~streamjob.connectors.run.ConnectorRun`):

       a. the table sink (:func:`~streamjob.connectors.sinks.table_sink`), keyed by
          step 2c [closed];
       b. a fresh durable directory told to the sink (``on_new_checkpoint``);
       c. the dead-letter tables of tolerant Kafka sources, created or checked;
       d. the consumer-group committers [closed];
       e. the sink prepared;
    4. the progress reporter, from where the run resumes;
    5. the end-offsets probe of the Kafka sources (the run's lag) [stopped];
    6. the plan as started bound to its connectors' readers
       (:func:`~streamjob.planner.bind.bind_job`: secret references resolved, SQL static
       tables checked);
    7. the Spark side (:class:`~streamjob.spark.run.QueryRun`): the checkpoint's
       retention settings on the session, the job's one Spark listener feeding the
       recorder and the progress reporter [removed from the session], the query started
       [stopped].

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
    directory; these stay readable after the attempt was released. ``checkpoint`` and
    ``connectors`` are the two sides (``backend``, ``recorder``, ``watch``, ``sink``
    read through them). Raises (on entering) whatever a step raises: StreamJobError
    subclasses for an invalid or refused job (identity, fingerprint, sink schema),
    ConnectorError for an unreachable system, Spark's errors from starting the query.
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
        self.checkpoint: CheckpointRun | None = None
        self.connectors: ConnectorRun | None = None
        self.progress: ProgressReporter | None = None
        self.probe: EndOffsetsProbe | None = None
        self.query = None
        #: Spark runs micro-batches without new data for this job (its session's conf).
        self.no_data_batches = True
        self._releases = Releases(job.qualified_name, log)

    @property
    def checkpoint_dir(self) -> str | None:
        """The run's checkpoint directory (step 2a), None before it was made."""
        return self.checkpoint.directory if self.checkpoint is not None else None

    @property
    def backend(self):
        """The checkpoint backend (step 2b), None before it was opened."""
        return self.checkpoint.backend if self.checkpoint is not None else None

    @property
    def watch(self):
        """The expiry watch (step 2e), None before it was made."""
        return self.checkpoint.watch if self.checkpoint is not None else None

    @property
    def recorder(self):
        """The checkpoint recorder (step 2f), None before it was made."""
        return self.checkpoint.recorder if self.checkpoint is not None else None

    @property
    def sink(self):
        """The table sink (step 3a); None before it was built and once it is closed."""
        return self.connectors.sink if self.connectors is not None else None

    def _release(self, what: str, release: Callable[[], object],
                 best_effort: bool = False) -> None:
        """Register ``release`` to run at :meth:`close`; a failure is logged (``what``
        names it; at DEBUG level if ``best_effort``), so that the other releases still
        run and the runner goes on."""
        self._releases.add(what, release, best_effort)

    def _build(self) -> None:
        job, plan = self.job, self.plan
        props = plan.props
        # 1. the session clone
        session = self._job_session(jp.spark_settings(props), plan.data_sources)
        self.no_data_batches = session.conf.get(NO_DATA_BATCHES, "true").lower() == "true"
        # 2. the checkpoint side
        checkpoint = self.checkpoint = CheckpointRun(
            self.catalog, self.home, job, plan, self.tracker,
            no_data_batches=self.no_data_batches, on_checkpoint=self._commit_offsets)
        checkpoint.open()  # a step that raises released the side's earlier ones
        self._releases.push(checkpoint.close)
        plan = self.plan = checkpoint.plan  # with a START ... FROM position applied
        # 3. the connector side
        connectors = self.connectors = ConnectorRun(
            job.qualified_name, plan.sink, plan.sink_spec, marker=checkpoint.marker,
            exactly_once=plan.guarantee == "exactly-once", upsert=plan.output_mode == "update",
            checkpointed=checkpoint.durable,
            new_checkpoint=checkpoint.durable and checkpoint.fresh,
            dead_letters=[src.dead_letter for src in plan.sources if src.dead_letter is not None],
            groups=[(src.source, src.group_id) for src in plan.sources])
        connectors.open()
        self._releases.push(connectors.close)
        # 4. the progress reporter: the run's progress, from where it resumes: Spark's
        # offset log, whose committed end the tracker holds; without one (no durable
        # checkpoints, a fresh directory) the run begins at its reset strategy and its
        # position is unknown until a batch
        progress = self.progress = ProgressReporter(
            self.catalog, job.uid, job.qualified_name, self.tracker,
            start_offsets=dict(self.tracker.offsets) if checkpoint.resumes else None)
        # 5. the end-offsets probe
        kafka = [src.source for src in plan.sources if src.source.offsets_key is not None]
        if kafka:  # the broker's end offsets while the run lasts: its lag (manager/lag.py)
            probe = self.probe = EndOffsetsProbe(kafka, progress.on_end_offsets,
                                                 job.qualified_name).start()
            self._release("stopping the end-offsets probe", probe.stop)
        # 6. the plan bound to its readers (secrets resolved, SQL static tables checked)
        bound = bind_job(plan)
        # 7. the Spark side: the listener and the query
        spark = QueryRun(session, job.qualified_name, bound, checkpoint.directory,
                         connectors.sink, conf=checkpoint.spark_conf,
                         on_progress=(checkpoint.recorder.record, progress.on_progress),
                         on_idle=progress.on_idle)
        self.query = spark.open().query
        self._releases.push(spark.close)

    def _commit_offsets(self, batch_id: int, offsets: dict) -> None:
        """The recorder's ``on_checkpoint`` (step 2f): the connector side commits each
        checkpoint's end offsets to the consumer groups (step 3d); the recorder calls it
        only once the query runs, after the connector side was built."""
        if self.connectors is not None:
            self.connectors.commit_offsets(batch_id, offsets)
