"""Records a running job's checkpoints (DESIGN §4): the micro-batch that completes after
each ``morphling.job.checkpoint.interval``.

Output and checkpoints run on two cadences, as in Slipstream, Flink and Hazelcast Jet.
Spark runs a micro-batch as soon as data is there, at most every trigger interval
(``streamjob.trigger.interval``, :attr:`~streamjob.properties.job.JobProperties.trigger_ms`);
each one is durable and exactly-once on its own (offsets written ahead, state versioned,
commit marker after the sink, the sink's marker in its transaction). A *checkpoint* is the
committed micro-batch that completes once the interval has passed since the previous
checkpoint (the first committed micro-batch of a job is one, and so is the last one before
a graceful stop, :meth:`CheckpointRecorder.checkpoint_now`; interval 0 makes every
micro-batch one). Only checkpoints are recorded in the backend, retained, listed by SHOW
CHECKPOINTS and restorable.

The steps for each micro-batch, in order:

1. the progress report names batch ``id``;
2. the commit marker ``commits/<id>`` must exist in the checkpoint directory — otherwise
   the batch did not commit and nothing happens;
3. the batch's malformed-record counts (Spark observed metrics named ``malformed:<stream>``)
   and the declared columns none of its records carried (``columns:<stream>``,
   :mod:`streamjob.spark.observe`) are added to the job's counts in the catalog (never
   failing the batch);
4. the batch becomes the pending one, its rows added to the rows since the last
   checkpoint; if the checkpoint is due, steps 5-7 run for it;
8. waiters (``run --until-idle``) are woken with its end offsets: once they see a batch,
   its checkpoint (if it was one) is recorded and its group offsets committed.

For a checkpoint (a due batch, or the pending one at :meth:`CheckpointRecorder.checkpoint_now`):

5. its row (id, start, end, duration of the batch, source end offsets, input rows since
   the previous checkpoint, state rows, status LATE if it expired) is upserted and rows
   beyond the retained count deleted, in one backend transaction (re-recording an id is
   harmless);
6. Spark's offset and commit logs and its state versions (the HDFS state store's files)
   are trimmed back to the oldest retained checkpoint (:func:`~.store.trim_logs`,
   :func:`~.store.trim_state`): what a restore of a retained checkpoint needs stays, no
   more (nor less than a savepoint being taken has pinned, checkpoint/savepoint.py);
   never in a directory whose identity names another job uid (a job dropped and
   created again under the name owns it now); Spark's own purge is held off by :func:`batches_to_retain`;
7. ``on_checkpoint`` runs (the Kafka consumer-group offset commits, DESIGN §7), never
   failing the checkpoint, and waiters on checkpoints are woken.

The recorder is plain Python: Spark's progress events reach it through the job's one
listener (:class:`streamjob.spark.listener.ProgressListener`), which then hands every
report, a checkpoint or not, to the job manager's progress reporter
(:mod:`streamjob.manager.progress`).
"""

from __future__ import annotations

import datetime as _dt
import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ..catalog import Catalog
from ..catalog.records import CheckpointInfo, CheckpointStatus
from ..phases import mark
from ..spark import observe
from ..spark.listener import merge_offsets
from .backends import CatalogBackend, CheckpointBackend
from .backends.base import JobRef
from .identity import owner_uid
from .savepoint import pinned
from .store import is_committed, trim_logs, trim_state

log = logging.getLogger(__name__)


@dataclass
class CheckpointTracker:
    """What a job's recorder has seen, for waiters and the progress reporter.

    ``latest_id``/``latest_at``: the latest recorded checkpoint and when it completed
    (aware UTC); ``completed``: checkpoints recorded by this job's runner.
    ``batch_id``: the latest committed micro-batch, and ``offsets`` its merged source end
    offsets (topic -> partition -> next offset for Kafka sources; other sources under
    their Spark description), which ``run --until-idle`` compares with the sources' ends."""

    latest_id: int | None = None
    latest_at: _dt.datetime | None = None
    offsets: dict[str, Any] = field(default_factory=dict)
    completed: int = 0
    batch_id: int | None = None
    expired: set[int] = field(default_factory=set)  # ids that expired before completing
    fingerprint: str | None = None  # the running plan's (checkpoint/fingerprint.py)
    cond: threading.Condition = field(default_factory=threading.Condition)

    def wait_for(self, predicate: Callable[["CheckpointTracker"], bool], timeout: float) -> bool:
        """Block until ``predicate(self)`` holds or ``timeout`` seconds pass."""
        with self.cond:
            return self.cond.wait_for(lambda: predicate(self), timeout=timeout)


