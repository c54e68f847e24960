"""Scenario 4: recovery after SIGKILL, with real ``streamjob run`` processes.

A ``streamjob run job.sql`` process copies a topic into Parquet with a 1 s checkpoint
interval while a producer thread writes ``sizes.s3_rate`` flights/s to it (steady
state: every interval has new input). Once it has committed 3 checkpoints, its process group is SIGKILLed and the same command
is started again at once; the seconds from the kill until the catalog records the next
completed checkpoint are split into:

- **process start**: interpreter and ``import streamjob.cli`` (timed separately, as
  ``python -c 'import streamjob.cli'``: the restarted process cannot report it);
- **Spark start**: from the restart until the job's new run row is opened (the file's
  statements, Spark's JVM and session, the job's plan), minus the process start;
- **catch-up**: from the run row until the first checkpoint completed after the kill
  (Spark replays the batch in flight, then commits).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from .harness import Bench, ScenarioResult, Target, wait_until
from .jobs import job_props, stream_sql
from .checkpoint_cost import Producer
from streamjob.catalog.records import CheckpointStatus

STREAMJOB = str(Path(sys.executable).with_name("streamjob"))


def import_seconds() -> float:
    """Seconds for a fresh interpreter to ``import streamjob.cli`` (median of 3)."""
    times = []
    for _ in range(3):
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-c", "import streamjob.cli"], check=True)
        times.append(time.monotonic() - t0)
    return sorted(times)[1]


def _spawn(home: Path, sql: Path) -> subprocess.Popen:
    log = open(home / "run.log", "ab")
    return subprocess.Popen([STREAMJOB, "--home", str(home), "run", str(sql)],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _kill(proc: subprocess.Popen, sig=signal.SIGKILL) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    proc.wait(60)


def run(bench: Bench) -> ScenarioResult:
    """Scenario 4 (see the module docstring)."""
    sz = bench.sizes
    res = ScenarioResult("s4", "4 recovery after SIGKILL")
    topic = bench.new_topic("bench_recovery")
    imp = import_seconds()
    res.details.update(rate_records_per_s=sz.s3_rate, interval_ms=1000,
                       import_seconds=imp, kills=[])
    home = bench.home("recovery").root
    sql = home / "job.sql"
    names = "year, month, day, carrier, flight, origin, dest, dep_delay, arr_delay"
    sql.write_text(
        stream_sql("flights", topic, bench.bootstrap).replace(
            "CREATE STREAM flights", "CREATE STREAM IF NOT EXISTS flights")
        + "\nCREATE TABLE IF NOT EXISTS out_copy (year INT, month INT, day INT, carrier STRING,"
          " flight INT, origin STRING, dest STRING, dep_delay DOUBLE, arr_delay DOUBLE)"
          " STORED AS PARQUET;\n"
        + f'CREATE STREAMJOB IF NOT EXISTS copy AS ("insert into out_copy select {names} '
          f'from flights") ' + job_props(1000, 0) + ";\nSTART STREAMJOB copy;\n")
    producer = Producer(bench.bootstrap, topic, bench.flight_records(), sz.s3_rate)
    producer.start()
    proc = _spawn(home, sql)
    catalog = None
    try:
        catalog = wait_until(lambda: _open(home), 120, "the catalog of the recovery home")
        uid = wait_until(lambda: _uid(catalog), 180, "job copy in the catalog")
        for k in range(max(1, sz.s4_kills) * bench.repeat):
            seen = _latest(catalog, uid)
            target = (seen if seen is not None else -1) + 3
            wait_until(lambda: (_latest(catalog, uid) or -1) >= target or proc.poll() is not None,
                       300, "3 checkpoints at steady state", 0.1)
            if proc.poll() is not None:
                raise RuntimeError(f"streamjob run exited with {proc.returncode}: see {home}/run.log")
            killed = datetime.now(timezone.utc)
            t_kill = time.monotonic()
            _kill(proc)
            t_spawn = time.monotonic()
            proc = _spawn(home, sql)
            run_row = wait_until(lambda: next((r for r in catalog.list_runs(uid)
                                               if r.started_at > killed), None),
                                 300, "the restarted run", 0.05)
            t_run = time.monotonic()
            ckpt = wait_until(lambda: next((c for c in catalog.list_checkpoints(uid)
                                            if c.ended_at and c.ended_at > killed
                                            and c.status != CheckpointStatus.EXPIRED), None),
                              300, "the first checkpoint after the restart", 0.05)
            t_ckpt = time.monotonic()
            total = t_ckpt - t_kill
            spark = max(0.0, (t_run - t_spawn) - imp)
            res.figure("kill -> next committed checkpoint", "s", "lower").add(total)
            res.figure("  process start (import)", "s", "lower").add(imp)
            res.figure("  Spark start + plan", "s", "lower").add(spark)
            res.figure("  catch-up (replay + commit)", "s", "lower").add(t_ckpt - t_run)
            res.details["kills"].append({"total_s": total, "kill_to_spawn_s": t_spawn - t_kill,
                                         "spawn_to_run_row_s": t_run - t_spawn,
                                         "run_row_to_checkpoint_s": t_ckpt - t_run,
                                         "run_id": run_row.id,
                                         "checkpoint_id": ckpt.checkpoint_id,
                                         "run_row_to_batch_start_s": (ckpt.started_at - run_row.started_at).total_seconds(),
                                         "batch_ms": ckpt.duration_ms,
                                         "batch_rows": ckpt.input_rows})
            bench.log(f"  s4 kill {k + 1}: {total:.1f} s to the next checkpoint "
                      f"(spawn->run {t_run - t_spawn:.1f} s, catch-up {t_ckpt - t_run:.1f} s)")
    finally:
        _kill(proc, signal.SIGTERM) if proc.poll() is None else None
        producer.finish()
        if catalog is not None:
            catalog.close()
    res.targets = [Target("under 15 s from kill to the next committed checkpoint",
                          "kill -> next committed checkpoint", "<=", 15.0)]
    return res


def _open(home: Path):
    from ..catalog import Catalog

    if not (home / "catalog.db").exists():
        return None
    try:
        return Catalog(f"sqlite:///{home / 'catalog.db'}")
    except Exception:  # noqa: BLE001 - created concurrently by the child: retry
        return None


def _uid(catalog) -> str | None:
    job = catalog.get_job("default", "copy")
    return job.uid if job else None


def _latest(catalog, uid: str) -> int | None:
    c = catalog.latest_checkpoint(uid)
    return c.checkpoint_id if c else None
