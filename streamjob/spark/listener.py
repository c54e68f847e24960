"""The one Spark listener of a job: Spark's streaming query events, turned into Python
progress reports for the checkpoint recorder and the progress reporter.

Spark reports each finished micro-batch to a ``StreamingQueryListener`` right after the
batch's commit marker is written (``MicroBatchExecution``), and an idle report when a
trigger found no new data. :class:`ProgressListener` hands each report to its callbacks
in order (the checkpoint recorder's :meth:`~streamjob.checkpoint.recorder.CheckpointRecorder.record`
first, then the job's :class:`~streamjob.manager.progress.ProgressReporter`); one listener
serves all of them, because each Python listener costs a py4j conversion of every event.
A callback's error is logged and never reaches Spark's listener bus (an exception there
would stop the bus for every query of the process).

Events reach Python through :class:`JsonEvents` rather than pyspark's own bridge, which
reads a progress report field by field over py4j (dozens of calls, about 0.4 s per event
on a busy two-core machine). Spark delivers the events of every query of the process on
one listener thread, so with ten jobs that bridge fell minutes behind; the JSON of the
report crosses in one call and is parsed here (``StreamingQueryProgress.fromJson``).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Callable, Sequence

from pyspark.sql.streaming import StreamingQueryListener

log = logging.getLogger(__name__)


class ProgressListener(StreamingQueryListener):
    """The listener of one job's Spark session (module docstring).

    Args:
        job_name: the job's qualified name (for log lines).
        on_progress: callables of one ``StreamingQueryProgress``, called in order for
            every progress report; one failing does not stop the next.
        on_idle: called (no argument) for every idle report.
    """

    def __init__(self, job_name: str, on_progress: Sequence[Callable[[Any], None]] = (),
                 on_idle: Callable[[], None] | None = None) -> None:
        self.job_name = job_name
        self.on_progress = list(on_progress)
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
        for callback in self.on_progress:
            try:
                callback(event.progress)
            except Exception:  # noqa: BLE001 - a listener must never kill Spark's listener bus
                log.exception("job %s: %s of batch %s failed", self.job_name,
                              getattr(callback, "__qualname__", callback),
                              getattr(event.progress, "batchId", "?"))


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
