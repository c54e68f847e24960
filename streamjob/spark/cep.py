"""A PATTERN run in Spark: the matcher (:mod:`streamjob.cep.nfa`) per key in Spark's
arbitrary stateful processing (``applyInPandasWithState``).

Why ``applyInPandasWithState`` and not ``transformWithStateInPandas``: the latter needs
the RocksDB state store provider (Spark 4.0's requirement for transformWithState), and a
job's checkpoint is written by the default HDFS-backed state store; the former runs on
it, in append output mode, with event-time timeouts. Its state (one binary value per
key: the pickled buffer and partial matches) is versioned with each micro-batch in the
job's checkpoint, so a job restored from a checkpoint resumes the partial matches of the
batch it records and replays the batches after it from the source offsets: matches are
written exactly once (with the sink's exactly-once commit).

Event time (the stream declares ``"watermark.column"``/``"watermark.delay"``): a key's
new events are buffered; an event at or before the watermark is late and dropped (Spark's
rule for stateful operators); buffered events are matched in event-time order once the
watermark reaches them, so a match is emitted when the watermark passes its last event.
An event-time timeout at the earliest buffered event (or at the time the oldest partial
match expires) calls the key again when only the watermark moved (Spark then runs a
micro-batch without new data).

Processing time (no event time): each event is timed by its micro-batch
(``current_timestamp()``, watermarked with no delay, as a STREAMWINDOW without event
time is), and the rules above apply with that time: a micro-batch's events are matched
by the next micro-batch, and WITHIN is processing time. (Not a processing-time timeout:
Spark runs a micro-batch after every other one while such a timeout is set, so the job
would never be idle.)

Events of equal time are matched in the order Spark delivers a key's rows: the source's
order within one Kafka partition (a map task's rows reach the key's task in order and
Spark's sort by key is stable); across partitions of a topic there is no order, as in
Kafka. (Spark refuses ``monotonically_increasing_id()`` in streaming queries and the
Kafka source has no offset column, so no explicit arrival number is kept; within a key,
events of later micro-batches come after earlier ones.)
"""

from __future__ import annotations

import math

from ..planner.cep import CepPlan

TIME = "__cep_t"  # event time (or batch time) in microseconds since the epoch
KEY = "__cep_key"  # the single key of a pattern without key columns
PROC = "__cep_proc"  # a stream without event time: the micro-batch's time, watermarked


def match_frame(session, plan: CepPlan, outputs: str):
    """The streaming DataFrame of ``plan``'s matches, over the stream's view
    (``plan.view``, already created): one row per match, columns ``plan.outputs``, whose
    Spark DDL is ``outputs``."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    df = session.table(plan.view)
    cols = [c for c, _ in plan.columns]
    time = plan.time_column
    if plan.proctime:
        df = df.withColumn(PROC, F.current_timestamp()).withWatermark(PROC, "0 seconds")
        time = PROC
    kept = cols + ([PROC] if plan.proctime else [])  # the watermark's column stays in
    df = df.select(*[F.col(f"`{c}`") for c in kept],
                   F.unix_micros(F.col(f"`{time}`")).alias(TIME))
    keys = list(plan.key)
    if not keys:
        df = df.withColumn(KEY, F.lit(0))
        keys = [KEY]
    return df.groupBy(*[F.col(f"`{k}`") for k in keys]).applyInPandasWithState(
        _Function(plan), outputs, "state BINARY", "append", GroupStateTimeout.EventTimeTimeout)


class _Function:
    """The per-key function Spark calls (pickled to its Python workers)."""

    def __init__(self, plan: CepPlan):
        self.pattern = plan.pattern
        self.columns = [c for c, _ in plan.columns]
        self.outputs = [c for c, _ in plan.outputs]
        self.timestamps = [c for c, t in plan.outputs if t.strip().lower() == "timestamp"]
        self.variables = list(plan.variables)

    def __call__(self, key, frames, state):
        import pickle

        from ..cep.nfa import Matcher

        buffered, partials, seq = (pickle.loads(bytes(state.get[0])) if state.exists
                                   else ([], [], 0))
        events, seq = self._events(frames, seq)
        matcher = Matcher(self.pattern, partials, unit=1000)
        matches: list = []
        wm = state.getCurrentWatermarkMs()
        buffered += [e for e in events if e[0] > wm * 1000]  # else late: dropped
        buffered.sort(key=lambda e: (e[0], e[1]))
        ready = [e for e in buffered if e[0] <= wm * 1000]
        buffered = buffered[len(ready):]
        for t, _, row in ready:
            matches += matcher.feed(t, row)
        matcher.expire(wm * 1000 + 1)
        if buffered or matcher.partials:
            state.update((pickle.dumps((buffered, matcher.partials, seq), protocol=4),))
            self._timeout(state, buffered, matcher)
        elif state.exists:
            state.remove()
        if matches:
            yield self._frame(matches)

    def _events(self, frames, seq: int):
        import pandas as pd

        parts = [f for f in frames if len(f)]
        if not parts:
            return [], seq
        pdf = pd.concat(parts).sort_values(TIME, kind="stable")  # ties: delivery order
        events = []
        for rec in pdf.to_dict("records"):
            row = {c: _plain(rec[c]) for c in self.columns}
            events.append((int(rec[TIME]), seq, row))
            seq += 1
        return events, seq

    def _timeout(self, state, buffered, matcher) -> None:
        wm = state.getCurrentWatermarkMs()
        due = []
        if buffered:  # the watermark reaches the earliest buffered event
            due.append(math.ceil(buffered[0][0] / 1000) - 1)
        if matcher.partials:  # the oldest partial match can no longer finish
            start = min(p.start for p in matcher.partials)
            due.append(math.ceil((start + matcher.window - 1) / 1000) - 1)
        state.setTimeoutTimestamp(max(wm, min(due)))

    def _frame(self, matches):
        import pandas as pd

        rows = []
        for match in matches:
            out = []
            for taken in match:
                last = taken[-1] if taken else {}
                out += [last.get(c) for c in self.columns]
            rows.append(out)
        pdf = pd.DataFrame(rows, columns=self.outputs, dtype=object)
        for c in self.timestamps:
            pdf[c] = pd.to_datetime(pdf[c])
        return pdf


def _plain(value):
    """A pandas/numpy value as plain Python (NaN and NaT as None)."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy":
        value = item()
        return None if isinstance(value, float) and math.isnan(value) else value
    try:
        import pandas as pd

        if value is pd.NaT:
            return None
    except ImportError:  # pragma: no cover
        pass
    return value
