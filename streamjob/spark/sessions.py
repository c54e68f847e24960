"""Predicate session windows (:mod:`streamjob.planner.sessions`) on Spark: a stream
sessionized per KEYEDBY key by ``applyInPandasWithState``.

Why ``applyInPandasWithState`` and not ``transformWithStateInPandas``: the latter (Spark
4's state API v2) needs the ``protobuf`` package on every Python worker and the RocksDB
state store; its driver-side worker crashes without protobuf, which is not a
dependency of streamjob. ``applyInPandasWithState`` runs on what streamjob already
ships (pandas, pyarrow) and the state store jobs already use. Its state is one row per
key in the job's checkpoint, so a restarted job resumes each key where the last
committed micro-batch left it, and the sink's exactly-once commit does the rest.

The job's query aggregates the sessionized rows (GROUP BY the session) in append mode,
a second stateful operator. applyInPandasWithState's output carries no watermark, so
:func:`sessionize` declares one on the output's close-time column
(:data:`~streamjob.planner.sessions.CLOSE_COLUMN`, close time + 1 ms, zero delay) and
sets Spark's ``spark.sql.streaming.multipleWatermarkPolicy`` to ``max`` on the job's
session clone: the global watermark stays the input stream's (every close time is
before it), not the minimum, which would hold it back to the latest closed session and
stall every key's buffered events. Spark drops a downstream row whose time is at or
before the previous batch's watermark; a session closes in the first batch whose
watermark is past its close time, so the close time is at or after the previous
watermark and + 1 ms puts it strictly after: no closed session is dropped. A query with
a predicate SESSIONWINDOW reads one stream (:mod:`streamjob.planner.query`), so the
``max`` policy changes nothing else. Spark's check against chained stateful operators
after an event-time-timeout operator ("possible correctness issue due to global
watermark") is turned off on that clone for the same reason.

State per key: ``pending`` (events the watermark has not passed, pickled), the open
session's ``start`` and ``last`` event time (ms, null when none) and its ``rows``
(pickled). Output: each row of a closed session, with ``session_window``
(struct<start, end>) and the close-time column.
"""

from __future__ import annotations

import pickle

from ..planner.sessions import CLOSE_COLUMN, STRUCT, Event, Open, SessionMachine
from ..planner.window import StreamWindow

POLICY_CONF = "spark.sql.streaming.multipleWatermarkPolicy"
CHECK_CONF = "spark.sql.streaming.statefulOperator.checkCorrectness.enabled"
STATE_TYPE = "pending BINARY, start LONG, last LONG, rows BINARY"
_INIT, _END = "__sj_init", "__sj_end"
_START, _STOP = "__sj_start", "__sj_stop"


def sessionize(session, df, window: StreamWindow):
    """``df`` (the stream's frame, watermarked on ``window.time_column``) sessionized
    by ``window.predicate``: the rows of closed sessions, with the stream's columns,
    ``session_window`` and the close-time column (watermarked). Sets the watermark
    policy and the correctness check on ``session`` (a job's session clone)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType, TimestampType

    spec = window.predicate
    session.conf.set(POLICY_CONF, "max")
    session.conf.set(CHECK_CONF, "false")
    columns = list(df.columns)
    from .guard import checked_expr  # the conditions are the SQL policy's CheckedSQL

    init = F.coalesce(checked_expr(spec.init, session), F.lit(False))
    end = F.coalesce(checked_expr(spec.end, session), F.lit(False)) if spec.end else F.lit(False)
    flagged = df.withColumn(_INIT, init).withColumn(_END, end)
    out = StructType([f for f in df.schema.fields] + [
        StructField(_START, TimestampType()), StructField(_STOP, TimestampType()),
        StructField(CLOSE_COLUMN, TimestampType())])
    processor = SessionProcessor(columns, window.time_column, spec.exclude_end, spec.timeout_ms,
                                 session.conf.get("spark.sql.session.timeZone"))
    result = (flagged.groupBy(*[F.col(f"`{k}`") for k in spec.keys])
              .applyInPandasWithState(processor, out, STATE_TYPE, "append", "EventTimeTimeout")
              .withWatermark(CLOSE_COLUMN, "0 seconds"))
    struct = F.struct(F.col(_START).alias("start"), F.col(_STOP).alias("end"))
    return result.select(*[F.col(f"`{c}`") for c in columns], struct.alias(STRUCT),
                         F.col(CLOSE_COLUMN))


class SessionProcessor:
    """The per-key function: buffers events until the watermark passes them, runs
    :class:`~streamjob.planner.sessions.SessionMachine` over them in time order, and
    yields each closed session's rows (pandas DataFrames with the output columns)."""

    def __init__(self, columns: list[str], time_column: str, exclude_end: bool,
                 timeout_ms: int | None, tz: str = "UTC") -> None:
        self.columns = columns
        self.time_index = columns.index(time_column)
        self.machine = SessionMachine(exclude_end, timeout_ms)
        self.tz = tz or "UTC"

    def __call__(self, key, frames, state):
        events = []
        for pdf in frames:
            flags = pdf[[_INIT, _END]].fillna(False).astype(bool).itertuples(index=False, name=None)
            values = pdf[self.columns].astype(object).where(pdf[self.columns].notna(), None)
            for (init, end), row in zip(flags, values.itertuples(index=False, name=None)):
                t = row[self.time_index]
                if t is None:
                    continue  # no time: no place in any session
                events.append(Event(self._ms(t), bool(init), bool(end), row))
        return self._advance(events, state)

    def _ms(self, t) -> int:
        import pandas as pd

        ts = pd.Timestamp(t)
        if ts.tzinfo is None:
            ts = ts.tz_localize(self.tz)
        return int(ts.value // 1_000_000)

    def _ts(self, ms: int):
        import pandas as pd

        return pd.Timestamp(ms, unit="ms", tz="UTC").tz_convert(self.tz).tz_localize(None)

    def _advance(self, new: list[Event], state):
        import pandas as pd

        watermark = state.getCurrentWatermarkMs()
        stored = state.get if state.exists else (None, None, None, None)
        pending = [Event(*t) for t in pickle.loads(stored[0])] if stored[0] else []
        pending = sorted(pending + new, key=lambda e: e.time)  # stable: arrival order kept
        ready = [e for e in pending if e.time < watermark]
        later = [e for e in pending if e.time >= watermark]
        open_ = Open(stored[1], stored[2], list(pickle.loads(stored[3]))) \
            if stored[1] is not None else None
        open_, closed = self.machine.feed(open_, ready)
        open_, expired = self.machine.expire(open_, watermark)
        closed += expired
        if later or open_ is not None:
            state.update((pickle.dumps([(e.time, e.init, e.end, e.row) for e in later]) if later
                          else None, open_.start if open_ else None,
                          open_.last if open_ else None,
                          pickle.dumps(open_.rows) if open_ else None))
            wake = [later[0].time] if later else []
            if open_ is not None and self.machine.deadline(open_) is not None:
                wake.append(self.machine.deadline(open_))
            if wake:
                state.setTimeoutTimestamp(max(min(wake), watermark))
        else:
            state.remove()
        out = [tuple(row) + (self._ts(c.start), self._ts(c.end), self._ts(c.end + 1))
               for c in closed for row in c.rows]
        if out:
            yield pd.DataFrame(out, columns=self.columns + [_START, _STOP, CLOSE_COLUMN])