def batches_to_retain(retained: int, interval_ms: int, trigger_ms: int) -> int:
    """Spark's ``spark.sql.streaming.minBatchesToRetain`` for a job: enough micro-batches
    that Spark's own purge never removes what the oldest retained checkpoint needs
    (the recorder trims to exactly that, step 6). A processing-time trigger starts at most
    one batch per trigger interval, so at most ``ceil(interval / trigger) + 1`` batches
    run between two checkpoints; a trigger of 0 (event mode) is counted as 10 ms. Capped
    at 1,000,000 batches.

    >>> batches_to_retain(5, 60_000, 500)
    606
    """
    per_checkpoint = -(-max(interval_ms, 0) // max(trigger_ms, 10)) + 1
    return min(1_000_000, retained * per_checkpoint + 1)


class CheckpointRecorder:
    """The steps of one job (module docstring), fed by the job's Spark listener
    (:class:`streamjob.spark.listener.ProgressListener`) with each micro-batch's
    ``StreamingQueryProgress``. Plain Python: it never touches Spark.

    Args:
        catalog: where counts go (and checkpoints, with the default backend).
        job_uid, job_name: the job's uid and qualified name.
        checkpoint_dir: the job's Spark checkpoint directory.
        retained: checkpoints kept (``morphling.checkpoint.retained``).
        tracker: updated and notified at steps 7 and 8.
        durable: False for a job without checkpoints (nothing recorded or trimmed).
        backend: where checkpoints are recorded (``morphling.checkpoint.backend``).
        on_checkpoint: ``(checkpoint id, merged end offsets)`` at step 7 (e.g. the Kafka
            consumer-group commits); its errors are logged, never fatal.
        interval_ms: ``morphling.job.checkpoint.interval``; 0 = every micro-batch.
    """

    def __init__(self, catalog: Catalog, job_uid: str, job_name: str, checkpoint_dir: str,
                 retained: int, tracker: CheckpointTracker, durable: bool = True,
                 backend: CheckpointBackend | None = None,
                 on_checkpoint: Callable[[int, dict[str, Any]], None] | None = None,
                 interval_ms: int = 0) -> None:
        self.catalog = catalog
        self.backend = backend if backend is not None else CatalogBackend(catalog)
        self.job_uid = job_uid
        self.job_name = job_name
        self.checkpoint_dir = checkpoint_dir
        self.retained = retained
        self.tracker = tracker
        self.durable = durable
        self.on_checkpoint = on_checkpoint
        self.interval_ms = interval_ms
        self._lock = threading.Lock()  # the listener thread, and checkpoint_now at a stop
        self._rows = 0  # input rows of the committed batches since the last checkpoint
        self._pending: tuple[CheckpointInfo, dict[str, Any]] | None = None
        self._ids: list[int] | None = None  # retained checkpoint ids, read once from the backend

    def record(self, p) -> None:
        """Steps 1-8 for one micro-batch's progress report ``p`` (a pyspark
        ``StreamingQueryProgress``, or anything with its fields).

        Raises:
            StreamJobError: the backend could not record a due checkpoint (the listener
                logs it; the batch stays pending and the next one is due at once).
        """
        batch_id = int(p.batchId)
        if not is_committed(self.checkpoint_dir, batch_id):  # step 2
            return
        started = _parse_ts(p.timestamp)
        mark("first batch started", self.job_name, at=started.timestamp())
        duration = int(p.batchDuration or 0)
        offsets = merge_offsets([(s.description, s.endOffset) for s in p.sources])
        self._count_records(batch_id, observe.malformed_counts(p), observe.missing_columns(p))
        try:
            self._pend(p, batch_id, started, duration, offsets)
        finally:  # a committed batch is committed, even if its checkpoint failed to record
            with self.tracker.cond:  # step 8
                self.tracker.batch_id = batch_id
                self.tracker.offsets = _deep_merge(self.tracker.offsets, offsets)
                self.tracker.cond.notify_all()

    def _pend(self, p, batch_id: int, started: _dt.datetime, duration: int,
              offsets: dict[str, Any]) -> None:
        """Step 4: the batch becomes the pending one; steps 5-7 if a checkpoint is due."""
        ended = started + _dt.timedelta(milliseconds=duration)
        with self._lock:
            self._rows += int(p.numInputRows or 0)
            state_rows = (sum(int(op.numRowsTotal) for op in p.stateOperators)
                          if p.stateOperators else None)
            state_bytes = (sum(int(op.memoryUsedBytes or 0) for op in p.stateOperators)
                           if p.stateOperators else None)
            info = CheckpointInfo(
                job_uid=self.job_uid, checkpoint_id=batch_id, started_at=started,
                ended_at=ended, duration_ms=duration, source_offsets=offsets,
                input_rows=self._rows, state_rows=state_rows, state_bytes=state_bytes,
                status=(CheckpointStatus.LATE if batch_id in self.tracker.expired
                        else CheckpointStatus.COMPLETED),
                fingerprint=self.tracker.fingerprint)
            self._pending = (info, offsets)
            if self._due(ended):
                self._checkpoint()

    def checkpoint_now(self) -> int | None:
        """Make the latest committed micro-batch a checkpoint if it is not one yet (a
        graceful stop: the job's last state is then a retained, restorable checkpoint, as
        Flink's stop with a savepoint). Returns its id, or None when there was none.

        Raises:
            StreamJobError: the backend could not record it.
        """
        with self._lock:
            if self._pending is None:
                return None
            return self._checkpoint()

    def due_now(self) -> bool:
        """True when the micro-batch in flight, if it completed now, would be a checkpoint
        (the expiry watch only times checkpoints, DESIGN §4)."""
        return self._due(_dt.datetime.now(_dt.timezone.utc))

    def _due(self, ended: _dt.datetime) -> bool:
        """True when the batch that ended at ``ended`` is a checkpoint (module docstring)."""
        last = self.tracker.latest_at
        return (self.interval_ms <= 0 or last is None
                or (ended - last).total_seconds() * 1000 >= self.interval_ms)

    def _checkpoint(self) -> int:
        """Steps 5-7 for the pending batch (the caller holds ``_lock``)."""
        info, offsets = self._pending
        batch_id = info.checkpoint_id
        if self.durable:
            self.backend.record(JobRef.of(self.job_uid, self.job_name), info,
                                retained=self.retained)
            mark("first commit", self.job_name)
            oldest = self._retain(batch_id)
            owner = owner_uid(self.checkpoint_dir)
            if owner is None or owner == self.job_uid:
                pin = pinned(self.checkpoint_dir)  # a savepoint being copied (savepoint.py)
                if pin is not None:
                    oldest = min(oldest, pin)
                trim_logs(self.checkpoint_dir, oldest)
                trim_state(self.checkpoint_dir, oldest)
            else:  # by uid, never by name (issue 28 point 5): another incarnation's now
                log.warning("job {%s}: checkpoint directory %s belongs to job uid %s, not "
                            "to this one (%s): its logs are not trimmed", self.job_name,
                            self.checkpoint_dir, owner, self.job_uid)
        self._pending, self._rows = None, 0
        if self.on_checkpoint is not None:
            try:
                self.on_checkpoint(batch_id, offsets)
            except Exception as exc:  # noqa: BLE001 - e.g. the group commit; never fatal
                log.warning("job {%s}: after checkpoint %s: %s", self.job_name, batch_id, exc)
        with self.tracker.cond:
            self.tracker.latest_id = batch_id
            self.tracker.latest_at = info.ended_at
            self.tracker.completed += 1
            self.tracker.cond.notify_all()
        log.info("Checkpoint[%s] of job {%s} completed in %d ms, %s rows",
                 batch_id, self.job_name, info.duration_ms, info.input_rows)
        return batch_id

    def _retain(self, batch_id: int) -> int:
        """The oldest retained checkpoint id once ``batch_id`` is recorded (the backend's
        ids are read at the first checkpoint of the attempt, then kept here)."""
        if self._ids is None:
            self._ids = sorted(c.checkpoint_id for c in
                               self.backend.list(JobRef.of(self.job_uid, self.job_name)))
        self._ids = sorted(set(self._ids) | {batch_id})[-self.retained:]
        return self._ids[0]

    def _count_records(self, batch_id: int, malformed: dict[str, int],
                       missing: dict[str, list[str]]) -> None:
        """Step 3's counts: malformed records and declared columns no record carried;
        failures are logged (the batch itself is already committed)."""
        self._count(missing, self.catalog.add_missing_columns, "missing columns",
                    f"batch {batch_id}: no record carried " + "; ".join(
                        f"column(s) {', '.join(cols)} of stream {s}" for s, cols in missing.items()))
        self._count(malformed, self.catalog.add_malformed_counts, "malformed records",
                    f"batch {batch_id} set aside " + ", ".join(
                        f"{n} malformed record(s) of stream {s}" for s, n in malformed.items()))

    def _count(self, counts: dict, add, what: str, warning: str) -> None:
        """Warn with ``warning`` and add ``counts`` to the catalog with ``add(uid, counts)``
        when there are any; a catalog error is only logged (the count is informational)."""
        if not counts:
            return
        log.warning("job {%s}: %s", self.job_name, warning)
        try:
            add(self.job_uid, counts)
        except Exception as exc:  # noqa: BLE001 - the count is informational
            log.warning("job {%s}: could not count %s: %s", self.job_name, what, exc)


def _deep_merge(a: dict, b: dict) -> dict:
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in a.items()}
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k].update(v)
        else:
            out[k] = v
    return out


