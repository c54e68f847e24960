"""Records every completed checkpoint of a running job (DESIGN §4).

Spark reports each finished micro-batch to a ``StreamingQueryListener`` right after the
batch's commit marker is written. The recorder turns that progress report into a
checkpoint row (id, start, end, duration, source end offsets, input rows, state rows) and
keeps the last ``morphling.checkpoint.retained`` of them; Spark keeps the same number of
batches on disk (``spark.sql.streaming.minBatchesToRetain``).

The commit step, in order:

1. the progress report names batch ``id``;
2. the commit marker ``commits/<id>`` must exist in the checkpoint directory — otherwise
   the batch is not a checkpoint and nothing is recorded;
3. the row is upserted and older rows beyond the retained count deleted, in one catalog
   transaction (re-recording the same id is harmless);
4. the offset and commit logs on disk are trimmed to the same retained batches;
5. the batch's malformed-record counts (Spark observed metrics named ``malformed:<stream>``)
   and the declared columns none of its records carried (``columns:<stream>``,
   :mod:`streamjob.spark.observe`) are added to the job's counts in the catalog, and ``on_checkpoint`` runs (the Kafka
   consumer-group offset commits, DESIGN §7); neither can fail the checkpoint;
6. waiters (``run --until-idle``) are woken with the new offsets.

Every progress report, a checkpoint or not, then goes to ``on_progress`` (the job
manager's progress reporter, :mod:`streamjob.manager.progress`), and Spark's idle reports
to ``on_idle``; one listener serves both, because each Python listener costs a
py4j conversion of every event.

Events reach Python through :class:`JsonEvents` rather than pyspark's own bridge, which
reads a progress report field by field over py4j (dozens of calls, about 0.4 s per event
on a busy two-core machine). Spark delivers the events of every query of the process on
one listener thread, so with ten jobs that bridge fell minutes behind; the JSON of the
report crosses in one call and is parsed here (``StreamingQueryProgress.fromJson``).
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from pyspark.sql.streaming import StreamingQueryListener

from ..catalog import Catalog
from ..catalog.records import CheckpointInfo
from .backends import CatalogBackend, CheckpointBackend
from .backends.base import JobRef
from .store import is_committed, trim_logs
from streamjob.catalog.records import CheckpointStatus

log = logging.getLogger(__name__)


@dataclass
class CheckpointTracker:
    """What a job's recorder has seen: latest checkpoint id and merged source offsets.

    ``offsets`` maps topic -> partition -> next offset for Kafka sources; other sources
    appear under their Spark description. ``latest_at`` is when the latest checkpoint
    completed (aware UTC; the job's progress reports it, manager/progress.py)."""

    latest_id: int | None = None
    latest_at: _dt.datetime | None = None
    offsets: dict[str, Any] = field(default_factory=dict)
    completed: int = 0
    expired: set[int] = field(default_factory=set)  # ids that expired before completing
    fingerprint: str | None = None  # the running plan's (checkpoint/fingerprint.py)
    cond: threading.Condition = field(default_factory=threading.Condition)

    def wait_for(self, predicate: Callable[["CheckpointTracker"], bool], timeout: float) -> bool:
        """Block until ``predicate(self)`` holds or ``timeout`` seconds pass."""
        with self.cond:
            return self.cond.wait_for(lambda: predicate(self), timeout=timeout)


def merge_offsets(source_end_offsets: list[tuple[str, Any]]) -> dict[str, Any]:
    """Merge Spark's per-source end offsets into one dict: Kafka ``{topic: {p: off}}``
    shapes merge by topic, anything else is kept under the source description."""
    out: dict[str, Any] = {}
    for description, end in source_end_offsets:
        if isinstance(end, str):
            try:
                end = json.loads(end)
            except ValueError:
                pass
        if isinstance(end, dict) and end and all(isinstance(v, dict) for v in end.values()):
            for topic, parts in end.items():
                out.setdefault(topic, {}).update({str(p): int(o) for p, o in parts.items()})
        elif end is not None:
            out[description] = end
    return out


def _progress_from_json(text: str):
    """A ``StreamingQueryProgress`` from its JSON. Spark leaves NaN rates out of it: they
    come back as NaN, as pyspark's own conversion gives them; missing offsets as None."""
    from pyspark.sql.streaming.listener import StreamingQueryProgress

    j = json.loads(text)
    j.setdefault("stateOperators", [])
    j.setdefault("sources", [])
    for src in j["sources"]:
        for key in ("startOffset", "endOffset", "latestOffset", "numInputRows"):
            src.setdefault(key, None)
        for key in ("inputRowsPerSecond", "processedRowsPerSecond"):
            src.setdefault(key, float("nan"))
    j.setdefault("sink", {"description": "", "numOutputRows": -1})
    return StreamingQueryProgress.fromJson(j)


class JsonEvents:
    """The py4j side of a Python ``StreamingQueryListener`` that converts a progress
    report from its JSON, in one py4j call (module docstring); other events as pyspark
    does. A report whose JSON cannot be read falls back to pyspark's conversion."""

    def __init__(self, listener: StreamingQueryListener) -> None:
        self.listener = listener

    def onQueryStarted(self, jevent) -> None:  # noqa: N802 - Spark's names
        from pyspark.sql.streaming.listener import QueryStartedEvent

        self.listener.onQueryStarted(QueryStartedEvent.fromJObject(jevent))

    def onQueryProgress(self, jevent) -> None:  # noqa: N802
        from pyspark.sql.streaming.listener import QueryProgressEvent

        try:
            event = QueryProgressEvent(_progress_from_json(jevent.progress().json()))
        except Exception:  # noqa: BLE001 - an unexpected shape: pyspark's slow way
            event = QueryProgressEvent.fromJObject(jevent)
        self.listener.onQueryProgress(event)

    def onQueryIdle(self, jevent) -> None:  # noqa: N802
        from pyspark.sql.streaming.listener import QueryIdleEvent

        self.listener.onQueryIdle(QueryIdleEvent.fromJObject(jevent))

    def onQueryTerminated(self, jevent) -> None:  # noqa: N802
        from pyspark.sql.streaming.listener import QueryTerminatedEvent

        self.listener.onQueryTerminated(QueryTerminatedEvent.fromJObject(jevent))

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]


