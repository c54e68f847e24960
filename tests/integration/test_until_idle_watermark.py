"""Issue 34: "caught up" includes the micro-batch the watermark needs.

A stateful operator that waits for the watermark writes what a batch's data closed in
Spark's *next* micro-batch, one without new data. On the main of 2026-11-27,
``run --until-idle`` ended after the batch that read the input, before that one: CEP
matches, closed windows and closed sessions stayed unwritten (and after a restart Spark
never ran the pending batch until new data came).

Each test here drives jobs as ``streamjob run FILE --until-idle`` does, in this process:
START STREAMJOB through an executor that hosts the job manager, then
``wait_until_idle`` (what ``--until-idle`` waits for), then the graceful stop of the
process's exit. Two such runs, each after a new file of events: after each, the sink
holds exactly what a batch computation in Python finds over the events so far (what the
watermark closed), at the moment "caught up" is reported and again after the stop.
Further: a job stopped between its data batch and the no-data batch is caught up after
a restart without new input, and a graceful stop writes the released output first.

Inputs are small JSON files (one micro-batch each), sinks SQLite tables.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa

from streamjob.manager import JobManager

from .world import World

pytestmark = pytest.mark.spark
#: Seconds this module takes on a fast host: make test hands the longest modules out first
#: (tests/conftest.py), so the run does not end on one of them while the other worker idles.
EXPECTED_S = 37

T0 = datetime(2024, 1, 1, 12, tzinfo=timezone.utc)
DELAY = 1  # seconds: the streams' watermark delay
CEP = """INSERT INTO {table} SELECT e1.id, e1.cnt FROM PATTERN(e1={stream}[e1.cnt>0]
  FOLLOWEDBY e2={stream}[e2.id=e1.id and e2.cnt-e1.cnt>2]) WITHIN ('10' minute)"""
FAST = '"morphling.job.checkpoint.interval"="0"'
#: FAST, and micro-batches every 100 ms, not the default 500: the no-data batch that
#: writes what the watermark closed runs at the next trigger
QUICK = FAST + ', "streamjob.trigger.interval"="100"'


def at(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# The events: ids 1-4 around 12:00, and an event an hour later to move the
# watermark; then id 5 at 13:00:01-02 and again an hour later.
CEP_ROUNDS = [
    [(1, 1, 0), (1, 5, 1), (2, 1, 2), (2, 2, 3), (3, 1, 4), (3, 2, 5), (3, 6, 6), (4, 3, 7),
     (4, 4, 8), (99, 0, 3600)],
    [(5, 1, 3601), (5, 10, 3602), (99, 0, 7200)],
]
# clicks (user, second): a few windows and sessions per user, then a sentinel an hour on
CLICK_ROUNDS = [
    [("ann", 0), ("bob", 1), ("ann", 3), ("ann", 12), ("bob", 14), ("cid", 15), ("ann", 30),
     ("bob", 31), ("zz", 3600)],
    [("ann", 3601), ("bob", 3603), ("ann", 3609), ("cid", 3625), ("ann", 3640), ("zz", 7200)],
]
LENGTH, GAP = 10, 5  # seconds: the tumbling window's length, the sessions' gap


# ------------------------------------------------------------------ batch computations


def cep_matches(events, watermark: float | None) -> Counter:
    """``(e1.id, e1.cnt)`` of every match of CEP's pattern: ``e1`` with cnt > 0, then a
    later event ``e2`` of the same id with ``e2.cnt - e1.cnt > 2`` within 10 minutes,
    in time order (arrival order when ``watermark`` is None: processing time); a match
    is written once the watermark reaches its ``e2``."""
    out: Counter = Counter()
    evs = list(events) if watermark is None else sorted(events, key=lambda e: e[2])
    for i, (id1, c1, t1) in enumerate(evs):
        if c1 <= 0:
            continue
        for id2, c2, t2 in evs[i + 1:]:
            if id2 == id1 and c2 - c1 > 2 and (watermark is None or t2 - t1 <= 600):
                if watermark is None or t2 <= watermark:
                    out[(id1, c1)] += 1
                break
    return out


def closed_windows(clicks, watermark: float) -> Counter:
    """``(user, window start s)`` -> count of the tumbling windows the watermark closed
    (end at or before it)."""
    counts = Counter((u, s // LENGTH * LENGTH) for u, s in clicks)
    return Counter({k: n for k, n in counts.items() if k[1] + LENGTH <= watermark})


def closed_sessions(clicks, watermark: float) -> Counter:
    """``(user, start s, end s, count)`` of the gap sessions the watermark closed: an event
    at most ``GAP`` after the last one joins (Spark merges one exactly a gap after)
    the session, which ends ``GAP`` after its last event."""
    out: Counter = Counter()
    for user in sorted({u for u, _ in clicks}):
        times = sorted(s for u, s in clicks if u == user)
        start = last = times[0]
        n = 1
        for s in times[1:]:
            if s <= last + GAP:
                last, n = s, n + 1
                continue
            out[(user, start, last + GAP, n)] += 1
            start = last = s
            n = 1
        out[(user, start, last + GAP, n)] += 1
    return Counter({k: v for k, v in out.items() if k[2] <= watermark})


def watermark_of(seconds) -> float:
    return max(seconds) - DELAY


# ------------------------------------------------------------------ the world


class Jobs(World):
    """A home whose executor hosts a job manager (START runs the job here, as ``run``)."""

    def __init__(self, root: Path):
        super().__init__(root)
        self.manager = JobManager(self.catalog, self.home)
        self.ex.manager = self.manager
        self.url = f"sqlite:///{root / 'sinks.db'}"

    def stream(self, name: str, columns: str, watermark: bool = True) -> Path:
        directory = self.root / "in" / name
        directory.mkdir(parents=True)
        mark = (f', "watermark.column"="ts", "watermark.delay"="{DELAY} seconds"'
                if watermark else "")
        self.run(f"""CREATE STREAM {name} ({columns})
          TBLPROPERTIES ("source"="files", "path"="{directory}", "format"="json"{mark});""")
        return directory

    def table(self, name: str, columns: str) -> None:
        self.run(f"""CREATE TABLE {name} ({columns})
          TBLPROPERTIES ("connector"="sql", "url"="{self.url}", "table"="{name}");""")

    def rows(self, table: str) -> list[tuple]:
        engine = sa.create_engine(self.url)
        try:
            with engine.connect() as conn:
                return [tuple(r) for r in conn.execute(sa.text(f"select * from {table}"))]
        except sa.exc.OperationalError:  # not created yet: nothing written
            return []
        finally:
            engine.dispose()

    def runner(self, job: str):
        return self.manager.runners[self.catalog.require_job("default", job).uid]

    def until_idle(self, job: str, check) -> None:
        """One ``run --until-idle`` of ``job``: START, wait until caught up, ``check()``
        (the sink when "caught up" is reported), graceful stop, ``check()`` again."""
        self.run(f"START STREAMJOB {job};")
        self.manager.wait_until_idle(timeout=300)
        try:
            check()
        finally:
            self.stop(job)
        check()

    def stop(self, job: str, graceful: bool = True) -> None:
        self.manager.stop(self.catalog.require_job("default", job).uid, graceful=graceful)

    def close(self) -> None:
        self.manager.stop_all()
        super().close()


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    w = Jobs(tmp_path_factory.mktemp("idle"))
    yield w
    w.close()


def cep_events(rounds):
    return [{"id": i, "cnt": c, "ts": at(s)} for i, c, s in rounds]


def seconds(value) -> float:
    ts = datetime.fromisoformat(str(value))
    ts = ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)
    return (ts - T0).total_seconds()


# ------------------------------------------------------------------ the tests


@pytest.mark.parametrize("event_time", [True, False], ids=["event_time", "processing_time"])
def test_cep_until_idle_writes_every_match_the_watermark_closed(jobs, event_time):
    """The issue's repro: after each of two ``--until-idle`` runs, each with a new file,
    the table holds exactly the batch computation's matches ((1,1), (3,1), (3,2); then
    (5,1) too). In processing time events are timed by their micro-batch and matched
    in arrival order."""
    name = "cep_et" if event_time else "cep_pt"
    directory = jobs.stream(name, "id INT, cnt INT, ts TIMESTAMP", watermark=event_time)
    jobs.table(f"{name}_t", "id INT, cnt INT")
    jobs.run(f"""CREATE STREAMJOB {name}_job AS ("{CEP.format(table=f'{name}_t', stream=name)}")
      JOBPROPERTIES ({QUICK});""")
    seen: list = []
    for events, expected in zip(CEP_ROUNDS, ([(1, 1), (3, 1), (3, 2)],
                                             [(1, 1), (3, 1), (3, 2), (5, 1)])):
        seen += events
        jobs.write(directory, cep_events(events))
        want = cep_matches(seen, watermark_of([s for *_, s in seen]) if event_time else None)
        assert sorted(want.elements()) == expected  # the batch computation, as the issue says

        def check(want=want):
            assert Counter(jobs.rows(f"{name}_t")) == want

        jobs.until_idle(f"{name}_job", check)


def test_streamwindow_until_idle_writes_every_closed_window(jobs):
    directory = jobs.stream("clicks_w", "user_id STRING, ts TIMESTAMP")
    jobs.table("windows_t", "user_id STRING, started TIMESTAMP, n BIGINT")
    jobs.run(f"""CREATE STREAMJOB windows_job AS ("insert into windows_t
        select user_id, window.start, count(*) from clicks_w
        STREAMWINDOW w AS (LENGTH '{LENGTH}' SECOND) group by user_id")
      JOBPROPERTIES ({QUICK});""")
    seen: list = []
    for events in CLICK_ROUNDS:
        seen += events
        jobs.write(directory, [{"user_id": u, "ts": at(s)} for u, s in events])
        want = closed_windows(seen, watermark_of([s for _, s in seen]))

        def check(want=want):
            got = Counter({(u, seconds(t)): n for u, t, n in jobs.rows("windows_t")})
            assert got == want

        jobs.until_idle("windows_job", check)
    assert len(want) >= 8


def test_gap_sessions_until_idle_writes_every_closed_session(jobs):
    directory = jobs.stream("clicks_s", "user_id STRING, ts TIMESTAMP")
    jobs.table("sessions_t", "user_id STRING, started TIMESTAMP, ended TIMESTAMP, n BIGINT")
    jobs.run(f"""CREATE STREAMJOB sessions_job AS ("insert into sessions_t
        select user_id, session_window.start, session_window.end, count(*)
        from clicks_s SESSIONWINDOW w AS (GAP '{GAP}' SECOND) group by user_id")
      JOBPROPERTIES ({QUICK});""")
    seen: list = []
    for events in CLICK_ROUNDS:
        seen += events
        jobs.write(directory, [{"user_id": u, "ts": at(s)} for u, s in events])
        want = closed_sessions(seen, watermark_of([s for _, s in seen]))

        def check(want=want):
            got = Counter((u, seconds(a), seconds(b), n) for u, a, b, n in jobs.rows("sessions_t"))
            assert got == want

        jobs.until_idle("sessions_job", check)
    assert len(want) >= 8


def log_ids(ckdir: str, log: str) -> list[int]:
    """The batch ids in Spark's ``offsets`` or ``commits`` log of a local checkpoint."""
    return sorted(int(p.name) for p in (Path(ckdir) / log).iterdir() if p.name.isdigit())


def read_entry(ckdir: str, log: str, batch: int) -> list[str] | None:
    """The lines of one entry of Spark's ``offsets`` or ``commits`` log, or None."""
    path = Path(ckdir) / log / str(batch)
    return path.read_text().splitlines() if path.exists() else None


def _watermarks(ckdir: str, batch: int) -> tuple[int, int | None]:
    """``(batchWatermarkMs of offsets/<batch>, nextBatchWatermarkMs of commits/<batch>)``."""
    offsets = json.loads(read_entry(ckdir, "offsets", batch)[1])
    commit = read_entry(ckdir, "commits", batch)
    return offsets["batchWatermarkMs"], json.loads(commit[1])["nextBatchWatermarkMs"] if commit else None


def test_a_restart_runs_the_no_data_batch_a_stop_left_pending(jobs):
    """A job stopped after its data batch, before the no-data batch (a trigger of a day
    holds it back: Spark's first trigger runs at once, the next at the next multiple of
    the interval since the epoch, i.e. midnight UTC; the graceful stop's bound, the 2 s
    checkpoint timeout, ends first): the next start, without new input, runs that batch
    first, and is caught up only once it has written the matches."""
    directory = jobs.stream("cep_rs", "id INT, cnt INT, ts TIMESTAMP")
    jobs.table("cep_rs_t", "id INT, cnt INT")
    jobs.run(f"""CREATE STREAMJOB cep_rs_job AS ("{CEP.format(table='cep_rs_t', stream='cep_rs')}")
      JOBPROPERTIES ({FAST}, "streamjob.trigger.interval"="86400000",
                     "morphling.checkpoint.timeout"="2000");""")
    jobs.write(directory, cep_events(CEP_ROUNDS[0]))
    jobs.run("START STREAMJOB cep_rs_job;")
    runner = jobs.runner("cep_rs_job")
    assert runner.tracker.wait_for(lambda t: t.batch_id == 0, 300), "batch 0 did not commit"
    jobs.stop("cep_rs_job")
    ckdir = jobs.home.checkpoint_dir("default", "cep_rs_job")
    assert log_ids(ckdir, "offsets") == [0] and log_ids(ckdir, "commits") == [0]
    watermark, released = _watermarks(ckdir, 0)
    assert released > watermark  # batch 0 moved it: the matches wait for batch 1
    assert jobs.rows("cep_rs_t") == []

    def check():
        assert sorted(jobs.rows("cep_rs_t")) == [(1, 1), (3, 1), (3, 2)]

    jobs.until_idle("cep_rs_job", check)  # no new input
    # batch 1 ran as Spark's own no-data batch would have: same source offsets, the
    # watermark batch 0 reached, and moved it no further
    assert log_ids(ckdir, "commits") == [0, 1]
    assert _watermarks(ckdir, 1) == (released, released)
    assert read_entry(ckdir, "offsets", 1)[2:] == read_entry(ckdir, "offsets", 0)[2:]


def test_a_graceful_stop_writes_what_the_watermark_released(jobs):
    """STOP (and Ctrl-C, a server's handover) after a batch that moved the watermark
    lets the no-data batch run before the query stops (here 3 s later: the trigger)."""
    directory = jobs.stream("clicks_g", "user_id STRING, ts TIMESTAMP")
    jobs.table("windows_g", "user_id STRING, started TIMESTAMP, n BIGINT")
    jobs.run(f"""CREATE STREAMJOB windows_g_job AS ("insert into windows_g
        select user_id, window.start, count(*) from clicks_g
        STREAMWINDOW w AS (LENGTH '{LENGTH}' SECOND) group by user_id")
      JOBPROPERTIES ({FAST}, "streamjob.trigger.interval"="3000");""")
    events = CLICK_ROUNDS[0]
    jobs.write(directory, [{"user_id": u, "ts": at(s)} for u, s in events])
    jobs.run("START STREAMJOB windows_g_job;")
    runner = jobs.runner("windows_g_job")
    assert runner.tracker.wait_for(lambda t: t.batch_id == 0, 300), "batch 0 did not commit"
    assert jobs.rows("windows_g") == []  # written by the next batch, 3 s on
    jobs.stop("windows_g_job")
    got = Counter({(u, seconds(t)): n for u, t, n in jobs.rows("windows_g")})
    assert got == closed_windows(events, watermark_of([s for _, s in events]))
    ckdir = jobs.home.checkpoint_dir("default", "windows_g_job")
    assert log_ids(ckdir, "commits") == [0, 1] and log_ids(ckdir, "offsets") == [0, 1]


def test_until_idle_ends_when_spark_declines_the_no_data_batch(jobs):
    """An inner join of two event-time streams without a time range keeps state that the
    watermark never cleans: Spark runs no batch after one that moved the watermark, and
    the wait learns it from ``processAllAvailable()`` (it must end, not hang)."""
    left = jobs.stream("orders_j", "id INT, ts TIMESTAMP")
    right = jobs.stream("payments_j", "id INT, amount INT, ts TIMESTAMP")
    jobs.table("joined_j", "id INT, amount INT")
    jobs.run(f"""CREATE STREAMJOB join_job AS ("insert into joined_j
        select o.id, p.amount from orders_j o join payments_j p on o.id = p.id")
      JOBPROPERTIES ({QUICK});""")
    jobs.write(left, [{"id": i, "ts": at(i)} for i in range(5)])
    jobs.write(right, [{"id": i, "amount": 10 * i, "ts": at(3600 + i)} for i in range(0, 8, 2)])

    def check():
        assert sorted(jobs.rows("joined_j")) == [(0, 0), (2, 20), (4, 40)]

    jobs.until_idle("join_job", check)
    ckdir = jobs.home.checkpoint_dir("default", "join_job")
    last = log_ids(ckdir, "commits")[-1]
    watermark, moved = _watermarks(ckdir, last)
    assert moved > watermark  # the last batch moved it, and Spark ran nothing after it
    assert log_ids(ckdir, "offsets")[-1] == last
