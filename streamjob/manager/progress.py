"""A running job's latest progress, written to the catalog (``JobInfo.progress``).

The job's one Spark listener (:class:`streamjob.spark.listener.ProgressListener`) hands
every micro-batch's progress report to a :class:`ProgressReporter`, after the checkpoint
recorder has recorded the checkpoint (one listener, not two: each Python listener costs a
py4j conversion of every event, on the one thread that delivers the events of every
query); the job's :class:`~streamjob.manager.lag.EndOffsetsProbe` hands it the broker's
end offsets every two seconds. The reporter turns them into::

    {"batch_id": 12,                 # Spark's batch id (= checkpoint id once committed)
     "input_rows_per_s": 2150.3,     # rows/s arriving, as Spark measures it
     "processed_rows_per_s": 8890.1, # rows/s the batch processed
     "lag_records": 420,             # Kafka records not yet committed, or None
     "lag_by_partition": {"flights:0": 400, "flights:1": 20},  # the same per partition
     "last_checkpoint_at": "2026-12-05T10:11:12.345+00:00",  # ISO-8601 UTC, or None
     "updated_at": "2026-12-05T10:11:13.001+00:00"}

and the job's runner writes the newest one with :meth:`Catalog.update_progress` from its
own thread (:meth:`ProgressReporter.flush`, called every quarter second; at most one
write a second per job), so the listener thread is not held up by catalog writes and
the catalog is never more than about a second behind. Every
:data:`~streamjob.catalog.access.SAMPLE_EVERY_S` seconds a written report is also kept as
a progress sample (``Catalog.add_progress_sample``: the console's charts).

Everything describes the current run only (issue 16). The runner clears the job's
progress when a run starts (``JobRunner.run``), and a new reporter knows nothing of the
previous run: until the run's first micro-batch ends, ``batch_id`` and both rates are
None (unknown; ``streamjob status`` falls back to the latest checkpoint for the batch);
a rate Spark cannot measure is None too, not 0: the input rate of a run's first batch
(Spark's query has no earlier trigger to divide by and reports 0 or NaN) and NaN rates. ``lag_records`` is the records the
Kafka sources hold beyond the job's position (:mod:`streamjob.manager.lag`): known as
soon as the probe has read the broker and the run knows where it resumes from, and
None (unknown) otherwise. When Spark reports the query idle (no new input), both rates
become 0 and Spark's view of the end offsets is the position (the probe's next reading
still counts). ``last_checkpoint_at`` comes from the checkpoint recorder's tracker (when
the latest committed checkpoint ended). A failed write is logged and retried with the
next one: a progress report never fails the job.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from datetime import datetime, timezone
from typing import Any

from ..catalog import Catalog
from ..catalog.access import SAMPLE_EVERY_S
from ..checkpoint.recorder import CheckpointTracker
from .lag import Offsets, kafka_offsets, merge
from .lag import lag_by_partition as _lag_between

log = logging.getLogger(__name__)

#: Seconds between two progress writes of one job.
MIN_INTERVAL_S = 1.0


def _iso(ts: datetime | None) -> str | None:
    if ts is None:
        return None
    return ts.astimezone(timezone.utc).isoformat(timespec="milliseconds")


def _rate(value: Any) -> float | None:
    """Spark's rate in rows/s, rounded to 3 decimals; None when Spark could not measure
    it (NaN, missing)."""
    try:
        rate = float(value)
    except (TypeError, ValueError):
        return None
    return round(rate, 3) if math.isfinite(rate) else None


def _source_offsets(sources: list, attr: str, pick) -> Offsets | None:
    """The Kafka offsets ``attr`` (``endOffset``, ``latestOffset``) of Spark
    ``SourceProgress`` objects merged by topic, ``pick`` choosing between two sources
    of one partition; None if no source has Kafka offsets."""
    out = None
    for src in sources or ():
        out = merge(out, kafka_offsets(getattr(src, attr, None)), pick)
    return out


def lag_by_partition(sources: list) -> dict[str, int] | None:
    """Records one batch left behind in its Kafka sources, as Spark sees it, per
    ``"topic:partition"``: ``latestOffset - endOffset`` (never negative; a partition read
    by two sources adds up); None if no source reports a latest offset. ``sources`` are
    Spark ``SourceProgress`` objects (or anything with the attributes ``latestOffset``
    and ``endOffset``, JSON text or dicts). The reporter's lag is the run's
    (:mod:`streamjob.manager.lag`), not this."""
    lags: dict[str, int] | None = None
    for src in sources or ():
        latest = kafka_offsets(getattr(src, "latestOffset", None))
        end = kafka_offsets(getattr(src, "endOffset", None)) or {}
        if latest is None:
            continue
        lags = {} if lags is None else lags
        for topic, parts in latest.items():
            done = end.get(topic, {})
            for p, off in parts.items():
                key = f"{topic}:{p}"
                lags[key] = lags.get(key, 0) + max(0, off - done.get(p, 0))
    return lags


def lag_of(sources: list) -> int | None:
    """Records one batch left behind in its Kafka sources, as Spark sees it: the sum of
    :func:`lag_by_partition`; None if no source reports a latest offset."""
    lags = lag_by_partition(sources)
    return None if lags is None else sum(lags.values())


def progress_of(p) -> dict[str, Any]:
    """The progress dict (module docstring) of one ``StreamingQueryProgress`` taken
    alone (its lag is Spark's: beyond the batch's end offsets), without
    ``last_checkpoint_at``."""
    return {
        "batch_id": int(p.batchId),
        "input_rows_per_s": _rate(p.inputRowsPerSecond),
        "processed_rows_per_s": _rate(p.processedRowsPerSecond),
        "lag_records": lag_of(list(p.sources or ())),
        "lag_by_partition": lag_by_partition(list(p.sources or ())),
        "updated_at": _iso(datetime.now(timezone.utc)),
    }


#: The report of a run before its first micro-batch: nothing known yet.
UNKNOWN = {"batch_id": None, "input_rows_per_s": None, "processed_rows_per_s": None}


class ProgressReporter:
    """Writes one run's progress to the catalog (module docstring); the job's listener
    calls :meth:`on_progress` and :meth:`on_idle`, its end-offsets probe
    :meth:`on_end_offsets`, the job's runner :meth:`flush`.

    Args:
        catalog: where to write (``update_progress`` by ``job_uid``).
        job_uid: the job incarnation's uid (writes for a dropped job are ignored).
        job_name: ``db.name``, for log messages.
        tracker: the checkpoint recorder's tracker (``latest_at``).
        interval_s: least seconds between two writes.
        start_offsets: the source offsets the run resumes from (the latest committed
            checkpoint's, ``{topic: {partition: offset}}`` for Kafka sources; other
            entries are ignored), or None when the run begins at its reset strategy.
    """

    def __init__(self, catalog: Catalog, job_uid: str, job_name: str,
                 tracker: CheckpointTracker, interval_s: float = MIN_INTERVAL_S,
                 start_offsets: dict[str, Any] | None = None) -> None:
        self.catalog = catalog
        self.job_uid = job_uid
        self.job_name = job_name
        self.tracker = tracker
        self.interval_s = interval_s
        self._lock = threading.Lock()   # guards the run's state below
        self._io = threading.Lock()     # one write at a time, in order
        self._report: dict[str, Any] = dict(UNKNOWN)  # batch and rates of the run
        kafka = {t: parts for t, parts in (start_offsets or {}).items()
                 if kafka_offsets({t: parts}) is not None}
        self._position: Offsets | None = kafka_offsets(kafka)  # committed by the job
        self._spark_ends: Offsets | None = None   # latestOffset of the latest report
        self._broker_ends: Offsets | None = None  # the probe's latest reading
        self._dirty = False             # something to write
        self._last: dict[str, Any] | None = None
        self._last_write = 0.0
        self._last_sample = float("-inf")
        self._warned = False
        self.enabled = True  # False once the job manager is fenced: no more writes

    def on_progress(self, progress) -> None:
        """One ``StreamingQueryProgress`` of this run (after its checkpoint was
        recorded): its batch, rates, end offsets (the position) and latest offsets."""
        report = progress_of(progress)
        sources = list(progress.sources or ())
        with self._lock:  # written by the runner's flush(), off the listener thread
            first = self._report["batch_id"] is None
            self._report = {k: report[k] for k in UNKNOWN}
            if first:  # Spark's query has no earlier trigger: it writes 0 (or NaN), unmeasured
                self._report["input_rows_per_s"] = None
            self._position = merge(self._position, _source_offsets(sources, "endOffset", min),
                                   lambda _old, new: new)
            self._spark_ends = _source_offsets(sources, "latestOffset", max)
            self._dirty = True

    def on_idle(self) -> None:
        """Spark reports the query idle (no new input): rates 0, and Spark's end offsets
        are the position."""
        with self._lock:
            self._report = {**self._report, "input_rows_per_s": 0.0, "processed_rows_per_s": 0.0}
            self._spark_ends = merge(None, self._position, max)
            self._dirty = True

    def on_end_offsets(self, ends: Offsets | None) -> None:
        """A reading of the broker's end offsets (the probe's; None: none could be read)."""
        with self._lock:
            before = self._lag()
            self._broker_ends = ends
            if self._lag() != before:
                self._dirty = True

    def _lag(self) -> dict[str, int] | None:
        """Lag per partition now (under ``_lock``): :func:`streamjob.manager.lag.lag_by_partition`."""
        return _lag_between(merge(self._spark_ends, self._broker_ends, max), self._position)

    def current(self) -> dict[str, Any]:
        """The progress dict this reporter would write now (module docstring)."""
        with self._lock:
            return self._build(_iso(self.tracker.latest_at))

    def _build(self, latest_at: str | None) -> dict[str, Any]:
        lags = self._lag()
        return {**self._report, "lag_records": None if lags is None else sum(lags.values()),
                "lag_by_partition": lags, "last_checkpoint_at": latest_at,
                "updated_at": _iso(datetime.now(timezone.utc))}

    def flush(self, force: bool = False) -> bool:
        """Write the run's progress if it changed and a second passed since the last
        write (or ``force``); also rewrites it when a checkpoint completed since.
        Returns True if it wrote. Never raises."""
        with self._io:
            with self._lock:
                if not self.enabled:
                    return False
                if not force and time.monotonic() - self._last_write < self.interval_s:
                    return False
                latest_at = _iso(self.tracker.latest_at)
                if not self._dirty and (self._last is None
                                        or self._last.get("last_checkpoint_at") == latest_at):
                    return False
                progress = self._build(latest_at)
                self._dirty = False
            try:
                self.catalog.update_progress(self.job_uid, progress)
            except Exception as exc:  # noqa: BLE001 - informational; retried next time
                with self._lock:
                    self._dirty = True
                if not self._warned:
                    log.warning("job %s: progress not written: %s", self.job_name, exc)
                    self._warned = True
                return False
            self._warned = False
            self._last = progress
            self._last_write = time.monotonic()
            if self._last_write - self._last_sample >= SAMPLE_EVERY_S:
                self._last_sample = self._last_write
                try:  # the console's charts; a lost sample is a gap, never an error
                    self.catalog.add_progress_sample(self.job_uid, progress)
                except Exception as exc:  # noqa: BLE001 - informational
                    log.debug("job %s: progress sample not written: %s", self.job_name, exc)
            return True
