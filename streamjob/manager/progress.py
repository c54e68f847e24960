"""A running job's latest progress, written to the catalog (``JobInfo.progress``).

The job's one Spark listener (:class:`streamjob.spark.listener.ProgressListener`) hands
every micro-batch's progress report to a :class:`ProgressReporter`, after the checkpoint
recorder has recorded the checkpoint (one listener, not two: each Python listener costs a
py4j conversion of every event, on the one thread that delivers the events of every
query).
The reporter turns it into::

    {"batch_id": 12,                 # Spark's batch id (= checkpoint id once committed)
     "input_rows_per_s": 2150.3,     # rows/s arriving, as Spark measures it
     "processed_rows_per_s": 8890.1, # rows/s the batch processed
     "lag_records": 420,             # Kafka records beyond the batch's end offsets, or None
     "lag_by_partition": {"flights:0": 400, "flights:1": 20},  # the same per partition
     "last_checkpoint_at": "2026-12-05T10:11:12.345+00:00",  # ISO-8601 UTC, or None
     "updated_at": "2026-12-05T10:11:13.001+00:00"}

and the job's runner writes the newest one with :meth:`Catalog.update_progress` from its
own thread (:meth:`ProgressReporter.flush`, called every quarter second; at most one
write a second per job), so the listener thread is not held up by catalog writes and
the catalog is never more than about a second behind. Every
:data:`~streamjob.catalog.access.SAMPLE_EVERY_S` seconds a written report is also kept as
a progress sample (``Catalog.add_progress_sample``: the console's charts). ``lag_records`` sums, over the partitions of every Kafka
source, the source's latest offset (the broker's end offset, Spark's
``sources[i].latestOffset``) minus the batch's end offset (``sources[i].endOffset``);
sources that report no latest offset (rate, files) add nothing, and when none reports
one it is None. When Spark reports the query idle (no new input), rates and lag become
0. ``last_checkpoint_at`` comes from the checkpoint recorder's tracker (when the latest
committed checkpoint ended). A failed write is logged and retried with the next one: a
progress report never fails the job.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from datetime import datetime, timezone
from typing import Any

from ..catalog import Catalog
from ..catalog.access import SAMPLE_EVERY_S
from ..checkpoint.recorder import CheckpointTracker

log = logging.getLogger(__name__)

#: Seconds between two progress writes of one job.
MIN_INTERVAL_S = 1.0


def _iso(ts: datetime | None) -> str | None:
    if ts is None:
        return None
    return ts.astimezone(timezone.utc).isoformat(timespec="milliseconds")


def _rate(value: Any) -> float:
    try:
        rate = float(value)
    except (TypeError, ValueError):
        return 0.0
    return round(rate, 3) if math.isfinite(rate) else 0.0


def _kafka_offsets(value: Any) -> dict[str, dict[str, int]] | None:
    """``{topic: {partition: offset}}`` from Spark's offset JSON, None for another shape."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if not isinstance(value, dict) or not value:
        return None
    out: dict[str, dict[str, int]] = {}
    for topic, parts in value.items():
        if not isinstance(parts, dict):
            return None
        try:
            out[str(topic)] = {str(p): int(o) for p, o in parts.items()}
        except (TypeError, ValueError):
            return None
    return out


def lag_by_partition(sources: list) -> dict[str, int] | None:
    """Records the batch left behind in its Kafka sources, per ``"topic:partition"``:
    ``latestOffset - endOffset`` (never negative; a partition read by two sources adds
    up); None if no source reports a latest offset. ``sources`` are Spark
    ``SourceProgress`` objects (or anything with the attributes ``latestOffset`` and
    ``endOffset``, JSON text or dicts)."""
    lags: dict[str, int] | None = None
    for src in sources or ():
        latest = _kafka_offsets(getattr(src, "latestOffset", None))
        end = _kafka_offsets(getattr(src, "endOffset", None)) or {}
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
    """Records the batch left behind in its Kafka sources: the sum of
    :func:`lag_by_partition`; None if no source reports a latest offset."""
    lags = lag_by_partition(sources)
    return None if lags is None else sum(lags.values())


def progress_of(p) -> dict[str, Any]:
    """The progress dict (module docstring) of one ``StreamingQueryProgress``, without
    ``last_checkpoint_at``."""
    return {
        "batch_id": int(p.batchId),
        "input_rows_per_s": _rate(p.inputRowsPerSecond),
        "processed_rows_per_s": _rate(p.processedRowsPerSecond),
        "lag_records": lag_of(list(p.sources or ())),
        "lag_by_partition": lag_by_partition(list(p.sources or ())),
        "updated_at": _iso(datetime.now(timezone.utc)),
    }


class ProgressReporter:
    """Writes one job's progress to the catalog (module docstring); the checkpoint
    listener calls :meth:`on_progress` and :meth:`on_idle`, the job's runner
    :meth:`flush`.

    Args:
        catalog: where to write (``update_progress`` by ``job_uid``).
        job_uid: the job incarnation's uid (writes for a dropped job are ignored).
        job_name: ``db.name``, for log messages.
        tracker: the checkpoint recorder's tracker (``latest_at``).
        interval_s: least seconds between two writes.
    """

    def __init__(self, catalog: Catalog, job_uid: str, job_name: str,
                 tracker: CheckpointTracker, interval_s: float = MIN_INTERVAL_S) -> None:
        self.catalog = catalog
        self.job_uid = job_uid
        self.job_name = job_name
        self.tracker = tracker
        self.interval_s = interval_s
        self._lock = threading.Lock()   # guards _pending
        self._io = threading.Lock()     # one write at a time, in order
        self._pending: dict[str, Any] | None = None
        self._last: dict[str, Any] | None = None
        self._last_write = 0.0
        self._last_sample = float("-inf")
        self._warned = False
        self.enabled = True  # False once the job manager is fenced: no more writes

    def on_progress(self, progress) -> None:
        """One ``StreamingQueryProgress`` (after its checkpoint was recorded)."""
        report = progress_of(progress)
        with self._lock:
            self._pending = report  # written by the runner's flush(), off the listener thread

    def on_idle(self) -> None:
        """Spark reports the query idle: rates and lag 0."""
        with self._lock:
            base = self._pending or self._last
            if base is None:
                return
            self._pending = {**base, "input_rows_per_s": 0.0, "processed_rows_per_s": 0.0,
                             "lag_records": 0 if base.get("lag_records") is not None else None,
                             "lag_by_partition": {k: 0 for k in base.get("lag_by_partition") or {}}
                             or None,
                             "updated_at": _iso(datetime.now(timezone.utc))}

    def flush(self, force: bool = False) -> bool:
        """Write the newest unwritten progress if a second passed since the last write
        (or ``force``); also rewrites the last one when a checkpoint completed since.
        Returns True if it wrote. Never raises."""
        with self._io:
            with self._lock:
                if not self.enabled:
                    return False
                if not force and time.monotonic() - self._last_write < self.interval_s:
                    return False
                latest_at = _iso(self.tracker.latest_at)
                progress = self._pending
                if progress is None and self._last is not None \
                        and self._last.get("last_checkpoint_at") != latest_at:
                    progress = dict(self._last)
                if progress is None:
                    return False
                progress = {**progress, "last_checkpoint_at": latest_at}
                self._pending = None
            try:
                self.catalog.update_progress(self.job_uid, progress)
            except Exception as exc:  # noqa: BLE001 - informational; retried next time
                with self._lock:
                    if self._pending is None:
                        self._pending = progress
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
