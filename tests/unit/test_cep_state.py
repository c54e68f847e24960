"""The per-key function Spark calls for a PATTERN (streamjob/spark/cep.py), driven
micro-batch by micro-batch with pyspark's own GroupState (no JVM): event-time events are
buffered until the watermark passes them, matched in event-time order, late ones dropped;
the timeout asks for the key again when only the watermark moves; state is removed when
nothing is pending; a match row reads each variable's last event."""

from __future__ import annotations


import pandas as pd
import pytest

from streamjob.cep.nfa import Pattern, Stage
from streamjob.planner.cep import CepPlan
from streamjob.spark.cep import TIME, _Function

pytestmark = pytest.mark.unit

S = 1_000_000  # µs per second


def plan(proctime: bool = False) -> CepPlan:
    e1 = Stage("e1", ("gt", ("col", "e1", "cnt"), ("lit", 0)))
    e2 = Stage("e2", ("and", ("eq", ("col", "e2", "id"), ("col", "e1", "id")),
                      ("gt", ("col", "e2", "cnt"), ("col", "e1", "cnt"))), "followedby", 2, 2)
    columns = (("id", "int"), ("cnt", "int"), ("ts", "timestamp"))  # proctime: ts is a plain column
    outputs = tuple((f"{v}__{c}", t) for v in ("e1", "e2") for c, t in columns)
    return CepPlan(Pattern((e1, e2), 60_000), "default", "s", "sj__default__s", columns,
                   ("id",), None if proctime else "ts", outputs, "WITHIN ('1' minute)",
                   ("e1", "e2"))


class Batches:
    """Calls the function as Spark would for one key, batch after batch, carrying the
    state; records the timeout it asks for."""

    def __init__(self, fn):
        from pyspark.sql.streaming.state import GroupStateTimeout

        self.fn, self.value, self.timeout = fn, None, -1
        self.conf = GroupStateTimeout.EventTimeTimeout

    def batch(self, watermark_s: int, rows: list[tuple[int, int, int]], now_s: int = 0,
              timed_out: bool = False) -> list[dict]:
        from pyspark.sql import Row
        from pyspark.sql.streaming.state import GroupState
        from pyspark.sql.types import BinaryType, StructField, StructType

        state = GroupState(Row(self.value) if self.value is not None else None, now_s * 1000,
                           watermark_s * 1000, self.conf, timed_out, True,
                           self.value is not None, False, False, self.timeout, b"",
                           StructType([StructField("state", BinaryType())]))
        frame = pd.DataFrame(
            [{"id": i, "cnt": c, "ts": pd.Timestamp(t, unit="s"),  # naive, as pyspark hands them
              TIME: t * S} for i, c, t in rows], columns=["id", "cnt", "ts", TIME])
        out = list(self.fn((1,), iter([frame]), state))
        self.value = state.get[0] if state.exists else None
        self.timeout = state._timeout_timestamp
        return [r for f in out for r in f.to_dict("records")]


def test_events_wait_for_the_watermark_then_match_in_event_time_order():
    b = Batches(_Function(plan()))
    # out of order inside and across batches; nothing is matched before the watermark
    assert b.batch(-1, [(1, 5, 10), (1, 1, 3)]) == []
    assert b.timeout == 2999  # ms: the watermark reaching the earliest buffered event (3 s)
    assert b.batch(0, [(1, 4, 8), (1, 9, 12)]) == []
    # watermark 20 s: events 3 s (cnt 1), 8 (4), 10 (5), 12 (9) in time order:
    # e1 = 1 takes e2 = 4, 5; e1 = 4 takes 5, 9; e1 = 5 has only 9 and waits
    got = b.batch(20, [], timed_out=True)
    assert [(r["e1__cnt"], r["e2__cnt"]) for r in got] == [(1, 5), (4, 9)]
    assert got[0]["e1__ts"] == pd.Timestamp("1970-01-01 00:00:03")
    assert b.value is not None  # e1 = 5 (and 9) still wait for e2


def test_late_events_are_dropped_and_state_is_removed_when_nothing_is_pending():
    b = Batches(_Function(plan()))
    b.batch(-1, [(1, 1, 100)])
    assert b.batch(100, [(1, 7, 50), (1, 8, 90)], timed_out=False) == []  # at/before wm: late
    assert b.value is not None  # the partial match e1 = cnt 1 waits
    # the partial match can no longer finish once the watermark passes 100 s + 60 s
    assert b.timeout == 159_999
    assert b.batch(161, [], timed_out=True) == []
    assert b.value is None


def test_equal_times_keep_arrival_order_as_processing_time_needs():
    """Without event time every event of a micro-batch has the batch's time: they are
    matched, in arrival order, once the next micro-batch's watermark passes it."""
    b = Batches(_Function(plan(proctime=True)))
    assert b.batch(0, [(1, 1, 5), (1, 3, 5), (1, 2, 5)]) == []
    got = b.batch(5, [(1, 4, 6)], timed_out=False)
    assert [(r["e1__cnt"], r["e2__cnt"]) for r in got] == [(1, 2)]
    assert b.timeout == 5999  # the batch-6 event waits for the watermark