class CheckpointRecorder(StreamingQueryListener):
    """Listener for one job's session; see the module docstring for the commit steps.

    ``on_progress(progress)`` receives every ``StreamingQueryProgress`` after the commit
    steps, ``on_idle()`` every idle report; neither can disturb the recording (errors
    are logged).
    """

    def __init__(self, catalog: Catalog, job_uid: str, job_name: str, checkpoint_dir: str,
                 retained: int, tracker: CheckpointTracker, durable: bool = True,
                 backend: CheckpointBackend | None = None,
                 on_checkpoint: Callable[[int, dict[str, Any]], None] | None = None,
                 on_progress: Callable[[Any], None] | None = None,
                 on_idle: Callable[[], None] | None = None) -> None:
        self.catalog = catalog
        # where checkpoints are recorded (morphling.checkpoint.backend); default: the catalog
        self.backend = backend if backend is not None else CatalogBackend(catalog)
        self.job_uid = job_uid
        self.job_name = job_name
        self.checkpoint_dir = checkpoint_dir
        self.retained = retained
        self.tracker = tracker
        self.durable = durable
        self.on_checkpoint = on_checkpoint  # (batch id, merged end offsets) after step 4
        self.on_progress = on_progress
        self.on_idle = on_idle

    @property
    def _jlistener(self):
        """The JVM wrapper Spark calls, around :class:`JsonEvents` (pyspark's property,
        with the faster bridge)."""
        from pyspark import SparkContext

        if getattr(self, "_jlistenerobj", None) is None:
            self._jlistenerobj = SparkContext._jvm.PythonStreamingQueryListenerWrapper(
                JsonEvents(self))
        return self._jlistenerobj

    def onQueryStarted(self, event) -> None:  # noqa: N802 - Spark's name
        pass

    def onQueryIdle(self, event) -> None:  # noqa: N802
        if self.on_idle is not None:
            try:
                self.on_idle()
            except Exception:  # noqa: BLE001 - never kill Spark's listener bus
                log.exception("idle report of job %s failed", self.job_name)

    def onQueryTerminated(self, event) -> None:  # noqa: N802
        pass

    def onQueryProgress(self, event) -> None:  # noqa: N802
        try:
            self._record(event.progress)
        except Exception:  # noqa: BLE001 - a listener must never kill Spark's listener bus
            log.exception("recording a checkpoint of job %s failed", self.job_name)
        if self.on_progress is not None:
            try:
                self.on_progress(event.progress)
            except Exception:  # noqa: BLE001
                log.exception("progress report of job %s failed", self.job_name)

    def _record(self, p) -> None:
        batch_id = int(p.batchId)
        if not is_committed(self.checkpoint_dir, batch_id):
            return
        started = _parse_ts(p.timestamp)
        duration = int(p.batchDuration or 0)
        offsets = merge_offsets([(s.description, s.endOffset) for s in p.sources])
        state_rows = sum(int(op.numRowsTotal) for op in p.stateOperators) if p.stateOperators else None
        if self.durable:
            self.backend.record(JobRef.of(self.job_uid, self.job_name), CheckpointInfo(
                job_uid=self.job_uid, checkpoint_id=batch_id,
                started_at=started,
                ended_at=started + _dt.timedelta(milliseconds=duration),
                duration_ms=duration,
                source_offsets=offsets,
                input_rows=int(p.numInputRows or 0),
                state_rows=state_rows,
                status=CheckpointStatus.LATE if batch_id in self.tracker.expired else CheckpointStatus.COMPLETED,
                fingerprint=self.tracker.fingerprint,
            ), retained=self.retained)
            trim_logs(self.checkpoint_dir, batch_id - self.retained + 1)
        self._after(batch_id, offsets, malformed_counts(p), missing_columns(p))
        with self.tracker.cond:
            self.tracker.latest_id = batch_id
            self.tracker.latest_at = started + _dt.timedelta(milliseconds=duration)
            self.tracker.offsets = _deep_merge(self.tracker.offsets, offsets)
            self.tracker.completed += 1
            self.tracker.cond.notify_all()
        log.info("Checkpoint[%s] of job {%s} completed in %d ms, %s rows",
                 batch_id, self.job_name, duration, p.numInputRows)


    def _after(self, batch_id: int, offsets: dict[str, Any], malformed: dict[str, int],
               missing: dict[str, list[str]]) -> None:
        """Step 5: count malformed records and declared columns no record carried, then
        the ``on_checkpoint`` hook; failures are logged (the checkpoint itself is already
        durable)."""
        self._count(missing, self.catalog.add_missing_columns, "missing columns",
                    f"batch {batch_id}: no record carried " + "; ".join(
                        f"column(s) {', '.join(cols)} of stream {s}" for s, cols in missing.items()))
        self._count(malformed, self.catalog.add_malformed_counts, "malformed records",
                    f"batch {batch_id} set aside " + ", ".join(
                        f"{n} malformed record(s) of stream {s}" for s, n in malformed.items()))
        if self.on_checkpoint is not None:
            try:
                self.on_checkpoint(batch_id, offsets)
            except Exception as exc:  # noqa: BLE001 - e.g. the group commit; never fatal
                log.warning("job {%s}: after checkpoint %s: %s", self.job_name, batch_id, exc)

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