def _parse_ts(text: str) -> _dt.datetime:
    ts = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return ts if ts.tzinfo else ts.replace(tzinfo=_dt.timezone.utc)


def recover_unrecorded(backend, job, checkpoint_dir: str, retained: int,
                       fingerprint: str | None = None):
    """Record the newest committed micro-batch if its run ended before recording it (the
    process died between Spark's commit marker and step 3 above, or the run failed after
    a batch that was not yet due as a checkpoint); returns the job's latest recorded
    checkpoint (or None).

    The record is rebuilt from the checkpoint directory: id from ``commits/``, source end
    offsets from ``offsets/<id>`` (one JSON line per source after the version and
    metadata lines), times from the files; input and state row counts are unknown there
    (0 and None). Without it, a job whose input is already consumed would never record
    that checkpoint (Spark runs no batch without new input) and ``run --until-idle``
    would wait forever.

    Raises:
        ConnectorError / CheckpointError: the backend cannot be read or written.
    """
    from .store import committed_offsets

    latest = backend.latest(job)
    found = committed_offsets(checkpoint_dir)
    if found is None or (latest is not None and latest.checkpoint_id >= found[0]):
        return latest
    batch_id, lines, started, ended = found
    info = CheckpointInfo(
        job_uid=job.uid, checkpoint_id=batch_id, started_at=started, ended_at=ended,
        duration_ms=max(0, int((ended - started).total_seconds() * 1000)),
        source_offsets=merge_offsets([(f"source{i}", line) for i, line in enumerate(lines)]),
        input_rows=0, state_rows=None, status=CheckpointStatus.COMPLETED, fingerprint=fingerprint)
    backend.record(job, info, retained=retained)
    log.warning("Checkpoint[%s] of job {%s} was committed but not recorded before its run "
                "ended (the run failed, or its process died); recorded from the checkpoint "
                "directory",
                batch_id, job.qualified_name)
    return info