def malformed_counts(progress) -> dict[str, int]:
    """``{stream qualified name: malformed records}`` (> 0 only) of one batch's progress,
    from the observed metrics the planner attaches to tolerant Kafka sources."""
    out = {}
    for name, row in (getattr(progress, "observedMetrics", None) or {}).items():
        if name.startswith("malformed:"):
            n = int(row["malformed"] or 0)
            if n:
                out[name.split(":", 1)[1]] = n
    return out


def missing_columns(progress) -> dict[str, list[str]]:
    """``{stream qualified name: [declared column, ...]}`` of one batch's progress: the
    columns that none of the batch's records of that stream carried (absent or NULL in
    all), from the ``columns:<stream>`` observed metrics of
    :mod:`streamjob.spark.observe`; streams without records in the batch are left out."""
    out = {}
    for name, row in (getattr(progress, "observedMetrics", None) or {}).items():
        if not name.startswith("columns:"):
            continue
        counts = row.asDict() if hasattr(row, "asDict") else dict(row)
        if int(counts.get("rows") or 0) > 0:
            cols = [k[2:] for k, v in counts.items() if k.startswith("c:") and not v]
            if cols:
                out[name.split(":", 1)[1]] = cols
    return out


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
    """Record the newest committed checkpoint if the process died between Spark's commit
    marker and step 3 above; returns the job's latest recorded checkpoint (or None).

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
    log.warning("Checkpoint[%s] of job {%s} was committed but not recorded (the process "
                "died in between); recorded from the checkpoint directory",
                batch_id, job.qualified_name)
    return info
